"""Transform rules of the primitives of ``nuvec.primitives.sort``."""

from __future__ import annotations

from ... import ops
from ...core import dtypes as dt
from ...core.array import Array
from ...primitives._common import batched_axis
from ...primitives.reduction import take_along
from ...primitives.sort import ArgSort, _AlongAxis


def _along_axis_vmap(prim, inputs, axes):
    (x,), (b,) = inputs, axes
    if b is None:
        return [Array.make(prim, [x])], [None]
    return [Array.make(prim._with_axis(batched_axis(prim.axis, b)), [x])], [b]


def _along_axis_vjp(prim, primals, cotangents, argnums, outputs):
    x = primals[0]
    if prim.out_index or x._dtype.kind not in "fciu":
        return [ops.zeros_like(x)]
    inv = Array.make(ArgSort(prim.axis), [prim._fixed_perm(x)])
    return [take_along(ops.astype(cotangents[0], x._dtype), inv, prim.axis)]


def _along_axis_jvp(prim, primals, tangents, argnums):
    x = primals[0]
    if prim.out_index:
        return [ops.zeros(x._shape, dt.uint32)]
    return [take_along(tangents[0], prim._fixed_perm(x), prim.axis)]


VJP = {
    _AlongAxis: _along_axis_vjp,
}
JVP = {
    _AlongAxis: _along_axis_jvp,
}
VMAP = {
    _AlongAxis: _along_axis_vmap,
}
