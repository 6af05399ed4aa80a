"""Every element-wise op over every dtype the engine supports, against NumPy (ml_dtypes for
bfloat16, SciPy where NumPy has no such function).

Exact where IEEE-754 defines the result (arithmetic, sqrt, rounding, comparisons, casts, and
the integer ops whose edge cases the engine defines as NumPy does); bounded ulp distances for
the transcendental functions (the full-range float32 accuracy lives in test_accuracy.py).
"""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
import scipy.special as sps

from engine_util import (
    BF16,
    DTYPES,
    FLOATS,
    INTS,
    assert_same,
    npdtype,
    run1,
    spec_single,
    supports,
    ulp_distance,
    values,
)
from nuvec.codegen.ops import ARITY
from nuvec.backends.cpu import kernels

N = 3000


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A generator seeded from the test's name (function and parameters): a test draws the same
    inputs whether it runs alone (``-k erf``), in any order (xdist) or in the whole file."""
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def _sigmoid(x):
    """1 / (1 + e^-x), also below x = -709, where e^-x overflows and SciPy's expit gives 0 for
    a subnormal result."""
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


REF = {
    "abs": np.abs,
    "negative": np.negative,
    "sign": np.sign,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "square": np.square,
    "reciprocal": np.reciprocal,
    "exp": np.exp,
    "expm1": np.expm1,
    "log": np.log,
    "log1p": np.log1p,
    "log2": np.log2,
    "log10": np.log10,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "arcsin": np.arcsin,
    "arccos": np.arccos,
    "arctan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "arcsinh": np.arcsinh,
    "arccosh": np.arccosh,
    "arctanh": np.arctanh,
    "sigmoid": _sigmoid,
    "erf": sps.erf,
    "erfinv": sps.erfinv,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.rint,
    "logical_not": np.logical_not,
    "bitwise_invert": np.invert,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isposinf": np.isposinf,
    "isneginf": np.isneginf,
    "isfinite": np.isfinite,
    "real": np.real,
    "imag": np.imag,
    "conjugate": np.conjugate,
    "copy": np.copy,
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "floor_divide": np.floor_divide,
    "remainder": np.remainder,
    "power": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logaddexp": np.logaddexp,
    "arctan2": np.arctan2,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift,
    "right_shift": np.right_shift,
}

# results IEEE-754 (or the engine's documented rule, which is NumPy's) fixes exactly
EXACT = frozenset(
    (
        "abs",
        "negative",
        "sign",
        "sqrt",
        "rsqrt",
        "square",
        "reciprocal",
        "floor",
        "ceil",
        "round",
        "logical_not",
        "bitwise_invert",
        "isnan",
        "isinf",
        "isposinf",
        "isneginf",
        "isfinite",
        "real",
        "imag",
        "conjugate",
        "copy",
        "add",
        "subtract",
        "multiply",
        "divide",
        "floor_divide",
        "remainder",
        "maximum",
        "minimum",
        "equal",
        "not_equal",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
        "logical_and",
        "logical_or",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "left_shift",
        "right_shift",
    )
)

# float32 bounds (ulp of the correctly rounded result); the rest of the transcendental ops: 4
TIGHT = {"exp": 2, "log": 2, "sin": 2, "cos": 2, "tanh": 2, "sigmoid": 2, "erf": 2}
# float64 bounds against the reference, 2 ulp unless the reference itself is further off: SciPy's
# erfinv is up to 2 ulp from the correctly rounded value (test_accuracy.py holds nuvec's to 2 ulp
# of mpmath's)
F64_BOUND = {"erfinv": 3}

DOMAIN = {
    "arcsin": "unit",
    "arccos": "unit",
    "arctanh": "unit",
    "erfinv": "unit",
    "log": "positive",
    "log2": "positive",
    "log10": "positive",
    "arccosh": "positive",
}


def _inputs(op: str, dtype: str, rng: np.random.Generator) -> list[np.ndarray]:
    kind = DOMAIN.get(op, "any")
    if op in ("left_shift", "right_shift"):
        a = values(dtype, N, rng)
        b = rng.integers(-3, 70 if dtype.startswith("int") else 70, N).astype(np.int64)
        if dtype.startswith("u"):
            b = np.abs(b)
        return [a, b.astype(npdtype(dtype))]
    if op == "power" and dtype in INTS:
        return [values(dtype, N, rng, "small"), np.abs(values(dtype, N, rng, "small"))]
    if op == "select":
        return [values("bool", N, rng), values(dtype, N, rng), values(dtype, N, rng)]
    if ARITY[op] == 2:
        a = values(dtype, N, rng, kind)
        b = values(dtype, N, rng, kind)
        return [a, rng.permutation(b)]
    return [values(dtype, N, rng, kind)]


def _reference(op: str, dtype: str, ins: list[np.ndarray], out: str) -> np.ndarray:
    dt = npdtype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if op == "select":
            return np.where(ins[0], ins[1], ins[2])
        if dtype in ("float16", "bfloat16") and op not in EXACT:
            # the engine computes in float32 and rounds once: compare with the float64 value
            r = REF[op](*[x.astype(np.float64) for x in ins])
            return np.asarray(r).astype(np.float32).astype(npdtype(out))
        if dtype in ("float16", "bfloat16") and op in ("rsqrt", "floor_divide", "remainder"):
            r = REF[op](*[x.astype(np.float32) for x in ins])
            return np.asarray(r).astype(npdtype(out))
        if dtype in INTS and op in ("floor", "ceil", "round"):
            return ins[0].copy()  # identity on integers (documented)
        if dtype in FLOATS and op not in EXACT:
            r = REF[op](*[x.astype(np.float64) for x in ins])
            if dtype == "float64":
                return np.asarray(r)
            return np.asarray(r).astype(dt)
        if dtype == "complex64" and op not in EXACT:
            return np.asarray(REF[op](*[x.astype(np.complex128) for x in ins]))
        r = np.asarray(REF[op](*ins))
        return r.astype(npdtype(out)) if r.dtype != npdtype(out) else r


def _cases():
    for op in ARITY:
        if op == "astype":
            continue
        for d in DTYPES:
            if supports(op, d):
                yield op, d


@pytest.mark.parametrize("op,dtype", list(_cases()))
def test_op_against_numpy(op: str, dtype: str, rng: np.random.Generator) -> None:
    spec = spec_single(op, dtype)
    out = spec.nodes[0].dtype
    ins = _inputs(op, dtype, rng)
    got = kernels.run(spec, ins, ins[0].shape)[0]
    ref = _reference(op, dtype, ins, out)
    assert got.dtype == npdtype(out) and got.shape == ins[0].shape
    what = f"{op}[{dtype}]"
    if op in EXACT or dtype in INTS or dtype == "bool" or op in ("select",):
        if dtype == "complex64" and op in ("multiply", "divide", "square", "abs", "sqrt"):
            # exact formulas without contraction (NumPy's build may contract): judged by error
            _check_complex_close(
                got, np.asarray(REF[op](*[x.astype(np.complex128) for x in ins])), ins, 4, what
            )
            return
        assert_same(got, ref, what)
        return
    if dtype == "complex64":
        _check_complex_close(got, ref, ins, 6, what)
        return
    if dtype == "float64":
        bound = F64_BOUND.get(op, 2)
    elif dtype == "float32":
        bound = TIGHT.get(op, 4)
    else:
        bound = 1
    mask = np.ones(got.shape, bool)
    if op == "logaddexp" and dtype in ("float32", "float64"):
        # near its zeros logaddexp cancels (as NumPy's float32 does): the bound there is one
        # ulp of the larger input on top of 4 ulp of the result. NumPy's float64 cancels as
        # much, so the float64 reference is mpmath's, rounded once
        if dtype == "float64":
            ref = _logaddexp_mp(*ins)
        _check_mixed(got, ref, ins, what)
        return
    d = ulp_distance(got[mask], ref[mask].astype(got.dtype))
    assert d.max(initial=0) <= bound, (
        f"{what}: {d.max()} ulp at {[x[mask][np.argmax(d)] for x in ins]}: "
        f"got {got[mask][np.argmax(d)]!r} want {ref[mask][np.argmax(d)]!r}"
    )


def _logaddexp_mp(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log(e^x + e^y) at 40 digits, rounded to float64 (NaN, infinities as NumPy's)."""
    import mpmath as mp

    with np.errstate(invalid="ignore"):
        out = np.logaddexp(x, y)
    with mp.workdps(40):
        for i, (a, b) in enumerate(zip(x.tolist(), y.tolist())):
            if np.isfinite(a) and np.isfinite(b):
                out[i] = float(mp.log(mp.exp(a) + mp.exp(b)))
    return out


def _check_mixed(got, ref, ins, what):
    """|got - ref| <= 4 ulp(ref) + 1 ulp(max |input|) (finite values; NaN / inf exactly)."""
    fin = np.isfinite(ref)
    assert_same(got[~fin], ref[~fin], what)
    g, r = got[fin].astype(np.float64), ref[fin].astype(np.float64)
    big = np.maximum(np.abs(ins[0][fin]), np.abs(ins[1][fin])).astype(got.dtype)
    tol = 4 * np.spacing(np.abs(ref[fin])).astype(np.float64) + np.spacing(big).astype(np.float64)
    bad = np.abs(g - r) > tol
    assert not bad.any(), f"{what}: {bad.sum()} beyond the bound, e.g. {ins[0][fin][bad][:3]}"


def _check_complex_close(got, ref, ins, k, what):
    """Each component within k ulp of |ref| (complex results are judged by magnitude)."""
    fin = np.isfinite(ref) & np.all([np.isfinite(x) for x in ins], axis=0)
    fin &= np.abs(ref) < 1e30
    fin &= np.all([np.abs(x) < 1e15 for x in ins], axis=0)
    g, r = got[fin].astype(np.complex128), ref[fin].astype(np.complex128)
    scale = np.maximum(np.abs(r), np.finfo(np.float32).tiny)
    ulp = np.spacing(scale.astype(np.float32)).astype(np.float64)
    if got.dtype.kind == "c":
        err = np.maximum(np.abs(g.real - r.real), np.abs(g.imag - r.imag)) / ulp
    else:
        err = np.abs(g.real - r.real) / ulp
    assert err.max(initial=0) <= k, f"{what}: {err.max():.2f} ulp of |ref| at {np.argmax(err)}"


# ---- casts ---------------------------------------------------------------------------------


def _cast_inputs(src: str, rng: np.random.Generator) -> np.ndarray:
    x = values(src, N, rng)
    if src in FLOATS or src == "complex64":
        # add integers of every size so that conversions to wide ints are exercised
        ints = np.concatenate(
            [
                rng.integers(-(2**62), 2**62, 200).astype(np.float64),
                rng.integers(0, 300, 200).astype(np.float64) - 150,
            ]
        )
        x = np.concatenate([x, ints.astype(npdtype(src))])
    return x


def _in_range(x: np.ndarray, dst: str) -> np.ndarray:
    """Elements whose conversion NumPy defines (float -> int in range, no NaN)."""
    if dst not in INTS or x.dtype.kind not in "fcV" and x.dtype != BF16:
        return np.ones(x.shape, bool)
    v = x.real.astype(np.float64) if x.dtype.kind == "c" else x.astype(np.float64)
    info = np.iinfo(dst)
    return np.isfinite(v) & (v > info.min - 1.0) & (v < info.max + 1.0) & (np.abs(v) < 2.0**62)


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
def test_astype_against_numpy(src: str, dst: str, rng: np.random.Generator) -> None:
    x = _cast_inputs(src, rng)
    got = run1("astype", x, out=dst)
    assert got.dtype == npdtype(dst)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dst == "bfloat16" and src in ("float64", "int32", "uint32", "int64", "uint64"):
            ref = _exact_round(x, dst)  # ml_dtypes rounds twice; the engine once
        elif src == "complex64" and dst != "complex64":
            ref = x.real.astype(npdtype(dst)) if dst != "bool" else (x != 0)
        elif dst == "complex64" and src == "bfloat16":
            ref = x.astype(np.float32).astype(np.complex64)
        else:
            ref = x.astype(npdtype(dst))
    m = _in_range(x, dst)
    assert_same(got[m], ref[m], f"astype {src}->{dst}")


def _exact_round(x: np.ndarray, dst: str) -> np.ndarray:
    """Correct rounding to float16/bfloat16 by exact rational comparison with the neighbours
    of a first guess (ties to the even bit pattern; beyond max + half an ulp: infinity)."""
    from fractions import Fraction

    dt = npdtype(dst)
    top = 0x7F7F if dst == "bfloat16" else 0x7BFF
    mx = Fraction(float(np.array([top], np.uint16).view(dt).astype(np.float64)[0]))
    below = Fraction(float(np.array([top - 1], np.uint16).view(dt).astype(np.float64)[0]))
    overflow = mx + (mx - below) / 2
    out = np.empty(x.shape, dt)
    for i, v in enumerate(x.tolist()):
        if isinstance(v, float) and (v != v or abs(v) == float("inf")):
            out[i] = np.array(v).astype(dt)
            continue
        exact = Fraction(v)
        if abs(exact) >= overflow:
            out[i] = np.array(np.inf if exact > 0 else -np.inf).astype(dt)
            continue
        guess = np.array([float(np.float32(float(v)))], np.float32).astype(dt)
        bits = int(guess.view(np.uint16)[0])
        cands = []
        for b in ((bits - 1) & 0xFFFF, bits, (bits + 1) & 0xFFFF):
            f = float(np.array([b], np.uint16).view(dt).astype(np.float64)[0])
            if f == f and abs(f) != float("inf"):
                cands.append((abs(Fraction(f) - exact), b & 1, b))
        out[i] = np.array([min(cands)[2]], np.uint16).view(dt)[0]
    return out


def _low_bits_of_int32(v: np.ndarray, dst) -> list[int]:
    """float -> 8/16-bit integer: the low bits of the truncated int32, INT32_MIN's where the
    value is outside int32 or NaN (NumPy's and MLX's result on x86)."""
    bits = np.dtype(dst).itemsize * 8
    out = []
    for w in v.tolist():
        i = int(np.trunc(w)) if -(2.0**31) < w < 2.0**31 else -(2**31)
        low = i & ((1 << bits) - 1)
        out.append(
            low - (1 << bits) if np.issubdtype(dst, np.signedinteger) and low >> (bits - 1) else low
        )
    return out


def _numpy_vector_cast(x: np.ndarray, dst: str) -> np.ndarray:
    """NumPy's cast of x to dst as its contiguous (vector) loop gives it on x86-64.

    NumPy's float -> uint32 loop converts the leading and trailing few elements with scalar
    code, whose out-of-range results differ from the vector body's; padding both ends keeps every
    element of x in the body."""
    pad = np.zeros(64, x.dtype)
    with np.errstate(invalid="ignore"):
        return np.concatenate([pad, x, pad]).astype(dst)[64:-64]


def _float_cast_sample(src: str) -> np.ndarray:
    """Every float16; for the wider formats the powers of two up to 2^66 and their neighbours,
    random bit patterns and random values around the integer ranges, inf and NaN."""
    if src == "float16":
        return np.arange(2**16, dtype=np.uint16).view(np.float16)
    rng = np.random.default_rng(18)
    if src == "bfloat16":
        return (np.arange(2**16, dtype=np.uint32) << 16).view(np.float32).astype(BF16)
    dt = np.dtype(src)
    p = (2.0 ** np.arange(67)).astype(dt)
    p = np.concatenate([p, -p])
    edges = np.concatenate([p, np.nextafter(p, dt.type(np.inf)), np.nextafter(p, dt.type(-np.inf))])
    uint = {4: np.uint32, 8: np.uint64}[dt.itemsize]
    bits = rng.integers(0, np.iinfo(uint).max, 100_000, dtype=uint, endpoint=True).view(dt)
    near = ((rng.random(100_000) * 2 - 1) * 2.0 ** rng.integers(0, 67, 100_000)).astype(dt)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, -1e9, 3e9, -3e9], dt)
    return np.concatenate([special, edges, bits, near])


@pytest.mark.parametrize("src", ["float16", "bfloat16", "float32", "float64"])
def test_float_to_wide_int_matches_numpy_x86(src: str) -> None:
    """float -> int32/uint32/int64/uint64 gives NumPy's x86-64 bits for every input, out of
    range, inf and NaN included (bfloat16 as NumPy casts the equal float32)."""
    xs = _float_cast_sample(src)
    ref_src = xs.astype(np.float32) if src == "bfloat16" else xs
    for dst in ("int32", "uint32", "int64", "uint64"):
        got = run1("astype", xs, out=dst)
        want = _numpy_vector_cast(ref_src, dst)
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (src, dst, xs[bad[:5]].tolist(), got[bad[:5]], want[bad[:5]])


def test_float_to_narrow_int_low_bits() -> None:
    x = np.array(
        [np.nan, np.inf, -np.inf, 3e9, -3e9, 1e30, -1e30, 2.5, -2.5, -0.7, 255.9, 256.0, -1.0],
        np.float32,
    )
    for src in ("float16", "bfloat16", "float32", "float64"):
        xs = x.astype(npdtype(src))
        v = xs.astype(np.float64)
        for dst in INTS:
            if np.iinfo(dst).bits >= 32:
                continue
            got = run1("astype", xs, out=dst)
            assert got.tolist() == _low_bits_of_int32(v, dst), (src, dst, got.tolist())
            if src == "float32":  # the same as NumPy's own cast
                with np.errstate(invalid="ignore"):
                    assert got.tolist() == xs.astype(dst).tolist(), (src, dst)


# ---- integer edge cases the engine defines --------------------------------------------------


@pytest.mark.parametrize("dtype", INTS)
def test_integer_edges(dtype: str) -> None:
    info = np.iinfo(dtype)
    dt = np.dtype(dtype)
    a = np.array([7, -7 if info.min < 0 else 9, info.min, info.max, 0], dt)
    zero = np.zeros_like(a)
    assert run1("floor_divide", a, zero).tolist() == [0] * 5
    assert run1("remainder", a, zero).tolist() == [0] * 5
    if info.min < 0:
        m1 = np.full_like(a, -1)
        assert run1("floor_divide", a, m1).tolist()[2] == info.min  # MIN // -1 wraps
        assert run1("remainder", a, m1).tolist() == [0] * 5
        assert run1("abs", a).tolist()[2] == info.min
        neg = np.array([1, -1, 2, -2, 0], dt)
        e = np.full_like(neg, -3)
        assert run1("power", neg, e).tolist() == [1, -1, 0, 0, 0]
        sh = np.array([-1, info.bits, info.bits + 5, -100, 1], dt)
        v = np.full_like(sh, -8)
        assert run1("left_shift", v, sh).tolist() == [0, 0, 0, 0, -16]
        assert run1("right_shift", v, sh).tolist() == [-1, -1, -1, -1, -4]
    sh = np.array([info.bits, info.bits + 1, info.max, 1, 0], dt)
    one = np.full_like(sh, 6)
    assert run1("left_shift", one, sh).tolist() == [0, 0, 0, 12, 6]
    assert run1("right_shift", one, sh).tolist() == [0, 0, 0, 3, 6]


def _blocks_with_outliers(small: np.ndarray, big: np.ndarray, rng) -> np.ndarray:
    """``small`` with an element of ``big`` in every other 256-element block (the C kernels'
    split blocks: some take the split form, the others the full body)."""
    out = small.copy()
    starts = np.arange(0, out.size, 512)
    out[starts + rng.integers(0, 256, starts.size) % (out.size - starts)] = np.resize(
        big, starts.size
    )
    return out


# per float type: special magnitudes (subnormals, the split form's quotient bound 2^s and its
# neighbours, the largest finite), the split bound's exponent s, and the exponent range
_FLOOR_DIVIDE_CASES = {
    "float64": (
        [5e-324, 2.5e-323, 2.2250738585072014e-308, 1e-300, 1e300, 1.7976931348623157e308],
        51,
        (-1074, 1024),
    ),
    "float32": ([1e-45, 3e-45, 1.1754944e-38, 1e-30, 1e30, 3.4028235e38], 22, (-149, 128)),
}


@pytest.mark.parametrize("dtype", list(_FLOOR_DIVIDE_CASES))
def test_float_floor_divide_remainder_bits(dtype: str, rng: np.random.Generator) -> None:
    """Bit for bit NumPy's (NaN: NaN-ness), through both forms of the split kernels: every pair
    of special values (signed zeros, infinities, NaN, subnormals, the largest finite values),
    ratios on both sides of the split form's bound and over the exact reduction's full range,
    in blocks that take the split form and blocks that take the full one."""
    dt = np.dtype(dtype)
    mags, s, (lo, hi) = _FLOOR_DIVIDE_CASES[dtype]
    sp = np.array(
        [0.0, 0.1, 0.5, 1.0, 1.5, 3.0, 7.0, 2.0**s, 2.0**s + 1, 2.0**s * 2, 2.0**s * 4]
        + mags
        + [np.inf, np.nan],
        dt,
    )
    sp = np.concatenate([sp, -sp])
    a, b = (x.ravel() for x in np.meshgrid(sp, sp))
    n = 1 << 15
    exps = rng.uniform(lo, hi, (2, n))
    with np.errstate(over="ignore"):
        wide = [
            (np.exp2(e) * rng.choice([-1.0, 1.0], n) * rng.uniform(1, 2, n)).astype(dt)
            for e in exps
        ]
    near = (rng.standard_normal(n) * 1e3).astype(dt), (rng.standard_normal(n) * 2.0**-48).astype(dt)
    near_b = rng.standard_normal(n).astype(dt)
    small_a, small_b = (
        (rng.standard_normal(n) * 100).astype(dt),
        (rng.standard_normal(n) + 0.01).astype(dt),
    )
    ra = np.concatenate(
        [
            a,
            wide[0],
            near[0] * dt.type(2.0 ** (s - 1)),
            near[1],
            _blocks_with_outliers(small_a, wide[0], rng),
        ]
    )
    rb = np.concatenate([b, wide[1], near_b, near_b, _blocks_with_outliers(small_b, sp, rng)])
    assert ra.dtype == rb.dtype == dt
    # the special pairs whose blocks may take the split form (all but finite quotients at or
    # above its bound) give the same bits, NaN payloads included, in blocks that take the full
    # form (one pair with a quotient of 2^(s+2) in each)
    with np.errstate(all="ignore"):
        keep = ~(np.isfinite(a) & np.isfinite(b) & (b != 0) & (np.abs(a) >= 2.0**s * np.abs(b)))
    pa, pb = a[keep], b[keep]
    ua, ub = (
        np.insert(pa, np.arange(0, pa.size, 64), 4.0 * 2.0**s),
        np.insert(pb, np.arange(0, pb.size, 64), 1.0),
    )
    full = np.ones(ua.size, bool)
    full[np.arange(0, pa.size, 64) + np.arange(len(range(0, pa.size, 64)))] = False
    for op in ("floor_divide", "remainder"):
        got = run1(op, ra, rb)
        with np.errstate(all="ignore"):
            want = getattr(np, op)(ra, rb)
        assert_same(got, want, f"{op}[{dtype}]")
        split, mixed = run1(op, pa, pb), run1(op, ua, ub)[full]
        assert np.array_equal(split.view(f"u{dt.itemsize}"), mixed.view(f"u{dt.itemsize}")), op
        # one operand broadcast: the loops that read it once
        for i in (0, 1, 7, 20):
            with np.errstate(all="ignore"):
                assert_same(run1(op, ra[i : i + 1].reshape(()), rb), getattr(np, op)(ra[i], rb), op)
                assert_same(run1(op, ra, rb[i : i + 1].reshape(())), getattr(np, op)(ra, rb[i]), op)


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_64bit_floor_divide_remainder(dtype: str, rng: np.random.Generator) -> None:
    """NumPy's results (by zero: 0; MIN // -1: MIN, remainder 0): operands of every magnitude
    up to the type's limits, negative ones, and blocks that take the split form (operands below
    2^51) next to blocks that take the full one."""
    info = np.iinfo(dtype)
    dt = np.dtype(dtype)
    n = 1 << 15
    edges = [0, 1, 2, 3, 7, 2**51 - 1, 2**51, 2**52, 2**53 + 1, 2**62, info.max, info.max - 1]
    if info.min < 0:
        edges += [-x for x in edges[1:]] + [info.min, info.min + 1]
    e = np.array(edges, dt)
    a, b = (x.ravel() for x in np.meshgrid(e, e))
    bits = rng.integers(0, 64, (2, n))
    wide = [
        (rng.integers(0, 2**63, n, dtype=np.uint64) * 2 + 1 >> k.astype(np.uint64)).view(dt)
        for k in bits
    ]
    small = [rng.integers(-(2**20) if info.min < 0 else 0, 2**20, n).astype(dt) for _ in "ab"]
    ra = np.concatenate([a, wide[0], _blocks_with_outliers(small[0], wide[0], rng)])
    rb = np.concatenate([b, wide[1], _blocks_with_outliers(small[1], wide[1], rng)])
    for op in ("floor_divide", "remainder"):
        with np.errstate(all="ignore"):
            want = getattr(np, op)(ra, rb)
            for i in (0, 5, 13):
                assert_same(run1(op, ra[i : i + 1].reshape(()), rb), getattr(np, op)(ra[i], rb), op)
                assert_same(run1(op, ra, rb[i : i + 1].reshape(())), getattr(np, op)(ra, rb[i]), op)
        assert_same(run1(op, ra, rb), want, f"{op}[{dtype}]")


def test_bool_inputs_are_normalised() -> None:
    raw = np.array([0, 1, 2, 255, 0], np.uint8).view(bool)
    assert run1("logical_not", raw).tolist() == [True, False, False, False, True]
    assert run1("astype", raw, out="int32").tolist() == [0, 1, 1, 1, 0]


def test_supports_and_results() -> None:
    from nuvec.codegen.ops import result_dtype

    assert supports("exp", "float16") and not supports("exp", "int32")
    assert supports("left_shift", "uint8") and not supports("left_shift", "float32")
    assert not supports("float64", "float64") and not supports("exp", "float64", "metal")
    assert result_dtype("abs", ("complex64",)) == "float32"
    assert result_dtype("select", ("bool", "int8", "int8")) == "int8"
    with pytest.raises(ValueError, match="astype"):
        result_dtype("astype", ("int8",))
