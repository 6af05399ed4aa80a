"""Helpers shared by the op modules: turning inputs into arrays, weak scalar typing."""

from __future__ import annotations

import numbers
import operator
from collections.abc import Sequence

import numpy as np

from ..core import dtypes as dt
from ..core import shapeless
from ..backends.registry import backend_of
from ..core.array import Array
from ..core.device import resolve_stream

SCALARS = (bool, int, float, complex)


def scalar_dtype(v) -> dt.Dtype:
    """The dtype a lone Python scalar gets (MLX: bool, int32 or int64 for an int outside
    int32's range, float32, complex64)."""
    if isinstance(v, bool):
        return dt.bool_
    if isinstance(v, int):
        return dt.int32 if -(2**31) <= v < 2**31 else dt.int64
    if isinstance(v, float):
        return dt.float32
    return dt.complex64


def weak_dtype(v, other: dt.Dtype) -> dt.Dtype:
    """The dtype of Python scalar ``v`` next to an array of dtype ``other`` (weak typing:
    ``float16_array * 2.0`` stays float16)."""
    if isinstance(v, bool):
        return other
    if isinstance(v, int):
        return dt.int32 if other == dt.bool_ else other
    if isinstance(v, float):
        return other if other.kind in "fc" else dt.float32
    return dt.complex64


def constant(value, dtype: dt.Dtype, stream=None) -> Array:
    """An evaluated 0-d array holding ``value``."""
    return Array.constant(np.array(value, dtype=dtype.np), resolve_stream(stream), dtype)


def as_array(x, name: str = "operation") -> Array:
    """``x`` as an Array (Python scalars get their default dtype)."""
    if isinstance(x, Array):
        return x
    if isinstance(x, SCALARS):
        return constant(x, scalar_dtype(x))
    if isinstance(x, (np.ndarray, np.generic, list, tuple)) or hasattr(x, "__array__"):
        from .creation import array

        try:
            return array(x)
        except (TypeError, ValueError) as e:  # a ragged list: say which operation got it
            raise type(e)(f"{name}: {e}") from None
    raise TypeError(f"{name}: unsupported input type {type(x).__name__}")


_SCALAR_VIEWS: dict = {}  # (value key, dtype, shape) -> evaluated broadcast constant


def scalar_operand(v, dtype: dt.Dtype, like: Array) -> Array:
    """Python scalar ``v`` as an operand next to ``like``: where the backend broadcasts
    scalars (the CPU) an evaluated constant of ``like``'s shape (a zero-stride view of one
    value, kept in a small cache), so ``x * 2.0`` makes one graph node and nothing to
    broadcast at evaluation; elsewhere a 0-d constant
    (the op broadcasts it). Compile reads a zero-stride constant as the scalar it is. These
    arrays are operands only, never returned to the user, so sharing them is safe."""
    stream = like._stream
    if like._tracer and shapeless.relative(like):
        return constant(v, dtype, stream)
    # -0.0 and 0.0 are equal keys but different bits; NaN is never equal to itself. The
    # stream by identity (hashing one runs Python code): each entry holds its stream, so the
    # id cannot be reused by another stream while the entry exists
    key = (v if v or type(v) is not float else repr(v), dtype.name, like._shape, id(stream))
    c = _SCALAR_VIEWS.get(key)
    if c is not None:
        return c
    backend = backend_of(stream)
    if backend is None or not backend.broadcast_scalars or isinstance(v, complex) or v != v:
        return constant(v, dtype, stream)
    data = np.array(v, dtype=dtype.np)
    if like._shape:
        data = np.broadcast_to(data, like._shape)
    c = Array.constant(data, stream, dtype)
    if len(_SCALAR_VIEWS) >= 1024:
        _SCALAR_VIEWS.clear()
    _SCALAR_VIEWS[key] = c
    return c


def operands(a, b, name: str) -> tuple[Array, Array]:
    """Two arrays of one dtype, with MLX's promotion and weak Python scalars."""
    sa, sb = isinstance(a, SCALARS), isinstance(b, SCALARS)
    for v, other in ((a, b), (b, a)):
        if type(v) is int and isinstance(other, Array) and other._dtype.kind in "iu":
            info = np.iinfo(other._dtype.np)
            if not info.min <= v <= info.max:
                raise ValueError(
                    f"{name}: the Python int {v} does not fit in the array's dtype "
                    f"{other._dtype.name}"
                )
    if sa and not sb:
        b = as_array(b, name)
        a = scalar_operand(a, weak_dtype(a, b._dtype), b)
    elif sb and not sa:
        a = as_array(a, name)
        b = scalar_operand(b, weak_dtype(b, a._dtype), a)
    else:
        a, b = as_array(a, name), as_array(b, name)
    if a._dtype != b._dtype:
        d = dt.promote_types(a._dtype, b._dtype)
        from .elementwise import astype

        a, b = astype(a, d), astype(b, d)
    return a, b


def normalize_axis(axis, ndim: int, name: str, *, scalar: bool = False, what: str = "axis") -> int:
    """``axis`` as an index in ``[0, ndim)``, a negative one counting from the end: the one
    axis check of nuvec's functions.

    A TypeError naming ``name`` unless ``axis`` is an integer (a Python or NumPy int; a bool
    is refused), a ValueError when it is out of bounds. ``scalar``: a 0-d array takes axis 0
    (the operations that treat it as one element). ``what`` names the argument in the
    messages (vmap's "input axis")."""
    if isinstance(axis, bool):
        raise TypeError(f"{name}: {what} must be an int, got bool")
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: {what} must be an int, got {type(axis).__name__}") from None
    if not -ndim <= ax < (max(ndim, 1) if scalar else ndim):
        raise ValueError(f"{name}: {what} {ax} is out of bounds for an array of dimension {ndim}")
    return ax % ndim if ndim else 0


def normalize_axes(axes: Sequence, ndim: int, name: str) -> tuple[int, ...]:
    """Each of ``axes`` through ``normalize_axis``, in the given order; a ValueError naming
    ``name`` when two of them are the same axis."""
    out = tuple(normalize_axis(a, ndim, name) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {tuple(axes)}")
    return out


_DIM_MAX = 2**31 - 1  # MLX's shapes are 32-bit


def dim_arg(d, name: str, what: str = "shape") -> int:
    """One dimension given to ``name``: an int (bools and floats are refused) within the 32-bit
    range of MLX's shapes (an OverflowError naming the value otherwise)."""
    if isinstance(d, bool):
        raise TypeError(f"{name}: {what} must hold ints, got a bool")
    try:
        d = operator.index(d)
    except TypeError:
        raise TypeError(f"{name}: {what} must hold ints, got {type(d).__name__}") from None
    if not -_DIM_MAX - 1 <= d <= _DIM_MAX:
        raise OverflowError(
            f"{name}: dimension {d} of the {what} is outside the supported range "
            f"[{-_DIM_MAX - 1}, {_DIM_MAX}]"
        )
    return d


def shape_arg(shape, name: str, allow_minus_one: bool = False) -> tuple[int, ...]:
    """A ``shape`` argument of ``name`` (an int or a sequence of ints) as a tuple of
    non-negative ints; with ``allow_minus_one`` a dimension may be -1 (reshape)."""
    if type(shape) is tuple and all(type(d) is int and 0 <= d <= _DIM_MAX for d in shape):
        return shape
    if isinstance(shape, (numbers.Integral, np.integer)):
        shape = (shape,)
    elif isinstance(shape, (Array, np.ndarray)) and shape.ndim == 1:
        shape = shape.tolist()
    elif isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise TypeError(
            f"{name}: shape must be an int or a sequence of ints, got {type(shape).__name__}"
        )
    out = tuple(dim_arg(d, name) for d in shape)
    for d in out:
        if d < 0 and not (allow_minus_one and d == -1):
            raise ValueError(f"{name}: negative dimension {d} in shape {out}")
    return out
