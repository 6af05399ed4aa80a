"""Where the time of a compiled training step goes (run on a machine with a GPU).

    python benchmarks/gpu/profile_step.py                     # nuvec's MLP at batch 256
    python benchmarks/gpu/profile_step.py mlp 8192 --kernels  # and the step's kernels
    python benchmarks/gpu/profile_step.py transformer 32 --lib jax --precision highest

Prints the executable's stats (nuvec), the step's time per call (synced and queued, as
``training.per_step``), the host time of a call alone (queued, the device never waited for
inside the loop), then a cProfile of the calls by own time. ``--kernels`` prints instead the
GPU kernels of the calls, by total device time, as CUPTI sees them through PyTorch's profiler
(kernels replayed inside a CUDA graph included), and a check of the float32 product's
precision against float64 for ``--lib jax``.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.gpu import training  # noqa: E402


def sequence(run, sync) -> None:
    """The GPU kernels of one call of ``run`` in the order they ran, with their device time."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.init()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        sync()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    evs.sort(key=lambda e: e.time_range.start)
    for k, e in enumerate(evs):
        print(f"{k:4d} {e.time_range.elapsed_us():8.2f} us  {e.name[:140]}")


def kernels(run, sync, n: int, top: int) -> None:
    """The GPU kernels of ``n`` calls of ``run``: count and device time per call."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.init()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            run()
        sync()
    rows: dict[str, list[float]] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            r = rows.setdefault(e.name, [0, 0.0])
            r[0] += 1
            r[1] += e.time_range.elapsed_us()
    total = sum(r[1] for r in rows.values())
    count = sum(r[0] for r in rows.values())
    print(f"GPU time per call {total / n:.1f} us in {count / n:.1f} kernels/copies per call")
    for name, (k, us) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"{us / n:9.2f} us {k / n:6.1f}x  {name[:150]}")


def jax_precision(precision: str | None) -> None:
    """Relative error of jax's float32 product (8192x784 @ 784x512) against float64."""
    import contextlib

    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8192, 784)), rng.standard_normal((784, 512))
    with jax.default_matmul_precision(precision) if precision else contextlib.nullcontext():
        out = np.asarray(
            jax.jit(jnp.matmul)(jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32))
        )
    ref = a @ b
    err = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    print(f"jax float32 matmul, precision {precision or 'default'}: rel. error {err:.2e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", nargs="?", default="mlp")
    ap.add_argument("batch", nargs="?", type=int, default=256)
    ap.add_argument("--lib", default="nuvec", help="nuvec, jax or torch")
    ap.add_argument("--precision", default=None, help="jax's default_matmul_precision")
    ap.add_argument("--kernels", action="store_true", help="the GPU kernels, not cProfile")
    ap.add_argument("--sequence", action="store_true", help="one call's kernels in order")
    ap.add_argument("--tape", action="store_true", help="print the compiled step's report")
    ap.add_argument("--top", type=int, default=int(os.environ.get("TOP", "22")))
    a = ap.parse_args()
    case, batch = a.case, a.batch
    run, sync, info = training.train(a.lib, case, batch, compiled=True, precision=a.precision)
    t = training.per_step(run, sync, reps=40)
    ex = info() if info else None
    tag = f"{a.lib} {case} {batch}" + (f" precision {a.precision}" if a.precision else "")
    if ex:
        print(f"{tag}: executable", {k: ex.get(k) for k in sorted(ex)})
    print(f"{tag}: synced {t['synced'] * 1e3:.3f} ms, queued {t['queued'] * 1e3:.3f} ms")
    n = 200
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        run()
    t1 = time.perf_counter()
    sync()
    print(f"{tag}: host time per call {(t1 - t0) / n * 1e6:.1f} us")
    if a.tape and hasattr(run, "inspect"):
        print(run.inspect())
    if a.sequence:
        sequence(run, sync)
    if a.kernels:
        if a.lib == "jax":
            jax_precision(a.precision)
        kernels(run, sync, 50, a.top)
        return
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        run()
    sync()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(a.top)


if __name__ == "__main__":
    main()
