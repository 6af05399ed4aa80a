"""Shape operations: broadcasting, reshaping, axes."""
from __future__ import annotations

from typing import Sequence

from ..core.array import Array
from ..core.device import resolve_stream
from ..primitives.shape import Broadcast, Reshape
from ._common import as_array


def broadcast_shapes(*shapes: Sequence[int], name: str = "broadcast_shapes") -> tuple[int, ...]:
    """The shape that ``shapes`` broadcast to; a ValueError naming the operation otherwise.

    >>> broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, d in enumerate(s):
            o = out[off + i]
            if o == 1:
                out[off + i] = d
            elif d != 1 and d != o:
                listed = " and ".join(str(tuple(x)) for x in shapes)
                raise ValueError(f"{name}: shapes {listed} cannot be broadcast together")
    return tuple(out)


def broadcast_to(a, shape: Sequence[int], *, stream=None) -> Array:
    """``a`` broadcast to ``shape`` (no node when it has that shape already)."""
    a = as_array(a, "broadcast_to")
    shape = tuple(int(d) for d in shape)
    if a._shape == shape:
        return a
    if broadcast_shapes(a._shape, shape, name="broadcast_to") != shape:
        raise ValueError(f"broadcast_to: cannot broadcast shape {a._shape} to {shape}")
    return Array.make(Broadcast(shape), [a], resolve_stream(stream))


def broadcast_arrays(*arrays, name: str = "broadcast_arrays", stream=None) -> list[Array]:
    """The arrays broadcast to their common shape."""
    arrays = [as_array(a, name) for a in arrays]
    first = arrays[0]._shape
    if all(a._shape == first for a in arrays):
        return arrays
    shape = broadcast_shapes(*(a._shape for a in arrays), name=name)
    return [broadcast_to(a, shape, stream=stream) for a in arrays]


def reshape(a, /, shape: Sequence[int], *, stream=None) -> Array:
    """``a`` with a new shape of the same size; one dimension may be -1."""
    a = as_array(a, "reshape")
    if isinstance(shape, int):
        shape = (shape,)
    shape = [int(d) for d in shape]
    size = a.size
    if shape.count(-1) > 1:
        raise ValueError("reshape: only one dimension can be -1")
    if -1 in shape:
        known = 1
        for d in shape:
            if d != -1:
                known *= d
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot reshape an array of shape {a._shape} to {tuple(shape)}")
        shape[shape.index(-1)] = size // known
    shape = tuple(shape)
    n = 1
    for d in shape:
        n *= d
    if n != size or any(d < 0 for d in shape):
        raise ValueError(f"reshape: cannot reshape an array of shape {a._shape} to {shape}")
    if shape == a._shape:
        return a
    return Array.make(Reshape(shape), [a], resolve_stream(stream))


def expand_dims(a, /, axis, *, stream=None) -> Array:
    """``a`` with new size-1 axes at ``axis`` (an int or a sequence)."""
    a = as_array(a, "expand_dims")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = a.ndim + len(axes)
    norm = sorted(ax % ndim if -ndim <= ax < ndim else _bad_axis(ax, ndim) for ax in axes)
    if len(set(norm)) != len(norm):
        raise ValueError("expand_dims: repeated axis")
    shape = list(a._shape)
    for ax in norm:
        shape.insert(ax, 1)
    return reshape(a, shape, stream=stream)


def _bad_axis(ax, ndim):
    raise ValueError(f"expand_dims: axis {ax} is out of bounds for the result's {ndim} dimensions")

__all__ = ["broadcast_shapes", "broadcast_to", "broadcast_arrays", "reshape", "expand_dims"]
