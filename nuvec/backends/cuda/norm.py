"""Layer norm on the GPU (``primitives.norm``): one row kernel for the forward pass and one
for the backward pass (``rows``); the weight's and the bias's gradients are then sums over
the rows (``reduction._sum``: a product with ones through cuBLAS)."""

from __future__ import annotations

import cupy as cp

from ...primitives.norm import LayerNorm, LayerNormVJP
from . import rows
from .reduction import _sum
from .runtime import gpu


def _split(prim, ins):
    """The operands, C-contiguous: x, the weight or None, the last operand or None."""
    ins = [cp.ascontiguousarray(a) for a in ins]
    w = ins[1] if prim.has_weight else None
    return ins[0], w, ins[-1] if len(ins) > 1 + prim.has_weight else None


@gpu(LayerNorm)
def _layer_norm(prim, ins, node):
    x, w, b = _split(prim, ins)
    return [rows.layer_norm_rows(x, w, b, prim.eps)]


@gpu(LayerNormVJP)
def _layer_norm_vjp(prim, ins, node):
    x, w, g = _split(prim, ins)
    dx, gx = rows.layer_norm_vjp_rows(x, w, g, prim.eps, prim.has_weight)
    n = x.shape[-1]
    out = [dx]
    if prim.has_weight:
        out.append(_sum(gx.reshape(-1, n), (0,), gx.dtype, False))
    if prim.has_bias:
        out.append(_sum(g.reshape(-1, n), (0,), g.dtype, False))
    return out
