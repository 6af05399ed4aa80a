"""Linear-algebra primitives: Matmul and AddMM.

Both take operands of at least two dimensions and one dtype (the ops promote, and turn 1-D
operands into matrices first); batch dimensions broadcast as NumPy's. ``AddMM(alpha, beta)``
computes ``alpha * (a @ b) + beta * c`` with ``c`` broadcastable to the product's shape (a
bias row, typically), in one output buffer.

The vjp rules are matmuls with a transposed view of the other operand (no copy: BLAS reads
transposed layouts), summed over batch dimensions that were broadcast.
"""
from __future__ import annotations

from ..core.array import Array
from ..core.primitive import Primitive
from ._common import Expanding, ops as _ops
from .shape import Transpose


def _bshape(*shapes: tuple) -> tuple:
    from ..ops.shape import broadcast_shapes
    return broadcast_shapes(*shapes, name="matmul")


def matmul_shape(a, b, name: str = "matmul") -> tuple:
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"{name}: the primitive needs operands of at least 2 dimensions, got "
                         f"shapes {a._shape} and {b._shape}")
    if a._shape[-1] != b._shape[-2]:
        raise ValueError(f"{name}: last dimension of the first operand (shape {a._shape}) must "
                         f"match the second-to-last dimension of the second (shape {b._shape})")
    if a._dtype != b._dtype:
        raise TypeError(f"{name}: operand dtypes {a._dtype.name} and {b._dtype.name} differ")
    return _bshape(a._shape[:-2], b._shape[:-2]) + (a._shape[-2], b._shape[-1])


def unbroadcast(g: Array, shape: tuple) -> Array:
    """``g`` summed over the dimensions that were broadcast to reach its shape from ``shape``."""
    ops = _ops()
    if g._shape == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and g._shape[lead + i] != 1)
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
    if 0 in argnums:
        ga = _mT(_mm(b, _mT(g))) if _is_mT(a) else _mm(g, _mT(b))
        out[0] = unbroadcast(_scale(ga, alpha), a._shape)
    if 1 in argnums:
        gb = _mT(_mm(_mT(g), a)) if _is_mT(b) else _mm(_mT(a), g)
        out[1] = unbroadcast(_scale(gb, alpha), b._shape)
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
    own = x._shape[1:]
    return ops.reshape(x, (x._shape[0],) + (1,) * (nbatch - (len(own) - 2)) + own)


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
            raise ValueError(f"addmm: c of shape {c._shape} does not broadcast to the product's "
                             f"shape {shape}")
        return [(shape, a._dtype)]

    def vjp(self, primals, cotangents, argnums, outputs):
        c, a, b = primals
        g = cotangents[0]
        r = _matmul_vjp(a, b, g, [k - 1 for k in argnums if k > 0], self.alpha)
        out = {k + 1: v for k, v in r.items()}
        if 0 in argnums:
            out[0] = unbroadcast(_scale(g, self.beta), c._shape)
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
            c = ops.moveaxis(c, cx, 0)
            c = ops.reshape(c, (c._shape[0],) + (1,) * (p.ndim - (c.ndim - 1)) + c._shape[1:])
            return [ops.add(_scale(c, self.beta), p)], [0]
        nb = max(a.ndim - 2 - (ax is not None), b.ndim - 2 - (bx is not None))
        a2, b2 = _align(a, ax, nb), _align(b, bx, nb)
        if cx is not None:
            c = ops.moveaxis(c, cx, 0)
            c = ops.reshape(c, (c._shape[0],) + (1,) * (nb + 2 - (c.ndim - 1)) + c._shape[1:])
        return [Array.make(self, [c, a2, b2])], [0]
