"""nuvec's float64 math against NumPy, the two timed in turn in one process.

    python -m benchmarks.f64_math                 # every op, 1M float64
    N=65536 REPS=200 python -m benchmarks.f64_math exp log

Per op: the eager op (``nv.exp(x)`` then ``nv.eval``), the same op through ``nv.compile``, and
NumPy's ufunc (SciPy's expit for sigmoid, its erf for erf), REPS rounds over all ops, each one's
minimum kept. One thread (NUVEC_NUM_THREADS=1 and OMP_NUM_THREADS=1 unless set). Arguments:
2 x N(0, 1) for exp, expm1, sigmoid, tanh, sinh, cosh, sin, cos, tan, arctan, arcsinh and the
two arrays of logaddexp and arctan2; |2 x N(0, 1)| + 0.5 for log, log2, log10 and power's base
(its exponent 2 x N(0, 1)); |2 x N(0, 1)| for log1p; |2 x N(0, 1)| + 1 for arccosh; U(-1, 1)
for arcsin, arccos, arctanh and erfinv; N(0, 1) for erf; sin_huge: sin of 2^U(0, 1000) (every
block takes the Payne-Hanek reduction); 100 x N(0, 1) and 3 x N(0, 1) for floor_divide and
remainder, and for their 64-bit integer cases (not float64: the result's dtype is the
operands') *_i64: integers below 2^20 in magnitude and divisors below 2^10 (split blocks, one
float64 quotient), *_i64_big: below 2^62 and 2^31 (the full form), *_u64_big: below 2^64 and
2^40. Run from the checkout's root, so that its nuvec is the one imported.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

os.environ.setdefault("NUVEC_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.special as sps  # noqa: E402

import nuvec as nv  # noqa: E402
from benchmarks.interleaved import best_times, chosen, evaluated  # noqa: E402

UNARY = ("exp", "log", "expm1", "log1p", "log2", "log10", "sigmoid", "tanh", "sinh", "cosh")
UNARY += ("sin", "cos", "tan", "arctan", "arcsin", "arccos", "arcsinh", "arccosh", "arctanh")
UNARY += ("erf", "erfinv")
BINARY = ("logaddexp", "power", "arctan2", "floor_divide", "remainder")
#: cases that run an op on arguments of their own: name -> (op, argument)
EXTRA = {"sin_huge": ("sin", "huge")}
for _op in ("floor_divide", "remainder"):
    EXTRA.update({f"{_op}_{k}": (_op, k) for k in ("i64", "i64_big", "u64_big")})
NUMPY: dict[str, Callable[..., Any]] = {
    op: getattr(np, op) for op in UNARY + BINARY if op not in ("sigmoid", "erf", "erfinv")
}
NUMPY["sigmoid"] = sps.expit
NUMPY["erf"] = sps.erf
NUMPY["erfinv"] = sps.erfinv


def cases(n: int) -> dict[str, tuple[Callable[[], Any], Callable[[], Any], Callable[[], Any]]]:
    """(eager, compiled, NumPy) thunks per op, on n float64 elements."""
    rng = np.random.default_rng(0)
    xn = rng.standard_normal(n) * 2
    bn = rng.standard_normal(n) * 2
    args = {"x": xn, "pos": np.abs(xn) + 0.5, "nonneg": np.abs(xn), "ge1": np.abs(xn) + 1}
    args["unit"] = rng.uniform(-1, 1, n)
    args["normal"] = xn / 2
    args["huge"] = np.exp2(rng.uniform(0, 1000, n))
    args["wide"] = xn * 50
    arg_of = {"log": "pos", "log2": "pos", "log10": "pos", "log1p": "nonneg", "power": "pos"}
    arg_of.update(arccosh="ge1", arcsin="unit", arccos="unit", arctanh="unit", erf="normal")
    arg_of.update(erfinv="unit", floor_divide="wide", remainder="wide")
    # the second operand of a binary op: bn, or the integer divisors
    second = {"x": bn, "pos": bn, "wide": bn * 1.5}
    for k, (hi_a, hi_b, dt) in {
        "i64": (2**20, 2**10, np.int64),
        "i64_big": (2**62, 2**31, np.int64),
        "u64_big": (2**64, 2**40, np.uint64),
    }.items():
        lo = 0 if dt == np.uint64 else -hi_a
        args[k] = rng.integers(lo, hi_a, n, dtype=dt)
        d = rng.integers(1, hi_b, n, dtype=dt)
        second[k] = d if dt == np.uint64 else d * rng.choice(np.array([-1, 1], dt), n)

    out = {}
    runs = [(op, op, arg_of.get(op, "x")) for op in UNARY + BINARY]
    runs += [(name, op, arg) for name, (op, arg) in EXTRA.items()]
    for name, op, arg in runs:
        npa = [args[arg]] + ([second[arg]] if op in BINARY else [])
        nva = [nv.array(a, dtype=nv.float64) if a.dtype == np.float64 else nv.array(a) for a in npa]
        nv.eval(*nva)
        fn = getattr(nv, op)
        out[name] = (
            evaluated(fn, *nva),
            evaluated(nv.compile(lambda *a, fn=fn: fn(*a)), *nva),
            lambda op=op, npa=npa: NUMPY[op](*npa),
        )
    return out


def main(names: list[str]) -> None:
    n = int(os.environ.get("N", 1 << 20))
    reps = int(os.environ.get("REPS", 30))
    table = cases(n)
    names = chosen(table, names, "f64_math")
    best = best_times(table, names, reps)
    print(f"nuvec {nv.__file__}  N={n}  float64  reps={reps}  load {os.getloadavg()[0]:.2f}")
    assert all(table[c][0]().dtype == nv.float64 for c in names if c not in EXTRA or "64" not in c)
    print(f"{'op':22s} {'eager ms':>9s} {'compiled':>9s} {'numpy ms':>9s} {'numpy/eager':>11s}")
    for c in names:
        a, b, m = best[c]
        print(f"{c:22s} {a * 1e3:9.3f} {b * 1e3:9.3f} {m * 1e3:9.3f} {m / a:11.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
