"""Accuracy of nuvec's float64 math library (nv_math64.h) against x87 80-bit long double.

Sampled, 5.7M inputs per function and up to 1.1M more where it has hard regions of its own:
random bit patterns (every exponent, subnormals, infinities, NaN), the function's usual range,
and its hard regions (the ends of exp's reduction interval, the overflow and underflow
thresholds, subnormal results, m near sqrt(2) and x near 1 for the logarithms, the ends of the
polynomial ranges; for the trigonometric, inverse, erf and erfinv see _hard_regions), each
also negated. The reference is NumPy's long double function (glibc's x87 ``expl``, ``logl``,
``sinl``, ...; for erf glibc's ``erfl`` through a loop built with the C compiler, for erfinv
Newton steps on ``erfl`` and ``erfcl``: 64-bit significands, within about 2^-10 ulp of
float64; sinl, cosl and tanl reduce huge arguments exactly, which
test_float64_trig_huge_arguments_against_mpmath checks), so the error is measured as a fraction
of a float64 ulp rather than as a distance to a rounded reference. Bounds: exp, log, power,
sin, cos, arctan, arctan2, arcsin, arccos, arcsinh, arccosh, arctanh, erf below 1 ulp
(faithfully rounded: the result is one of the two float64 around the exact value), the others
(erfinv too) within 2 ulp (an error below 2 ulp puts the result within 2 ulp of the correctly
rounded one), logaddexp where it cancels within 2 ulp of the result plus half an ulp of max(x,
y). Special values are checked against NumPy (SciPy for sigmoid, erf and erfinv) exactly. Run
with ``-s`` to see the measured maxima.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import tempfile
import warnings

import numpy as np
import pytest
import scipy.special as sps

from engine_util import run1

L = np.longdouble
# the reference's own error, in float64 ulps: the x87 functions are within a few units of
# their 64-bit significand
REF_ERROR = 2.0**-9

pytestmark = pytest.mark.skipif(
    np.finfo(L).nmant < 63, reason="needs an 80-bit long double (x87) as the reference"
)

BOUND = {
    "exp": 1.0,
    "log": 1.0,
    "expm1": 2.0,
    "log1p": 2.0,
    "log2": 2.0,
    "log10": 2.0,
    "sigmoid": 2.0,
    "tanh": 2.0,
    "sinh": 2.0,
    "cosh": 2.0,
    "sin": 1.0,
    "cos": 1.0,
    "tan": 2.0,
    "arctan": 1.0,
    "arcsin": 1.0,
    "arccos": 1.0,
    "arcsinh": 1.0,
    "arccosh": 1.0,
    "arctanh": 1.0,
    "erf": 1.0,
    "erfinv": 2.0,
}
REF = {
    "exp": np.exp,
    "log": np.log,
    "expm1": np.expm1,
    "log1p": np.log1p,
    "log2": np.log2,
    "log10": np.log10,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "arctan": np.arctan,
    "arcsin": np.arcsin,
    "arccos": np.arccos,
    "arcsinh": np.arcsinh,
    "arccosh": np.arccosh,
    "arctanh": np.arctanh,
    "erf": lambda x: _erfl(x),
    "erfinv": lambda x: _erfinvl(x),
}
LN2 = float(np.log(L(2)))


@functools.cache
def _erfl_library() -> ctypes.CDLL:
    """glibc's erfl over an array (NumPy has no erf, SciPy's is float64, and ctypes returns a
    long double result as a Python float): a loop built here with the C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("erf's long double reference needs a C compiler")
    d = tempfile.mkdtemp(prefix="nv_erfl_")
    src, lib = os.path.join(d, "erfl.c"), os.path.join(d, "erfl.so")
    with open(src, "w") as f:
        f.write(
            "#include <math.h>\n"
            "void erfl_array(const long double *x, long double *y, long n)\n"
            "{ for (long i = 0; i < n; i++) y[i] = erfl(x[i]); }\n"
            "void erfcl_array(const long double *x, long double *y, long n)\n"
            "{ for (long i = 0; i < n; i++) y[i] = erfcl(x[i]); }\n"
        )
    subprocess.run([cc, "-O2", "-shared", "-fPIC", src, "-o", lib, "-lm"], check=True)
    return ctypes.CDLL(lib)


def _erfl(x: np.ndarray, name: str = "erfl_array") -> np.ndarray:
    xl = np.ascontiguousarray(x, dtype=L)
    out = np.empty_like(xl)
    ptr = ctypes.c_void_p
    fn = getattr(_erfl_library(), name)
    fn(ptr(xl.ctypes.data), ptr(out.ctypes.data), ctypes.c_long(xl.size))
    return out


def _erfinvl(x: np.ndarray) -> np.ndarray:
    """erfinv in long double: SciPy's float64 value refined by two Newton steps on erfl
    (erfcl from |x| = 1/2 on, with 1 - |x| exact), each correcting all but about the square
    of the error, so glibc's erfl and erfcl decide the reference's own error."""
    a = np.abs(x.astype(L))
    inside = a < 1
    ac = np.where(inside, a, L(0))
    y = np.abs(sps.erfinv(ac.astype(np.float64))).astype(L)
    tail = ac >= 0.5
    for _ in range(2):
        f = np.where(tail, (1 - ac) - _erfl(y, "erfcl_array"), _erfl(y) - ac)  # erf(y) - a
        y = y - f / (2 / np.sqrt(np.pi, dtype=L) * np.exp(-y * y))
    y = np.where(inside, y, np.where(a == 1, L(np.inf), L(np.nan)))
    return np.where(np.isnan(x), x.astype(L), np.copysign(y, x.astype(L)))


def ulp_error(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in float64 ulps of ref (ref in long double; the ulp of ref's float64 binade,
    2^-1074 below the normal range); 0 where both are the same infinity or both NaN, inf where
    only one is NaN."""
    with np.errstate(over="ignore", invalid="ignore"):
        refd = ref.astype(np.float64)
        _, e = np.frexp(np.abs(ref))
        ulp = np.ldexp(L(1), np.clip(e.astype(np.int64) - 1, -1022, 1023) - 52)
        d = np.abs(got.astype(L) - ref) / ulp
        same = (got.astype(L) == ref) | (np.isnan(got) & np.isnan(ref))
    same |= np.isinf(got) & (got == refd)  # beyond float64's range: the infinity itself
    d = np.where(same, 0, d)
    return np.where(np.isnan(d), np.inf, d).astype(np.float64)


HALF_PI = np.pi / 2


def _hard_regions(op: str, rng: np.random.Generator) -> list[np.ndarray]:
    """The inputs where each trigonometric and inverse function's steps change or lose the
    most: for sin, cos, tan every binade up to the largest double (the Payne-Hanek reduction
    from 2^32 on), the Cody-Waite bound, and the doubles nearest multiples of pi/2 (the
    reduced argument cancelling, down to 2^-61 for 6381956970095103 2^797); for the others
    their domain edges and the bounds between their reductions."""
    n = 1 << 17
    if op in ("sin", "cos", "tan"):
        k = rng.integers(1, 1 << 40, n).astype(np.float64)
        return [
            np.exp2(rng.uniform(0, 1024, n)),
            np.exp2(rng.uniform(31, 33, 1 << 14)),
            k * HALF_PI,
            np.nextafter(k * HALF_PI, np.inf),
            rng.integers(1, 1000, 1 << 14) * HALF_PI,
            np.array([6381956970095103 * 2.0**797, 5.319372648326541e255, 1e22]),
        ]
    if op in ("arctan",):
        return [
            np.sqrt(2) - 1 + rng.uniform(-1e-6, 1e-6, n),
            np.sqrt(2) + 1 + rng.uniform(-1e-6, 1e-6, n),
            np.exp2(rng.uniform(-1074, 1024, n)),
        ]
    if op in ("arcsin", "arccos", "arctanh"):
        return [1 - np.exp2(rng.uniform(-53, -1, n)), 0.5 + rng.uniform(-1e-6, 1e-6, n)]
    if op == "erf":
        # the bounds between erf's polynomial and its three erfc intervals, and where it
        # rounds to 1
        ends = np.array([0.75, 1.75, 3.25, 5.92])
        return [np.repeat(ends, n // 4) + rng.uniform(-1e-3, 1e-3, n), rng.uniform(0, 6, n)]
    if op == "erfinv":
        # the bounds between its three polynomials (w = -log(1 - x^2) at 6.25 and 16), the
        # two forms of 1 - x^2 (x = 1/2), the tail up to the last double below 1, tiny x
        ends = np.sqrt(-np.expm1(-np.array([6.25, 16.0])))
        return [
            np.repeat(ends, n // 2) * (1 + rng.uniform(-1e-9, 1e-9, n)),
            0.5 + rng.uniform(-1e-6, 1e-6, 1 << 14),
            1 - np.exp2(rng.uniform(-53, -1, n)),
            rng.uniform(0, 1, n),
            np.exp2(rng.uniform(-1074, -1, 1 << 14)),
        ]
    if op == "arcsinh":
        return [np.exp2(rng.uniform(-40, 40, n)), np.exp2(rng.uniform(27, 29, 1 << 14))]
    if op == "arccosh":
        return [1 + np.exp2(rng.uniform(-52, 0, n)), np.exp2(rng.uniform(27, 29, 1 << 14))]
    return []


def _samples(op: str, rng: np.random.Generator) -> np.ndarray:
    n = 1 << 18
    parts = [
        rng.integers(0, 1 << 63, 1 << 20, dtype=np.int64).view(np.float64),
        rng.uniform(-1, 1, n),
        rng.standard_normal(n) * 10,
        rng.uniform(-750, 750, n),
        np.exp(rng.uniform(-745, 709, n)),
        rng.uniform(-1e-5, 1e-5, 1 << 14),
        # exp's reduction: r near +-ln2/2 and near 0
        (rng.integers(-1100, 1100, n) + 0.5 + rng.uniform(-1e-6, 1e-6, n)) * LN2,
        (rng.integers(-1100, 1100, 1 << 14) + rng.uniform(-1e-9, 1e-9, 1 << 14)) * LN2,
        # overflow and underflow thresholds, subnormal results
        rng.uniform(708, 711, 1 << 14),
        rng.uniform(-746, -708, 1 << 16),
        # m near sqrt(2) (the logarithms' reduction boundary) and x near 1
        np.sqrt(2)
        * np.exp2(rng.integers(-1074, 1024, n).astype(np.float64))
        * (1 + rng.uniform(-1e-3, 1e-3, n)),
        1 + rng.uniform(-1e-3, 1e-3, 1 << 16),
        # the ends of sinh's polynomial, tanh's and sigmoid's saturation
        rng.uniform(0.9, 1.1, 1 << 14),
        rng.uniform(18, 21, 1 << 14),
        rng.uniform(35, 40, 1 << 14),
        np.array([0.0, np.inf, np.nan, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308]),
    ]
    x = np.concatenate(parts + _hard_regions(op, rng))
    return np.concatenate([x, -x])


@pytest.mark.parametrize("op", list(BOUND))
def test_float64_within_bound(op: str) -> None:
    rng = np.random.default_rng(sorted(BOUND).index(op))
    x = _samples(op, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = run1(op, x)
        ref = REF[op](x.astype(L))
    d = ulp_error(got, ref)
    k = int(np.argmax(d))
    print(f"{op}[float64]: max {d[k]:.3f} ulp at {x[k]!r} over {x.size} inputs")
    assert d[k] + REF_ERROR < BOUND[op], f"{op}: {d[k]} ulp at {x[k]!r}: got {got[k]!r}"


def test_float64_logaddexp() -> None:
    rng = np.random.default_rng(11)
    n = 1 << 18

    def draws() -> list[np.ndarray]:
        return [
            rng.uniform(-5, 5, n),
            rng.uniform(-800, 800, n),
            rng.standard_normal(n) * 1e3,
            rng.integers(0, 1 << 63, n, dtype=np.int64).view(np.float64),
            -LN2 + rng.uniform(-0.05, 0.05, n),
        ]

    x = draws()
    y = draws()
    # e^x + e^y near 1: results near 0, the deepest cancellation
    xc = -np.exp(rng.uniform(np.log(1e-12), np.log(40), n))
    x.append(xc)
    y.append(np.log(-np.expm1(xc.astype(L))).astype(np.float64))
    xa, ya = np.concatenate(x), np.concatenate(y)
    xa, ya = np.concatenate([xa, -xa]), np.concatenate([ya, ya])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = run1("logaddexp", xa, ya)
        ref = np.logaddexp(xa.astype(L), ya.astype(L))
    d = ulp_error(got, ref)
    m = np.maximum(xa, ya)
    # no cancellation: m >= 0, or the result at least |m| / 2
    with np.errstate(invalid="ignore"):
        plain = (m >= 0) | (np.abs(ref) >= np.abs(m) / 2) | np.isnan(m)
    k = int(np.argmax(np.where(plain, d, 0)))
    print(f"logaddexp[float64]: max {d[k]:.3f} ulp without cancellation, at {xa[k]!r}, {ya[k]!r}")
    assert d[k] + REF_ERROR < 2, (xa[k], ya[k], got[k])
    # with it: 2 ulp of the result and a fraction of an ulp of m
    err = np.abs(got.astype(L) - ref)
    ulp_res = np.where(d > 0, err / np.where(d > 0, d, 1), np.inf)
    with np.errstate(invalid="ignore"):
        excess = np.where(plain, 0, (err - 2 * ulp_res) / np.spacing(np.abs(m)).astype(L))
    k = int(np.argmax(excess))
    print(f"logaddexp[float64]: cancelling, 2 ulp + {max(excess[k], 0):.3f} ulp of max(x, y)")
    assert excess[k] < 0.5, (xa[k], ya[k], got[k])


def test_float64_arctan2() -> None:
    """Within 1 ulp over every quadrant, magnitudes far apart and close (the reductions' bounds
    at ratios tan(pi/8) and tan(3pi/8)), huge and tiny pairs; C99's special values exactly."""
    rng = np.random.default_rng(13)
    n = 1 << 19
    x = [
        rng.standard_normal(n),
        rng.integers(0, 1 << 63, n, dtype=np.int64).view(np.float64),
        np.exp(rng.uniform(-745, 709, n)),
        rng.uniform(-1, 1, n),
    ]
    y = [
        rng.standard_normal(n),
        rng.integers(0, 1 << 63, n, dtype=np.int64).view(np.float64),
        np.exp(rng.uniform(-745, 709, n)),
        rng.uniform(-1, 1, n),
    ]
    t = np.exp(rng.uniform(-700, 700, n))
    for ratio in (np.sqrt(2) - 1, np.sqrt(2) + 1, 1.0):
        x.append(t)
        y.append(t * ratio * (1 + rng.uniform(-1e-6, 1e-6, n)))
    xa, ya = np.concatenate(x), np.concatenate(y)
    sx, sy = rng.choice([-1.0, 1.0], xa.size), rng.choice([-1.0, 1.0], xa.size)
    with np.errstate(invalid="ignore"):  # signaling NaNs among the random bit patterns
        xa, ya = xa * sx, ya * sy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = run1("arctan2", ya, xa)
        ref = np.arctan2(ya.astype(L), xa.astype(L))
    d = ulp_error(got, ref)
    k = int(np.argmax(d))
    print(f"arctan2[float64]: max {d[k]:.3f} ulp at {ya[k]!r}, {xa[k]!r} over {xa.size} inputs")
    assert d[k] + REF_ERROR < 1, (ya[k], xa[k], got[k])
    v = [0.0, 1.0, 2.5, np.inf, np.nan, 5e-324, 1e-310, 2.2250738585072014e-308, 1e300, BIG]
    v = np.array(v + [-a for a in v])
    yv, xv = np.repeat(v, v.size), np.tile(v, v.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = run1("arctan2", yv, xv)
        want = np.arctan2(yv, xv)
    same = (got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(yv[~same], xv[~same], got[~same], want[~same]))


def test_float64_trig_huge_arguments_against_mpmath() -> None:
    """The long double reference's own reduction checked too: sin, cos and tan of arguments
    over every binade to the largest double against mpmath at 2000 bits (which reduces
    exactly), the doubles closest to a multiple of pi/2 included."""
    mp = pytest.importorskip("mpmath")
    rng = np.random.default_rng(14)
    x = np.exp2(rng.uniform(0, 1024, 400)) * rng.choice([-1.0, 1.0], 400)
    x = np.concatenate([x, [6381956970095103 * 2.0**797, 5.319372648326541e255, BIG]])
    with mp.workprec(2000):
        for op, f in (("sin", mp.sin), ("cos", mp.cos), ("tan", mp.tan)):
            got = run1(op, x)
            for g, xi in zip(got, x):
                r = f(mp.mpf(float(xi)))
                ulp = mp.mpf(float(np.spacing(abs(float(r)))))
                err = abs(mp.mpf(float(g)) - r) / ulp
                assert err < BOUND[op], (op, xi, g, float(err))


def _power_samples(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n = 1 << 19
    xs = [np.exp(rng.uniform(-30, 30, n)), rng.integers(0, 0x7FF0 << 48, n).view(np.float64)]
    ys = [rng.standard_normal(n) * 10, rng.uniform(-2, 2, n)]
    # near 1 with large exponents, and the usual range
    xs += [1 + rng.uniform(-1e-3, 1e-3, n), rng.uniform(0.5, 2, n)]
    ys += [rng.uniform(-5e5, 5e5, n), rng.uniform(-1000, 1000, n)]
    # y log x near the overflow and underflow thresholds (subnormal results too)
    xv = np.exp(rng.uniform(-700, 700, n))
    xs.append(xv)
    ys.append(rng.uniform(700, 745, n) / np.log(xv) * rng.choice([-1.0, 1.0], n))
    # small integer powers of either sign
    xs.append(rng.standard_normal(n) * 10)
    ys.append(rng.integers(-8, 9, n).astype(np.float64))
    return np.concatenate(xs), np.concatenate(ys)


def test_float64_power() -> None:
    """Below 1 ulp (faithful), and correctly rounded but where the exact value is within a few
    hundredths of an ulp of a rounding boundary (y log x is carried to about 2^-66 of itself)."""
    x, y = _power_samples(np.random.default_rng(12))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = run1("power", x, y)
        ref = np.power(x.astype(L), y.astype(L))
    d = ulp_error(got, ref)
    k = int(np.argmax(d))
    with np.errstate(over="ignore"):
        rounded = ref.astype(np.float64)
    fin = np.isfinite(rounded)
    exact = np.mean(got[fin] == rounded[fin])
    print(
        f"power[float64]: max {d[k]:.3f} ulp at {x[k]!r}, {y[k]!r}; {exact:.2%} correctly rounded"
    )
    assert d[k] + REF_ERROR < 1, (x[k], y[k], got[k])
    assert exact >= 0.98


def test_float64_power_special_values() -> None:
    """Every pair of special and ordinary values: as NumPy (C99's pow) gives the limits, -0
    and NaN included; other results within 1 ulp of NumPy's."""
    v = [0.0, 1.0, 2.0, 0.5, 3.0, 2.5, np.inf, np.nan, 1e-310, 1e308, 2.0**53, 2.0**53 + 2]
    v += [1e-300, 0.999, 1.001, 709.0, 1075.0, 1024.0]
    v = np.array(v + [-a for a in v])
    x, y = np.repeat(v, v.size), np.tile(v, v.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = run1("power", x, y)
        want = np.power(x, y)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), list(zip(x[np.isnan(got) != nan], y))
    limit = ~nan & (~np.isfinite(want) | (want == 0) | (np.abs(want) == 1))
    bad = limit & (got.view(np.uint64) != want.view(np.uint64))
    assert not bad.any(), list(zip(x[bad], y[bad], got[bad]))
    rest = ~nan & ~limit
    steps = np.abs(got[rest].view(np.int64) - want[rest].view(np.int64))
    assert steps.max() <= 1


# ---- special values, as NumPy gives them ------------------------------------------------------

BIG = np.finfo(np.float64).max
SPECIALS = np.array(
    [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        1.0,
        -1.0,
        2.0,
        5e-324,
        -5e-324,
        2.2250738585072014e-308,
        BIG,
        -BIG,
        1e-300,
        709.782712893384,  # exp: the largest finite result
        709.7827128933841,  # exp: inf
        710.4758600739439,  # sinh, cosh: the largest finite result
        710.475860073944,  # sinh, cosh: inf
        -745.1332191019411,  # exp: the smallest subnormal
        -745.1332191019412,  # exp: 0
        -708.3964185322641,  # exp: near the smallest normal
        -746.0,
        -1e300,
        1e300,
        -1 + 2.0**-53,
        -1 - 2.0**-52,
        2.0**-60,
        -(2.0**-60),
    ]
)
NUMPY = {op: getattr(np, op) for op in REF if op not in ("sigmoid", "erf", "erfinv")}
NUMPY.update(sigmoid=sps.expit, erf=sps.erf, erfinv=sps.erfinv)


@pytest.mark.parametrize("op", list(REF))
def test_float64_special_values(op: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = run1(op, SPECIALS)
        want = NUMPY[op](SPECIALS)
    # the limits (NaN, infinities, zeros, +-1) exactly as NumPy gives them, -0 included, where
    # NumPy's is the correctly rounded result, sign of zero included (SciPy's expit underflows
    # to 0 early, its erfinv(-0) is +0); the other results within 2 ulp of long double (neither
    # library is correctly rounded everywhere)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rounded = REF[op](SPECIALS.astype(L)).astype(np.float64)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), (op, SPECIALS[np.isnan(got) != nan])
    limit = (
        ~nan
        & (~np.isfinite(want) | (want == 0) | (np.abs(want) == 1))
        & (rounded.view(np.uint64) == want.view(np.uint64))
    )
    bad = limit & (got.view(np.uint64) != want.view(np.uint64))
    assert not bad.any(), (op, SPECIALS[bad], got[bad])
    rest = ~nan & ~limit
    assert (ulp_error(got[rest], REF[op](SPECIALS[rest].astype(L))) < 2).all(), op


def test_float64_exact_results() -> None:
    k = np.arange(-1074, 1024)
    assert np.array_equal(run1("log2", np.exp2(k.astype(np.float64))), k.astype(np.float64))
    p = np.arange(0, 23)
    assert np.array_equal(run1("log10", 10.0**p), p.astype(np.float64))
    assert np.array_equal(run1("exp", np.zeros(3)), np.ones(3))
    assert np.array_equal(run1("log", np.ones(3)), np.zeros(3))
    assert run1("logaddexp", np.array([-np.inf]), np.array([-np.inf]))[0] == -np.inf
    assert run1("logaddexp", np.array([np.inf]), np.array([-np.inf]))[0] == np.inf


def test_float64_same_bits_vector_body_and_tail() -> None:
    """Every element the same bits whether it falls in the vector body, the scalar tail or a
    strided (blocked) launch."""
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.standard_normal(61) * 300, SPECIALS])
    for op in REF:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            whole = run1(op, x)
            ones = np.concatenate([run1(op, x[i : i + 1]) for i in range(x.size)])
            strided = run1(op, np.repeat(x, 3)[::3])
        assert np.array_equal(whole.view(np.uint64), ones.view(np.uint64)), op
        assert np.array_equal(whole.view(np.uint64), strided.view(np.uint64)), op
