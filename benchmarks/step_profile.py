"""Where the time of one compiled MLP training step goes: nuvec's tape step by step, and
jax.jit's executable thunk by thunk, grouped by kind.

    PYTHONPATH=. python -m benchmarks.step_profile              # nuvec, then jax if installed
    PYTHONPATH=. python -m benchmarks.step_profile --steps       # also every tape step
    PYTHONPATH=. python -m benchmarks.step_profile --libs nuvec

The step is the benchmarks' ``mlp_step`` (workloads.MLP_SIZES, batch workloads.BATCH, Adam),
built by the same adapters as ``python -m benchmarks --only train``.

nuvec: the call is timed as a whole, then its tape is replayed step by step on the same
state (each step timed inside the replay of the whole tape, so its operands are as cold or
warm as in a real call; outputs go to fresh buffers instead of the state's, which the real
call updates in place). The call itself runs the tape's CPU executable (steps bound by
address over a static arena), which the last line describes; ``NUVEC_CPU_EXECUTABLE=0`` times
the call without it. Each product is listed with its shape, its CBLAS layout (N: read as
stored, T: read transposed) and its rate.

jax: ``jax.profiler`` traces the calls and each thunk of the compiled executable is matched
to its HLO instruction. XLA may run independent thunks at once, and its YNNPACK fusions can
finish on the thread pool after their thunk returns, so the sum of thunk times need not
add up to the step's time.
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import tempfile
import time
from typing import Any, Callable

import numpy as np

from . import workloads as W

CALLS = 200


def _kind_nuvec(name: str, flops: int, shape: tuple) -> str:
    if name.startswith(("matmul", "addmm")):
        return "products, large" if flops > 10**8 else "products with a side of 10"
    if "sqrt" in name:
        return "Adam (one fused pass per parameter)"
    if name.startswith("compiled") and shape[-1] == W.MLP_SIZES[1]:
        return "bias + ReLU and ReLU's gradient (fused)"
    if name.startswith("sum") and len(shape) == 2 and shape[0] == 1:
        return "bias gradients (column sums)"
    views = ("transpose", "reshape", "copy", "broadcast_to", "expand_dims", "squeeze")
    if name.startswith(views) and shape[0] != W.BATCH:
        return "views of parameters and gradients"
    if shape == ():
        return "loss scaling and the step counter"
    return "cross-entropy forward and backward"


def _median_us(samples: list[float]) -> float:
    return float(np.median(samples)) * 1e6


def profile_nuvec(show_steps: bool) -> None:
    from nuvec.compile import wait_for_kernels
    from nuvec.compile.state import entry_for

    from .libs.nuvec_lib import Adapter

    lib = Adapter()
    lib.load()
    thunk, _ = lib.train("nv.compile")
    for _ in range(5):
        thunk()
    wait_for_kernels(120.0)
    for _ in range(20):
        thunk()
    whole = []
    for _ in range(CALLS):
        t = time.perf_counter()
        thunk()
        whole.append(time.perf_counter() - t)

    step = _find(thunk, "step")  # the compiled step, as the adapter made it
    x, y = next(_find(thunk, "batches"))
    tape = entry_for(step, (x, y), {}).tape
    ins = _state_inputs(step, x, y)
    times: dict[Any, list[float]] = collections.defaultdict(list)
    flops: dict[int, int] = {}
    layout: dict[int, str] = {}
    for _ in range(CALLS):
        values: list[Any] = [None] * tape.n_slots
        for i in range(tape.n_inputs):
            values[i] = ins[i]._data
        for i, c in enumerate(tape.const_data):
            values[tape.n_inputs + i] = c
        t0 = time.perf_counter()
        for k, st in enumerate(tape.steps):
            datas = [values[i] for i in st.args]
            t = time.perf_counter()
            if st.kernel is not None:
                res = st.kernel(datas, st.shape)
            else:
                res = st.impl(st.prim, datas, st.node)
            times[k].append(time.perf_counter() - t)
            if k not in flops and repr(st.prim).startswith(("matmul", "addmm")):
                a, b = datas[-2], datas[-1]
                flops[k] = 2 * a.shape[0] * a.shape[1] * b.shape[1]
                layout[k] = "".join("T" if m.strides[0] < m.strides[1] else "N" for m in (a, b))
            for j in range(st.nout):
                values[st.out + j] = res[j]
            for i in st.release:
                values[i] = None
        times["replay"].append(time.perf_counter() - t0)

    groups: dict[str, float] = collections.defaultdict(float)
    counts: collections.Counter = collections.Counter()
    print(
        f"nuvec nv.compile: {len(tape.steps)} tape steps, {len(flops)} products of "
        f"{sum(flops.values()) / 1e6:.2f} MFLOP"
    )
    for k, st in enumerate(tape.steps):
        name = repr(st.prim)
        us = _median_us(times[k])
        kind = _kind_nuvec(name, flops.get(k, 0), tuple(st.shape))
        groups[kind] += us
        counts[kind] += 1
        if k in flops or show_steps:
            extra = ""
            if k in flops:
                rate = flops[k] / us / 1e3
                extra = f"  {layout[k]}  {flops[k] / 1e6:6.1f} MFLOP  {rate:5.0f} GFLOP/s"
            print(f"  {k:3d} {us:8.1f} us  {name[:44]:44s} {tuple(st.shape)}{extra}")
    total = sum(groups.values())
    print(
        f"  call median {_median_us(whole) / 1e3:.3f} ms; the tape's steps {total / 1e3:.3f} ms "
        f"(replayed one by one: {_median_us(times['replay']) / 1e3:.3f} ms)"
    )
    for kind, us in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"    {kind:42s} {counts[kind]:3d} steps {us:8.1f} us")
    ex = step.stats().get("executable") or {}
    if ex.get("state") == "executable":  # what the call runs: the CPU executable
        print(
            f"  executable: {ex['steps_in_c']} of {ex['steps']} steps by address, in Python: "
            f"{ex['steps_in_python']}; arena {ex['arena_bytes'] / 2**20:.1f} MiB"
        )


def _find(fn: Callable, name: str) -> Any:
    """A variable that the adapter's thunk closes over, by name."""
    code = fn.__code__
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    if name in cells:
        return cells[name].cell_contents
    raise LookupError(name)


def _state_inputs(step: Any, x: Any, y: Any) -> list:
    """The compiled step's inputs for this call: the state's leaves, then the arguments."""
    from nuvec.compile import state as stateful

    prepared = stateful._prepare(step, (x, y), {})
    return prepared[2] + prepared[3]


def _kind_jax(name: str, text: str) -> str:
    line = next((s for s in text.splitlines() if f"%{name} = " in s), "")
    if "reduce_sum" in line and "transpose(jvp())" in line:
        return "bias gradients (column sums)"
    if " dot(" in line or "__ynn_fusion" in line:
        return "products (dot, YNNPACK fusions)"
    if name.startswith("multiply_add_fusion") and "add_any" not in line:
        return "Adam (3 fusions per parameter)"
    if name.startswith(("broadcast_maximum", "add_maximum", "compare_select")):
        return "bias + ReLU and ReLU's gradient (fused)"
    if name.startswith("copy"):
        return "copies (transposed weights)"
    return "cross-entropy, loss and step counter"


def profile_jax() -> None:
    import jax

    from .libs.jax_lib import Adapter

    lib = Adapter()
    lib.load()
    thunk, _ = lib.train("jax.jit")
    for _ in range(30):
        thunk()
    step = _find(thunk, "step")
    state = _find(thunk, "state")
    x, y = (jax.numpy.asarray(a) for a in W.train_data()[0])
    text = step.lower(*state, x, y).compile().as_text()
    with tempfile.TemporaryDirectory() as folder:
        with jax.profiler.trace(folder, create_perfetto_trace=True):
            for _ in range(CALLS):
                thunk()
        trace = sorted(glob.glob(f"{folder}/**/*.trace.json.gz", recursive=True))[-1]
        with gzip.open(trace) as f:
            events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    names = {
        s.split(" = ")[0].strip().removeprefix("ROOT ").lstrip("%")
        for s in text.splitlines()
        if " = " in s
    }
    groups: dict[str, float] = collections.defaultdict(float)
    counts: collections.Counter = collections.Counter()
    per_call: dict[str, float] = collections.defaultdict(float)
    for e in events:
        per_call[e["name"]] += e.get("dur", 0.0) / CALLS
    call = next((v for k, v in per_call.items() if k.endswith(" thunk")), 0.0)
    for name, us in per_call.items():
        if name in names:
            kind = _kind_jax(name, text)
            groups[kind] += us
            counts[kind] += 1
    print(
        f"jax.jit: {sum(counts.values())} thunks, {sum(groups.values()) / 1e3:.3f} ms of "
        f"thunk time per call; call median under the profiler {call / 1e3:.3f} ms"
    )
    for kind, us in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"    {kind:42s} {counts[kind]:3d} thunks {us:8.1f} us")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--libs", default="nuvec,jax")
    ap.add_argument("--steps", action="store_true", help="list every tape step of nuvec's")
    args = ap.parse_args(argv)
    with open("/proc/loadavg") as f:
        print(f"load average {' '.join(f.read().split()[:3])}")
    libs = args.libs.split(",")
    if "nuvec" in libs:
        profile_nuvec(args.steps)
    if "jax" in libs:
        try:
            import jax  # noqa: F401
        except ImportError:
            print("jax: not installed")
        else:
            profile_jax()


if __name__ == "__main__":
    main()
