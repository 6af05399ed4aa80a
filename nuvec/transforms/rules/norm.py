"""Transform rules of the primitives of ``nuvec.primitives.norm``."""

from __future__ import annotations

from ... import ops
from ...core.array import Array
from ...ops.composites import layer_norm_composite
from ...primitives.norm import LayerNorm, LayerNormVJP


def _split(inputs, has_weight: bool, has_bias: bool):
    """(x, w or None, b or None) from a primitive's inputs ``[x, w?, b?]``."""
    x, rest = inputs[0], list(inputs[1:])
    w = rest.pop(0) if has_weight else None
    b = rest.pop(0) if has_bias else None
    return x, w, b


def composite_vjp(x: Array, w: Array | None, g: Array, eps: float, has_bias: bool) -> list:
    """``LayerNormVJP``'s outputs from element-wise and reduction ops: [dx, dw?, db?]."""
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


def _layer_norm_expand(prim, inputs) -> list:
    x, w, b = _split(inputs, prim.has_weight, prim.has_bias)
    return [layer_norm_composite(x, w, b, prim.eps)]


def _layer_norm_vjp(prim, primals, cotangents, argnums, outputs):
    x, w, _ = _split(primals, prim.has_weight, prim.has_bias)
    args = [x] + ([w] if w is not None else []) + [cotangents[0]]
    grads = Array.make_multi(LayerNormVJP(prim.eps, prim.has_weight, prim.has_bias), args)
    return [grads[i] for i in argnums]


def _layer_norm_vjp_expand(prim, inputs) -> list:
    w = inputs[1] if prim.has_weight else None
    return composite_vjp(inputs[0], w, inputs[-1], prim.eps, prim.has_bias)


VJP = {
    LayerNorm: _layer_norm_vjp,
}
EXPAND = {
    LayerNorm: _layer_norm_expand,
    LayerNormVJP: _layer_norm_vjp_expand,
}
