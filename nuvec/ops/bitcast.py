"""``view`` (an array's bytes as another dtype, also ``Array.view``) and the fp8 e4m3
conversions ``to_fp8``/``from_fp8``.

>>> import nuvec as nv
>>> nv.array([1.0], dtype=nv.float32).view(nv.uint32).item()
1065353216
>>> nv.from_fp8(nv.to_fp8(nv.array([3.0, -448.0])), nv.float32).tolist()
[3.0, -448.0]
"""

from __future__ import annotations

from ..core import dtypes as dt
from ..core.array import Array
from ..core.device import resolve_stream
from ..primitives.bitcast import ConvertFP8, View, view_shape
from ._common import as_array

__all__ = ["view", "to_fp8", "from_fp8"]


def view(a, dtype, *, stream=None) -> Array:
    """``a``'s bytes read as ``dtype``; a different item size scales the last axis."""
    a = as_array(a, "view")
    d = dt.to_dtype(dtype)
    if d == a.dtype:
        return a
    view_shape(a.shape, a.dtype, d)  # checks the shape, with the error naming view
    return Array.make(View(d), [a], resolve_stream(stream))


def to_fp8(x, *, stream=None) -> Array:
    """fp8 e4m3 codes (uint8) of a real floating array: round to nearest even, saturating
    at +-448 (infinities and NaN included)."""
    x = as_array(x, "to_fp8")
    if not dt.issubdtype(x.dtype, dt.floating):
        raise ValueError(f"to_fp8: only real floating types are supported, got {x.dtype}")
    return Array.make(ConvertFP8(True, dt.uint8), [x], resolve_stream(stream))


def from_fp8(x, dtype=dt.bfloat16, *, stream=None) -> Array:
    """The values of fp8 e4m3 codes (a uint8 array) as ``dtype`` (bfloat16 by default)."""
    x = as_array(x, "from_fp8")
    if x.dtype != dt.uint8:
        raise ValueError(f"from_fp8: the input must be uint8, got {x.dtype}")
    d = dt.to_dtype(dtype)
    if not dt.issubdtype(d, dt.floating):
        raise ValueError(f"from_fp8: only real floating types are supported, got {d}")
    return Array.make(ConvertFP8(False, d), [x], resolve_stream(stream))


def _view_method(self, dtype, *, stream=None) -> Array:
    return view(self, dtype, stream=stream)


Array.view = _view_method  # type: ignore[attr-defined]  # MLX's Array.view
