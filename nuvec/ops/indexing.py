"""Indexing: ``a[index]``, functional ``a[index] = v``, ``a.at[index].add(v)``, take,
take_along_axis, put_along_axis and the dynamic ``slice`` / ``slice_update`` (MLX's API).

Indices may be ints, slices (any step), ``None``, ``...``, integer arrays (nuvec, NumPy or
lists) and combinations, with NumPy's rules for where the dimensions of array indices go.
Boolean masks are not supported in ``a[mask]`` (its shape would depend on the data, as in
MLX); ``a[mask] = v`` is (MLX's masked scatter: the selected elements, in order, take the
elements of ``v``).

Basic indices (ints, slices, None, ...) give a view (one Slice node, and a reshape when ints
or None change the rank); integer arrays give a Gather. ``setitem`` returns a new array,
which ``Array.__setitem__`` rebinds to the indexed name (arrays are never written in place).

>>> import nuvec as nv
>>> x = nv.arange(12).reshape(3, 4)
>>> x[1:, ::-2].tolist()
[[7, 5], [11, 9]]
>>> x[nv.array([0, 2]), 1].tolist()
[1, 9]
>>> x[0, 1:3] = 0
>>> x[0].tolist()
[0, 0, 0, 3]
"""

from __future__ import annotations

import builtins
import operator
from typing import Any, Sequence

import numpy as np

from ..core import dtypes as dt
from ..core import shapeless
from ..core.array import Array
from ..core.device import resolve_stream
from ..primitives._common import inverse_permutation
from ..primitives.indexing import Gather, GatherAxis, IndexOutOfBounds, Scatter, ScatterAxis
from ..primitives.shape import (
    ExpandDims,
    RelativeSlice,
    RelativeSliceUpdate,
    SliceUpdate,
    Squeeze,
    slice_shape,
    slice_triplet,
)
from ._common import SCALARS, as_array, constant, normalize_axis, weak_dtype
from .creation import arange, array, zeros
from .elementwise import (
    add,
    astype,
    clip,
    less,
    maximum,
    minimum,
    multiply,
    negative,
    reciprocal,
    where,
)
from .reduction import cumsum
from .shape import (
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to,
    flatten,
    norm_axes,
    reshape,
    slice_axes,
    squeeze,
    transpose,
)

_pyslice = builtins.slice
_INTS = (int, np.integer)


# -- parsing an index --------------------------------------------------------------------
def _bool_error(name: str):
    return TypeError(
        f"{name}: boolean indices (masks) are not supported, as in MLX; use "
        "nv.where(mask, x, y) or integer indices instead"
    )


def _index_array(x, name: str) -> Array:
    if not isinstance(x, Array):
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError):
            raise TypeError(f"{name}: cannot index with {x!r}") from None
        if arr.dtype == np.bool_:
            raise _bool_error(name)
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.int32)  # an empty list is an empty index
        if arr.dtype.kind not in "ui":
            raise TypeError(f"{name}: index arrays must be integers, not {arr.dtype}")

        x = array(arr.astype(np.int32) if arr.dtype == np.int64 and _fits32(arr) else arr)
    if x._dtype == dt.bool_:
        raise _bool_error(name)
    if x._dtype.kind == "f" and x.size == 0:  # an empty float array is an empty index
        x = astype(x, dt.int32)
    if x._dtype.kind not in "ui":
        raise TypeError(f"{name}: index arrays must be integers, not {x._dtype.name}")
    return x


def _fits32(arr: np.ndarray) -> bool:
    return arr.size == 0 or (int(arr.min()) >= -(2**31) and int(arr.max()) < 2**31)


def _norm_int(i: int, n: int, ax: int, name: str) -> int:
    if not -n <= i < n:
        raise IndexOutOfBounds(f"{name}: index {i} is out of bounds for axis {ax} with size {n}")
    return i + n if i < 0 else i


class _Index:
    """A parsed index: per input axis a kind and value, plus where ``None`` axes go."""

    __slots__ = ("kinds", "vals", "raw", "order", "has_array")

    def __init__(self, a: Array, index, name: str) -> None:
        if not isinstance(index, tuple):
            index = (index,)
        entries: list[tuple[str, Any]] = []
        n_ell = 0
        used = 0
        has_array = False
        for x in index:
            if x is None:
                entries.append(("new", None))
            elif x is Ellipsis:
                n_ell += 1
                entries.append(("ell", None))
            elif isinstance(x, (bool, np.bool_)):
                raise _bool_error(name)
            elif isinstance(x, _INTS):
                entries.append(("int", int(x)))
                used += 1
            elif isinstance(x, _pyslice):
                _check_slice_bounds(x, name)
                entries.append(("slice", x))
                used += 1
            elif isinstance(x, (Array, list, tuple, np.ndarray)):
                entries.append(("array", _index_array(x, name)))
                used += 1
                has_array = True
            elif hasattr(type(x), "__index__"):  # an integer-like object, as NumPy takes it
                entries.append(("int", operator.index(x)))
                used += 1
            else:
                raise TypeError(f"{name}: cannot index with an object of type {type(x).__name__}")
        if n_ell > 1:
            raise ValueError(f"{name}: an index can only have a single ellipsis ('...')")
        nd = a.ndim
        if used > nd:
            raise IndexOutOfBounds(
                f"{name}: too many indices ({used}) for an array of dimension {nd}"
            )
        if not n_ell:
            entries.append(("ell", None))
        # kinds/vals per input axis; order: the entry sequence with ellipsis expanded,
        # each item (kind, axis or None); used for placing dimensions
        kinds: list[str] = []
        vals: list[Any] = []  # an int, a slice or an index array per input axis
        raw: list[Any] = []
        order: list[tuple[str, Any]] = []
        ax = 0
        for kind, v in entries:
            if kind == "ell":
                order.append(("ell", None))
                for _ in range(nd - used):
                    kinds.append("slice")
                    vals.append(_pyslice(None))
                    raw.append(_pyslice(None))
                    order.append(("slice", ax))
                    ax += 1
            elif kind == "new":
                order.append(("new", None))
            else:
                raw.append(v)
                if kind == "int":
                    v = _norm_int(v, a._shape[ax], ax, name)
                kinds.append(kind)
                vals.append(v)
                order.append((kind, ax))
                ax += 1
        self.kinds, self.vals, self.raw, self.order = kinds, vals, raw, order
        self.has_array = has_array

    def spec(self) -> tuple:
        """The index per axis in the user's terms (``RelativeSlice``'s spec): ints as given,
        slice bounds as given, array axes whole."""
        out: list[Any] = []
        for kind, v in zip(self.kinds, self.raw):
            if kind == "int":
                out.append(int(v))
            elif kind == "slice":
                out.append(_bounds(v))
            else:
                out.append((None, None, None))
        return tuple(out)

    def box(self, shape, *, ints_as_slices: bool):
        """Start/stop/stride per axis for the slices (and ints); array axes stay whole."""
        start, stop, strides = [], [], []
        for kind, v, n in zip(self.kinds, self.vals, shape):
            if kind == "slice":
                b, e, s = _triplet(v, n)
            elif kind == "int" and ints_as_slices:
                b, e, s = v, v + 1, 1
            else:
                b, e, s = 0, n, 1
            start.append(b)
            stop.append(e)
            strides.append(s)
        return tuple(start), tuple(stop), tuple(strides)


_triplet = slice_triplet


_INT32 = (-(2**31), 2**31 - 1)


def _check_slice_bounds(sl: _pyslice, name: str) -> None:
    """MLX's slices hold 32-bit bounds: a larger start, stop or step is an error (not clamped
    to the axis as NumPy would)."""
    for what in ("start", "stop", "step"):
        b = getattr(sl, what)
        if isinstance(b, _INTS) and not _INT32[0] <= int(b) <= _INT32[1]:
            raise ValueError(
                f"{name}: slice {what} {int(b)} does not fit in 32 bits (slice bounds "
                f"must lie in [{_INT32[0]}, {_INT32[1]}])"
            )


def _bounds(sl: _pyslice) -> tuple:
    """A slice's bounds as ints or None (a RelativeSlice's spec entry)."""
    return tuple(None if b is None else operator.index(b) for b in (sl.start, sl.stop, sl.step))


def _relative_slice(a: Array, spec: tuple, stream) -> Array:
    """``a`` sliced by ``spec`` (see RelativeSlice), normalised again on each shapeless
    replay; the trace's own shape is checked as the eager slice checks it."""
    rest = a.ndim - len(spec)
    spec = tuple(spec) + ((None, None, None),) * rest
    prim = RelativeSlice(spec)
    prim.box(a._shape)  # the bounds checks of the eager call, at the traced shape
    return Array.make(prim, [a], resolve_stream(stream))


def _basic_fast(a: Array, index: tuple, name: str, stream) -> Array | None:
    """``a[index]`` for a tuple of ints, slices, ``None`` and at most one ``...`` (the common
    cases), or None (``_Index`` decides, and raises the errors it names)."""
    shape = a._shape
    if shapeless.relative(a):
        return None
    n_ell = n_new = 0
    for ix in index:
        if ix is Ellipsis:
            n_ell += 1
        elif ix is None:
            n_new += 1
        elif type(ix) is not int and type(ix) is not _pyslice:
            return None
    used = len(index) - n_ell - n_new
    if n_ell > 1 or used > len(shape):
        return None
    if n_ell:
        i = next(k for k, ix in enumerate(index) if ix is Ellipsis)
        index = index[:i] + (_ALL,) * (len(shape) - used) + index[i + 1 :]
    start, stop, strides, drop, new = [], [], [], [], []
    ax = pos = 0  # the input axis, the output axis (after the ints are dropped)
    for ix in index:
        if ix is None:
            new.append(pos)
            pos += 1
            continue
        n = shape[ax]
        if type(ix) is int:
            if not -n <= ix < n:
                raise IndexOutOfBounds(
                    f"{name}: index {ix} is out of bounds for axis {ax} with size {n}"
                )
            if ix < 0:
                ix += n
            start.append(ix)
            stop.append(ix + 1)
            strides.append(1)
            drop.append(ax)
        else:
            if ix.start is None and ix.stop is None and ix.step is None:
                b, e, st = 0, n, 1
            else:
                _check_slice_bounds(ix, name)
                b, e, st = _triplet(ix, n)
            start.append(b)
            stop.append(e)
            strides.append(st)
            pos += 1
        ax += 1
    rest = shape[ax:]
    v = slice_axes(
        a,
        tuple(start) + (0,) * len(rest),
        tuple(stop) + rest,
        tuple(strides) + (1,) * len(rest),
        stream=stream,
    )
    if drop:
        v = Array.make(Squeeze(tuple(drop)), [v], resolve_stream(stream))
    if new:
        v = Array.make(ExpandDims(tuple(new)), [v], resolve_stream(stream))
    return v


_ALL = _pyslice(None)


def _basic_shape(ix: _Index, boxshape) -> tuple[int, ...]:
    """The result shape of a basic index (ints dropped, None inserted)."""
    out = []
    for kind, ax in ix.order:
        if kind == "new":
            out.append(1)
        elif kind == "slice":
            out.append(boxshape[ax])
    return tuple(out)


def _drop_and_insert(v: Array, ix: _Index, stream) -> Array:
    """``v`` (the sliced box) without the int axes and with the None axes (no size in the
    nodes' parameters, so shapeless compilation accepts them)."""
    drop = tuple(ax for ax, kind in enumerate(ix.kinds) if kind == "int")
    if drop:
        v = Array.make(Squeeze(drop), [v], resolve_stream(stream))
    new = []
    pos = 0
    for kind, _ in ix.order:
        if kind == "new":
            new.append(pos)
            pos += 1
        elif kind == "slice":
            pos += 1
    if new:
        v = Array.make(ExpandDims(tuple(new)), [v], resolve_stream(stream))
    return v


def _advanced_plan(ix: _Index, a: Array, stream):
    """For an index with arrays: (view of a after the slices, gather axes, broadcast index
    arrays, perm placing their dims, final shape with None axes)."""
    # NumPy's rule: the index dims go where the advanced entries (ints and arrays) are when
    # those are consecutive, else first
    pos = [i for i, (kind, _) in enumerate(ix.order) if kind in ("int", "array")]
    adjacent = pos[-1] - pos[0] == len(pos) - 1
    # consecutive: ints act as basic indices (a slice of one, dropped at the end); otherwise
    # they are 0-d index arrays
    start, stop, strides = ix.box(a._shape, ints_as_slices=adjacent)
    v = slice_axes(a, start, stop, strides, stream=stream)
    axes: list[int] = []
    idx: list[Array] = []
    for ax, (kind, val) in enumerate(zip(ix.kinds, ix.vals)):
        if kind == "int" and not adjacent:
            idx.append(constant(val, dt.int32 if val < 2**31 else dt.int64))
            axes.append(ax)
        elif kind == "array":
            idx.append(val)
            axes.append(ax)
    idx = broadcast_arrays(*idx, name="getitem", stream=stream)
    s = idx[0]._shape
    taken = set(axes)
    rest = [ax for ax in range(a.ndim) if ax not in taken]
    before = 0
    if adjacent:
        before = sum(1 for kind, ax in ix.order[: pos[0]] if kind == "slice")
    ns = len(s)
    perm = (
        tuple(ns + i for i in range(before))
        + tuple(range(ns))
        + tuple(ns + i for i in range(before, len(rest)))
    )
    final: list[int] = []
    placed_s = False
    for kind, ax in ix.order:
        if kind in ("int", "array"):
            if adjacent and not placed_s:
                final.extend(s)
                placed_s = True
        elif kind == "new":
            final.append(1)
        elif kind == "slice":
            final.append(v._shape[ax])
    if not adjacent:
        final = list(s) + final
    return v, tuple(axes), idx, perm, tuple(final)


# -- getitem / setitem -------------------------------------------------------------------
def getitem(a: Array, index, *, stream=None) -> Array:
    """``a[index]`` (what ``Array.__getitem__`` calls)."""
    return _getitem(a, index, "getitem", stream)


def _getitem(a: Array, index, name: str, stream) -> Array:
    if type(index) is int:  # the fast path of iteration and a[i]
        n = a._shape[0] if a._shape else 0
        if not a._shape:
            raise IndexOutOfBounds(f"{name}: too many indices (1) for an array of dimension 0")
        i = _norm_int(index, n, 0, name)
        nd = a.ndim
        if shapeless.relative(a):  # x[-1] is the last row of any shape
            v = _relative_slice(a, (operator.index(index),), stream)
            return Array.make(Squeeze((0,)), [v], resolve_stream(stream))
        v = slice_axes(a, (i,) + (0,) * (nd - 1), (i + 1,) + a._shape[1:], (1,) * nd, stream=stream)
        return Array.make(Squeeze((0,)), [v], resolve_stream(stream))
    t = type(index)
    if t is Array and index._dtype.kind in "ui" and a._shape:  # a[indices]: one Gather
        return Array.make(Gather((0,)), [a, index], resolve_stream(stream))
    if t is _pyslice:
        index = (index,)
        t = tuple
    if t is tuple:
        out = _basic_fast(a, index, name, stream)
        if out is not None:
            return out
    ix = _Index(a, index, name)
    if not ix.has_array:
        if shapeless.relative(a):
            v = _relative_slice(a, ix.spec(), stream)
        else:
            start, stop, strides = ix.box(a._shape, ints_as_slices=True)
            v = slice_axes(a, start, stop, strides, stream=stream)
        return _drop_and_insert(v, ix, stream)
    v, axes, idx, perm, final = _advanced_plan(ix, a, stream)
    out = Array.make(Gather(axes), [v] + idx, resolve_stream(stream))
    out = transpose(out, perm, stream=stream)
    return reshape(out, final, stream=stream)


def _value(value, a: Array, name: str) -> Array:
    """``value`` as an array of ``a``'s dtype (Python scalars weakly typed)."""

    if isinstance(value, SCALARS):
        value = constant(value, weak_dtype(value, a._dtype))
    return astype(as_array(value, name), a._dtype)


def _fit(value: Array, shape: tuple, name: str, stream) -> Array:
    """``value`` broadcast to ``shape`` (extra leading size-1 axes dropped, as NumPy)."""
    if value.ndim > len(shape):
        lead = value._shape[: value.ndim - len(shape)]
        if any(d != 1 for d in lead):
            raise ValueError(
                f"{name}: cannot broadcast a value of shape {value._shape} to the "
                f"indexed shape {shape}"
            )
        value = reshape(value, value._shape[len(lead) :], stream=stream)
    try:
        return broadcast_to(value, shape, stream=stream)
    except ValueError:
        raise ValueError(
            f"{name}: cannot broadcast a value of shape {value._shape} to the indexed shape {shape}"
        ) from None


_COMBINE = {"add": add, "prod": multiply, "max": maximum, "min": minimum}


def _update(a: Array, index, value, mode: str, name: str, stream) -> Array:
    """A copy of ``a`` with ``value`` written (mode "set") or combined into ``a[index]``."""
    a = as_array(a, name)
    value = _value(value, a, name)
    ix = _Index(a, index, name)
    st = resolve_stream(stream)
    if not ix.has_array and shapeless.relative(a):
        return _relative_update(a, ix, value, mode, name, stream)
    if not ix.has_array:
        start, stop, strides = ix.box(a._shape, ints_as_slices=True)
        box = slice_shape(a._shape, start, stop, strides)
        upd = _fit(value, _basic_shape(ix, box), name, stream)
        upd = reshape(upd, box, stream=stream)
        if mode != "set":
            cur = slice_axes(a, start, stop, strides, stream=stream)
            upd = _COMBINE[mode](cur, upd, stream=stream)
        whole = box == a._shape and all(s == 1 for s in strides)
        if whole:
            return upd
        return Array.make(SliceUpdate(start, stop, strides), [a, upd], st)
    v, axes, idx, perm, final = _advanced_plan(ix, a, stream)
    upd = _fit(value, final, name, stream)
    # undo the placement: drop the None axes, then the transpose
    gathered = idx[0]._shape + tuple(v._shape[ax] for ax in range(v.ndim) if ax not in axes)
    upd = reshape(upd, tuple(gathered[p] for p in perm), stream=stream)
    upd = transpose(upd, inverse_permutation(perm), stream=stream)
    out = Array.make(Scatter(axes, mode), [v, upd] + idx, st)
    if v is a:
        return out
    p = v._prim
    return Array.make(SliceUpdate(p.start, p.stop, p.strides), [a, out], st)


def _relative_update(a: Array, ix: _Index, value: Array, mode: str, name: str, stream) -> Array:
    """``_update`` of a basic index under a shapeless trace: the box, the value's broadcast
    to it and the write are all normalised again on each replay (no traced size)."""
    st = resolve_stream(stream)
    cur = _relative_slice(a, ix.spec(), stream)
    target = _drop_and_insert(cur, ix, stream)  # the indexed shape
    if value.ndim > target.ndim:  # NumPy drops extra leading size-1 axes of the value
        lead = value._shape[: value.ndim - target.ndim]
        if any(d != 1 for d in lead):
            raise ValueError(
                f"{name}: cannot broadcast a value of shape {value._shape} to the "
                f"indexed shape {target._shape}"
            )
        value = squeeze(value, tuple(range(len(lead))), stream=stream)
    _fit(value, target._shape, name, stream)  # the eager call's checks, at the traced shape
    upd = broadcast_arrays(value, target, name=name, stream=stream)[0]
    # back to the box's axes: the None axes out, the int axes in
    kept = [kind for kind, _ in ix.order if kind in ("slice", "new")]
    new = tuple(i for i, kind in enumerate(kept) if kind == "new")
    if new:
        upd = Array.make(Squeeze(new), [upd], st)
    ints = tuple(ax for ax, kind in enumerate(ix.kinds) if kind == "int")
    if ints:
        upd = Array.make(ExpandDims(ints), [upd], st)
    if mode != "set":
        upd = _COMBINE[mode](cur, upd, stream=stream)
    return Array.make(RelativeSliceUpdate(cur._prim.spec), [a, upd], st)


def setitem(a: Array, index, value, *, stream=None) -> Array:
    """The array ``a`` with ``a[index] = value`` applied (a new array; what
    ``Array.__setitem__`` rebinds to). With repeated array indices one write wins; a
    boolean ``index`` is a mask (see ``_masked_scatter``)."""
    mask = _boolean_mask(index)
    if mask is not None:
        return _masked_scatter(as_array(a, "setitem"), mask, value, "setitem", stream)
    return _update(a, index, value, "set", "setitem", stream)


def _boolean_mask(index) -> Array | None:
    """``index`` as a boolean array when it is a mask (a bool, a bool array or a list of
    bools), else None."""
    if isinstance(index, (bool, np.bool_)):
        return constant(bool(index), dt.bool_)
    if isinstance(index, Array):
        return index if index._dtype == dt.bool_ else None
    if isinstance(index, (np.ndarray, list)):
        arr = np.asarray(index) if isinstance(index, list) or index.dtype == np.bool_ else None
        if arr is not None and arr.dtype == np.bool_:
            return array(arr)
    return None


def _masked_scatter(a: Array, mask: Array, value, name: str, stream) -> Array:
    """``a`` with the elements (or trailing slices) where ``mask`` is True replaced, in
    row-major order, by the leading-axis entries of ``value`` (MLX's masked scatter).

    ``mask``'s shape is a prefix of ``a``'s. A ``value`` without that leading axis is broadcast
    to every selected slice. Built from cumsum, take and where, so its vjp, jvp and vmap come
    from theirs (under vmap each batch restarts at ``value``'s first entry)."""

    st = stream
    if mask.ndim > a.ndim or mask._shape != a._shape[: mask.ndim]:
        raise ValueError(
            f"{name}: a boolean mask must have the shape of the start of the indexed array; "
            f"the mask has shape {mask._shape} and the array {a._shape}"
        )
    value = _value(value, a, name)
    trailing = a._shape[mask.ndim :]
    if value.ndim > len(trailing) + 1:
        raise ValueError(
            f"{name}: a masked value of shape {value._shape} does not broadcast to the "
            f"selected slices of shape {trailing}"
        )
    full_mask = reshape(mask, mask._shape + (1,) * len(trailing), stream=st)
    if value.ndim <= len(trailing):  # one value for every selected slice
        return where(full_mask, _fit(value, trailing, name, st), a, stream=st)
    n = value._shape[0]
    value = _fit(value, (n,) + trailing, name, st)
    if n == 0:  # nothing to write from; the mask must select nothing
        return a
    flat = reshape(mask, (-1,), stream=st)
    position = cumsum(astype(flat, dt.int32, stream=st), axis=0, stream=st) - 1
    position = clip(position, 0, n - 1, stream=st)
    picked = reshape(take(value, position, axis=0, stream=st), a._shape, stream=st)
    return where(full_mask, picked, a, stream=st)


_NO_INDEX = object()  # ``a.at`` before ``[indices]``


class ArrayAt:
    """``a.at[index]``: updates that apply every index, repeated ones included (MLX).

    >>> import nuvec as nv
    >>> nv.zeros(2).at[nv.array([0, 0, 1])].add(1).tolist()
    [2.0, 1.0]
    """

    __slots__ = ("_a", "_index")

    def __init__(self, a: Array) -> None:
        self._a = a
        self._index = _NO_INDEX

    def __getitem__(self, index) -> "ArrayAt":
        self._index = index
        return self

    def _apply(self, mode: str, value, name: str) -> Array:
        if self._index is _NO_INDEX:
            raise ValueError(f"{name}: give the indices first, as in a.at[indices].add(v)")
        return _update(self._a, self._index, value, mode, name, None)

    def add(self, value) -> Array:
        return self._apply("add", value, "at.add")

    def subtract(self, value) -> Array:

        return self._apply("add", negative(_value(value, self._a, "at.subtract")), "at.subtract")

    def multiply(self, value) -> Array:
        return self._apply("prod", value, "at.multiply")

    def divide(self, value) -> Array:

        if self._a.dtype.kind not in "fc":
            raise TypeError(f"at.divide: not defined for {self._a.dtype.name} arrays")
        return self._apply("prod", reciprocal(_value(value, self._a, "at.divide")), "at.divide")

    def maximum(self, value) -> Array:
        return self._apply("max", value, "at.maximum")

    def minimum(self, value) -> Array:
        return self._apply("min", value, "at.minimum")


# -- take --------------------------------------------------------------------------------
def take(a, /, indices, axis: int | None = None, *, stream=None) -> Array:
    """Elements (``axis`` None: of the flattened array) or slices along ``axis`` at
    ``indices`` (an int or an integer array); NumPy's result shape.

    >>> import nuvec as nv
    >>> nv.take(nv.array([[1, 2], [3, 4]]), nv.array([1, 0]), axis=1).tolist()
    [[2, 1], [4, 3]]
    """
    a = as_array(a, "take")
    if axis is None:
        a = flatten(a, stream=stream) if a.ndim != 1 else a
        axis = 0
    ax = normalize_axis(axis, a.ndim, "take")
    if isinstance(indices, (bool, np.bool_)):
        raise _bool_error("take")
    if isinstance(indices, _INTS):
        return _getitem(a, (_pyslice(None),) * ax + (int(indices),), "take", stream)
    idx = _index_array(indices, "take")
    if a._shape[ax] == 0 and idx.size:
        raise IndexOutOfBounds(f"take: cannot take from axis {ax} of size 0")
    out = Array.make(Gather((ax,)), [a, idx], resolve_stream(stream))
    ni = idx.ndim
    if ax == 0 or ni == 0:
        return out
    perm = tuple(range(ni, ni + ax)) + tuple(range(ni)) + tuple(range(ni + ax, out.ndim))
    return transpose(out, perm, stream=stream)


def _along_shapes(a: Array, idx: Array, ax: int, name: str):
    if idx.ndim != a.ndim:
        raise ValueError(
            f"{name}: indices of dimension {idx.ndim} do not match an array of dimension {a.ndim}"
        )
    sa = a._shape[:ax] + (1,) + a._shape[ax + 1 :]
    si = idx._shape[:ax] + (1,) + idx._shape[ax + 1 :]

    return broadcast_shapes(sa, si, name=name)


def take_along_axis(a, /, indices, axis: int | None = None, *, stream=None) -> Array:
    """Values of ``a`` at ``indices`` along ``axis`` (``indices`` has ``a``'s rank; other
    axes broadcast). ``axis`` None: the flattened array and 1-D indices.

    >>> import nuvec as nv
    >>> x = nv.array([[10, 30, 20]])
    >>> nv.take_along_axis(x, nv.array([[0, 2, 1]]), axis=1).tolist()
    [[10, 20, 30]]
    """
    a = as_array(a, "take_along_axis")
    idx = _index_array(indices, "take_along_axis")
    if axis is None:
        a = flatten(a, stream=stream) if a.ndim != 1 else a
        axis = 0
    ax = normalize_axis(axis, a.ndim, "take_along_axis")
    common = _along_shapes(a, idx, ax, "take_along_axis")
    a = broadcast_to(a, common[:ax] + (a._shape[ax],) + common[ax + 1 :], stream=stream)
    idx = broadcast_to(idx, common[:ax] + (idx._shape[ax],) + common[ax + 1 :], stream=stream)
    if a._shape[ax] == 0 and idx.size:
        raise IndexOutOfBounds(f"take_along_axis: cannot take from axis {ax} of size 0")
    return Array.make(GatherAxis(ax), [a, idx], resolve_stream(stream))


def put_along_axis(a, /, indices, values, axis: int | None = None, *, stream=None) -> Array:
    """A copy of ``a`` with ``values`` written at ``indices`` along ``axis`` (the functional
    form of NumPy's ``put_along_axis``).

    >>> import nuvec as nv
    >>> nv.put_along_axis(nv.zeros((1, 3)), nv.array([[2]]), 5.0, axis=1).tolist()
    [[0.0, 0.0, 5.0]]
    """
    a = as_array(a, "put_along_axis")
    idx = _index_array(indices, "put_along_axis")
    shape = a._shape
    if axis is None:
        a = flatten(a, stream=stream) if a.ndim != 1 else a
        axis = 0
    ax = normalize_axis(axis, a.ndim, "put_along_axis")
    common = _along_shapes(a, idx, ax, "put_along_axis")
    target = a._shape[:ax] + (1,) + a._shape[ax + 1 :]
    if common != target:
        raise ValueError(
            f"put_along_axis: indices of shape {idx.shape} do not broadcast to "
            f"the array's shape {a.shape} outside axis {ax}"
        )
    ishape = a._shape[:ax] + (idx._shape[ax],) + a._shape[ax + 1 :]
    idx = broadcast_to(idx, ishape, stream=stream)
    v = _fit(_value(values, a, "put_along_axis"), ishape, "put_along_axis", stream)
    if a.size == 0:
        return reshape(a, shape, stream=stream)
    out = Array.make(ScatterAxis(ax, "set"), [a, idx, v], resolve_stream(stream))
    return reshape(out, shape, stream=stream)


# -- dynamic slices ----------------------------------------------------------------------
def _dynamic_grid(a: Array, start, axes, sizes, name: str, stream):
    """Index arrays for a box of ``sizes`` on ``axes`` at the runtime ``start`` (negative
    starts count from the end; starts are clamped so that the box fits, as XLA's)."""
    start = as_array(start, name)
    if start._dtype.kind not in "ui":
        raise TypeError(f"{name}: start indices must be integers, not {start.dtype.name}")
    if start.ndim > 1:
        raise ValueError(
            f"{name}: start indices must be 0- or 1-dimensional, got shape {start.shape}"
        )
    if isinstance(axes, _INTS):
        axes = (axes,)
    axes = norm_axes(axes, a.ndim, name)
    if start.size != len(axes):
        raise ValueError(f"{name}: {start.size} start indices for {len(axes)} axes")
    start = astype(reshape(start, (len(axes),), stream=stream), dt.int64)
    k = len(axes)
    grid = []
    for j, ax in enumerate(axes):
        n, s = a._shape[ax], sizes[j]
        st = reshape(slice_axes(start, (j,), (j + 1,), (1,), stream=stream), (), stream=stream)
        st = where(less(st, 0), add(st, n), st)
        st = minimum(maximum(st, 0), max(n - s, 0))
        shape = [1] * k
        shape[j] = s
        grid.append(add(reshape(arange(s, dtype=dt.int64), shape), st))
    return axes, broadcast_arrays(*grid, name=name, stream=stream)


def _host_box(a: Array, u: Array, start, axes: tuple, sizes: tuple):
    """``(start, stop, strides)`` of the box of shape ``sizes`` at ``start`` on ``axes`` (0
    elsewhere) where ``start`` is an evaluated integer array in host memory and nothing is
    traced: its values are read now, clamped as ``_dynamic_grid`` clamps them when the graph
    runs; else None (the dynamic form)."""
    if not isinstance(start, Array) or type(start._data) is not np.ndarray:
        return None
    if start._tracer or a._tracer or u._tracer or start._dtype.kind not in "ui":
        return None
    if start._dtype.name == "uint64":  # the dynamic form reads it as int64
        return None
    if start.ndim > 1 or start.size != len(axes):
        return None  # the dynamic form raises the error
    values = start._data.reshape(-1).tolist()
    lo = [0] * a.ndim
    for j, ax in enumerate(axes):
        n, s, st = a._shape[ax], sizes[ax], values[j]
        if st < 0:
            st += n
        lo[ax] = min(max(st, 0), max(n - s, 0))
    return tuple(lo), tuple(b + s for b, s in zip(lo, sizes)), (1,) * a.ndim


def _grid_perm(axes, ndim: int) -> tuple[int, ...]:
    """The perm taking a Gather over ``axes`` (grid dims first) back to axis order."""
    k = len(axes)
    rest = [ax for ax in range(ndim) if ax not in axes]
    return tuple(axes.index(d) if d in axes else k + rest.index(d) for d in range(ndim))


def slice(
    a, /, start_indices, axes: Sequence[int], slice_size: Sequence[int], *, stream=None
) -> Array:
    """A box of ``a`` of shape ``slice_size`` (one size per axis of ``a``) that starts at
    ``start_indices`` (an array, known only when the graph runs) on ``axes`` and at 0 on the
    other axes.

    >>> import nuvec as nv
    >>> a = nv.array([[1, 2, 3], [4, 5, 6]])
    >>> nv.slice(a, nv.array(1), (0,), (1, 2)).tolist()
    [[4, 5]]
    """
    a = as_array(a, "slice")
    sizes = [operator.index(s) for s in slice_size]
    if len(sizes) != a.ndim:
        raise ValueError(f"slice: {len(sizes)} slice sizes for an array of dimension {a.ndim}")
    if any(not 0 <= s <= n for s, n in zip(sizes, a._shape)):
        raise ValueError(f"slice: slice size {tuple(sizes)} does not fit shape {a.shape}")
    picked = norm_axes(axes, a.ndim, "slice")
    picked, grid = _dynamic_grid(
        a, start_indices, picked, [sizes[ax] for ax in picked], "slice", stream
    )
    nd = a.ndim
    stop = tuple(a._shape[d] if d in picked else sizes[d] for d in range(nd))
    v = slice_axes(a, (0,) * nd, stop, (1,) * nd, stream=stream)
    out = Array.make(Gather(picked), [v] + grid, resolve_stream(stream))
    return transpose(out, _grid_perm(picked, nd), stream=stream)


def slice_update(a, /, update, start_indices, axes: Sequence[int], *, stream=None) -> Array:
    """A copy of ``a`` with ``update`` written at ``start_indices`` (an array) on ``axes``
    and at 0 on the other axes (``update`` may have fewer leading axes).

    >>> import nuvec as nv
    >>> nv.slice_update(nv.zeros((3, 3)), nv.ones((1, 2)), nv.array([1, 1]), (0, 1)).tolist()
    [[0.0, 0.0, 0.0], [0.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    """
    a = as_array(a, "slice_update")
    u = _value(update, a, "slice_update")
    nd = a.ndim
    if u.ndim > nd:
        raise ValueError(
            f"slice_update: an update of dimension {u.ndim} for an array of dimension {nd}"
        )
    ax_list = norm_axes(axes, nd, "slice_update")
    lead = nd - u.ndim
    ushape = tuple((1 if d in ax_list else a._shape[d]) for d in range(lead)) + u._shape
    if any(s > n for s, n in zip(ushape, a._shape)):
        raise ValueError(f"slice_update: an update of shape {u.shape} does not fit shape {a.shape}")
    u = broadcast_to(u, ushape, stream=stream)
    box = _host_box(a, u, start_indices, ax_list, ushape)
    if box is not None:  # the starts are known: a static slice update, one node
        return Array.make(SliceUpdate(*box), [a, u], resolve_stream(stream))
    axes_t, grid = _dynamic_grid(
        a, start_indices, ax_list, [ushape[d] for d in ax_list], "slice_update", stream
    )
    stop = tuple(a._shape[d] if d in axes_t else ushape[d] for d in range(nd))
    v = slice_axes(a, (0,) * nd, stop, (1,) * nd, stream=stream)
    # the update in gather order: grid dims first, then the other axes
    rest = [d for d in range(nd) if d not in axes_t]
    u = transpose(u, tuple(axes_t) + tuple(rest), stream=stream)
    st = resolve_stream(stream)
    out = Array.make(Scatter(axes_t, "set"), [v, u] + grid, st)
    if v is a:
        return out
    p = v._prim
    return Array.make(SliceUpdate(p.start, p.stop, p.strides), [a, out], st)


# -- diagonals --------------------------------------------------------------------------
def diagonal(a, /, offset: int = 0, axis1: int = 0, axis2: int = 1, *, stream=None) -> Array:
    """The diagonal ``offset`` of the 2-D planes on ``axis1``/``axis2``, as a new last axis
    (NumPy's order).

    >>> import nuvec as nv
    >>> nv.diagonal(nv.reshape(nv.arange(9), (3, 3)), 1).tolist()
    [1, 5]
    """
    a = as_array(a, "diagonal")
    if a.ndim < 2:
        raise ValueError(f"diagonal: the array must have at least 2 dimensions, got {a.shape}")
    i = normalize_axis(axis1, a.ndim, "diagonal")
    j = normalize_axis(axis2, a.ndim, "diagonal")
    if i == j:
        raise ValueError(f"diagonal: axis1 and axis2 must differ, both are {i}")
    off = _int_arg(offset, "diagonal", "offset")
    shapeless.refuse_traced(a, "diagonal", "the positions on the diagonal")
    n, m = a._shape[i], a._shape[j]
    k = max(0, min(n - max(0, -off), m - max(0, off)))
    r = arange(k)
    rows = add(r, max(0, -off)) if off < 0 else r
    cols = add(r, off) if off > 0 else r
    out = Array.make(Gather((i, j)), [a, rows, cols], resolve_stream(stream))
    return transpose(out, tuple(range(1, out.ndim)) + (0,), stream=stream)


def diag(a, /, k: int = 0, *, stream=None) -> Array:
    """The diagonal ``k`` of a 2-D array, or a 2-D array with 1-D ``a`` on diagonal ``k``.

    >>> import nuvec as nv
    >>> nv.diag(nv.array([1, 2])).tolist()
    [[1, 0], [0, 2]]
    """
    a = as_array(a, "diag")
    k = _int_arg(k, "diag", "k")
    if a.ndim == 2:
        return diagonal(a, k, stream=stream)
    if a.ndim != 1:
        raise ValueError(f"diag: the input must be 1-D or 2-D, got shape {a.shape}")
    shapeless.refuse_traced(a, "diag", "the positions on the diagonal")
    n = a._shape[0] + abs(k)
    r = arange(a._shape[0])
    rows = add(r, -k) if k < 0 else r
    cols = add(r, k) if k > 0 else r
    base = zeros((n, n), a._dtype, stream=stream)
    return Array.make(Scatter((0, 1), "set"), [base, a, rows, cols], resolve_stream(stream))


def _int_arg(v, name: str, what: str) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, _INTS):
        raise TypeError(f"{name}: {what} must be an int, got {type(v).__name__}")
    return int(v)


__all__ = [
    "diagonal",
    "diag",
    "take",
    "take_along_axis",
    "put_along_axis",
    "slice",
    "slice_update",
    "getitem",
    "setitem",
]
