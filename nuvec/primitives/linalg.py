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
from ..core import shapeless
from ..core.array import Array
from ..core.primitive import Primitive
from ._common import Expanding, conj, ops as _ops
from .shape import Transpose, sum_to_like


def _bshape(*shapes: tuple) -> tuple:
    from ..ops.shape import broadcast_shapes

    return broadcast_shapes(*shapes, name="matmul")


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
    return _bshape(a._shape[:-2], b._shape[:-2]) + (a._shape[-2], b._shape[-1])


def unbroadcast(g: Array, x: Array) -> Array:
    """``g`` summed over the dimensions that were broadcast to reach its shape from ``x``'s
    (under a shapeless trace decided again at each replay, see ``sum_to_like``)."""
    if shapeless.relative(g) or shapeless.relative(x):
        return sum_to_like(g, x)
    ops = _ops()
    shape = x._shape
    if g._shape == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and g._shape[lead + i] != 1
    )
    if axes:
        g = ops.sum(g, axis=axes, keepdims=True)
    return ops.reshape(g, shape)


def _mT(x: Array) -> Array:
    return _ops().swapaxes(x, -1, -2)


def _mm(a: Array, b: Array) -> Array:
    return Array.make(Matmul(), [a, b])


def _scale(x: Array, s: float) -> Array:
    return x if s == 1.0 else _ops().multiply(x, s)


def _is_mT(x: Array) -> bool:
    """Whether ``x`` is a (lazy) swap of its last two axes: ``w.T`` in ``x @ w.T``."""
    p = x._prim
    if type(p) is not Transpose:
        return False
    n = len(p.axes)
    return n >= 2 and p.axes == tuple(range(n - 2)) + (n - 1, n - 2)


def _matmul_vjp(a, b, g, argnums, alpha: float = 1.0) -> dict:
    # An operand that is a transposed view (a Linear layer's ``x @ w.T``) gets its cotangent
    # as the transpose of a product in its source's layout: ``(a.T @ g).T`` computed as
    # ``g.T @ a`` (BLAS reads the transposed views in place). The transpose's own vjp then
    # transposes it back, so ``w``'s gradient is contiguous and the optimizer's fused
    # kernels read it at full speed instead of through a strided view. The rule depends only
    # on the graph, so eager and compiled runs compute the same products.
    out = {}
    a, b = conj(a), conj(b)  # the adjoint of a complex product uses the conjugates (MLX)
    if 0 in argnums:
        ga = _mT(_mm(b, _mT(g))) if _is_mT(a) else _mm(g, _mT(b))
        out[0] = unbroadcast(_scale(ga, alpha), a)
    if 1 in argnums:
        gb = _mT(_mm(_mT(g), a)) if _is_mT(b) else _mm(_mT(a), g)
        out[1] = unbroadcast(_scale(gb, alpha), b)
    return out


def _matmul_jvp(a, b, t: dict, alpha: float = 1.0):
    ops = _ops()
    terms = []
    if 0 in t:
        terms.append(_mm(t[0], b))
    if 1 in t:
        terms.append(_mm(a, t[1]))
    out = terms[0] if len(terms) == 1 else ops.add(terms[0], terms[1])
    return _scale(out, alpha)


def _align(x: Array, ax, nbatch: int) -> Array:
    """A vmapped matmul operand as (batch, 1..., *x's own batch dims, m, k): the vmap batch
    axis first, then x's batch dims padded with 1s to ``nbatch`` of them."""
    ops = _ops()
    if ax is None:
        return x
    x = ops.moveaxis(x, ax, 0)
    return _ones_after_batch(x, nbatch - (x.ndim - 3))


def _ones_after_batch(x: Array, n: int) -> Array:
    """``x`` with ``n`` axes of size 1 inserted after its first (new axes, not a reshape to
    the traced sizes, so that a shapeless compile replays it on other shapes)."""
    return _ops().expand_dims(x, tuple(range(1, 1 + n))) if n > 0 else x


class Matmul(Primitive):
    """``a @ b`` for operands of at least 2 dimensions, batch dimensions broadcast."""

    __slots__ = ()
    name = "matmul"

    def infer(self, inputs):
        a, b = inputs
        return [(matmul_shape(a, b), a._dtype)]

    def vjp(self, primals, cotangents, argnums, outputs):
        a, b = primals
        r = _matmul_vjp(a, b, cotangents[0], argnums)
        return [r[k] for k in argnums]

    def jvp(self, primals, tangents, argnums):
        a, b = primals
        return [_matmul_jvp(a, b, dict(zip(argnums, tangents)))]

    def vmap(self, inputs, axes):
        a, b = inputs
        ax, bx = axes
        nb = max(a.ndim - 2 - (ax is not None), b.ndim - 2 - (bx is not None))
        return [_mm(_align(a, ax, nb), _align(b, bx, nb))], [0]


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

    def expand(self, inputs) -> list:
        return [Array.make(Transpose(self.axes), [Array.make(Matmul(), list(inputs))])]


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
        from ..ops.shape import broadcast_shapes

        if broadcast_shapes(c._shape, shape, name="addmm") != shape:
            raise ValueError(
                f"addmm: c of shape {c._shape} does not broadcast to the product's shape {shape}"
            )
        return [(shape, a._dtype)]

    def vjp(self, primals, cotangents, argnums, outputs):
        c, a, b = primals
        g = cotangents[0]
        r = _matmul_vjp(a, b, g, [k - 1 for k in argnums if k > 0], self.alpha)
        out = {k + 1: v for k, v in r.items()}
        if 0 in argnums:
            out[0] = unbroadcast(_scale(g, self.beta), c)
        return [out[k] for k in argnums]

    def jvp(self, primals, tangents, argnums):
        ops = _ops()
        c, a, b = primals
        t = dict(zip(argnums, tangents))
        mt = {k - 1: v for k, v in t.items() if k > 0}
        out = _matmul_jvp(a, b, mt, self.alpha) if mt else None
        if 0 in t:
            tc = ops.broadcast_to(_scale(t[0], self.beta), matmul_shape(a, b, "addmm"))
            out = tc if out is None else ops.add(out, tc)
        return [out]

    def vmap(self, inputs, axes):
        ops = _ops()
        c, a, b = inputs
        cx, ax, bx = axes
        if ax is None and bx is None:  # only c is batched: the product is shared
            p = _scale(_mm(a, b), self.alpha)
            c = _ones_after_batch(ops.moveaxis(c, cx, 0), p.ndim - (c.ndim - 1))
            return [ops.add(_scale(c, self.beta), p)], [0]
        nb = max(a.ndim - 2 - (ax is not None), b.ndim - 2 - (bx is not None))
        a2, b2 = _align(a, ax, nb), _align(b, bx, nb)
        if cx is not None:
            c = _ones_after_batch(ops.moveaxis(c, cx, 0), nb + 2 - (c.ndim - 1))
        return [Array.make(self, [c, a2, b2])], [0]


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


def _mm2(a: Array, b: Array) -> Array:
    return _ops().matmul(a, b)


def _eye_like(x: Array) -> Array:
    n = x.shape[-1]
    return _ops().eye(n, dtype=x.dtype)


def _tri(x: Array, lower: bool, k: int = 0) -> Array:
    ops = _ops()
    return ops.tril(x, k=-k) if lower else ops.triu(x, k=k)


def _sym_from_triangle(t: Array, lower: bool) -> Array:
    """The symmetric matrix a factorisation sees when it reads one triangle of ``t``."""
    return _ops().add(_tri(t, lower), _mT(_tri(t, lower, 1)))


def _triangle_grad(g: Array, lower: bool) -> Array:
    """The cotangent of ``t`` from that of ``_sym_from_triangle(t)``: the read triangle gets
    ``g`` plus the mirrored entries of ``g``, the other triangle nothing."""
    return _ops().add(_tri(g, lower), _tri(_mT(g), lower, 1))


def _real_only(name: str, x: Array, rule: str) -> None:
    if x._dtype.kind == "c":
        raise NotImplementedError(f"{name}: no {rule} rule for complex input")


def _no_rule(name: str, why: str):
    raise NotImplementedError(f"{name}: no derivative ({why}; MLX defines none)")


class _Batched(Primitive):
    """A primitive over the matrices of the last two axes of its one input."""

    __slots__ = ()

    def vmap(self, inputs, axes):
        (x,), (b,) = inputs, axes
        x = _ops().moveaxis(x, b, 0) if b != 0 else x
        outs = _apply(self, x)
        return outs, [0] * len(outs)


def _apply(prim: Primitive, x: Array, stream=None) -> list:
    """The outputs of ``prim`` on ``x`` as a list (one array, or siblings)."""
    if len(prim.infer([x])) == 1:
        return [Array.make(prim, [x], stream)]
    return Array.make_multi(prim, [x], stream)


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

    # For m >= n (full column rank): with x = q^T da r^-1 and w its strictly lower part,
    # dr = (x - w + w^T) r and dq = da r^-1 - q (x - w + w^T); the cotangent of a is
    # (gq + q copyltu(r gr^T - gq^T q)) r^-T, copyltu mirroring the lower triangle upwards.

    @staticmethod
    def _tall(a: Array, rule: str) -> None:
        _real_only("qr", a, rule)
        if a.shape[-2] < a.shape[-1]:
            _no_rule("qr", "not implemented for matrices wider than tall")

    def vjp(self, primals, cotangents, argnums, outputs):
        ops = _ops()
        (a,) = primals
        self._tall(a, "vjp")
        q, r = outputs
        gq, gr = cotangents
        m = ops.subtract(_mm2(r, _mT(gr)), _mm2(_mT(gq), q))
        m = ops.add(ops.tril(m), _mT(ops.tril(m, k=-1)))
        ri = Array.make(Inverse(tri=True, upper=True), [r])
        return [_mm2(ops.add(gq, _mm2(q, m)), _mT(ri))]

    def jvp(self, primals, tangents, argnums):
        ops = _ops()
        (a,), (t,) = primals, tangents
        self._tall(a, "jvp")
        q, r = Array.make_multi(self, [a])
        ri = Array.make(Inverse(tri=True, upper=True), [r])
        tri = _mm2(t, ri)
        x = _mm2(_mT(q), tri)
        w = ops.tril(x, k=-1)
        up = ops.add(ops.subtract(x, w), _mT(w))
        return [ops.subtract(tri, _mm2(q, up)), _mm2(up, r)]


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

    def _singular_vectors(self, a: Array):
        """The first k left and right singular vectors of ``a``: (u_k, v_k)."""
        u, _, vt = Array.make_multi(SVD(True), [a])
        k = min(a.shape[-2:])
        return u[..., :k], _mT(vt[..., :k, :])

    def vjp(self, primals, cotangents, argnums, outputs):
        # only the singular values (distinct, non-zero) differentiate: ds = diag(u_k^T da v_k)
        (a,) = primals
        if self.compute_uv:
            _no_rule(
                "svd",
                "the singular vectors are differentiated only through "
                "compute_uv=False (the singular values)",
            )
        _real_only("svd", a, "vjp")
        u, v = self._singular_vectors(a)
        g = _ops().expand_dims(cotangents[0], -2)
        return [_mm2(_ops().multiply(u, g), _mT(v))]

    def jvp(self, primals, tangents, argnums):
        (a,), (t,) = primals, tangents
        if self.compute_uv:
            _no_rule(
                "svd",
                "the singular vectors are differentiated only through "
                "compute_uv=False (the singular values)",
            )
        _real_only("svd", a, "jvp")
        u, v = self._singular_vectors(a)
        return [_ops().sum(_ops().multiply(_mm2(_mT(u), t), _mT(v)), axis=-1)]


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

    def vjp(self, primals, cotangents, argnums, outputs):
        # d(a^-1) = -a^-1 da a^-1; a triangular inverse reads (and differentiates by) only
        # its triangle
        y = outputs[0]
        g = _ops().negative(_mm2(_mm2(_mT(y), cotangents[0]), _mT(y)))
        return [_tri(g, not self.upper) if self.tri else g]

    def jvp(self, primals, tangents, argnums):
        y = Array.make(self, list(primals))
        t = _tri(tangents[0], not self.upper) if self.tri else tangents[0]
        return [_ops().negative(_mm2(_mm2(y, t), y))]


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

    # The rules work with the lower factor l of s = the symmetric matrix of the triangle read
    # (an upper factor is the transpose of the lower one of a.T): with phi(x) the lower
    # triangle of x with its diagonal halved, dl = l phi(l^-1 ds l^-T), and the cotangent of
    # s is sym(l^-T phi(l^T g) l^-1).

    def _phi(self, x: Array) -> Array:
        ops = _ops()
        return ops.subtract(ops.tril(x), ops.multiply(ops.multiply(x, _eye_like(x)), 0.5))

    def _lower(self, y: Array) -> Array:
        return _mT(y) if self.upper else y

    def vjp(self, primals, cotangents, argnums, outputs):
        ops = _ops()
        low = self._lower(outputs[0])
        g = self._lower(cotangents[0])
        li = Array.make(Inverse(tri=True, upper=False), [low])
        p = self._phi(_mm2(_mT(low), g))
        gs = _mm2(_mm2(_mT(li), p), li)
        gs = ops.multiply(ops.add(gs, _mT(gs)), 0.5)
        ga = _triangle_grad(gs, lower=True)
        return [_mT(ga) if self.upper else ga]

    def jvp(self, primals, tangents, argnums):
        low = self._lower(Array.make(self, list(primals)))
        t = _mT(tangents[0]) if self.upper else tangents[0]
        ds = _sym_from_triangle(t, lower=True)
        li = Array.make(Inverse(tri=True, upper=False), [low])
        dl = _mm2(low, self._phi(_mm2(_mm2(li, ds), _mT(li))))
        return [_mT(dl) if self.upper else dl]


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

    def vjp(self, primals, cotangents, argnums, outputs):
        _no_rule(
            "eig",
            "complex eigenvectors of a general matrix are defined only up to a "
            "phase; use eigh for symmetric matrices",
        )

    def jvp(self, primals, tangents, argnums):
        _no_rule(
            "eig",
            "complex eigenvectors of a general matrix are defined only up to a "
            "phase; use eigh for symmetric matrices",
        )


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

    # With s = v diag(w) v^T (s: the symmetric matrix of the triangle read) and
    # f_ij = 1 / (w_j - w_i) off the diagonal (0 on it): dw = diag(v^T ds v),
    # dv = v (f * (v^T ds v)); the cotangent of s is v (diag(gw) + f * (v^T gv)) v^T,
    # symmetrised. Eigenvalues must be distinct for the vectors' rule.

    def _decomposed(self, a: Array):
        w, v = Array.make_multi(Eigh(self.uplo, True), [a])
        return w, v

    @staticmethod
    def _gaps(w: Array) -> Array:
        ops = _ops()
        diff = ops.subtract(ops.expand_dims(w, -2), ops.expand_dims(w, -1))  # w_j - w_i
        eye = ops.eye(w.shape[-1], dtype=w.dtype)
        return ops.multiply(ops.reciprocal(ops.add(diff, eye)), ops.subtract(1.0, eye))

    def vjp(self, primals, cotangents, argnums, outputs):
        ops = _ops()
        (a,) = primals
        _real_only(self.name, a, "vjp")
        w, v = (outputs[0], outputs[1]) if self.vectors else self._decomposed(a)
        inner = ops.multiply(ops.expand_dims(cotangents[0], -2), _eye_like(v))
        if self.vectors:
            inner = ops.add(inner, ops.multiply(self._gaps(w), _mm2(_mT(v), cotangents[1])))
        gs = _mm2(_mm2(v, inner), _mT(v))
        gs = ops.multiply(ops.add(gs, _mT(gs)), 0.5)
        return [_triangle_grad(gs, self.uplo == "L")]

    def jvp(self, primals, tangents, argnums):
        ops = _ops()
        (a,), (t,) = primals, tangents
        _real_only(self.name, a, "jvp")
        w, v = self._decomposed(a)
        m = _mm2(_mm2(_mT(v), _sym_from_triangle(t, self.uplo == "L")), v)
        dw = ops.diagonal(m, 0, -2, -1)
        if not self.vectors:
            return [dw]
        return [dw, _mm2(v, ops.multiply(self._gaps(w), m))]


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

    # For square a with the pivoting held fixed: b = a[order] = l u (order the inverse of
    # perm); with x = l^-1 db u^-1, dl = l tril(x, -1) and du = triu(x) u, packed as one
    # array; the cotangent of b is l^-T (tril(l^T gl, -1) + triu(gu u^T)) u^-T, and a's is
    # b's rows put back in place (row i of a is row perm[i] of b).

    @staticmethod
    def _square_real(a: Array, rule: str) -> None:
        _real_only("lu", a, rule)
        if a.shape[-1] != a.shape[-2]:
            _no_rule("lu", "not implemented for non-square matrices")

    @staticmethod
    def _factors(packed: Array):
        ops = _ops()
        low = ops.add(ops.tril(packed, k=-1), _eye_like(packed))
        li = Array.make(Inverse(tri=True, upper=False), [low])
        ui = Array.make(Inverse(tri=True, upper=True), [packed])
        return low, ops.triu(packed), li, ui

    def vjp(self, primals, cotangents, argnums, outputs):
        ops = _ops()
        (a,) = primals
        self._square_real(a, "vjp")
        packed, _, perm = outputs
        low, up, li, ui = self._factors(packed)
        g = cotangents[0]
        inner = ops.add(
            ops.tril(_mm2(_mT(low), ops.tril(g, k=-1)), k=-1), ops.triu(_mm2(ops.triu(g), _mT(up)))
        )
        gb = _mm2(_mm2(_mT(li), inner), _mT(ui))
        # the pivots are locally constant in a, so the gathers take no gradient through them
        rows = ops.expand_dims(ops.astype(ops.stop_gradient(perm), dt.int32), -1)
        return [ops.take_along_axis(gb, ops.broadcast_to(rows, gb.shape), axis=-2)]

    def jvp(self, primals, tangents, argnums):
        ops = _ops()
        (a,), (t,) = primals, tangents
        self._square_real(a, "jvp")
        packed, _, perm = Array.make_multi(self, [a])
        low, up, li, ui = self._factors(packed)
        order = ops.argsort(ops.stop_gradient(perm), axis=-1)
        order = ops.expand_dims(ops.astype(order, dt.int32), -1)
        db = ops.take_along_axis(t, ops.broadcast_to(order, t.shape), axis=-2)
        x = _mm2(_mm2(li, db), ui)
        return [ops.add(_mm2(low, ops.tril(x, k=-1)), _mm2(ops.triu(x), up)), None, None]
