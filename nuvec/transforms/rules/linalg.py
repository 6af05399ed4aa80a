"""Transform rules of the primitives of ``nuvec.primitives.linalg``."""

from __future__ import annotations

from ... import ops
from ...core import dtypes as dt, shapeless
from ...core.array import Array
from ...primitives.linalg import (
    AddMM,
    Cholesky,
    Eig,
    Eigh,
    Inverse,
    LUF,
    Matmul,
    PermutedMatmul,
    QRF,
    SVD,
    _Batched,
    _is_mT,
    _mm,
    _apply,
    _no_rule,
    _real_only,
    matmul_shape,
)
from ...primitives.shape import Transpose
from ._common import conj
from .shape import sum_to_like


def unbroadcast(g: Array, x: Array) -> Array:
    """``g`` summed over the dimensions that were broadcast to reach its shape from ``x``'s
    (under a shapeless trace decided again at each replay, see ``sum_to_like``)."""
    if shapeless.relative(g) or shapeless.relative(x):
        return sum_to_like(g, x)
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
    return ops.swapaxes(x, -1, -2)


def _scale(x: Array, s: float) -> Array:
    return x if s == 1.0 else ops.multiply(x, s)


def _ones_after_batch(x: Array, n: int) -> Array:
    """``x`` with ``n`` axes of size 1 inserted after its first (new axes, not a reshape to
    the traced sizes, so that a shapeless compile replays it on other shapes)."""
    return ops.expand_dims(x, tuple(range(1, 1 + n))) if n > 0 else x


def _eye_like(x: Array) -> Array:
    n = x.shape[-1]
    return ops.eye(n, dtype=x.dtype)


def _tri(x: Array, lower: bool, k: int = 0) -> Array:
    return ops.tril(x, k=-k) if lower else ops.triu(x, k=k)


def _svd_singular_vectors(prim, a: Array):
    """The first k left and right singular vectors of ``a``: (u_k, v_k)."""
    u, _, vt = Array.make_multi(SVD(True), [a])
    k = min(a.shape[-2:])
    return u[..., :k], _mT(vt[..., :k, :])


# The rules work with the lower factor l of s = the symmetric matrix of the triangle read
# (an upper factor is the transpose of the lower one of a.T): with phi(x) the lower
# triangle of x with its diagonal halved, dl = l phi(l^-1 ds l^-T), and the cotangent of
# s is sym(l^-T phi(l^T g) l^-1).
def _cholesky_phi(prim, x: Array) -> Array:
    return ops.subtract(ops.tril(x), ops.multiply(ops.multiply(x, _eye_like(x)), 0.5))


def _cholesky_lower(prim, y: Array) -> Array:
    return _mT(y) if prim.upper else y


# With s = v diag(w) v^T (s: the symmetric matrix of the triangle read) and
# f_ij = 1 / (w_j - w_i) off the diagonal (0 on it): dw = diag(v^T ds v),
# dv = v (f * (v^T ds v)); the cotangent of s is v (diag(gw) + f * (v^T gv)) v^T,
# symmetrised. Eigenvalues must be distinct for the vectors' rule.
def _eigh_gaps(w: Array) -> Array:
    diff = ops.subtract(ops.expand_dims(w, -2), ops.expand_dims(w, -1))  # w_j - w_i
    eye = ops.eye(w.shape[-1], dtype=w.dtype)
    return ops.multiply(ops.reciprocal(ops.add(diff, eye)), ops.subtract(1.0, eye))


# For square a with the pivoting held fixed: b = a[order] = l u (order the inverse of
# perm); with x = l^-1 db u^-1, dl = l tril(x, -1) and du = triu(x) u, packed as one
# array; the cotangent of b is l^-T (tril(l^T gl, -1) + triu(gu u^T)) u^-T, and a's is
# b's rows put back in place (row i of a is row perm[i] of b).
def _luf_factors(packed: Array):
    low = ops.add(ops.tril(packed, k=-1), _eye_like(packed))
    li = Array.make(Inverse(tri=True, upper=False), [low])
    ui = Array.make(Inverse(tri=True, upper=True), [packed])
    return low, ops.triu(packed), li, ui


def _product_vjp(a, b, g, argnums, alpha: float = 1.0) -> dict:
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


def _product_jvp(a, b, t: dict, alpha: float = 1.0):
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
    if ax is None:
        return x
    x = ops.moveaxis(x, ax, 0)
    return _ones_after_batch(x, nbatch - (x.ndim - 3))


def _mm2(a: Array, b: Array) -> Array:
    return ops.matmul(a, b)


def _sym_from_triangle(t: Array, lower: bool) -> Array:
    """The symmetric matrix a factorisation sees when it reads one triangle of ``t``."""
    return ops.add(_tri(t, lower), _mT(_tri(t, lower, 1)))


def _triangle_grad(g: Array, lower: bool) -> Array:
    """The cotangent of ``t`` from that of ``_sym_from_triangle(t)``: the read triangle gets
    ``g`` plus the mirrored entries of ``g``, the other triangle nothing."""
    return ops.add(_tri(g, lower), _tri(_mT(g), lower, 1))


def _matmul_vjp(prim, primals, cotangents, argnums, outputs):
    a, b = primals
    r = _product_vjp(a, b, cotangents[0], argnums)
    return [r[k] for k in argnums]


def _matmul_jvp(prim, primals, tangents, argnums):
    a, b = primals
    return [_product_jvp(a, b, dict(zip(argnums, tangents)))]


def _matmul_vmap(prim, inputs, axes):
    a, b = inputs
    ax, bx = axes
    nb = max(a.ndim - 2 - (ax is not None), b.ndim - 2 - (bx is not None))
    return [_mm(_align(a, ax, nb), _align(b, bx, nb))], [0]


def _permuted_matmul_expand(prim, inputs) -> list:
    return [Array.make(Transpose(prim.axes), [Array.make(Matmul(), list(inputs))])]


def _add_mm_vjp(prim, primals, cotangents, argnums, outputs):
    c, a, b = primals
    g = cotangents[0]
    r = _product_vjp(a, b, g, [k - 1 for k in argnums if k > 0], prim.alpha)
    out = {k + 1: v for k, v in r.items()}
    if 0 in argnums:
        out[0] = unbroadcast(_scale(g, prim.beta), c)
    return [out[k] for k in argnums]


def _add_mm_jvp(prim, primals, tangents, argnums):
    c, a, b = primals
    t = dict(zip(argnums, tangents))
    mt = {k - 1: v for k, v in t.items() if k > 0}
    out = _product_jvp(a, b, mt, prim.alpha) if mt else None
    if 0 in t:
        tc = ops.broadcast_to(_scale(t[0], prim.beta), matmul_shape(a, b, "addmm"))
        out = tc if out is None else ops.add(out, tc)
    return [out]


def _add_mm_vmap(prim, inputs, axes):
    c, a, b = inputs
    cx, ax, bx = axes
    if ax is None and bx is None:  # only c is batched: the product is shared
        p = _scale(_mm(a, b), prim.alpha)
        c = _ones_after_batch(ops.moveaxis(c, cx, 0), p.ndim - (c.ndim - 1))
        return [ops.add(_scale(c, prim.beta), p)], [0]
    nb = max(a.ndim - 2 - (ax is not None), b.ndim - 2 - (bx is not None))
    a2, b2 = _align(a, ax, nb), _align(b, bx, nb)
    if cx is not None:
        c = _ones_after_batch(ops.moveaxis(c, cx, 0), nb + 2 - (c.ndim - 1))
    return [Array.make(prim, [c, a2, b2])], [0]


def _batched_vmap(prim, inputs, axes):
    (x,), (b,) = inputs, axes
    x = ops.moveaxis(x, b, 0) if b != 0 else x
    outs = _apply(prim, x)
    return outs, [0] * len(outs)


# For m >= n (full column rank): with x = q^T da r^-1 and w its strictly lower part,
# dr = (x - w + w^T) r and dq = da r^-1 - q (x - w + w^T); the cotangent of a is
# (gq + q copyltu(r gr^T - gq^T q)) r^-T, copyltu mirroring the lower triangle upwards.
def _qrf_vjp(prim, primals, cotangents, argnums, outputs):
    (a,) = primals
    prim._tall(a, "vjp")
    q, r = outputs
    gq, gr = cotangents
    m = ops.subtract(_mm2(r, _mT(gr)), _mm2(_mT(gq), q))
    m = ops.add(ops.tril(m), _mT(ops.tril(m, k=-1)))
    ri = Array.make(Inverse(tri=True, upper=True), [r])
    return [_mm2(ops.add(gq, _mm2(q, m)), _mT(ri))]


def _qrf_jvp(prim, primals, tangents, argnums):
    (a,), (t,) = primals, tangents
    prim._tall(a, "jvp")
    q, r = Array.make_multi(prim, [a])
    ri = Array.make(Inverse(tri=True, upper=True), [r])
    tri = _mm2(t, ri)
    x = _mm2(_mT(q), tri)
    w = ops.tril(x, k=-1)
    up = ops.add(ops.subtract(x, w), _mT(w))
    return [ops.subtract(tri, _mm2(q, up)), _mm2(up, r)]


def _svd_differentiable(prim, a, rule: str):
    """The singular vectors of ``a`` for a derivative of its singular values (``rule``: "vjp"
    or "jvp"); only real inputs and ``compute_uv=False`` differentiate."""
    if prim.compute_uv:
        _no_rule(
            "svd",
            "the singular vectors are differentiated only through "
            "compute_uv=False (the singular values)",
        )
    _real_only("svd", a, rule)
    return _svd_singular_vectors(prim, a)


def _svd_vjp(prim, primals, cotangents, argnums, outputs):
    # only the singular values (distinct, non-zero) differentiate: ds = diag(u_k^T da v_k)
    (a,) = primals
    u, v = _svd_differentiable(prim, a, "vjp")
    g = ops.expand_dims(cotangents[0], -2)
    return [_mm2(ops.multiply(u, g), _mT(v))]


def _svd_jvp(prim, primals, tangents, argnums):
    (a,), (t,) = primals, tangents
    u, v = _svd_differentiable(prim, a, "jvp")
    return [ops.sum(ops.multiply(_mm2(_mT(u), t), _mT(v)), axis=-1)]


def _inverse_vjp(prim, primals, cotangents, argnums, outputs):
    # d(a^-1) = -a^-1 da a^-1; a triangular inverse reads (and differentiates by) only
    # its triangle
    y = outputs[0]
    g = ops.negative(_mm2(_mm2(_mT(y), cotangents[0]), _mT(y)))
    return [_tri(g, not prim.upper) if prim.tri else g]


def _inverse_jvp(prim, primals, tangents, argnums):
    y = Array.make(prim, list(primals))
    t = _tri(tangents[0], not prim.upper) if prim.tri else tangents[0]
    return [ops.negative(_mm2(_mm2(y, t), y))]


def _cholesky_vjp(prim, primals, cotangents, argnums, outputs):
    low = _cholesky_lower(prim, outputs[0])
    g = _cholesky_lower(prim, cotangents[0])
    li = Array.make(Inverse(tri=True, upper=False), [low])
    p = _cholesky_phi(prim, _mm2(_mT(low), g))
    gs = _mm2(_mm2(_mT(li), p), li)
    gs = ops.multiply(ops.add(gs, _mT(gs)), 0.5)
    ga = _triangle_grad(gs, lower=True)
    return [_mT(ga) if prim.upper else ga]


def _cholesky_jvp(prim, primals, tangents, argnums):
    low = _cholesky_lower(prim, Array.make(prim, list(primals)))
    t = _mT(tangents[0]) if prim.upper else tangents[0]
    ds = _sym_from_triangle(t, lower=True)
    li = Array.make(Inverse(tri=True, upper=False), [low])
    dl = _mm2(low, _cholesky_phi(prim, _mm2(_mm2(li, ds), _mT(li))))
    return [_mT(dl) if prim.upper else dl]


def _eig_vjp(prim, primals, cotangents, argnums, outputs):
    _no_rule(
        "eig",
        "complex eigenvectors of a general matrix are defined only up to a "
        "phase; use eigh for symmetric matrices",
    )


def _eig_jvp(prim, primals, tangents, argnums):
    _no_rule(
        "eig",
        "complex eigenvectors of a general matrix are defined only up to a "
        "phase; use eigh for symmetric matrices",
    )


def _eigh_vjp(prim, primals, cotangents, argnums, outputs):
    (a,) = primals
    _real_only(prim.name, a, "vjp")
    w, v = (outputs[0], outputs[1]) if prim.vectors else prim._decomposed(a)
    inner = ops.multiply(ops.expand_dims(cotangents[0], -2), _eye_like(v))
    if prim.vectors:
        inner = ops.add(inner, ops.multiply(_eigh_gaps(w), _mm2(_mT(v), cotangents[1])))
    gs = _mm2(_mm2(v, inner), _mT(v))
    gs = ops.multiply(ops.add(gs, _mT(gs)), 0.5)
    return [_triangle_grad(gs, prim.uplo == "L")]


def _eigh_jvp(prim, primals, tangents, argnums):
    (a,), (t,) = primals, tangents
    _real_only(prim.name, a, "jvp")
    w, v = prim._decomposed(a)
    m = _mm2(_mm2(_mT(v), _sym_from_triangle(t, prim.uplo == "L")), v)
    dw = ops.diagonal(m, 0, -2, -1)
    if not prim.vectors:
        return [dw]
    return [dw, _mm2(v, ops.multiply(_eigh_gaps(w), m))]


def _luf_vjp(prim, primals, cotangents, argnums, outputs):
    (a,) = primals
    prim._square_real(a, "vjp")
    packed, _, perm = outputs
    low, up, li, ui = _luf_factors(packed)
    g = cotangents[0]
    inner = ops.add(
        ops.tril(_mm2(_mT(low), ops.tril(g, k=-1)), k=-1), ops.triu(_mm2(ops.triu(g), _mT(up)))
    )
    gb = _mm2(_mm2(_mT(li), inner), _mT(ui))
    # the pivots are locally constant in a, so the gathers take no gradient through them
    rows = ops.expand_dims(ops.astype(ops.stop_gradient(perm), dt.int32), -1)
    return [ops.take_along_axis(gb, ops.broadcast_to(rows, gb.shape), axis=-2)]


def _luf_jvp(prim, primals, tangents, argnums):
    (a,), (t,) = primals, tangents
    prim._square_real(a, "jvp")
    packed, _, perm = Array.make_multi(prim, [a])
    low, up, li, ui = _luf_factors(packed)
    order = ops.argsort(ops.stop_gradient(perm), axis=-1)
    order = ops.expand_dims(ops.astype(order, dt.int32), -1)
    db = ops.take_along_axis(t, ops.broadcast_to(order, t.shape), axis=-2)
    x = _mm2(_mm2(li, db), ui)
    return [ops.add(_mm2(low, ops.tril(x, k=-1)), _mm2(ops.triu(x), up)), None, None]


VJP = {
    Matmul: _matmul_vjp,
    AddMM: _add_mm_vjp,
    QRF: _qrf_vjp,
    SVD: _svd_vjp,
    Inverse: _inverse_vjp,
    Cholesky: _cholesky_vjp,
    Eig: _eig_vjp,
    Eigh: _eigh_vjp,
    LUF: _luf_vjp,
}
JVP = {
    Matmul: _matmul_jvp,
    AddMM: _add_mm_jvp,
    QRF: _qrf_jvp,
    SVD: _svd_jvp,
    Inverse: _inverse_jvp,
    Cholesky: _cholesky_jvp,
    Eig: _eig_jvp,
    Eigh: _eigh_jvp,
    LUF: _luf_jvp,
}
VMAP = {
    Matmul: _matmul_vmap,
    AddMM: _add_mm_vmap,
    _Batched: _batched_vmap,
}
EXPAND = {
    PermutedMatmul: _permuted_matmul_expand,
}
