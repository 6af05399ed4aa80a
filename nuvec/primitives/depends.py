"""``Depends``: the first ``n`` inputs unchanged, evaluated only after the other inputs (MLX's
``depends``: an ordering edge in the graph)."""

from __future__ import annotations

from ..core.array import Array
from ..core.primitive import Primitive


class Depends(Primitive):
    __slots__ = ("n",)
    name = "depends"

    def __init__(self, n: int) -> None:
        self.n = n

    @property
    def params(self) -> tuple:
        return (self.n,)

    def infer(self, inputs):
        return [(x._shape, x._dtype) for x in inputs[: self.n]]

    def vjp(self, primals, cotangents, argnums, outputs):
        from .. import ops

        out = []
        for k in argnums:
            c = cotangents[k] if k < self.n else None
            out.append(c if c is not None else ops.zeros_like(primals[k]))
        return out

    def jvp(self, primals, tangents, argnums):
        from .. import ops

        given = dict(zip(argnums, tangents))
        return [given[i] if i in given else ops.zeros_like(primals[i]) for i in range(self.n)]

    def vmap(self, inputs, axes):
        return Array.make_multi(self, inputs), list(axes[: self.n])
