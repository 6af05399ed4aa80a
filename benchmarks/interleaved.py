"""nuvec against NumPy on single ops and the chains, the two timed in turn in one process.

    PYTHONPATH=. python benchmarks/interleaved.py                  # every case, 4M float32
    PYTHONPATH=. N=65536 REPS=200 python benchmarks/interleaved.py tanh gelu_tanh

Cases: the single ops tanh, exp, erf, sigmoid, log, sqrt, sin, cos, abs, negative (one float32
array; log and sqrt on positive values), add, multiply, divide, maximum, less (two arrays),
scale and add_scalar (an array and a Python float), then the chains of benchmarks.workloads.

One thread (NUVEC_NUM_THREADS=1 and OMP_NUM_THREADS=1 unless set). Each case runs nuvec (the
eager op, or nv.compile for a chain of benchmarks.workloads) and then NumPy (SciPy's erf and
expit), REPS rounds over all cases, and keeps each one's minimum: on a shared machine the load
moves both sides of a ratio together. A quick look between commits, next to benchmarks.cached's
full runs (one process per library). Run it with PYTHONPATH=. so that the checkout's nuvec is
the one imported.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable

os.environ.setdefault("NUVEC_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.special as sps  # noqa: E402

import nuvec as nv  # noqa: E402
from benchmarks import workloads as W  # noqa: E402


class NumPyF:
    """benchmarks.workloads' namespace over NumPy and SciPy."""

    exp = staticmethod(np.exp)
    tanh = staticmethod(np.tanh)
    erf = staticmethod(sps.erf)
    sigmoid = staticmethod(sps.expit)


class NuvecF:
    """benchmarks.workloads' namespace over nuvec."""

    exp = staticmethod(nv.exp)
    tanh = staticmethod(nv.tanh)
    erf = staticmethod(nv.erf)
    sigmoid = staticmethod(nv.sigmoid)


def evaluated(f: Callable[..., Any], *a: Any) -> Callable[[], Any]:
    """A thunk that calls ``f(*a)`` and evaluates its result."""

    def g() -> Any:
        y = f(*a)
        nv.eval(y)
        return y

    return g


def chosen(table: dict[str, tuple], names: list[str], tool: str) -> list[str]:
    """The cases ``names`` asks for (every case of ``table`` when empty); exits naming any
    unknown one."""
    unknown = [c for c in names if c not in table]
    if unknown:
        raise SystemExit(f"{tool}: unknown case(s) {unknown}; expected some of {list(table)}")
    return names or list(table)


def best_times(table: dict[str, tuple], names: list[str], reps: int) -> dict[str, list[float]]:
    """Each thunk's minimum over ``reps`` rounds that call every case's thunks in turn, after
    two warm-up calls (compiles, buffer caches)."""
    for c in names:
        for f in table[c]:
            f()
            f()
    best = {c: [float("inf")] * len(table[c]) for c in names}
    for _ in range(reps):
        for c in names:
            for j, f in enumerate(table[c]):
                t = time.perf_counter()
                f()
                best[c][j] = min(best[c][j], time.perf_counter() - t)
    return best


def cases(n: int) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """(nuvec thunk, NumPy thunk) per case, on n float32 elements."""
    rng = np.random.default_rng(0)
    xn = (rng.standard_normal(n) * 2).astype(np.float32)
    bn = rng.standard_normal(n).astype(np.float32)
    x, b = nv.array(xn), nv.array(bn)
    nv.eval(x, b)

    out: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {}
    for op in ("tanh", "exp", "erf", "sigmoid"):
        out[op] = (
            evaluated(lambda op=op: getattr(NuvecF, op)(x)),
            lambda op=op: getattr(NumPyF, op)(xn),
        )
    out["scale"] = (evaluated(lambda: x * 2.5), lambda: xn * np.float32(2.5))
    out["add_scalar"] = (evaluated(lambda: x + 2.5), lambda: xn + np.float32(2.5))
    # log and sqrt of |x| + 0.5: positive arguments, the ranges the fast paths serve
    pn = np.abs(xn) + np.float32(0.5)
    p = nv.array(pn)
    nv.eval(p)
    for op in ("log", "sqrt"):
        out[op] = (
            evaluated(lambda op=op: getattr(nv, op)(p)),
            lambda op=op: getattr(np, op)(pn),
        )
    for op in ("sin", "cos", "abs", "negative"):
        out[op] = (
            evaluated(lambda op=op: getattr(nv, op)(x)),
            lambda op=op: getattr(np, op)(xn),
        )
    for op in ("add", "multiply", "divide", "maximum", "less"):
        out[op] = (
            evaluated(lambda op=op: getattr(nv, op)(x, b)),
            lambda op=op: getattr(np, op)(xn, bn),
        )
    for name, ch in W.CHAINS.items():
        fn = nv.compile(lambda *a, ch=ch: ch.fn(NuvecF, *a))
        args, nargs = (x, b)[: ch.n_inputs], (xn, bn)[: ch.n_inputs]
        out[name] = (
            evaluated(lambda fn=fn, args=args: fn(*args)),
            lambda ch=ch, nargs=nargs: ch.fn(NumPyF, *nargs),
        )
    return out


def main(names: list[str]) -> None:
    """Time the named cases (all by default) and print nuvec, NumPy and their ratio."""
    n = int(os.environ.get("N", 1 << 22))
    reps = int(os.environ.get("REPS", 30))
    table = cases(n)
    names = chosen(table, names, "interleaved")
    best = best_times(table, names, reps)
    print(f"nuvec {nv.__file__}  N={n}  reps={reps}  load {os.getloadavg()[0]:.2f}")
    print(f"{'case':10s} {'nuvec ms':>9s} {'numpy ms':>9s} {'numpy/nuvec':>11s}")
    for c in names:
        a, b = best[c]
        print(f"{c:10s} {a * 1e3:9.3f} {b * 1e3:9.3f} {b / a:11.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
