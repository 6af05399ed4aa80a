"""``nv.linalg``: norms, factorisations, inverses and solvers with MLX's API
(``mlx.core.linalg``).

The factorisations (qr, svd, inv, tri_inv, cholesky, eig, eigh, lu_factor) are primitives over
the matrices of the last two axes, batched over the others; the rest is built from them and
ordinary ops as MLX builds it (``solve`` from the LU factors and triangular inverses, ``pinv``
from the SVD, ``det`` and ``slogdet`` from the LU's diagonal or, up to 3 x 3, cofactors).
Inputs must be float32 or float64 (eig, eigh and svd also take complex64); results keep that
precision. On the CPU the work is LAPACK's through NumPy and SciPy, on CUDA cuSOLVER's through
CuPy. MLX differentiates none of the factorisations; nuvec differentiates inv, tri_inv,
cholesky, qr of tall or square matrices, lu of square ones (pivots held fixed), eigh /
eigvalsh (real input) and the singular values, and so everything built from them (solve,
solve_triangular, det, slogdet, cholesky_inv, the 2 and nuclear matrix norms); eig and the
singular vectors (so pinv) raise NotImplementedError under grad / jvp.

>>> import nuvec as nv
>>> a = nv.array([[4.0, 1.0], [1.0, 3.0]])
>>> nv.linalg.solve(a, nv.array([1.0, 2.0])).tolist()  # doctest: +SKIP
[0.09090910851955414, 0.6363636255264282]
>>> round(nv.linalg.det(a).item(), 4)
11.0
"""

from __future__ import annotations

import contextlib
import math
import numbers
from typing import Sequence

from .core import dtypes as dt
from .core.array import Array
from .core.device import resolve_stream, stream as _stream_ctx
from .primitives.linalg import LUF, QRF, SVD, Cholesky, Eig, Eigh, Inverse, _apply
from . import ops
from .ops._common import as_array, normalize_axes, normalize_axis, operands
from .ops.creation import array

__all__ = [
    "norm",
    "qr",
    "svd",
    "inv",
    "tri_inv",
    "cholesky",
    "cholesky_inv",
    "cross",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "lu",
    "lu_factor",
    "pinv",
    "slogdet",
    "solve",
    "solve_triangular",
]


def _on(stream):
    return contextlib.nullcontext() if stream is None else _stream_ctx(resolve_stream(stream))


def _array(a, name: str) -> Array:

    return as_array(a, name)


def _at_least_float(d: dt.Dtype) -> dt.Dtype:
    return d if d.kind in "fc" else dt.promote_types(d, dt.float32)


def _make(prim, a: Array, stream) -> list:
    """The outputs of factorisation ``prim`` on ``a`` (a list)."""

    return _apply(prim, a, resolve_stream(stream))


def _bool(v, name: str, what: str) -> bool:
    if not isinstance(v, (bool, numbers.Integral)):
        raise TypeError(f"{name}: {what} must be a bool, got {type(v).__name__}")
    return bool(v)


# -- norms ---------------------------------------------------------------------------------


def _l2(a: Array, axes: list, keepdims: bool) -> Array:
    sq = ops.square(ops.abs(a)) if a.dtype == dt.complex64 else ops.square(a)
    return ops.sqrt(ops.sum(sq, axis=axes, keepdims=keepdims))


def _vector_norm(a: Array, ord: float, axes: list, keepdims: bool) -> Array:
    d = _real_dtype(_at_least_float(a.dtype))
    if ord == 0:
        return ops.astype(ops.sum(ops.not_equal(a, 0), axis=axes, keepdims=keepdims), d)
    if ord == 1:
        return ops.astype(ops.sum(ops.abs(a), axis=axes, keepdims=keepdims), d)
    if ord == 2:
        return _l2(a, axes, keepdims)
    if ord == math.inf:
        return ops.astype(ops.max(ops.abs(a), axis=axes, keepdims=keepdims), d)
    if ord == -math.inf:
        return ops.astype(ops.min(ops.abs(a), axis=axes, keepdims=keepdims), d)
    p = ops.power(ops.astype(ops.abs(a), d), array(ord, d))
    return ops.power(ops.sum(p, axis=axes, keepdims=keepdims), array(1.0 / ord, d))


def _real_dtype(d: dt.Dtype) -> dt.Dtype:
    return dt.float32 if d == dt.complex64 else d


def _singular_values(a: Array, row: int, col: int) -> Array:
    """The singular values of the matrices on axes (row, col) of ``a``."""
    m = (
        ops.moveaxis(ops.moveaxis(a, row, -1), col, -1)
        if row > col
        else ops.moveaxis(ops.moveaxis(a, col, -1), row, -2)
    )
    return _make(SVD(False), m, None)[0]


def _matrix_norm(a: Array, ord, axes: list, keepdims: bool) -> Array:
    d = _at_least_float(a.dtype)
    row, col = (ax % a.ndim for ax in axes)
    if ord in ("f", "fro"):
        return _l2(a, [row, col], keepdims)
    if ord == "nuc" or (not isinstance(ord, str) and ord in (2, -2)):
        s = _singular_values(ops.astype(a, d), row, col)
        r = (
            ops.sum(s, axis=-1)
            if ord == "nuc"
            else (ops.max(s, axis=-1) if ord == 2 else ops.min(s, axis=-1))
        )
        return ops.expand_dims(r, sorted((row, col))) if keepdims else r
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid ord {ord!r} for a matrix norm")
    if ord in (1, -1):
        inner, outer = row, col - (not keepdims and col > row)
    elif ord in (math.inf, -math.inf):
        inner, outer = col, row - (not keepdims and row > col)
    else:
        raise ValueError(f"norm: invalid ord {ord!r} for a matrix norm")
    s = ops.sum(ops.abs(a), axis=inner, keepdims=keepdims)
    r = (
        ops.max(s, axis=outer, keepdims=keepdims)
        if ord > 0
        else ops.min(s, axis=outer, keepdims=keepdims)
    )
    return ops.astype(r, _real_dtype(d))


def norm(
    a,
    /,
    ord: int | float | str | None = None,
    axis: int | Sequence[int] | None = None,
    keepdims: bool = False,
    *,
    stream=None,
) -> Array:
    """A vector norm (one axis) or a matrix norm (two axes): ``ord`` of 0, 1, 2, inf, -inf or
    any p for vectors; "fro", "nuc", 1, -1, 2, -2, inf, -inf for matrices. Without ``ord`` it
    is the 2-norm of the flattened array (or the Frobenius norm over two axes).

    >>> import nuvec as nv
    >>> nv.linalg.norm(nv.array([3.0, 4.0])).item()
    5.0
    >>> nv.linalg.norm(nv.array([[1.0, 2.0], [3.0, 4.0]]), ord=1).item()
    6.0
    """
    a = _array(a, "norm")
    if ord is not None and not isinstance(ord, (str, numbers.Real)):
        raise TypeError(f"norm: ord must be None, a number or a string, got {type(ord).__name__}")
    if axis is None:
        axes = None
    elif isinstance(axis, numbers.Integral) and not isinstance(axis, bool):
        axes = [int(axis)]
    else:
        try:
            axes = [int(x) for x in axis]  # type: ignore[union-attr]  # else TypeError below
        except (TypeError, ValueError):
            raise TypeError(
                f"norm: axis must be None, an int or a sequence of ints, got {type(axis).__name__}"
            ) from None
    if axes is not None:
        normalize_axes(axes, a.ndim, "norm")
    with _on(stream):
        if ord is None:
            if axes is None:
                out = _l2(ops.reshape(a, (-1,)), [0], False)
                return ops.reshape(out, (1,) * a.ndim) if keepdims else out
            if len(axes) > 2:
                raise ValueError("norm: received too many axes for a norm")
            return _l2(a, axes, keepdims)
        if axes is None:
            axes = list(range(a.ndim))
        if isinstance(ord, str):
            if len(axes) != 2:
                raise ValueError(
                    f"norm: norm {ord!r} is only supported for matrices, but "
                    f"received {len(axes)} axis/axes"
                )
            return _matrix_norm(a, ord, axes, keepdims)
        if len(axes) == 1:
            return _vector_norm(a, float(ord), axes, keepdims)
        if len(axes) == 2:
            return _matrix_norm(a, float(ord), axes, keepdims)
        raise ValueError("norm: received too many axes for a norm")


# -- factorisations ------------------------------------------------------------------------


def _matrix_arg(a, name: str, dtypes: tuple, square: bool = False) -> Array:
    a = _array(a, name)
    if a.ndim < 2:
        raise ValueError(f"{name}: arrays must have at least 2 dimensions, got {a.ndim}")
    if a.dtype.name not in dtypes:
        raise ValueError(f"{name}: arrays must have type {' or '.join(dtypes)}; got {a.dtype.name}")
    if square and a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: only defined for square matrices, got shape {a.shape}")
    return a


_REAL = ("float32", "float64")
_ANY = ("float32", "float64", "complex64")


def qr(a, *, stream=None) -> tuple[Array, Array]:
    """The reduced QR factorisation ``a = q @ r`` of each matrix (last two axes).

    >>> import nuvec as nv
    >>> q, r = nv.linalg.qr(nv.array([[2.0, 3.0], [1.0, 2.0]]))
    >>> nv.allclose(q @ r, nv.array([[2.0, 3.0], [1.0, 2.0]])).item()
    True
    """
    a = _matrix_arg(a, "qr", _REAL)
    q, r = _make(QRF(), a, stream)
    return q, r


def svd(a, compute_uv: bool = True, *, stream=None):
    """The singular value decomposition: ``(u, s, vt)`` with ``u`` (..., m, m), ``s``
    (..., min(m, n)) descending and ``vt`` (..., n, n), or only ``s`` without ``compute_uv``.

    >>> import nuvec as nv
    >>> nv.linalg.svd(nv.array([[3.0, 0.0], [0.0, 4.0]]), compute_uv=False).tolist()
    [4.0, 3.0]
    """
    a = _matrix_arg(a, "svd", _ANY)
    outs = _make(SVD(_bool(compute_uv, "svd", "compute_uv")), a, stream)
    return tuple(outs) if len(outs) == 3 else outs[0]


def inv(a, *, stream=None) -> Array:
    """The inverse of each square matrix.

    >>> import nuvec as nv
    >>> nv.linalg.inv(nv.array([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    a = _matrix_arg(a, "inv", _REAL, square=True)
    return _make(Inverse(), a, stream)[0]


def tri_inv(a, upper: bool = False, *, stream=None) -> Array:
    """The inverse of the lower (``upper=False``) or upper triangle of each square matrix;
    the other triangle of the input is ignored and that of the result is zero.

    >>> import nuvec as nv
    >>> nv.linalg.tri_inv(nv.array([[2.0, 9.0], [1.0, 4.0]])).tolist()
    [[0.5, 0.0], [-0.125, 0.25]]
    """
    a = _matrix_arg(a, "tri_inv", _REAL, square=True)
    return _make(Inverse(tri=True, upper=_bool(upper, "tri_inv", "upper")), a, stream)[0]


def cholesky(a, upper: bool = False, *, stream=None) -> Array:
    """The Cholesky factor of each symmetric positive-definite matrix: lower ``l`` with
    ``a = l @ l.T``, or upper ``u`` with ``a = u.T @ u``. Only that triangle of ``a`` is read.
    As in MLX definiteness is not checked: LAPACK stops at the first non-positive pivot and
    the rest of the factor is left as it stands.

    >>> import nuvec as nv
    >>> nv.linalg.cholesky(nv.array([[4.0, 2.0], [2.0, 2.0]])).tolist()
    [[2.0, 0.0], [1.0, 1.0]]
    """
    a = _matrix_arg(a, "cholesky", _REAL, square=True)
    return _make(Cholesky(_bool(upper, "cholesky", "upper")), a, stream)[0]


def cholesky_inv(a, upper: bool = False, *, stream=None) -> Array:
    """The inverse of the matrix whose Cholesky factor is ``a`` (lower, or ``upper``).

    >>> import nuvec as nv
    >>> l = nv.linalg.cholesky(nv.array([[4.0, 2.0], [2.0, 2.0]]))
    >>> nv.linalg.cholesky_inv(l).tolist()
    [[0.5, -0.5], [-0.5, 1.0]]
    """
    a = _matrix_arg(a, "cholesky_inv", _REAL, square=True)
    upper = _bool(upper, "cholesky_inv", "upper")
    with _on(stream):
        li = tri_inv(a, upper=upper, stream=stream)
        lt = ops.swapaxes(li, -1, -2)
        return ops.matmul(li, lt) if upper else ops.matmul(lt, li)


def eigvals(a, *, stream=None) -> Array:
    """The eigenvalues of each square matrix (complex64).

    >>> import nuvec as nv
    >>> nv.linalg.eigvals(nv.array([[2.0, 0.0], [0.0, 3.0]])).tolist()
    [(2+0j), (3+0j)]
    """
    a = _matrix_arg(a, "eigvals", _ANY, square=True)
    return _make(Eig(vectors=False), a, stream)[0]


def eig(a, *, stream=None) -> tuple[Array, Array]:
    """Eigenvalues and right eigenvectors (column ``j`` for value ``j``), both complex64.

    >>> import nuvec as nv
    >>> w, v = nv.linalg.eig(nv.array([[2.0, 0.0], [0.0, 3.0]]))
    >>> w.tolist()
    [(2+0j), (3+0j)]
    """
    a = _matrix_arg(a, "eig", _ANY, square=True)
    w, v = _make(Eig(vectors=True), a, stream)
    return w, v


def _uplo(UPLO, name: str) -> str:
    if UPLO not in ("L", "U"):
        raise ValueError(f"{name}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO


def eigvalsh(a, UPLO: str = "L", *, stream=None) -> Array:
    """The eigenvalues (ascending, real) of each symmetric or Hermitian matrix, read from its
    lower (``UPLO="L"``) or upper triangle.

    >>> import nuvec as nv
    >>> nv.linalg.eigvalsh(nv.array([[2.0, 1.0], [1.0, 2.0]])).tolist()
    [1.0, 3.0]
    """
    a = _matrix_arg(a, "eigvalsh", _ANY, square=True)
    return _make(Eigh(_uplo(UPLO, "eigvalsh"), vectors=False), a, stream)[0]


def eigh(a, UPLO: str = "L", *, stream=None) -> tuple[Array, Array]:
    """Eigenvalues (ascending, real) and orthonormal eigenvectors (columns) of each symmetric
    or Hermitian matrix.

    >>> import nuvec as nv
    >>> w, v = nv.linalg.eigh(nv.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> w.tolist()
    [1.0, 3.0]
    """
    a = _matrix_arg(a, "eigh", _ANY, square=True)
    w, v = _make(Eigh(_uplo(UPLO, "eigh"), vectors=True), a, stream)
    return w, v


def lu_factor(a, *, stream=None) -> tuple[Array, Array]:
    """LAPACK's packed LU factors and pivots: ``l`` (unit diagonal) below the diagonal of the
    first result, ``u`` on and above it; row ``i`` was swapped with row ``pivots[i]``.

    >>> import nuvec as nv
    >>> lu, piv = nv.linalg.lu_factor(nv.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> piv.tolist()
    [1, 1]
    """
    a = _matrix_arg(a, "lu_factor", _REAL)
    lu_, piv, _ = _make(LUF(), a, stream)
    return lu_, piv


def lu(a, *, stream=None) -> tuple[Array, Array, Array]:
    """The LU factorisation ``(p, l, u)`` with ``a = l[p] @ u`` (``take_along_axis(l,
    p[..., None], axis=-2) @ u`` for batches): ``p`` row indices (uint32), ``l`` (..., m, k)
    unit lower triangular, ``u`` (..., k, n) upper triangular, ``k = min(m, n)``.

    >>> import nuvec as nv
    >>> a = nv.array([[1.0, 2.0], [3.0, 4.0]])
    >>> p, l, u = nv.linalg.lu(a)
    >>> nv.allclose(l[p] @ u, a).item()
    True
    """
    a = _matrix_arg(a, "lu", _REAL)
    with _on(stream):
        packed, _, perm = _make(LUF(), a, stream)
        m, n = a.shape[-2:]
        k = min(m, n)
        low = ops.tril(packed, k=-1)
        up = ops.triu(packed)
        if n != k:
            low = low[..., :k]
        elif m != k:
            up = up[..., :k, :]
        low = ops.add(low, ops.eye(m, k, dtype=a.dtype))
        return perm, low, up


def _solve_args(a, b, name: str) -> tuple[Array, Array]:
    a, b = _array(a, name), _array(b, name)
    if a.ndim < 2:
        raise ValueError(f"{name}: the first input must have at least 2 dimensions, got {a.ndim}")
    if b.ndim < 1:
        raise ValueError(f"{name}: the second input must have at least 1 dimension, got 0")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: the first input must be a square matrix, got shape {a.shape}")
    k = b.shape[-2] if b.ndim > 1 else b.shape[-1]
    if a.shape[-1] != k:
        raise ValueError(
            f"{name}: the last dimension of the first input (shape {a.shape}) must "
            f"match the {'second-to-last' if b.ndim > 1 else 'only'} dimension of "
            f"the second (shape {b.shape})"
        )
    d = dt.promote_types(a.dtype, b.dtype)
    if d.name not in _REAL:
        raise ValueError(
            f"{name}: the inputs must promote to float32 or float64, got "
            f"{a.dtype.name} and {b.dtype.name}"
        )
    return ops.astype(a, d), ops.astype(b, d)


def solve_triangular(a, b, *, upper: bool = False, stream=None) -> Array:
    """``x`` with ``a @ x = b`` for lower (or ``upper``) triangular ``a``; ``b`` a vector or
    matrices.

    >>> import nuvec as nv
    >>> a = nv.array([[2.0, 0.0], [1.0, 1.0]])
    >>> nv.linalg.solve_triangular(a, nv.array([2.0, 3.0])).tolist()
    [1.0, 2.0]
    """
    a, b = _solve_args(a, b, "solve_triangular")
    upper = _bool(upper, "solve_triangular", "upper")
    with _on(stream):
        return ops.matmul(tri_inv(a, upper=upper, stream=stream), b)


def solve(a, b, *, stream=None) -> Array:
    """``x`` with ``a @ x = b`` for square ``a`` (LU with partial pivoting); ``b`` a vector or
    matrices, batch axes broadcast as in matmul.

    >>> import nuvec as nv
    >>> nv.linalg.solve(nv.array([[2.0, 0.0], [0.0, 4.0]]), nv.array([2.0, 2.0])).tolist()
    [1.0, 0.5]
    """
    a, b = _solve_args(a, b, "solve")
    with _on(stream):
        vector = b.ndim == 1
        if vector:
            b = ops.expand_dims(b, -1)
        batch = ops.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        b = ops.broadcast_to(b, tuple(batch) + b.shape[-2:])
        perm, low, up = lu(a, stream=stream)
        # the rows of b in the factors' order: l @ u @ x = b[order] (the pivots are locally
        # constant in a: no gradient goes through them)
        order = ops.expand_dims(ops.argsort(ops.stop_gradient(perm), axis=-1), -1)
        order = ops.broadcast_to(order, b.shape)
        y = solve_triangular(low, ops.take_along_axis(b, order, axis=-2), stream=stream)
        x = solve_triangular(up, y, upper=True, stream=stream)
        return ops.squeeze(x, -1) if vector else x


def pinv(a, *, stream=None) -> Array:
    """The Moore-Penrose pseudo-inverse of each matrix, from its SVD (singular values below
    ``10 * max(m, n) * eps`` times the largest count as zero).

    >>> import nuvec as nv
    >>> nv.linalg.pinv(nv.array([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    a = _matrix_arg(a, "pinv", _REAL)
    m, n = a.shape[-2:]
    with _on(stream):
        if a.size == 0:
            return ops.zeros(a.shape[:-2] + (n, m), a.dtype)
        u, s, vt = _make(SVD(True), a, stream)
        k = min(m, n)
        u = ops.swapaxes(u[..., :, :k], -1, -2)
        v = ops.swapaxes(vt[..., :k, :], -1, -2)
        s = ops.expand_dims(s, -2)
        rcond = 10.0 * max(m, n) * float(dt.finfo(a.dtype).eps)
        cutoff = ops.multiply(array(rcond, a.dtype), ops.max(s, axis=-1, keepdims=True))
        rs = ops.where(ops.greater(s, cutoff), ops.reciprocal(s), array(0.0, a.dtype))
        return ops.matmul(ops.multiply(v, rs), u)


def cross(a, b, axis: int = -1, *, stream=None) -> Array:
    """The cross product of 3-vectors (or 2-vectors, their third component zero) along
    ``axis``; other axes broadcast.

    >>> import nuvec as nv
    >>> nv.linalg.cross(nv.array([1.0, 0.0, 0.0]), nv.array([0.0, 1.0, 0.0])).tolist()
    [0.0, 0.0, 1.0]
    """

    a, b = _array(a, "cross"), _array(b, "cross")
    if not isinstance(axis, numbers.Integral) or isinstance(axis, bool):
        raise TypeError(f"cross: axis must be an int, got {type(axis).__name__}")
    for x in (a, b):
        normalize_axis(axis, x.ndim, "cross")
        if x.shape[axis] not in (2, 3):
            raise ValueError(f"cross: the axis must have size 2 or 3, got {x.shape[axis]}")
    with _on(stream):
        a2, b2 = a.shape[axis] == 2, b.shape[axis] == 2
        a, b = operands(a, b, "cross")
        sa, sb = list(a.shape), list(b.shape)
        sa[axis] = sb[axis] = 3
        full = list(ops.broadcast_shapes(tuple(sa), tuple(sb)))
        ax = axis % len(full)
        full[ax] = 2 if a2 else 3
        a = ops.broadcast_to(a, tuple(full))
        full[ax] = 2 if b2 else 3
        b = ops.broadcast_to(b, tuple(full))
        x = ops.split(a, 2 if a2 else 3, axis=ax)
        y = ops.split(b, 2 if b2 else 3, axis=ax)
        if a2 and b2:
            z = ops.zeros_like(x[0])
            parts = [z, z]
        elif b2:
            parts = [ops.negative(x[2] * y[1]), x[2] * y[0]]
        elif a2:
            parts = [x[1] * y[2], ops.negative(x[0] * y[2])]
        else:
            parts = [x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2]]
        parts.append(x[0] * y[1] - x[1] * y[0])
        return ops.concatenate(parts, axis=ax)


# -- determinants --------------------------------------------------------------------------


def _det_args(a, name: str) -> Array:
    a = _array(a, name)
    if a.dtype.kind == "c":
        raise ValueError(f"{name}: complex inputs are not supported")
    if a.ndim < 2:
        raise ValueError(f"{name}: arrays must have at least 2 dimensions, got {a.ndim}")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: only defined for square matrices, got shape {a.shape}")
    return ops.astype(a, _at_least_float(a.dtype))


def _det_small(a: Array) -> Array:
    """The determinant of matrices up to 3 x 3 by cofactors (differentiable ops)."""
    n = a.shape[-1]
    if n == 0:
        return ops.ones(a.shape[:-2], a.dtype)

    def e(i, j):
        return a[..., i, j]

    if n == 1:
        return e(0, 0)
    if n == 2:
        return e(0, 0) * e(1, 1) - e(0, 1) * e(1, 0)
    return (
        e(0, 0) * (e(1, 1) * e(2, 2) - e(1, 2) * e(2, 1))
        - e(0, 1) * (e(1, 0) * e(2, 2) - e(1, 2) * e(2, 0))
        + e(0, 2) * (e(1, 0) * e(2, 1) - e(1, 1) * e(2, 0))
    )


def _slogdet(a: Array, stream) -> tuple[Array, Array]:
    if a.shape[-1] <= 3:
        raw = _det_small(a)
        return ops.sign(raw), ops.log(ops.abs(raw))
    packed, piv, _ = _make(LUF(), a, stream)
    diag = ops.diagonal(packed, 0, -2, -1)
    k = piv.shape[-1]
    swaps = ops.sum(ops.not_equal(piv, ops.arange(k, dtype=dt.uint32)), axis=-1)
    negative = ops.sum(ops.less(diag, 0), axis=-1)
    odd = ops.remainder(ops.astype(swaps, dt.int32) + ops.astype(negative, dt.int32), 2)
    sign = ops.astype(1 - 2 * odd, a.dtype)
    logabs = ops.sum(ops.log(ops.abs(diag)), axis=-1)
    singular = ops.any(ops.equal(diag, 0), axis=-1)
    sign = ops.where(singular, array(0.0, a.dtype), sign)
    logabs = ops.where(singular, array(-math.inf, a.dtype), logabs)
    return sign, logabs


def slogdet(a, *, stream=None) -> tuple[Array, Array]:
    """``(sign, logabsdet)`` of each square matrix: ``det = sign * exp(logabsdet)``; a
    singular matrix gives ``(0, -inf)``.

    >>> import nuvec as nv
    >>> s, l = nv.linalg.slogdet(nv.array([[0.0, 2.0], [3.0, 0.0]]))
    >>> s.item(), round(l.item(), 4)
    (-1.0, 1.7918)
    """
    a = _det_args(a, "slogdet")
    with _on(stream):
        return _slogdet(a, stream)


def det(a, *, stream=None) -> Array:
    """The determinant of each square matrix (integers as float32).

    >>> import nuvec as nv
    >>> nv.linalg.det(nv.array([[1.0, 2.0], [3.0, 4.0]])).item()
    -2.0
    """
    a = _det_args(a, "det")
    with _on(stream):
        if a.shape[-1] <= 3:
            return _det_small(a)
        sign, logabs = _slogdet(a, stream)
        return ops.multiply(sign, ops.exp(logabs))
