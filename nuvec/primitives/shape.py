"""Shape primitives: views and rearrangements of an array's elements."""
from __future__ import annotations

from ..core.array import Array
from ..core.primitive import Primitive


class Broadcast(Primitive):
    """Broadcasts to ``shape`` (a view with zero strides on the CPU)."""
    __slots__ = ("shape",)
    name = "broadcast_to"
    fixes_shape = True

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(shape)

    @property
    def params(self) -> tuple:
        return (self.shape,)

    def infer(self, inputs):
        return [(self.shape, inputs[0]._dtype)]

    def vjp(self, primals, cotangents, argnums, outputs):
        from .. import ops
        x, g = primals[0], cotangents[0]
        lead = g.ndim - x.ndim
        axes = tuple(range(lead)) + tuple(
            lead + i for i, d in enumerate(x.shape) if d == 1 and g.shape[lead + i] != 1)
        if axes:
            g = ops.sum(g, axis=axes, keepdims=True)
        return [ops.reshape(g, x.shape) if g.shape != x.shape else g]

    def jvp(self, primals, tangents, argnums):
        return [Array.make(self, tangents)]

    def vmap(self, inputs, axes):
        from .. import ops
        (x,), (ax,) = inputs, axes
        x = ops.moveaxis(x, ax, 0)
        b = x.shape[0]
        # align the batched input's trailing dims to the target shape
        pad = len(self.shape) - (x.ndim - 1)
        x = ops.reshape(x, (b,) + (1,) * pad + x.shape[1:])
        return [ops.broadcast_to(x, (b,) + self.shape)], [0]


class Reshape(Primitive):
    __slots__ = ("shape",)
    name = "reshape"
    fixes_shape = True

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(shape)

    @property
    def params(self) -> tuple:
        return (self.shape,)

    def infer(self, inputs):
        return [(self.shape, inputs[0]._dtype)]

    def vjp(self, primals, cotangents, argnums, outputs):
        from .. import ops
        return [ops.reshape(cotangents[0], primals[0].shape)]

    def jvp(self, primals, tangents, argnums):
        return [Array.make(self, tangents)]

    def vmap(self, inputs, axes):
        from .. import ops
        (x,), (ax,) = inputs, axes
        x = ops.moveaxis(x, ax, 0)
        return [ops.reshape(x, (x.shape[0],) + self.shape)], [0]
