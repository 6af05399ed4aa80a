"""``Depends``: the first ``n`` inputs unchanged, evaluated only after the other inputs (MLX's
``depends``: an ordering edge in the graph)."""

from __future__ import annotations

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
