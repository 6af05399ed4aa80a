"""Arrays filled with a value: ``full``, ``zeros``, ``ones`` and their ``*_like`` forms (each
a broadcast into a buffer of its own, as MLX's ``Full``). They sit below the element-wise ops,
which make constant results with them (``isnan`` of integers, ``imag`` of a real array);
``creation`` builds the other constructors on them and re-exports them."""

from __future__ import annotations

import os
import sys

import numpy as np

from ..core import dtypes as dt
from ..core import shapeless
from ..core.array import Array
from ..core.device import resolve_stream
from ..primitives.shape import Broadcast
from ._common import array, as_array, cast, shape_arg
from .shape import _has_sizes, broadcast_shapes, broadcast_to, sized_broadcast

#: the files whose frames a shapeless trace's derivation looks past (a creation called by
#: another creation keeps the user's frame)
_CREATION_FILES = frozenset({__file__, os.path.join(os.path.dirname(__file__), "creation.py")})


def full(shape, vals, dtype=None, *, stream=None) -> Array:
    """An array of ``shape`` filled with ``vals`` (broadcast).

    >>> import nuvec as nv
    >>> nv.full((2, 2), 7).tolist()
    [[7, 7], [7, 7]]
    """
    sized = _sizes(shape)
    shape = shape if sized else shape_arg(shape, "full")
    d = None if dtype is None else dt.to_dtype(dtype)
    if isinstance(vals, Array):
        v = vals
    else:  # a Python scalar is made in ``dtype`` itself: 0.37 stays exact in float64
        v = array(vals, d)
    if d is not None and v.dtype != d:
        v = cast(v, d)
    if sized:
        return sized_broadcast(v, shape, stream)
    out = _fill(v, shape, "full", stream)
    _derive(out, sys._getframe(1))
    return out


def _derive(a: Array, frame) -> None:
    """See ``core.shapeless.derive``; ``frame`` is the caller of a creation, or the caller of
    the creation that called it (``zeros_like`` of a constant keeps the user's shape)."""
    if shapeless.active():
        while frame is not None and frame.f_code.co_filename in _CREATION_FILES:
            frame = frame.f_back
        shapeless.derive(a, frame)


def _sizes(shape) -> bool:
    """Whether ``shape`` holds sizes read from ``.shape`` under a shapeless trace."""
    if not shapeless.active():
        return False

    return _has_sizes(shape)


def _fill(v: Array, shape: tuple, name: str, stream) -> Array:
    """``v`` broadcast to ``shape`` into a buffer of its own (MLX's ``full`` copies even at
    the same shape, so the result never aliases ``v``)."""
    if v._shape != shape and (
        len(shape) < v.ndim or broadcast_shapes(v._shape, shape, name=name) != shape
    ):
        raise ValueError(f"{name}: cannot broadcast values of shape {v._shape} to {shape}")
    if shapeless.relative(v):  # a traced value: the broadcast follows its shape at a replay
        return broadcast_to(v, shape, stream=stream)
    return Array.make(Broadcast(shape, fill=True), [v], resolve_stream(stream))


def zeros(shape, dtype=dt.float32, *, stream=None) -> Array:
    """An array of zeros (float32 by default).

    >>> import nuvec as nv
    >>> nv.zeros((2,), nv.int32).tolist()
    [0, 0]
    """
    out = _constant_fill(shape, 0, dtype, "zeros", stream)
    _derive(out, sys._getframe(1))
    return out


def ones(shape, dtype=dt.float32, *, stream=None) -> Array:
    """An array of ones (float32 by default)."""
    out = _constant_fill(shape, 1, dtype, "ones", stream)
    _derive(out, sys._getframe(1))
    return out


def _constant_fill(shape, value, dtype, name: str, stream) -> Array:
    d = dt.to_dtype(dtype)
    st = resolve_stream(stream)
    if _sizes(shape):
        return sized_broadcast(Array.constant(np.array(value, d.np), st, d), shape, stream)
    shape = shape_arg(shape, name)
    scalar = Array.constant(np.array(value, d.np), st, d)
    if not shape:
        return scalar
    return Array.make(Broadcast(shape, fill=True), [scalar], st)


def zeros_like(a, /, dtype=None, *, stream=None) -> Array:
    """Zeros with the shape of ``a`` and its dtype (or ``dtype``)."""
    a = as_array(a, "zeros_like")
    return full_like(a, 0, dtype, stream=stream)


def ones_like(a, /, dtype=None, *, stream=None) -> Array:
    """Ones with the shape of ``a`` and its dtype (or ``dtype``)."""
    a = as_array(a, "ones_like")
    return full_like(a, 1, dtype, stream=stream)


def full_like(a, /, vals, dtype=None, *, stream=None) -> Array:
    """``vals`` broadcast to the shape of ``a``, with ``a``'s dtype unless ``dtype`` is given.
    Under a shapeless trace ``a`` is an operand of the broadcast, so the shape follows it."""
    a = as_array(a, "full_like")
    if shapeless.relative(a):
        v = array(vals) if not isinstance(vals, Array) else vals
        v = cast(v, dt.to_dtype(dtype or a.dtype))
        _fill(v, a._shape, "full_like", stream)  # the same checks as the eager form
        return Array.make(Broadcast(a._shape), [v, a], resolve_stream(stream))
    return full(a.shape, vals, dtype or a.dtype, stream=stream)
