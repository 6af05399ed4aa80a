"""Shared helpers of the element-wise engine tests: running single ops, inputs, ulp distances."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np

from nuvec.codegen.ir import DTYPES, KernelSpec
from nuvec.codegen.ops import result_dtype, supports
from nuvec.backends.cpu import kernels

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64")


def npdtype(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


def run1(op: str, *arrays: np.ndarray, out: str | None = None, shape=None) -> np.ndarray:
    """Our single-op kernel on arrays (dtypes taken from the arrays)."""
    ins = tuple("bfloat16" if a.dtype == BF16 else a.dtype.name for a in arrays)
    out = out or result_dtype(op, ins)
    if shape is None:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return kernels.run(KernelSpec.single(op, ins, out), list(arrays), tuple(shape))[0]


def bits_unsigned(a: np.ndarray) -> np.ndarray:
    """The raw bits of a float array as unsigned ints of the same width."""
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def ordered(a: np.ndarray) -> np.ndarray:
    """Float bits mapped to integers that are monotonic in the value (for ulp distances)."""
    w = a.dtype.itemsize * 8
    u = bits_unsigned(a).astype(np.uint64)
    sign = u >> np.uint64(w - 1)
    mag = (u & np.uint64((1 << (w - 1)) - 1)).astype(np.int64)
    return np.where(sign == 1, -mag, mag)


def ulp_distance(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Steps between got and ref (same float dtype); NaN==NaN is 0, NaN vs number is huge."""
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    d = np.abs(ordered(got) - ordered(ref))
    gn, rn = np.isnan(got.astype(np.float64)), np.isnan(ref.astype(np.float64))
    d = np.where(gn & rn, 0, d)
    return np.where(gn != rn, 1 << 40, d)


def assert_same(got: np.ndarray, ref: np.ndarray, what: str = "") -> None:
    """Equal values and dtypes; NaN where NaN (any payload); -0 and +0 distinguished."""
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype} != {ref.dtype}"
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    if got.dtype.kind in "fV" or got.dtype == BF16:
        d = ulp_distance(got, ref)
        bad = np.nonzero(d)[0] if got.ndim == 1 else np.nonzero(d.ravel())[0]
        if bad.size:
            i = bad[0]
            raise AssertionError(
                f"{what}: {bad.size} differ, first at {i}: got "
                f"{got.ravel()[i]!r} want {ref.ravel()[i]!r}"
            )
    elif got.dtype.kind == "c":
        assert_same(got.real.copy(), ref.real.copy(), what + " (real)")
        assert_same(got.imag.copy(), ref.imag.copy(), what + " (imag)")
    else:
        if not np.array_equal(got, ref):
            bad = np.nonzero(got.ravel() != ref.ravel())[0]
            i = bad[0]
            raise AssertionError(
                f"{what}: {bad.size} differ, first at {i}: got "
                f"{got.ravel()[i]!r} want {ref.ravel()[i]!r}"
            )


def assert_bits_equal(
    a: np.ndarray, b: np.ndarray, what: str = "", nan_payloads: bool = True
) -> None:
    """Bit-for-bit equality (NaN payloads included unless ``nan_payloads=False``: then a NaN
    equals any NaN, every other value is compared bit for bit)."""
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a.dtype, b.dtype, a.shape, b.shape)
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if not nan_payloads and a.dtype.kind in "fc":
        parts = (lambda x: [x.real, x.imag]) if a.dtype.kind == "c" else (lambda x: [x])
        for pa, pb in zip(parts(a), parts(b)):
            na, nb = np.isnan(pa), np.isnan(pb)
            if not np.array_equal(na, nb):
                raise AssertionError(f"{what}: NaNs in different places")
            pa, pb = np.where(na, 0, pa), np.where(nb, 0, pb)
            if not np.array_equal(pa.view(np.uint8), pb.view(np.uint8)):
                raise AssertionError(f"{what}: not bit-for-bit equal")
        return
    if not np.array_equal(a.view(np.uint8), b.view(np.uint8)):
        raise AssertionError(f"{what}: not bit-for-bit equal")


_FLOAT_SPECIALS = [
    0.0,
    -0.0,
    np.inf,
    -np.inf,
    np.nan,
    1.0,
    -1.0,
    0.5,
    -0.5,
    1.5,
    2.5,
    -2.5,
    3.0,
    -7.0,
    1e-3,
    65504.0,
    1e10,
    -1e10,
    1e-40,
    1e-310,
    3.4e38,
    0.9999,
    1.0001,
]


def values(dtype: str, n: int, rng: np.random.Generator, kind: str = "any") -> np.ndarray:
    """Test inputs of dtype: edge values then random ones (n in all)."""
    dt = npdtype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if dtype in INTS:
        info = np.iinfo(dt)
        edges = [0, 1, info.max, info.min, info.max - 1, 2, 3, 7]
        if info.min < 0:
            edges += [-1, -2, -3, info.min + 1, -7]
        lo, hi = (0, 64) if kind == "shift" else (info.min, info.max)
        if kind == "small":
            lo, hi = max(info.min, -12), min(info.max, 12)
        r = rng.integers(lo, hi, n, dtype=dt, endpoint=True)
        if kind in ("any",):
            edges = edges[:n]
            r[: len(edges)] = np.array([e % (1 << info.bits) for e in edges], np.uint64).astype(dt)
        return r
    if dtype == "complex64":
        re = values("float32", n, rng, kind)
        im = values("float32", n, rng, kind)[::-1].copy()
        return (re.astype(np.complex64) + 1j * im.astype(np.complex64)).astype(np.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "unit":
            r = rng.uniform(-1.05, 1.05, n)
        elif kind == "positive":
            r = np.exp(rng.uniform(-20, 20, n))
        else:
            r = rng.standard_normal(n) * np.exp(rng.uniform(-6, 6, n))
        sp = np.array(_FLOAT_SPECIALS, dtype=np.float64)[:n]
        r[: len(sp)] = sp
        return r.astype(dt)


def spec_single(op: str, dtype: str, out: str | None = None) -> KernelSpec:
    ins = ("bool", dtype, dtype) if op == "select" else (dtype,) * (2 if op in BINARY else 1)
    return KernelSpec.single(op, ins, out or result_dtype(op, ins))


from nuvec.codegen.ops import BINARY, UNARY  # noqa: E402

__all__ = [
    "BF16",
    "FLOATS",
    "INTS",
    "DTYPES",
    "npdtype",
    "run1",
    "ulp_distance",
    "assert_same",
    "assert_bits_equal",
    "values",
    "supports",
    "spec_single",
    "BINARY",
    "UNARY",
]
