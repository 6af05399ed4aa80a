"""Shared helpers for the operation tests: random data per dtype, layouts (contiguous,
transposed, strided), bit-for-bit and tolerance checks, finite-difference gradient checks and
vmap-against-a-loop checks."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import nuvec as nv

ALL = [
    "bool",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
]
INTS = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
REAL = ["bool"] + INTS + FLOATS

#: relative tolerance of one rounding, with room for an accumulation in float32
RTOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-12, "complex64": 2e-5}
# Results that round into a dtype's subnormal range lose relative precision: allow one
# smallest subnormal of absolute error there.
ATOL = {
    "float16": 2**-24,
    "bfloat16": 2.0**-133,
    "float32": 2.0**-149,
    "float64": 5e-324,
    "complex64": 2.0**-149,
}


def exact(x, dtype=None) -> nv.array:
    """``nv.array`` keeping a NumPy array's own dtype: float64 data stays float64 (alone,
    ``nv.array`` makes it float32, as MLX), as a float64 reference or a finite difference
    needs."""
    if dtype is None and isinstance(x, (np.ndarray, np.generic)):
        dtype = x.dtype
    return nv.array(x, dtype)


def npdtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def rand(rng: np.random.Generator, shape, dtype: str, scale: float = 3.0) -> np.ndarray:
    """Random data of ``dtype``: small integers, normal floats (distinct almost surely)."""
    shape = tuple(shape)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("uint"):
        return rng.integers(0, 6, shape).astype(dtype)
    if dtype.startswith("int"):
        return rng.integers(-5, 6, shape).astype(dtype)
    if dtype == "complex64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    return (rng.standard_normal(shape) * scale).astype(npdtype(dtype))


def layout(x: np.ndarray, kind: str) -> nv.array:
    """A nuvec array equal to ``x`` whose data is contiguous ("c"), a transposed view ("t")
    or a strided slice ("s")."""
    if kind == "t" and x.ndim >= 2:
        return nv.transpose(exact(np.ascontiguousarray(x.T)))
    if kind == "s" and x.ndim >= 1:
        wide = np.repeat(x, 2, axis=-1)
        return exact(wide)[..., ::2]
    return exact(x)


@st.composite
def arrays(draw, dtypes, min_dims=0, max_dims=3, max_side=4, min_side=0):
    """(numpy data, nuvec array in some layout, dtype name)."""
    shape = draw(st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims))
    dtype = draw(st.sampled_from(dtypes))
    seed = draw(st.integers(0, 2**31 - 1))
    kind = draw(st.sampled_from(["c", "t", "s"]))
    x = rand(np.random.default_rng(seed), shape, dtype)
    return x, layout(x, kind), dtype


@st.composite
def axes_for(draw, ndim: int):
    """None, an int (maybe negative) or a tuple of distinct axes."""
    if ndim == 0:
        return None
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    return tuple(draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)))


def np_axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        return (axis % ndim,)
    return tuple(a % ndim for a in axis)


def f64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def host(a) -> np.ndarray:
    """``a`` as a NumPy array; bfloat16 as ml_dtypes' (NumPy takes no bfloat16 buffer from an
    array, as with MLX, so its bits are read as uint16 and relabelled)."""
    if isinstance(a, nv.array) and a.dtype == nv.bfloat16:
        return np.asarray(a.view(nv.uint16)).view(ml_dtypes.bfloat16)
    return np.asarray(a)


def same(out, expected: np.ndarray) -> None:
    """Equal bit for bit, with the same shape and dtype."""
    assert isinstance(out, nv.array)
    assert out.shape == expected.shape, (out.shape, expected.shape)
    assert out.dtype.name == (expected.dtype.name if expected.dtype != np.bool_ else "bool")
    got = np.ascontiguousarray(host(out))
    assert got.tobytes() == np.ascontiguousarray(expected).tobytes()


def assert_close(actual: nv.array, expected: np.ndarray, dtype: str, mag=None) -> None:
    """``actual`` (of dtype ``dtype``) within rounding of ``expected`` (float64): the error
    allowed is RTOL times ``mag`` (the size of the terms that were summed) or |expected|."""
    a = host(actual)
    assert a.shape == np.shape(expected), (a.shape, np.shape(expected))
    a = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    e = np.asarray(expected)
    scale = np.abs(e) if mag is None else np.maximum(np.abs(e), mag)
    both_nan = np.isnan(a) & np.isnan(e)
    same_inf = np.isinf(e) & (a == e)
    with np.errstate(invalid="ignore"):
        err = np.abs(a - e)
    ok = both_nan | same_inf | (err <= RTOL[dtype] * scale + ATOL.get(dtype, 0.0) + 1e-30)
    assert ok.all(), f"max error {np.nanmax(np.where(ok, 0, err))} for {dtype}\n{a}\n{e}"


# -- gradients ------------------------------------------------------------------------------


def fd_vjp_check(
    f,
    xs: list,
    seed: int = 0,
    eps: float = 1e-6,
    rtol: float = 1e-6,
    atol: float = 1e-8,
    argnums=None,
) -> tuple[np.ndarray, list]:
    """nv.vjp of ``f`` (float64 arrays) against central finite differences of
    sum(f(x) * w) for a random cotangent w; returns w and the vjp's gradients."""
    rng = np.random.default_rng(seed)
    xs = [np.asarray(x, dtype=np.float64) for x in xs]
    argnums = list(range(len(xs))) if argnums is None else argnums
    out = np.asarray(f(*[exact(x) for x in xs]))
    w = rng.standard_normal(out.shape)

    def scalar(*arrs):
        return float(np.sum(np.asarray(f(*[exact(a) for a in arrs])) * w))

    _, grads = nv.vjp(lambda *a: f(*a), [exact(x) for x in xs], [exact(w)])
    for k in argnums:
        num = np.zeros_like(xs[k])
        for idx in np.ndindex(xs[k].shape):
            p = [x.copy() for x in xs]
            m = [x.copy() for x in xs]
            p[k][idx] += eps
            m[k][idx] -= eps
            num[idx] = (scalar(*p) - scalar(*m)) / (2 * eps)
        got = np.asarray(grads[k])
        assert got.shape == num.shape
        np.testing.assert_allclose(
            got, num, rtol=rtol, atol=atol, err_msg=f"vjp w.r.t. argument {k}"
        )
    return w, list(grads)


def fd_jvp_check(
    f, xs: list, seed: int = 0, eps: float = 1e-6, rtol: float = 1e-6, atol: float = 1e-8
) -> None:
    """nv.jvp of ``f`` against central finite differences along random tangents."""
    rng = np.random.default_rng(seed + 1)
    xs = [np.asarray(x, dtype=np.float64) for x in xs]
    ts = [rng.standard_normal(x.shape) for x in xs]
    _, (tan,) = nv.jvp(lambda *a: f(*a), [exact(x) for x in xs], [exact(t) for t in ts])
    fp = np.asarray(f(*[exact(x + eps * t) for x, t in zip(xs, ts)]))
    fm = np.asarray(f(*[exact(x - eps * t) for x, t in zip(xs, ts)]))
    np.testing.assert_allclose(np.asarray(tan), (fp - fm) / (2 * eps), rtol=rtol, atol=atol)


def fd_check(f, xs, eps=1e-6, jvp_rtol=1e-9) -> None:
    """``fd_vjp_check``, then jvp against vjp for random tangents t and the check's cotangent
    w: <jvp(t), w> == <t, vjp(w)> within ``jvp_rtol``."""
    w, grads = fd_vjp_check(f, xs, eps=eps, atol=1e-7)
    xs = [np.asarray(x, np.float64) for x in xs]
    rng = np.random.default_rng(1)
    ts = [rng.standard_normal(x.shape) for x in xs]
    _, tans = nv.jvp(f, [exact(x) for x in xs], [exact(t) for t in ts])
    lhs = float(np.sum(np.asarray(tans[0]) * w))
    rhs = sum(float(np.sum(np.asarray(g) * t)) for g, t in zip(grads, ts))
    assert abs(lhs - rhs) <= jvp_rtol * (1 + abs(lhs))


def _vmap_and_loop(f, xs: list, in_axes) -> tuple[np.ndarray, np.ndarray]:
    """nv.vmap(f, in_axes) and f stacked over the mapped axis in a Python loop."""
    arrs = [exact(x) for x in xs]
    got = np.asarray(nv.vmap(f, in_axes=in_axes)(*arrs))
    n = next(np.shape(x)[ax] for x, ax in zip(xs, in_axes) if ax is not None)
    rows = []
    for i in range(n):
        args = [
            exact(np.take(x, i, axis=ax)) if ax is not None else exact(x)
            for x, ax in zip(xs, in_axes)
        ]
        rows.append(np.asarray(f(*args)))
    want = np.stack(rows)
    assert got.shape == want.shape, (got.shape, want.shape)
    return got, want


def vmap_check(f, xs: list, in_axes: tuple) -> None:
    """nv.vmap(f, in_axes) against a loop: floats within 1e-12, other dtypes equal."""
    got, want = _vmap_and_loop(f, xs, in_axes)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


def vmap_same(f, xs: list, in_axes) -> None:
    """nv.vmap(f, in_axes) against a loop, equal bit for bit."""
    got, want = _vmap_and_loop(f, xs, in_axes)
    np.testing.assert_array_equal(got, want)
