"""Primitives outside the families: gradient stops, explicit copies, dependencies."""
from __future__ import annotations

from ..core.array import Array
from ..core.primitive import Primitive


class StopGradient(Primitive):
    """The identity, with a zero gradient. Compile keeps it (an outer transform must see it)."""
    __slots__ = ()
    name = "stop_gradient"

    def infer(self, inputs):
        return [(inputs[0]._shape, inputs[0]._dtype)]

    def vjp(self, primals, cotangents, argnums, outputs):
        from .. import ops
        return [ops.zeros_like(primals[0])]

    def jvp(self, primals, tangents, argnums):
        from .. import ops
        return [ops.zeros_like(primals[0])]

    def vmap(self, inputs, axes):
        return [Array.make(self, inputs)], list(axes)
