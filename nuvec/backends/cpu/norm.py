"""Layer norm on the CPU (``primitives.norm``): one pass over the rows of the last axis for
the forward and for the backward pass (nv_rows.c, on the launch threads)."""

from __future__ import annotations

import numpy as np

from ...primitives.norm import LayerNorm, LayerNormVJP
from ..registry import register
from ._rows import LAYER_NORM_BLOCK, layer_norm_rows, layer_norm_vjp_rows
from .memory import empty
from .reduction import _sum


def _operands(ins, has_weight: bool):
    """The inputs, C-contiguous (the row kernels walk rows); ``w`` None without a weight."""
    ins = [np.ascontiguousarray(a) for a in ins]
    return ins[0], (ins[1] if has_weight else None), ins


@register(LayerNorm)
def _layer_norm(prim, ins, node):
    x, w, ins = _operands(ins, prim.has_weight)
    b = ins[-1] if prim.has_bias else None
    out = empty(x.shape, x.dtype)
    layer_norm_rows(x, w, b, prim.eps, out)
    return [out]


@register(LayerNormVJP)
def _layer_norm_vjp(prim, ins, node):
    x, w, ins = _operands(ins, prim.has_weight)
    g = ins[-1]
    n = x.shape[-1]
    blocks = -(-(x.size // n) // LAYER_NORM_BLOCK)
    dx = empty(x.shape, x.dtype)
    dw = empty((blocks, n), x.dtype) if prim.has_weight else None
    db = empty((blocks, n), x.dtype) if prim.has_bias else None
    layer_norm_vjp_rows(x, w, g, prim.eps, dx, dw, db)
    return [dx] + [_sum(p, (0,), False, p.dtype) for p in (dw, db) if p is not None]
