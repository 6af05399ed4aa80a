"""Element-wise math at cache-resident sizes, beside the DRAM-sized rows, at 1 and all threads.

    python -m benchmarks.cached                 # 64K, 1M, 4M and 16M float32 elements
    python -m benchmarks.cached --quick         # 64K, 1M, 4M; fewer samples
    python -m benchmarks.cached --libs numpy,nuvec --threads 1 --json out.json
    python -m benchmarks.cached --peer-path /opt/torchenv/lib/python3.11/site-packages
    python -m benchmarks.cached --cases math --libs numpy,nuvec --kernel

At these sizes the arrays stay in the caches and the math decides, not the memory system. Cases:
single ops (tanh, exp, erf, sigmoid, x * 2.5) and benchmarks.workloads' chains (gelu_erf,
gelu_tanh, swiglu, chain10); ``--cases math`` times the log family and power instead (log, log2,
log10, log1p on positive arguments or, for log1p, arguments above -1; x**y with x > 0 and
results of moderate size), ``--cases all`` both, or a comma-separated list of case names.
``--kernel`` adds nuvec's single-op kernels called alone (``nuvec.kernel``: the prebuilt kernel
writing into a preallocated output, no graph node, no allocation). NumPy runs eagerly, jax as
jax.jit, torch as torch.compile (inductor; it compiles each case and size anew, so its worker
takes minutes), nuvec both eagerly (``nuvec``: the prebuilt single-op kernels, one per op) and
as nv.compile (one fused kernel per
chain). A peer installed outside this Python's site-packages is found through ``--peer-path``
(folders put on the workers' PYTHONPATH, after the repository); a peer that cannot be imported
is reported as not available. Each
(library, threads) pair runs in its own process (benchmarks.runner's environment: thread
limits, caches in a temporary folder), all in one run, so the ratios compare like with like.
The load average before and after the run is printed with the figures: on a shared machine it
says how much the numbers can be trusted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import workloads as W

SINGLE = ("tanh", "exp", "erf", "sigmoid", "scale")  # scale: x * 2.5
CASES = SINGLE + tuple(W.CHAINS)
MATH = ("log", "log2", "log10", "log1p", "power")
ALL_CASES = CASES + MATH
SELECTIONS = {"default": CASES, "math": MATH, "all": ALL_CASES}
SIZES = {"full": (2**16, 2**20, 2**22, 2**24), "quick": (2**16, 2**20, 2**22)}
TIMING = {
    "full": dict(samples=7, warmup=2, min_sample_s=0.02, budget_s=1.0),
    "quick": dict(samples=3, warmup=1, min_sample_s=0.01, budget_s=0.3),
}
DEFAULT_LIBS = ("numpy", "jax", "torch", "nuvec")


def scale(F: Any, x: Any) -> Any:
    """Multiply by a Python scalar (weakly typed: float32 results)."""
    return x * 2.5


def _variants(adapter: Any) -> list[str]:
    """NumPy eagerly; jax and torch compiled; nuvec both (its eager ops are prebuilt kernels)."""
    if adapter.name == "nuvec":
        return [adapter.eager, adapter.compiled]
    return [adapter.compiled] if adapter.compiled else [adapter.eager]


def select(cases: str) -> tuple[str, ...]:
    """The cases of a ``--cases`` value: a selection's name or comma-separated case names."""
    if cases in SELECTIONS:
        return SELECTIONS[cases]
    got = tuple(c for c in cases.split(",") if c)
    bad = [c for c in got if c not in ALL_CASES]
    if bad or not got:
        raise ValueError(f"--cases: unknown {bad or cases!r}; cases are {', '.join(ALL_CASES)}")
    return got


def math_inputs(case: str, xs: list) -> list:
    """The arguments of a math case, made from standard-normal arrays in [-4, 4]: exp(x) for
    the logarithms and power's base (in [0.018, 54.6]), expm1(x) for log1p (above -1), the
    second array as power's exponent (results between e^-16 and e^16)."""
    import numpy as np

    if case == "log1p":
        return [np.expm1(xs[0])]
    if case == "power":
        return [np.exp(xs[0]), xs[1]]
    return [np.exp(xs[0])]


def n_inputs(case: str) -> int:
    if case in W.CHAINS:
        return W.CHAINS[case].n_inputs
    return 2 if case == "power" else 1


def _kernel_thunk(case: str, xs: list) -> Any:
    """nuvec's prebuilt kernel of a single op, called alone into a preallocated output."""
    import numpy as np

    from nuvec.backends.cpu import kernels
    from nuvec.codegen.ir import KernelSpec

    if case == "scale":
        raise ValueError("scale is a product with a constant: no single-op kernel")
    args = math_inputs(case, xs) if case in MATH else xs[:1]
    spec = KernelSpec.single(case, ("float32",) * len(args), "float32")
    out = [np.empty_like(args[0])]
    kernels.run(spec, args, args[0].shape, out)
    return lambda: kernels.run(spec, args, args[0].shape, out)


def _thunk(adapter: Any, case: str, xs: list, variant: str) -> Any:
    if variant == KERNEL:
        return _kernel_thunk(case, xs)
    if case in MATH:
        fn = adapter._wrap(getattr(adapter.F, case), variant)
        args = adapter._args(math_inputs(case, xs))
        return lambda: adapter.sync(fn(*args))
    if case in W.CHAINS:
        return adapter.chain(case, xs, variant)
    if case == "scale":
        fn = adapter._wrap(lambda x: scale(adapter.F, x), variant)
    else:
        fn = adapter._wrap(getattr(adapter.F, case), variant)
    (arg,) = adapter._args(xs[:1])
    return lambda: adapter.sync(fn(arg))


KERNEL = "nuvec.kernel"


def worker(
    lib: str,
    sizes: list[int],
    mode: str,
    cases: tuple[str, ...] = CASES,
    kernel: bool = False,
) -> list[dict[str, Any]]:
    """Time ``cases`` of one library at every size (in this process's thread setting); with
    ``kernel``, nuvec's single-op kernels alone too."""
    from .libs import load
    from .timing import measure

    adapter = load(lib)
    adapter.load()
    rows = []
    for n in sizes:
        xs = W.inputs(n, 2)
        for case in cases:
            variants = _variants(adapter)
            if kernel and adapter.name == "nuvec" and case not in W.CHAINS and case != "scale":
                variants = variants + [KERNEL]
            for variant in variants:
                k = n_inputs(case)
                try:
                    thunk = _thunk(adapter, case, xs[:k], variant)
                    thunk()
                    adapter.settle()  # kernels built off the calling thread: before timing
                    t = measure(thunk, **TIMING[mode])
                    row = {"status": "ok", "median_s": t["median"], "min_s": t["min"]}
                except Exception as exc:  # reported, never hidden
                    row = {"status": "error", "why": f"{type(exc).__name__}: {exc}"[:200]}
                rows.append(dict(row, lib=lib, variant=variant, case=case, n=n))
    return rows


def _run_worker(
    lib: str,
    threads: int,
    sizes: list[int],
    mode: str,
    peer_path: list[str] | None = None,
    cases: tuple[str, ...] = CASES,
    kernel: bool = False,
) -> list[dict[str, Any]]:
    from .runner import Settings, worker_env

    with tempfile.TemporaryDirectory(prefix="nvbench-cached-") as tmp:
        settings = Settings(
            cfg={},
            threads=threads,
            pin=False,
            keep_blas_env=False,
            timeout_s=600,
            scratch=Path(tmp),
        )
        env = worker_env(settings, Path(tmp))
        if peer_path:
            env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], *peer_path])
        cmd = [sys.executable, "-m", "benchmarks.cached", "--worker", lib, "--mode", mode]
        cmd += ["--sizes", ",".join(map(str, sizes)), "--cases", ",".join(cases)]
        cmd += ["--kernel"] if kernel else []
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
        except subprocess.TimeoutExpired:
            return [{"status": "not available", "lib": lib, "why": "worker ran past 1800 s"}]
    if r.returncode != 0:
        why = (r.stderr or r.stdout).strip().splitlines()[-1:] or [f"exit {r.returncode}"]
        return [{"status": "not available", "lib": lib, "why": why[0][:200]}]
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    return [dict(row, threads=threads) for row in rows]


def _size(n: int) -> str:
    return f"{n // 2**20}M" if n >= 2**20 else f"{n // 2**10}K"


def table(rows: list[dict[str, Any]]) -> str:
    """One line per (case, size, threads): milliseconds per library, nuvec's best over the best
    peer's (below 1: nuvec is faster)."""
    ok = [r for r in rows if r["status"] == "ok"]
    labels = sorted({r["variant"] for r in ok}, key=lambda v: (v.startswith("n"), v))
    lines = [
        "| case | n | threads | "
        + " | ".join(f"{v} ms" for v in labels)
        + " | nuvec / best peer |",
        "| --- " * (4 + len(labels)) + "|",
    ]
    keys = sorted(
        {(r["case"], r["n"], r["threads"]) for r in ok},
        key=lambda k: (ALL_CASES.index(k[0]), k[1], k[2]),
    )
    for case, n, th in keys:
        got = {
            r["variant"]: r["median_s"]
            for r in ok
            if (r["case"], r["n"], r["threads"]) == (case, n, th)
        }
        ours = [v for lib, v in got.items() if lib.startswith(("nuvec", "nv."))]
        peers = [v for lib, v in got.items() if not lib.startswith(("nuvec", "nv."))]
        ratio = f"{min(ours) / min(peers):.2f}" if ours and peers else "-"
        cells = [f"{got[v] * 1e3:.3f}" if v in got else "-" for v in labels]
        lines.append(f"| {case} | {_size(n)} | {th} | " + " | ".join(cells) + f" | {ratio} |")
    bad = [r for r in rows if r["status"] != "ok"]
    for r in bad:
        lines.append(
            f"not measured: {r.get('lib')} {r.get('variant', '')} {r.get('case', '')}: {r['why']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cached", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="no 16M rows, fewer samples")
    ap.add_argument("--libs", default=",".join(DEFAULT_LIBS))
    ap.add_argument("--threads", default=None, help="comma-separated counts (default: 1 and all)")
    ap.add_argument("--sizes", default=None, help="comma-separated element counts")
    ap.add_argument("--json", default=None, help="write every row to this file")
    ap.add_argument(
        "--cases",
        default="default",
        help="default (single ops and chains), math (log family, power), all, or case names",
    )
    ap.add_argument(
        "--kernel", action="store_true", help="also time nuvec's single-op kernels alone"
    )
    ap.add_argument(
        "--peer-path",
        action="append",
        default=[],
        help="a folder with peers installed outside site-packages (repeatable)",
    )
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="full", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    mode = "quick" if a.quick else a.mode
    sizes = [int(s) for s in a.sizes.split(",")] if a.sizes else list(SIZES[mode])
    try:
        cases = select(a.cases)
    except ValueError as exc:
        ap.error(str(exc))
    if a.worker:
        print(json.dumps(worker(a.worker, sizes, mode, cases, a.kernel)))
        return 0
    cores = os.cpu_count() or 1
    threads = [int(t) for t in a.threads.split(",")] if a.threads else sorted({1, cores})
    before = os.getloadavg()
    rows = []
    for th in threads:
        for lib in a.libs.split(","):
            print(f"{lib}, {th} thread(s) ...", file=sys.stderr, flush=True)
            rows += _run_worker(lib, th, sizes, mode, a.peer_path, cases, a.kernel)
    after = os.getloadavg()
    print(table(rows))
    print(
        f"\n{cores} cores; load average (1, 5, 15 min) before {before[0]:.2f} {before[1]:.2f} "
        f"{before[2]:.2f}, after {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}"
    )
    if a.json:
        doc = {"load_before": before, "load_after": after, "cores": cores, "rows": rows}
        Path(a.json).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
