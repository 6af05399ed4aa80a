"""Transform rules of the primitives of ``nuvec.primitives.misc``."""

from __future__ import annotations

from ... import ops
from ...core.array import Array
from ...primitives.misc import Copy, CustomFunction, StopGradient, Unbatched


def _stop_gradient_vjp(prim, primals, cotangents, argnums, outputs):
    return [ops.zeros_like(primals[0])]


def _stop_gradient_jvp(prim, primals, tangents, argnums):
    return [ops.zeros_like(primals[0])]


def _stop_gradient_vmap(prim, inputs, axes):
    return [Array.make(prim, inputs)], list(axes)


def _unbatched_vjp(prim, primals, cotangents, argnums, outputs):
    return [cotangents[0]]


def _unbatched_jvp(prim, primals, tangents, argnums):
    return [tangents[0]]


def _unbatched_vmap(prim, inputs, axes):
    if axes[0] is not None:
        raise ValueError(
            f"{prim.op}: vmap over {prim.argument} is not supported (map over the "
            "other arguments only)"
        )
    return [Array.make(prim, inputs)], [None]


def _copy_vjp(prim, primals, cotangents, argnums, outputs):
    return [cotangents[0]]


def _copy_jvp(prim, primals, tangents, argnums):
    return [tangents[0]]


def _copy_vmap(prim, inputs, axes):
    return [Array.make(prim, inputs)], list(axes)


def _custom_function_vjp(prim, primals, cotangents, argnums, outputs):
    return prim.fn._rule_vjp(prim, primals, cotangents, argnums, outputs)


def _custom_function_jvp(prim, primals, tangents, argnums):
    return prim.fn._rule_jvp(prim, primals, tangents, argnums)


def _custom_function_vmap(prim, inputs, axes):
    return prim.fn._rule_vmap(prim, inputs, axes)


VJP = {
    StopGradient: _stop_gradient_vjp,
    Unbatched: _unbatched_vjp,
    Copy: _copy_vjp,
    CustomFunction: _custom_function_vjp,
}
JVP = {
    StopGradient: _stop_gradient_jvp,
    Unbatched: _unbatched_jvp,
    Copy: _copy_jvp,
    CustomFunction: _custom_function_jvp,
}
VMAP = {
    StopGradient: _stop_gradient_vmap,
    Unbatched: _unbatched_vmap,
    Copy: _copy_vmap,
    CustomFunction: _custom_function_vmap,
}
