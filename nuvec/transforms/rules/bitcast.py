"""Transform rules of the primitives of ``nuvec.primitives.bitcast``."""

from __future__ import annotations

from ... import ops
from ...core.array import Array
from ...primitives.bitcast import ConvertFP8, View


def _view_vjp(prim, primals, cotangents, argnums, outputs):
    return [None for _ in argnums]  # not differentiable (transforms skip it): no gradient


def _view_jvp(prim, primals, tangents, argnums):
    return [None]


def _view_vmap(prim, inputs, axes):
    x, ax = inputs[0], axes[0]
    if ax is None:
        return [Array.make(prim, [x])], [None]
    if ax != 0:
        x = ops.moveaxis(x, ax, 0)
    if x.ndim == 1 and x._dtype.size != prim.dtype.size:
        raise ValueError("view: a scalar can only be viewed as a dtype of the same size")
    return [Array.make(prim, [x])], [0]


def _convert_fp8_vjp(prim, primals, cotangents, argnums, outputs):
    return [None for _ in argnums]  # not differentiable (transforms skip it): no gradient


def _convert_fp8_jvp(prim, primals, tangents, argnums):
    return [None]


def _convert_fp8_vmap(prim, inputs, axes):
    return [Array.make(prim, inputs)], list(axes)


VJP = {
    View: _view_vjp,
    ConvertFP8: _convert_fp8_vjp,
}
JVP = {
    View: _view_jvp,
    ConvertFP8: _convert_fp8_jvp,
}
VMAP = {
    View: _view_vmap,
    ConvertFP8: _convert_fp8_vmap,
}
