"""Random bits: the one primitive behind nuvec.random.

``RandomBits(shape, width)`` maps a threefry key (uint32, shape ``(..., 2)``) to ``shape``
unsigned integers of ``width`` bytes per key: a pure function of the key, so equal keys give
equal bits everywhere. A draw made from the global key (``stateful``) is flagged effectful, so
that compile never folds it into a constant nor merges it with another draw.
"""

from __future__ import annotations

from ..core import dtypes as dt
from ..core.primitive import Primitive

WIDTH_DTYPES = {1: dt.uint8, 2: dt.uint16, 4: dt.uint32}


class RandomBits(Primitive):
    __slots__ = ("shape", "width", "stateful")
    name = "random_bits"
    fixes_shape = True
    differentiable = False

    def __init__(self, shape: tuple[int, ...], width: int, stateful: bool = False) -> None:
        if width not in WIDTH_DTYPES:
            raise ValueError(f"random_bits: width must be 1, 2 or 4 bytes, got {width}")
        self.shape = tuple(int(d) for d in shape)
        self.width = width
        self.stateful = bool(stateful)

    @property
    def effectful(self) -> bool:  # type: ignore[override]
        return self.stateful

    @property
    def params(self) -> tuple:
        return (self.shape, self.width, self.stateful)

    def infer(self, inputs):
        (key,) = inputs
        if key._dtype != dt.uint32 or not key._shape or key._shape[-1] != 2:
            raise ValueError(
                f"random_bits: a key is a uint32 array of shape (..., 2), got "
                f"{key._dtype.name} {key._shape}"
            )
        return [(key._shape[:-1] + self.shape, WIDTH_DTYPES[self.width])]
