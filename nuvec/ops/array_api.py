"""The Array API standard's names for existing operations (MLX binds the same functions under
both names: ``nv.acos is nv.arccos``), and the dtype queries ``result_type``, ``can_cast``,
``isdtype``.

>>> import nuvec as nv
>>> nv.pow(nv.array([2.0]), 3).tolist()
[8.0]
"""

from __future__ import annotations

from ..core import dtypes as dt
from ..core.array import Array
from .creation import zeros, zeros_like
from .elementwise import (
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    left_shift,
    power,
    right_shift,
)
from .reduction import cumprod, cumsum
from .shape import concatenate, transpose

acos = arccos
acosh = arccosh
asin = arcsin
asinh = arcsinh
atan = arctan
atanh = arctanh
atan2 = arctan2
bitwise_left_shift = left_shift
bitwise_right_shift = right_shift
cumulative_prod = cumprod
cumulative_sum = cumsum
empty = zeros  # MLX's empty arrays are zero-filled
empty_like = zeros_like
matrix_transpose = transpose
pow = power
concat = concatenate
permute_dims = transpose

__all__ = [
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "atan2",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "cumulative_prod",
    "cumulative_sum",
    "empty",
    "empty_like",
    "matrix_transpose",
    "pow",
    "concat",
    "permute_dims",
    "result_type",
    "can_cast",
    "isdtype",
]


def _dtype_of(v, name: str, arg: str) -> dt.Dtype:
    if isinstance(v, Array):
        return v.dtype
    if isinstance(v, dt.Dtype):
        return v
    raise ValueError(f"{name}: {arg} must be an array or a dtype, got {type(v).__name__}")


def result_type(*arrays_and_dtypes) -> dt.Dtype:
    """The dtype that promoting the arrays' and dtypes' types together gives.

    >>> import nuvec as nv
    >>> nv.result_type(nv.int8, nv.array([1], dtype=nv.uint8))
    nuvec.int16
    """
    if not arrays_and_dtypes:
        raise ValueError("result_type: at least one array or dtype is required")
    out = _dtype_of(arrays_and_dtypes[0], "result_type", "each input")
    for v in arrays_and_dtypes[1:]:
        out = dt.promote_types(out, _dtype_of(v, "result_type", "each input"))
    return out


def can_cast(from_, to: dt.Dtype) -> bool:
    """Whether ``from_`` (an array or dtype) promotes with ``to`` to ``to`` itself.

    >>> import nuvec as nv
    >>> nv.can_cast(nv.int8, nv.int16), nv.can_cast(nv.float64, nv.float32)
    (True, False)
    """
    src = _dtype_of(from_, "can_cast", "from_")
    if not isinstance(to, dt.Dtype):
        raise TypeError(f"can_cast: to must be a dtype, got {type(to).__name__}")
    return dt.promote_types(src, to) == to


_KINDS = {
    "signed integer": dt.signedinteger,
    "unsigned integer": dt.unsignedinteger,
    "integral": dt.integer,
    "real floating": dt.floating,
    "complex floating": dt.complexfloating,
    "numeric": dt.number,
}


def _is_kind(dtype: dt.Dtype, kind) -> bool:
    if isinstance(kind, dt.Dtype):
        return dtype == kind
    if isinstance(kind, str):
        if kind == "bool":
            return dtype == dt.bool_
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown data type kind {kind!r}")
        return dt.issubdtype(dtype, _KINDS[kind])
    raise ValueError("isdtype: kind must be a dtype, a string, or a tuple of dtypes and strings")


def isdtype(dtype: dt.Dtype, kind) -> bool:
    """Whether ``dtype`` is ``kind``: a dtype, one of "bool", "signed integer", "unsigned
    integer", "integral", "real floating", "complex floating", "numeric", or a tuple of them.

    >>> import nuvec as nv
    >>> nv.isdtype(nv.float16, ("integral", "real floating"))
    True
    """
    if not isinstance(dtype, dt.Dtype):
        raise TypeError(f"isdtype: dtype must be a dtype, got {type(dtype).__name__}")
    if isinstance(kind, tuple):
        return any(_is_kind(dtype, k) for k in kind)
    return _is_kind(dtype, kind)
