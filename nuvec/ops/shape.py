"""Shape operations: broadcasting, reshaping, axes, joining, splitting, padding (MLX's API).

Views where NumPy gives views (reshape of a compatible layout, transpose, broadcast, slices);
an operation that would not change its input returns the input itself (no graph node).

>>> import nuvec as nv
>>> x = nv.arange(6).reshape(2, 3)
>>> nv.transpose(x).shape
(3, 2)
>>> [p.tolist() for p in nv.split(nv.arange(4), 2)]
[[0, 1], [2, 3]]
"""

from __future__ import annotations

import operator
import sys
from typing import Sequence

import numpy as np

from ..core import dtypes as dt
from ..core import shapeless
from ..core.array import Array
from ..core.device import resolve_stream
from ..primitives.shape import (
    Broadcast,
    Concatenate,
    ExpandDims,
    Flatten,
    Reshape,
    SizedBroadcast,
    SizedReshape,
    Slice,
    Squeeze,
    Transpose,
    Unflatten,
    broadcast_shape,
    reshape_shape,
)
from ._common import (
    _DIM_MAX,
    as_array,
    cast,
    dim_arg,
    normalize_axes,
    normalize_axis,
    shape_arg,
)


# -- helpers -----------------------------------------------------------------------------
def _int(v, name: str, what: str) -> int:
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{name}: {what} must be an int, got {type(v).__name__}") from None


def int_items(v, name: str, what: str) -> tuple:
    """``v`` (one int, or a list or tuple of them) as a tuple; a TypeError naming ``name``
    and ``what`` otherwise."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (v,)
    if isinstance(v, (list, tuple)):
        return tuple(v)
    raise TypeError(f"{name}: {what} must be an int or a sequence of ints, got {type(v).__name__}")


def norm_axes(axes, ndim: int, name: str) -> tuple[int, ...]:
    """A sequence (or one int) of distinct axes, normalised."""
    return normalize_axes(int_items(axes, name, "axis"), ndim, name)


def _shape_arg(shape, name: str) -> list[int]:
    return list(shape_arg(shape, name, allow_minus_one=True))


def _result_dtype(arrays: Sequence[Array]) -> dt.Dtype:
    d = arrays[0]._dtype
    for x in arrays[1:]:
        if x._dtype != d:
            d = dt.promote_types(d, x._dtype)
    return d


def slice_axes(a: Array, start, stop, strides, *, stream=None) -> Array:
    """``a`` sliced by one normalised ``(start, stop, stride)`` per axis (a view; no node for
    the whole array). Used by indexing and split."""
    start, stop, strides = tuple(start), tuple(stop), tuple(strides)
    n = len(start)
    if stop == a._shape and strides == (1,) * n and start == (0,) * n and not shapeless.relative(a):
        return a
    return Array.make(Slice(start, stop, strides), [a], resolve_stream(stream))


# -- broadcasting ------------------------------------------------------------------------
def broadcast_shapes(*shapes: Sequence[int], name: str = "broadcast_shapes") -> tuple[int, ...]:
    """The shape that ``shapes`` broadcast to; a ValueError naming the operation otherwise.

    >>> broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    if not shapes:
        raise ValueError(f"{name}: at least one shape is needed")
    dims = []
    for s in shapes:
        if all(type(d) is int and d >= 0 for d in s):
            dims.append(s)
            continue
        checked = tuple(dim_arg(d, name) for d in s)
        for d in checked:
            if d < 0:
                raise ValueError(f"{name}: negative dimension {d} in shape {tuple(s)}")
        dims.append(checked)
    return broadcast_shape(dims, name)


def broadcast_to(a, /, shape: Sequence[int], *, stream=None) -> Array:
    """``a`` broadcast to ``shape`` (a view; no node when it has that shape already).

    >>> import nuvec as nv
    >>> nv.broadcast_to(nv.array([1, 2]), (2, 2)).tolist()
    [[1, 2], [1, 2]]
    """
    a = as_array(a, "broadcast_to")
    if shapeless.active() and _has_sizes(shape):
        return sized_broadcast(a, shape, stream)
    shape = tuple(_shape_arg(shape, "broadcast_to"))
    rel = shapeless.relative(a)
    if a._shape == shape and not rel:
        return a
    if (
        any(d < 0 for d in shape)
        or len(shape) < len(a._shape)
        # both shapes hold ints already (the array's own, and _shape_arg's)
        or broadcast_shape((a._shape, shape), "broadcast_to") != shape
    ):
        raise ValueError(f"broadcast_to: cannot broadcast shape {a._shape} to {shape}")
    return Array.make(Broadcast(shape, a._shape if rel else None), [a], resolve_stream(stream))


def broadcast_arrays(*arrays, name: str = "broadcast_arrays", stream=None) -> list[Array]:
    """The arrays broadcast to their common shape.

    >>> import nuvec as nv
    >>> [x.shape for x in nv.broadcast_arrays(nv.zeros((2, 1)), nv.zeros((3,)))]
    [(2, 3), (2, 3)]
    """
    xs = [as_array(a, name) for a in arrays]
    if not xs:
        return []
    first = xs[0]._shape
    if all(a._shape == first for a in xs):
        if len(xs) == 1 or not any(shapeless.relative(a) for a in xs):
            return xs
    # arrays' own shapes hold non-negative ints: no argument checks
    shape = broadcast_shape([a._shape for a in xs], name)
    if any(shapeless.relative(a) for a in xs):
        # each one broadcast against all the others, re-inferred at a shapeless replay
        st = resolve_stream(stream)
        return [
            Array.make(Broadcast(shape), [a] + xs[:i] + xs[i + 1 :], st) for i, a in enumerate(xs)
        ]
    st = resolve_stream(stream)
    prim = Broadcast(shape)
    return [a if a._shape == shape else Array.make(prim, (a,), st) for a in xs]


# -- reshaping ---------------------------------------------------------------------------
def reshape(a, /, shape: Sequence[int], *, stream=None) -> Array:
    """``a`` with a new shape of the same size; one dimension may be -1.

    >>> import nuvec as nv
    >>> nv.reshape(nv.arange(6), (2, -1)).shape
    (2, 3)
    """
    return reshape_for_caller(a, shape, stream)


def reshape_for_caller(a, shape, stream) -> Array:
    """``reshape``'s body, called by ``reshape`` and by the ``a.reshape`` method alike, so
    that the frame two above this one is the code that asked for the reshape (a shapeless
    trace tells the user's literal sizes from the ones nuvec's own operations computed)."""
    if type(a) is Array and not a._tracer and type(shape) is tuple:
        target = _plain_reshape(a._shape, shape)
        if target is not None:  # ints only, and a valid reshape: no further checks
            if target == a._shape:
                return a
            return Array.make(Reshape(target), (a,), resolve_stream(stream))
    a = as_array(a, "reshape")
    if shapeless.active() and _has_sizes(shape):
        return _sized_reshape(a, shape, stream)
    shape = _shape_arg(shape, "reshape")
    if shapeless.relative(a):  # keeps its -1; the size is checked at each replay
        if shape.count(-1) > 1:
            raise ValueError("reshape: only one dimension can be -1")
        if any(d < -1 for d in shape):
            raise ValueError(f"reshape: negative dimension in {tuple(shape)}")
        reshape_shape(a._shape, shape)
        # sizes that nuvec's own operations computed from the traced shapes hold only there
        caller = sys._getframe(2)
        literal = any(d != -1 for d in shape)
        expect = None if shapeless.from_user(caller) or not literal else a._shape
        out = Array.make(Reshape(tuple(shape), expect), [a], resolve_stream(stream))
        if expect is not None:
            shapeless.note(out)
        return out
    size = a.size
    if -1 in shape:
        if shape.count(-1) > 1:
            raise ValueError("reshape: only one dimension can be -1")
        known = 1
        for d in shape:
            if d != -1:
                known *= d
        if known == 0 or size % known:
            raise ValueError(
                f"reshape: cannot reshape an array of shape {a._shape} to {tuple(shape)}"
            )
        shape[shape.index(-1)] = size // known
    shape = tuple(shape)
    n = 1
    for d in shape:
        if d < 0:
            raise ValueError(f"reshape: negative dimension in {shape}")
        n *= d
    if n != size:
        raise ValueError(f"reshape: cannot reshape an array of shape {a._shape} to {shape}")
    if shape == a._shape:
        return a
    return Array.make(Reshape(shape), [a], resolve_stream(stream))


def _plain_reshape(old: tuple, shape: tuple) -> tuple | None:
    """``shape`` (a tuple of Python ints, one of them possibly -1) resolved against ``old``
    where it is a valid target, else None (the checked path raises the errors)."""
    size = 1
    for d in old:
        size *= d
    known, minus = 1, -1
    for i, d in enumerate(shape):
        if type(d) is not int or d < -1 or d > _DIM_MAX:
            return None
        if d == -1:
            if minus >= 0:
                return None
            minus = i
        else:
            known *= d
    if minus < 0:
        return shape if known == size else None
    if known == 0 or size % known:
        return None
    return shape[:minus] + (size // known,) + shape[minus + 1 :]


def _has_sizes(shape) -> bool:
    if isinstance(shape, shapeless.Size):
        return True
    return isinstance(shape, (tuple, list)) and any(isinstance(d, shapeless.Size) for d in shape)


def _sized_reshape(a: Array, shape, stream) -> Array:
    """``reshape`` to sizes read from ``.shape`` under a shapeless trace: a SizedReshape whose
    extra inputs are the arrays those sizes came from."""
    shape = (shape,) if isinstance(shape, shapeless.Size) else tuple(shape)
    refs = [a]
    spec = []
    for d in shape:
        if isinstance(d, shapeless.Size):
            spec.append(shapeless.symbolic(d.expr, refs))
        else:
            spec.append(dim_arg(d, "reshape"))
    prim = SizedReshape(tuple(spec))
    prim.target(refs)  # the eager call's checks, at the traced shapes
    return Array.make(prim, refs, resolve_stream(stream))


def sized_broadcast(a: Array, shape, stream=None) -> Array:
    """``broadcast_to`` sizes read from ``.shape`` under a shapeless trace (also what the
    creation ops make for them): a SizedBroadcast over the arrays those sizes came from."""
    shape = (shape,) if isinstance(shape, shapeless.Size) else tuple(shape)
    refs = [a]
    spec = tuple(
        shapeless.symbolic(d.expr, refs)
        if isinstance(d, shapeless.Size)
        else dim_arg(d, "broadcast_to")
        for d in shape
    )
    prim = SizedBroadcast(spec)
    prim.target(refs)  # the eager call's checks, at the traced shapes
    return Array.make(prim, refs, resolve_stream(stream))


def flatten(a, /, start_axis: int = 0, end_axis: int = -1, *, stream=None) -> Array:
    """Merges axes ``start_axis..end_axis`` (inclusive) into one; a scalar becomes shape (1,).

    >>> import nuvec as nv
    >>> nv.flatten(nv.zeros((2, 3, 4)), 1).shape
    (2, 12)
    """
    a = as_array(a, "flatten")
    nd = a.ndim
    if nd == 0:
        return Array.make(Reshape((1,)), [a], resolve_stream(stream))
    s = normalize_axis(start_axis, nd, "flatten")
    e = normalize_axis(end_axis, nd, "flatten")
    if e < s:
        raise ValueError(f"flatten: start_axis {start_axis} comes after end_axis {end_axis}")
    if s == e:
        return a
    return Array.make(Flatten(s, e), [a], resolve_stream(stream))


def unflatten(a, /, axis: int, shape: Sequence[int], *, stream=None) -> Array:
    """Splits ``axis`` into ``shape`` (one entry may be -1).

    >>> import nuvec as nv
    >>> nv.unflatten(nv.zeros((2, 12)), 1, (3, 4)).shape
    (2, 3, 4)
    """
    a = as_array(a, "unflatten")
    ax = normalize_axis(axis, a.ndim, "unflatten")
    shape = _shape_arg(shape, "unflatten")
    if not shape:
        raise ValueError("unflatten: the shape to unflatten to cannot be empty")
    n = a._shape[ax]
    if shape.count(-1) > 1:
        raise ValueError("unflatten: only one dimension can be -1")
    if shapeless.relative(a):  # the axis split again at each replay
        if any(d < -1 for d in shape):
            raise ValueError(f"unflatten: negative dimension in {tuple(shape)}")
        prim = Unflatten(ax, tuple(shape))
        prim.infer([a])
        return Array.make(prim, [a], resolve_stream(stream))
    known = 1
    for d in shape:
        if d != -1:
            known *= d
    if -1 in shape:
        if known == 0 or n % known:
            raise ValueError(
                f"unflatten: cannot unflatten axis {axis} of size {n} into {tuple(shape)}"
            )
        shape[shape.index(-1)] = n // known
    elif known != n or any(d < 0 for d in shape):
        raise ValueError(f"unflatten: cannot unflatten axis {axis} of size {n} into {tuple(shape)}")
    return reshape(a, a._shape[:ax] + tuple(shape) + a._shape[ax + 1 :], stream=stream)


def expand_dims(a, /, axis, *, stream=None) -> Array:
    """``a`` with new size-1 axes at ``axis`` (an int or a sequence, positions in the result).

    >>> import nuvec as nv
    >>> nv.expand_dims(nv.zeros((2, 3)), (0, -1)).shape
    (1, 2, 3, 1)
    """
    if type(axis) is int and type(a) is Array:  # one axis, in range: no further checks
        nd = len(a._shape) + 1
        if -nd <= axis < nd:
            return Array.make(ExpandDims((axis % nd,)), (a,), resolve_stream(stream))
    a = as_array(a, "expand_dims")
    axes = int_items(axis, "expand_dims", "axis")
    if not axes:
        return a
    nd = a.ndim + len(axes)
    norm = sorted(norm_axes(axes, nd, "expand_dims"))
    return Array.make(ExpandDims(tuple(norm)), [a], resolve_stream(stream))


def squeeze(a, /, axis=None, *, stream=None) -> Array:
    """``a`` without size-1 axes (all of them, or those in ``axis``).

    >>> import nuvec as nv
    >>> nv.squeeze(nv.zeros((1, 2, 1))).shape
    (2,)
    """
    a = as_array(a, "squeeze")
    every = axis is None and shapeless.relative(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(a._shape) if d == 1)
    else:
        axes = tuple(sorted(norm_axes(axis, a.ndim, "squeeze")))
        for ax in axes:
            if a._shape[ax] != 1:
                raise ValueError(
                    f"squeeze: cannot squeeze axis {ax} of size {a._shape[ax]} (shape {a._shape})"
                )
    if not axes and not every:
        return a
    return Array.make(Squeeze(axes, every), [a], resolve_stream(stream))


def _atleast(nd: int, name: str, arys, stream):
    out = []
    for x in arys:
        x = as_array(x, name)
        s = x._shape
        if x.ndim < nd:
            if nd == 3 and x.ndim == 2:
                s = s + (1,)
            elif nd == 3 and x.ndim == 1:
                s = (1,) + s + (1,)
            else:
                s = (1,) * (nd - x.ndim) + s
            x = reshape(x, s, stream=stream)
        out.append(x)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys, stream=None):
    """Each input with at least one dimension (one array, or a list for several)."""
    return _atleast(1, "atleast_1d", arys, stream)


def atleast_2d(*arys, stream=None):
    """Each input with at least two dimensions (``(n,)`` becomes ``(1, n)``)."""
    return _atleast(2, "atleast_2d", arys, stream)


def atleast_3d(*arys, stream=None):
    """Each input with at least three dimensions (``(n,)`` becomes ``(1, n, 1)``,
    ``(m, n)`` becomes ``(m, n, 1)``)."""
    return _atleast(3, "atleast_3d", arys, stream)


# -- axes --------------------------------------------------------------------------------
def transpose(a, /, axes: Sequence[int] | None = None, *, stream=None) -> Array:
    """Permutes the axes (reverses them by default); a strided view.

    >>> import nuvec as nv
    >>> nv.transpose(nv.zeros((2, 3, 4)), (1, 0, 2)).shape
    (3, 2, 4)
    """
    if type(a) is Array and type(axes) is tuple and not a._tracer:
        nd = len(a._shape)
        perm = tuple(x + nd if type(x) is int and -nd <= x < 0 else x for x in axes)
        if (
            len(perm) == nd
            and sorted(perm) == list(range(nd))
            and all(type(x) is int for x in perm)
        ):
            if perm == tuple(range(nd)):
                return a
            return Array.make(Transpose(perm), (a,), resolve_stream(stream))
    a = as_array(a, "transpose")
    nd = a.ndim
    if axes is None:
        perm = tuple(range(nd - 1, -1, -1))
    else:
        axes = int_items(axes, "transpose", "axes")
        if len(axes) != nd:
            raise ValueError(f"transpose: {len(axes)} axes given for an array of dimension {nd}")
        perm = norm_axes(axes, nd, "transpose")
    if perm == tuple(range(nd)):
        return a
    return Array.make(Transpose(perm), [a], resolve_stream(stream))


def moveaxis(a, /, source: int, destination: int, *, stream=None) -> Array:
    """Moves axis ``source`` to position ``destination``.

    >>> import nuvec as nv
    >>> nv.moveaxis(nv.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    a = as_array(a, "moveaxis")
    nd = a.ndim
    s = normalize_axis(source, nd, "moveaxis")
    d = normalize_axis(destination, nd, "moveaxis")
    if s == d:
        return a
    perm = [i for i in range(nd) if i != s]
    perm.insert(d, s)
    return Array.make(Transpose(tuple(perm)), [a], resolve_stream(stream))


def swapaxes(a, /, axis1: int, axis2: int, *, stream=None) -> Array:
    """Exchanges two axes.

    >>> import nuvec as nv
    >>> nv.swapaxes(nv.zeros((2, 3, 4)), 0, 2).shape
    (4, 3, 2)
    """
    a = as_array(a, "swapaxes")
    nd = a.ndim
    i = normalize_axis(axis1, nd, "swapaxes")
    j = normalize_axis(axis2, nd, "swapaxes")
    if i == j:
        return a
    perm = list(range(nd))
    perm[i], perm[j] = j, i
    return Array.make(Transpose(tuple(perm)), [a], resolve_stream(stream))


# -- joining and splitting ---------------------------------------------------------------
def concatenate(arrays: Sequence, axis: int | None = 0, *, stream=None) -> Array:
    """Joins arrays along ``axis`` (flattened first when ``axis`` is None); dtypes promote.

    >>> import nuvec as nv
    >>> nv.concatenate([nv.array([1, 2]), nv.array([3])]).tolist()
    [1, 2, 3]
    """
    if isinstance(arrays, Array):
        raise TypeError("concatenate: expects a sequence of arrays, got one array")
    arrays = [as_array(x, "concatenate") for x in arrays]
    if not arrays:
        raise ValueError("concatenate: no arrays to concatenate")
    if axis is None:
        arrays = [flatten(x, stream=stream) if x.ndim != 1 else x for x in arrays]
        axis = 0
    nd = arrays[0].ndim
    if nd == 0:
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    ax = normalize_axis(axis, nd, "concatenate")
    for x in arrays:
        s = x._shape
        if (
            len(s) != nd
            or s[:ax] != arrays[0]._shape[:ax]
            or s[ax + 1 :] != arrays[0]._shape[ax + 1 :]
        ):
            shapes = ", ".join(str(y._shape) for y in arrays)
            raise ValueError(f"concatenate: shapes {shapes} must match except on axis {axis}")
    dim_arg(sum(x._shape[ax] for x in arrays), "concatenate", "result's shape")
    d = _result_dtype(arrays)
    if len(arrays) == 1:
        return arrays[0]
    if any(x._dtype != d for x in arrays):
        arrays = [cast(x, d, stream) for x in arrays]
    return Array.make(Concatenate(ax), arrays, resolve_stream(stream))


def stack(arrays: Sequence, axis: int = 0, *, stream=None) -> Array:
    """Joins arrays of one shape along a new axis.

    >>> import nuvec as nv
    >>> nv.stack([nv.zeros((2,)), nv.ones((2,))], axis=1).shape
    (2, 2)
    """
    if isinstance(arrays, Array):
        raise TypeError("stack: expects a sequence of arrays, got one array")
    arrays = [as_array(x, "stack") for x in arrays]
    if not arrays:
        raise ValueError("stack: no arrays to stack")
    s = arrays[0]._shape
    if any(x._shape != s for x in arrays):
        shapes = ", ".join(str(y._shape) for y in arrays)
        raise ValueError(f"stack: all arrays must have the same shape, got {shapes}")
    ax = normalize_axis(axis, len(s) + 1, "stack")
    return concatenate([expand_dims(x, ax, stream=stream) for x in arrays], ax, stream=stream)


def split(a, /, indices_or_sections, axis: int = 0, *, stream=None) -> list[Array]:
    """Splits ``a`` along ``axis`` into equal sections (an int) or at the given indices.

    >>> import nuvec as nv
    >>> [p.shape for p in nv.split(nv.zeros((5, 2)), [1, 3])]
    [(1, 2), (2, 2), (2, 2)]
    """
    a = as_array(a, "split")
    if a.ndim == 0:
        raise ValueError("split: cannot split a zero-dimensional array")
    ax = normalize_axis(axis, a.ndim, "split")
    n = a._shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError(f"split: the number of sections must be positive, got {k}")
        if n % k:
            raise ValueError(
                f"split: axis {axis} of size {n} cannot be split into {k} equal sections"
            )
        bounds = [i * (n // k) for i in range(1, k)]
    else:
        items = int_items(indices_or_sections, "split", "indices_or_sections")
        bounds = [_int(i, "split", "an index") for i in items]
    edges = [0] + bounds + [n]
    nd = a.ndim
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        b, e, _ = slice(lo, hi).indices(n)
        e = max(e, b)
        start = (0,) * ax + (b,) + (0,) * (nd - ax - 1)
        stop = a._shape[:ax] + (e,) + a._shape[ax + 1 :]
        out.append(slice_axes(a, start, stop, (1,) * nd, stream=stream))
    return out


def tile(a, reps, /, *, stream=None) -> Array:
    """``a`` repeated ``reps`` times along each axis (NumPy's rules for unequal lengths).

    >>> import nuvec as nv
    >>> nv.tile(nv.array([1, 2]), 2).tolist()
    [1, 2, 1, 2]
    """
    a = as_array(a, "tile")
    reps = _shape_arg(reps, "tile")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: negative repetition in {tuple(reps)}")
    shape = list(a._shape)
    if len(reps) < len(shape):
        reps = [1] * (len(shape) - len(reps)) + reps
    shape = [1] * (len(reps) - len(shape)) + shape
    if all(r == 1 for r in reps):
        return reshape(a, shape, stream=stream)
    expand, wide, final = [], [], []
    for r, d in zip(reps, shape):
        if r != 1:
            expand.append(1)
            wide.append(r)
        expand.append(d)
        wide.append(d)
        final.append(r * d)
    x = reshape(a, expand, stream=stream)
    x = broadcast_to(x, wide, stream=stream)
    return reshape(x, final, stream=stream)


def repeat(array, repeats: int, axis: int | None = None, *, stream=None) -> Array:
    """Each element repeated ``repeats`` times along ``axis`` (of the flattened array when
    ``axis`` is None).

    >>> import nuvec as nv
    >>> nv.repeat(nv.array([1, 2]), 2).tolist()
    [1, 1, 2, 2]
    """
    a = as_array(array, "repeat")
    r = _int(repeats, "repeat", "repeats")
    if r < 0:
        raise ValueError(f"repeat: the number of repeats must not be negative, got {r}")
    if axis is None:
        a = flatten(a, stream=stream) if a.ndim != 1 else a
        axis = 0
    ax = normalize_axis(axis, a.ndim, "repeat")
    if r == 1:
        return a
    s = a._shape
    dim_arg(s[ax] * r, "repeat", "result's shape")
    x = expand_dims(a, ax + 1, stream=stream)
    x = broadcast_to(x, s[: ax + 1] + (r,) + s[ax + 1 :], stream=stream)
    return reshape(x, s[:ax] + (s[ax] * r,) + s[ax + 1 :], stream=stream)


def roll(a, shift, axis=None, *, stream=None) -> Array:
    """Shifts elements along ``axis`` (of the flattened array when ``axis`` is None) with
    wrap-around; ``shift`` and ``axis`` may be tuples (broadcast against each other).

    >>> import nuvec as nv
    >>> nv.roll(nv.arange(5), 2).tolist()
    [3, 4, 0, 1, 2]
    """
    a = as_array(a, "roll")
    shifts = [_int(s, "roll", "shift") for s in int_items(shift, "roll", "shift")]
    if axis is None:
        flat = flatten(a, stream=stream) if a.ndim != 1 else a
        return reshape(_roll_axes(flat, [sum(shifts)], [0], stream), a._shape, stream=stream)
    axes = [normalize_axis(x, a.ndim, "roll") for x in int_items(axis, "roll", "axis")]
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
    return _roll_axes(a, shifts, axes, stream)


def _roll_axes(a: Array, shifts, axes, stream) -> Array:
    shapeless.refuse_traced(a, "roll", "where the shift splits each axis")
    total: dict[int, int] = {}
    for s, ax in zip(shifts, axes):
        total[ax] = total.get(ax, 0) + s
    nd = a.ndim
    for ax, s in total.items():
        n = a._shape[ax]
        if n == 0 or s % n == 0:
            continue
        k = n - s % n  # the first k elements move to the end
        unit = (1,) * nd
        head = slice_axes(
            a, (0,) * nd, a._shape[:ax] + (k,) + a._shape[ax + 1 :], unit, stream=stream
        )
        tail = slice_axes(a, (0,) * ax + (k,) + (0,) * (nd - ax - 1), a._shape, unit, stream=stream)
        a = concatenate([tail, head], ax, stream=stream)
    return a


__all__ = [
    "broadcast_shapes",
    "broadcast_to",
    "broadcast_arrays",
    "reshape",
    "flatten",
    "unflatten",
    "expand_dims",
    "squeeze",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "transpose",
    "moveaxis",
    "swapaxes",
    "concatenate",
    "stack",
    "split",
    "tile",
    "repeat",
    "roll",
]
