"""Primitives that reinterpret or re-encode bits: ``View`` (the same bytes as another dtype)
and ``ConvertFP8`` (floats to and from fp8 e4m3 codes held in uint8, MLX's encoding)."""

from __future__ import annotations

from ..core import dtypes as dt
from ..core.primitive import Primitive


def view_shape(shape: tuple[int, ...], src: dt.Dtype, dst: dt.Dtype) -> tuple[int, ...]:
    """The shape of ``src`` data of ``shape`` seen as ``dst``: the last axis scales by the
    ratio of the item sizes."""
    a, b = src.size, dst.size
    if a == b:
        return shape
    if not shape:
        raise ValueError("view: a scalar can only be viewed as a dtype of the same size")
    if a < b and (shape[-1] * a) % b:
        raise ValueError(
            f"view: the last axis ({shape[-1]} x {a} bytes) is not a multiple of "
            f"{dst}'s size ({b} bytes)"
        )
    return shape[:-1] + (shape[-1] * a // b,)


class View(Primitive):
    """The input's bytes as ``dtype`` (row-major order). Not differentiable, as in MLX."""

    __slots__ = ("dtype",)
    name = "view"
    differentiable = False

    def __init__(self, dtype: dt.Dtype) -> None:
        self.dtype = dtype

    @property
    def params(self) -> tuple:
        return (self.dtype.name,)

    def infer(self, inputs):
        x = inputs[0]
        return [(view_shape(x._shape, x._dtype, self.dtype), self.dtype)]


class ConvertFP8(Primitive):
    """Floats to fp8 e4m3 codes (``to_fp8``: round to nearest even, magnitudes from 464 up,
    infinities and NaN saturate to 448) or codes to ``dtype`` (``from_fp8``)."""

    __slots__ = ("to_fp8", "dtype")
    name = "convert_fp8"
    differentiable = False

    def __init__(self, to_fp8: bool, dtype: dt.Dtype) -> None:
        self.to_fp8 = to_fp8
        self.dtype = dtype

    @property
    def params(self) -> tuple:
        return (self.to_fp8, self.dtype.name)

    def infer(self, inputs):
        return [(inputs[0]._shape, self.dtype)]
