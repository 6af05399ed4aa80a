"""Layer norm as one primitive (``nv.fast.layer_norm`` on the CPU): ``LayerNorm`` and its
backward pass ``LayerNormVJP``, each one pass over the rows of the last axis.

The forward pass has the bits of the composite form (``composite``: mean, centre, variance,
``rsqrt``, scale, shift) on C-contiguous data (NumPy sums a strided axis in another order:
the CPU makes such an ``x`` contiguous first); the backward pass recomputes the statistics
from ``x`` and returns ``dx`` and, for a weight and a bias, their gradients summed over the rows:

    y = Array.make(LayerNorm(eps, True, True), [x, w, b])
    dx, dw, db = Array.make_multi(LayerNormVJP(eps, True, True), [x, w, g])

Higher derivatives, forward mode and vmap go through the composite form (``expand``), whose
rules the element-wise and reduction primitives already have.
"""

from __future__ import annotations

from ..core.array import Array
from ._common import Expanding


def _ops():
    from .. import ops

    return ops


def _split(inputs, has_weight: bool, has_bias: bool):
    """(x, w or None, b or None) from a primitive's inputs ``[x, w?, b?]``."""
    x, rest = inputs[0], list(inputs[1:])
    w = rest.pop(0) if has_weight else None
    b = rest.pop(0) if has_bias else None
    return x, w, b


def composite(x: Array, w: Array | None, b: Array | None, eps: float) -> Array:
    """The layer norm from element-wise and reduction ops (``nv.fast``'s form).

    >>> import nuvec as nv
    >>> composite(nv.array([[1.0, 3.0]]), None, None, 1e-5).tolist()
    [[-0.9999949932098389, 0.9999949932098389]]
    """
    ops = _ops()
    xc = x - ops.mean(x, axis=-1, keepdims=True)
    y = xc * ops.rsqrt(ops.mean(xc * xc, axis=-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def composite_vjp(x: Array, w: Array | None, g: Array, eps: float, has_bias: bool) -> list:
    """``LayerNormVJP``'s outputs from element-wise and reduction ops: [dx, dw?, db?]."""
    ops = _ops()
    n = x.shape[-1]
    xc = x - ops.mean(x, axis=-1, keepdims=True)
    r = ops.rsqrt(ops.mean(xc * xc, axis=-1, keepdims=True) + eps)
    xhat = xc * r
    wg = g * w if w is not None else g
    a = ops.sum(wg, axis=-1, keepdims=True) / n
    c = ops.sum(wg * xhat, axis=-1, keepdims=True) / n
    out = [(wg - a - xhat * c) * r]
    lead = tuple(range(x.ndim - 1))
    if w is not None:
        out.append(ops.sum(g * xhat, axis=lead))
    if has_bias:
        out.append(ops.sum(g, axis=lead))
    return out


class _Norm(Expanding):
    """The parameters layer norm's primitives share: eps, and whether there are a weight and a
    bias."""

    __slots__ = ("eps", "has_weight", "has_bias")

    def __init__(self, eps: float, has_weight: bool, has_bias: bool) -> None:
        self.eps = float(eps)
        self.has_weight = bool(has_weight)
        self.has_bias = bool(has_bias)

    @property
    def params(self) -> tuple:
        return (self.eps, self.has_weight, self.has_bias)


class LayerNorm(_Norm):
    """Layer norm over the last axis of ``x`` (float32 or float64), with an optional weight and
    bias of that axis's length and dtype."""

    __slots__ = ()
    name = "layer_norm"

    def infer(self, inputs):
        return [(inputs[0]._shape, inputs[0]._dtype)]

    def expand(self, inputs) -> list:
        x, w, b = _split(inputs, self.has_weight, self.has_bias)
        return [composite(x, w, b, self.eps)]

    def vjp(self, primals, cotangents, argnums, outputs):
        x, w, _ = _split(primals, self.has_weight, self.has_bias)
        args = [x] + ([w] if w is not None else []) + [cotangents[0]]
        grads = Array.make_multi(LayerNormVJP(self.eps, self.has_weight, self.has_bias), args)
        return [grads[i] for i in argnums]


class LayerNormVJP(_Norm):
    """The backward pass of ``LayerNorm``: inputs ``[x, w?, g]``, outputs ``[dx, dw?, db?]``
    (``dw``, ``db`` summed over every axis but the last)."""

    __slots__ = ()
    name = "layer_norm_vjp"

    def infer(self, inputs):
        x = inputs[0]
        n = x._shape[-1:]
        return (
            [(x._shape, x._dtype)]
            + [(n, x._dtype)] * self.has_weight
            + [(n, x._dtype)] * self.has_bias
        )

    def expand(self, inputs) -> list:
        w = inputs[1] if self.has_weight else None
        return composite_vjp(inputs[0], w, inputs[-1], self.eps, self.has_bias)
