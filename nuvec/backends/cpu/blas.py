"""Sharing the cores with the BLAS library's threads.

NumPy's OpenBLAS keeps its worker threads busy-waiting for the next call for a while after
each call (2**28 CPU cycles by default, about 0.1 s; ``OPENBLAS_THREAD_TIMEOUT=n`` makes it
2**n), and Intel's OpenMP runtime under MKL does the same (``KMP_BLOCKTIME``, 200 ms). An
element-wise launch that splits its work over every core in that window puts its workers on
cores a spinning BLAS thread holds: the launch waits for them, and the next matmul waits in
turn. On a 2-core machine a compiled MLP training step (matmuls between small element-wise
kernels) measured faster with single-threaded element-wise kernels, the matmuls included.

So after each BLAS call the CPU backend tells the kernel launcher (``_eltwise.share_cores``)
that the BLAS workers hold their cores for the spin window: until then a launch uses only the
cores they leave. Kernels far from any matmul keep every thread. Results do not depend on the
thread count (each element is computed the same way on any thread).
"""
from __future__ import annotations

import os

import numpy as np

from ._eltwise import share_cores

_CYCLES_PER_S = 2.0e9      # a slow clock: the longest plausible window for a cycle count


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _blas_name() -> str:
    try:
        return str(np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]).lower()
    except (AttributeError, KeyError, TypeError):  # pragma: no cover - an unusual NumPy build
        return ""


def _env_int(*names: str) -> int | None:
    for name in names:
        v = os.environ.get(name, "").strip()
        if v:
            try:
                return int(v.split(",")[0])
            except ValueError:
                return None
    return None


def spin_window() -> tuple[float, int]:
    """(seconds the BLAS workers busy-wait after a call, how many of them), for NumPy's BLAS;
    (0.0, 0) when it does not spin or runs single-threaded."""
    name = _blas_name()
    cores = _cpu_count()
    if "openblas" in name:
        threads = _env_int("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
        n = _env_int("OPENBLAS_THREAD_TIMEOUT")
        cycles = 2 ** min(max(n, 4), 30) if n else 2 ** 28
        seconds = cycles / _CYCLES_PER_S
    elif "mkl" in name:
        threads = _env_int("MKL_NUM_THREADS", "OMP_NUM_THREADS")
        ms = _env_int("KMP_BLOCKTIME")
        seconds = (200 if ms is None else ms) / 1000.0
    else:
        return 0.0, 0
    workers = min(threads or cores, cores) - 1       # the calling thread does not spin
    return (seconds, workers) if workers > 0 and seconds > 0 else (0.0, 0)


_SECONDS, _WORKERS = spin_window()
_LEFT = max(1, _cpu_count() - _WORKERS)


def after_call() -> None:
    """Records a BLAS call that just returned (its workers now spin for the window)."""
    if _WORKERS:
        share_cores(_SECONDS, _LEFT)
