"""Linear-algebra primitives: Matmul and AddMM, and MLX's factorisations (QRF, SVD, Inverse,
Cholesky, Eig, Eigh, LUF; at the end of the file).

Both take operands of at least two dimensions and one dtype (the ops promote, and turn 1-D
operands into matrices first); batch dimensions broadcast as NumPy's. ``AddMM(alpha, beta)``
computes ``alpha * (a @ b) + beta * c`` with ``c`` broadcastable to the product's shape (a
bias row, typically), in one output buffer.

The vjp rules are matmuls with a transposed view of the other operand (no copy: BLAS reads
transposed layouts), summed over batch dimensions that were broadcast.
"""

from __future__ import annotations

from ..core import dtypes as dt
from ..core.array import Array
from ..core.primitive import Primitive
from ._common import Expanding
from .shape import Transpose, broadcast_shape


def matmul_shape(a, b, name: str = "matmul") -> tuple:
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(
            f"{name}: the primitive needs operands of at least 2 dimensions, got "
            f"shapes {a._shape} and {b._shape}"
        )
    if a._shape[-1] != b._shape[-2]:
        raise ValueError(
            f"{name}: last dimension of the first operand (shape {a._shape}) must "
            f"match the second-to-last dimension of the second (shape {b._shape})"
        )
    if a._dtype != b._dtype:
        raise TypeError(f"{name}: operand dtypes {a._dtype.name} and {b._dtype.name} differ")
    return broadcast_shape([a._shape[:-2], b._shape[:-2]], "matmul") + (a._shape[-2], b._shape[-1])


def _mm(a: Array, b: Array) -> Array:
    return Array.make(Matmul(), [a, b])


def _is_mT(x: Array) -> bool:
    """Whether ``x`` is a (lazy) swap of its last two axes: ``w.T`` in ``x @ w.T``."""
    p = x._prim
    if type(p) is not Transpose:
        return False
    n = len(p.axes)
    return n >= 2 and p.axes == tuple(range(n - 2)) + (n - 1, n - 2)


def _apply(prim: Primitive, x: Array, stream=None) -> list:
    """The outputs of ``prim`` on ``x`` as a list (one array, or siblings)."""
    if len(prim.infer([x])) == 1:
        return [Array.make(prim, [x], stream)]
    return Array.make_multi(prim, [x], stream)


class Matmul(Primitive):
    """``a @ b`` for operands of at least 2 dimensions, batch dimensions broadcast."""

    __slots__ = ()
    name = "matmul"

    def infer(self, inputs):
        a, b = inputs
        return [(matmul_shape(a, b), a._dtype)]


class PermutedMatmul(Expanding):
    """``transpose(a @ b, axes)`` computed as one product written straight into the permuted
    layout (nv.compile makes it on the CPU for a product read only through transposes that
    keep the last axis last, e.g. attention heads merged back: the transposed copy a reshape
    would make is gone). Its rules are those of that composite."""

    __slots__ = ("axes",)
    name = "permuted_matmul"

    def __init__(self, axes: tuple) -> None:
        self.axes = tuple(axes)

    @property
    def params(self) -> tuple:
        return (self.axes,)

    def infer(self, inputs):
        a, b = inputs
        shape = matmul_shape(a, b)
        return [(tuple(shape[i] for i in self.axes), a._dtype)]


class AddMM(Primitive):
    """``alpha * (a @ b) + beta * c``; inputs ``[c, a, b]`` of one dtype, ``c`` broadcastable
    to the product's shape (the product's shape is the result's)."""

    __slots__ = ("alpha", "beta")
    name = "addmm"

    def __init__(self, alpha: float = 1.0, beta: float = 1.0) -> None:
        self.alpha = float(alpha)
        self.beta = float(beta)

    @property
    def params(self) -> tuple:
        return (self.alpha, self.beta)

    def infer(self, inputs):
        c, a, b = inputs
        shape = matmul_shape(a, b, "addmm")
        if c._dtype != a._dtype:
            raise TypeError(f"addmm: c's dtype {c._dtype.name} differs from {a._dtype.name}")
        if broadcast_shape([c._shape, shape], "addmm") != shape:
            raise ValueError(
                f"addmm: c of shape {c._shape} does not broadcast to the product's shape {shape}"
            )
        return [(shape, a._dtype)]


# -- factorisations ------------------------------------------------------------------------
#
# MLX's factorisation primitives: each works on the matrices of the last two axes, batched
# over the leading ones, so vmap moves the mapped axis to the front and applies the same
# primitive (out axes 0). MLX gives them no derivatives. nuvec differentiates the real
# inverses, the Cholesky factor, QR of tall matrices, LU of square ones (for fixed pivots),
# the symmetric eigendecomposition and the singular values
# (the textbook matrix-calculus rules, written with the primitives themselves, so they
# differentiate again); the rest raise NotImplementedError saying why. A factorisation that
# reads one triangle of its input (tri_inv, cholesky, eigh) has a zero derivative with
# respect to the other triangle.


def _square(name: str, a) -> None:
    if a.ndim < 2:
        raise ValueError(f"{name}: arrays must have at least 2 dimensions, got {a.ndim}")
    if a._shape[-1] != a._shape[-2]:
        raise ValueError(f"{name}: only defined for square matrices, got shape {a._shape}")


def _check_dtype(name: str, a, allowed: tuple) -> None:
    if a._dtype.name not in allowed:
        raise ValueError(f"{name}: arrays must have type {', '.join(allowed)}; got {a._dtype.name}")


_REAL = ("float32", "float64")
_REAL_OR_COMPLEX = ("float32", "float64", "complex64")


def _real_of(d):
    return dt.float32 if d == dt.complex64 else d


def _real_only(name: str, x: Array, rule: str) -> None:
    if x._dtype.kind == "c":
        raise NotImplementedError(f"{name}: no {rule} rule for complex input")


def _no_rule(name: str, why: str):
    raise NotImplementedError(f"{name}: no derivative ({why}; MLX defines none)")


class _Batched(Primitive):
    """A primitive over the matrices of the last two axes of its one input."""

    __slots__ = ()


class QRF(_Batched):
    """``a = q @ r``: ``q`` (..., m, k) with orthonormal columns, ``r`` (..., k, n) upper
    triangular, ``k = min(m, n)``."""

    __slots__ = ()
    name = "qr"

    def infer(self, inputs):
        (a,) = inputs
        if a.ndim < 2:
            raise ValueError(f"qr: arrays must have at least 2 dimensions, got {a.ndim}")
        _check_dtype("qr", a, _REAL)
        m, n = a._shape[-2:]
        k = min(m, n)
        return [(a._shape[:-1] + (k,), a._dtype), (a._shape[:-2] + (k, n), a._dtype)]

    @staticmethod
    def _tall(a: Array, rule: str) -> None:
        _real_only("qr", a, rule)
        if a.shape[-2] < a.shape[-1]:
            _no_rule("qr", "not implemented for matrices wider than tall")


class SVD(_Batched):
    """``a = u[..., :k] * s @ vt[..., :k, :]``: ``u`` (..., m, m), ``s`` (..., k) descending
    (real: float32 for complex64 input), ``vt`` (..., n, n); only ``s`` without
    ``compute_uv``."""

    __slots__ = ("compute_uv",)
    name = "svd"

    def __init__(self, compute_uv: bool = True) -> None:
        self.compute_uv = bool(compute_uv)

    @property
    def params(self) -> tuple:
        return (self.compute_uv,)

    def infer(self, inputs):
        (a,) = inputs
        if a.ndim < 2:
            raise ValueError(f"svd: arrays must have at least 2 dimensions, got {a.ndim}")
        _check_dtype("svd", a, _REAL_OR_COMPLEX)
        m, n = a._shape[-2:]
        lead = a._shape[:-2]
        s = (lead + (min(m, n),), _real_of(a._dtype))
        if not self.compute_uv:
            return [s]
        return [(lead + (m, m), a._dtype), s, (lead + (n, n), a._dtype)]


class Inverse(_Batched):
    """The inverse of each square matrix; with ``tri``, of its ``upper`` (or lower) triangle,
    the other triangle of the result being zero."""

    __slots__ = ("tri", "upper")
    name = "inverse"

    def __init__(self, tri: bool = False, upper: bool = False) -> None:
        self.tri = bool(tri)
        self.upper = bool(upper) and self.tri

    @property
    def params(self) -> tuple:
        return (self.tri, self.upper)

    def infer(self, inputs):
        (a,) = inputs
        name = "tri_inv" if self.tri else "inv"
        _square(name, a)
        _check_dtype(name, a, _REAL)
        return [(a._shape, a._dtype)]


class Cholesky(_Batched):
    """The lower (or ``upper``) triangular factor of each symmetric positive-definite matrix
    (``a = l @ l.T``); the other triangle is zero."""

    __slots__ = ("upper",)
    name = "cholesky"

    def __init__(self, upper: bool = False) -> None:
        self.upper = bool(upper)

    @property
    def params(self) -> tuple:
        return (self.upper,)

    def infer(self, inputs):
        (a,) = inputs
        _square("cholesky", a)
        _check_dtype("cholesky", a, _REAL)
        return [(a._shape, a._dtype)]


class Eig(_Batched):
    """Eigenvalues (..., n) and, with ``vectors``, right eigenvectors (..., n, n; column j
    for value j) of general square matrices, both complex64."""

    __slots__ = ("vectors",)
    name = "eig"

    def __init__(self, vectors: bool = True) -> None:
        self.vectors = bool(vectors)

    @property
    def params(self) -> tuple:
        return (self.vectors,)

    def infer(self, inputs):
        (a,) = inputs
        name = "eig" if self.vectors else "eigvals"
        _square(name, a)
        _check_dtype(name, a, _REAL_OR_COMPLEX)
        vals = (a._shape[:-1], dt.complex64)
        return [vals, (a._shape, dt.complex64)] if self.vectors else [vals]


class Eigh(_Batched):
    """Eigenvalues (ascending, real) and, with ``vectors``, orthonormal eigenvectors of
    symmetric (Hermitian) matrices, read from the ``uplo`` ("L" or "U") triangle."""

    __slots__ = ("uplo", "vectors")
    name = "eigh"

    def __init__(self, uplo: str = "L", vectors: bool = True) -> None:
        self.uplo = str(uplo)
        self.vectors = bool(vectors)

    @property
    def params(self) -> tuple:
        return (self.uplo, self.vectors)

    def infer(self, inputs):
        (a,) = inputs
        name = "eigh" if self.vectors else "eigvalsh"
        _square(name, a)
        _check_dtype(name, a, _REAL_OR_COMPLEX)
        vals = (a._shape[:-1], _real_of(a._dtype))
        return [vals, (a._shape, a._dtype)] if self.vectors else [vals]

    def _decomposed(self, a: Array):
        w, v = Array.make_multi(Eigh(self.uplo, True), [a])
        return w, v


class LUF(_Batched):
    """LAPACK's partial-pivoting LU of (..., m, n) matrices: the factors packed in one array
    (``l`` below the unit diagonal, ``u`` on and above it), the pivots (..., min(m, n))
    (row i was swapped with row ``pivots[i]``, uint32) and the row permutation (..., m)
    (uint32) such that ``a = l[perm] @ u``."""

    __slots__ = ()
    name = "lu_factor"

    def infer(self, inputs):
        (a,) = inputs
        if a.ndim < 2:
            raise ValueError(f"lu: arrays must have at least 2 dimensions, got {a.ndim}")
        _check_dtype("lu", a, _REAL)
        m, n = a._shape[-2:]
        return [
            (a._shape, a._dtype),
            (a._shape[:-2] + (min(m, n),), dt.uint32),
            (a._shape[:-1], dt.uint32),
        ]

    @staticmethod
    def _square_real(a: Array, rule: str) -> None:
        _real_only("lu", a, rule)
        if a.shape[-1] != a.shape[-2]:
            _no_rule("lu", "not implemented for non-square matrices")
