"""Repeated timings with warm-up, plus the CPU time and page faults they cost.

Usage::

    m = measure(lambda: np.exp(x), samples=7, warmup=2, min_sample_s=0.05)
    m["median"], m["min"]          # seconds per call
    m["cpu_per_call"]              # user+system seconds per call (all threads)
    m["minflt_per_call"]           # minor page faults per call
"""

from __future__ import annotations

import gc
import math
import resource
import statistics
import time
from typing import Any, Callable


def rusage() -> tuple[float, int, int]:
    """(user+system CPU seconds, minor faults, major faults) of this process, all threads."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_minflt, r.ru_majflt


def measure(
    thunk: Callable[[], Any],
    *,
    samples: int,
    warmup: int,
    min_sample_s: float,
    budget_s: float = 8.0,
    max_calls: int = 200_000,
) -> dict[str, Any]:
    """Time ``thunk`` after ``warmup`` calls; each sample repeats it enough to last
    ``min_sample_s``.

    Returns per-call seconds for every sample, their median and minimum, per-call CPU time and
    page faults over all timed calls, and the last call's result (``"last"``). ``budget_s``
    caps the timed part: a slow workload gets fewer samples (never fewer than 3) rather than
    stretching the run.
    """
    if samples < 1 or warmup < 0:
        raise ValueError(f"measure: samples must be >= 1 and warmup >= 0, got {samples}, {warmup}")
    for _ in range(warmup):
        thunk()
    t0 = time.perf_counter()
    thunk()
    one = max(time.perf_counter() - t0, 1e-9)
    calls = int(min(max_calls, max(1, math.ceil(min_sample_s / one))))
    affordable = int(budget_s / (one * calls))
    samples = max(min(samples, affordable), min(3, samples))

    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection inside one sample would be noise, not the library's cost
    try:
        cpu0, min0, maj0 = rusage()
        times = []
        last = None
        for _ in range(samples):
            last = None  # the previous result may be freed before the next call, as in a loop
            t0 = time.perf_counter()
            for _ in range(calls):
                last = thunk()
            times.append((time.perf_counter() - t0) / calls)
        cpu1, min1, maj1 = rusage()
    finally:
        if gc_was_enabled:
            gc.enable()
    n = samples * calls
    return {
        "samples": times,
        "calls_per_sample": calls,
        "median": statistics.median(times),
        "min": min(times),
        "cpu_per_call": (cpu1 - cpu0) / n,
        "minflt_per_call": (min1 - min0) / n,
        "majflt_per_call": (maj1 - maj0) / n,
        "last": last,  # the last call's result, for checking it (the caller pops it)
    }


def children_cpu() -> float:
    """CPU seconds of finished child processes (a C compiler that a library ran)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def once(thunk: Callable[[], Any]) -> dict[str, Any]:
    """Time a single call (first-call latency), with its CPU time (own and its child processes')
    and page faults."""
    cpu0, min0, maj0 = rusage()
    child0 = children_cpu()
    t0 = time.perf_counter()
    thunk()
    t = time.perf_counter() - t0
    cpu1, min1, maj1 = rusage()
    return {
        "samples": [t],
        "calls_per_sample": 1,
        "median": t,
        "min": t,
        "cpu_per_call": cpu1 - cpu0,
        "child_cpu": children_cpu() - child0,
        "minflt_per_call": min1 - min0,
        "majflt_per_call": maj1 - maj0,
    }
