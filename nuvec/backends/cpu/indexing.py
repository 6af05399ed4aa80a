"""Gather and scatter primitives on the CPU (NumPy fancy indexing and ufunc.at; row updates of
an embedding's gradient in add.at's order, without its dispatch: see ``_rows_add``)."""

from __future__ import annotations

import numpy as np

from ...primitives.indexing import Gather, GatherAxis, IndexOutOfBounds, Scatter, ScatterAxis
from ..registry import register, register_into
from ._rows import add_rows
from .memory import empty

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_ACCUMULATE = {"add": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def _copy(x: np.ndarray) -> np.ndarray:
    out = empty(x.shape, x.dtype)
    np.copyto(out, x)
    return out


def _front(a: np.ndarray, axes) -> np.ndarray:
    """A view of ``a`` with ``axes`` first, so that the index arrays' dims lead the result
    (``np.moveaxis``'s result, without its argument normalisation: ~10 us a call)."""
    k = len(axes)
    if axes == tuple(range(k)):
        return a
    nd = a.ndim
    ax = [d + nd if d < 0 else d for d in axes]
    return a.transpose(ax + [d for d in range(nd) if d not in ax])


def _bounds_error(name: str, e: IndexError):
    return IndexOutOfBounds(f"{name}: {e}")


def _rows_add(target: np.ndarray, idx: np.ndarray, update: np.ndarray) -> bool:
    """``np.add.at(target, idx, update)`` for rows of a float32/float64 ``target`` picked by one
    integer array (an embedding's gradient), with the same bits: ``_rows.add_rows`` adds the
    updates one after another in their order, as ``add.at`` does, without its per-element
    dispatch ((32, 64) tokens of 128 into 96 rows: 1.4 ms in a step to ~0.1 ms). False (nothing
    done) when that does not apply; ``add.at`` then runs (and reports a bad index)."""
    n = target.shape[0] if target.ndim else 0
    flat = idx.reshape(-1)
    if (
        target.dtype not in (_F32, _F64)
        or update.dtype != target.dtype
        or n == 0
        or idx.dtype.kind not in "iu"
        or update.shape != idx.shape + target.shape[1:]
        or flat.size == 0
        or not target.flags.c_contiguous
        or flat.min() < -n
        or flat.max() >= n
    ):
        return False
    flat = np.where(flat < 0, flat + n, flat).astype(np.int64, copy=False)
    width = target[0].size
    add_rows(target.reshape(n, width), flat, np.ascontiguousarray(update).reshape(flat.size, width))
    return True


def _accumulate(mode, target, index, update):
    if (
        mode == "add"
        and len(index) == 1
        and isinstance(index[0], np.ndarray)
        and isinstance(update, np.ndarray)
        and _rows_add(target, index[0], update)
    ):
        return
    ufunc = _ACCUMULATE[mode]
    if target.dtype == np.bool_ and mode in ("add", "prod"):
        ufunc = np.logical_or if mode == "add" else np.logical_and
    ufunc.at(target, index, update)


@register(Gather)
def _gather(prim, ins, node):
    try:
        return [_front(ins[0], prim.axes)[tuple(ins[1:])]]
    except IndexError as e:
        raise _bounds_error("gather", e) from None


def _scatter_to(prim, target: np.ndarray, index: tuple, update: np.ndarray) -> None:
    try:
        if prim.mode == "set":
            target[index] = update
        else:
            _accumulate(prim.mode, target, index, update)
    except IndexError as e:
        raise _bounds_error("scatter", e) from None


@register(Scatter)
def _scatter(prim, ins, node):
    out = _copy(ins[0])
    _scatter_to(prim, _front(out, prim.axes), tuple(ins[2:]), ins[1])
    return [out]


@register_into(Scatter)
def _scatter_into(prim, ins, node):
    """The scatter written into ``ins[0]``'s buffer; the elements it overwrites are read
    first (which checks every index before anything is written) for the undo."""
    a = ins[0]
    target = _front(a, prim.axes)
    index = tuple(ins[2:])
    update = ins[1]
    basic = not index  # no index arrays: the whole array, a view
    if prim.mode == "set" and index and all(i.size == 1 for i in index):
        # one position (a KV cache's new entry): plain integer indexing, a view, several
        # times cheaper than fancy indexing; the same bounds and negative indices
        lead = update.ndim - (target.ndim - len(index))
        index = tuple(i.item() for i in index)
        update = update.reshape(update.shape[lead:])
        basic = True
    try:
        old = target[index]  # fancy indexing: a copy
    except IndexError as e:
        raise _bounds_error("scatter", e) from None
    if basic:  # a view of what is overwritten
        old = old.copy()
    _scatter_to(prim, target, index, update)

    def undo() -> None:
        target[index] = old

    return [a], undo


def _along_index(idx: np.ndarray, axis: int) -> tuple:
    """The full index tuple that ``idx`` along ``axis`` means (open grids elsewhere)."""
    nd = idx.ndim
    out = []
    for d in range(nd):
        if d == axis:
            out.append(idx)
        else:
            shape = [1] * nd
            shape[d] = idx.shape[d]
            out.append(np.arange(idx.shape[d]).reshape(shape))
    return tuple(out)


@register(GatherAxis)
def _gather_axis(prim, ins, node):
    try:
        return [ins[0][_along_index(ins[1], prim.axis)]]
    except IndexError as e:
        raise _bounds_error("take_along_axis", e) from None


@register(ScatterAxis)
def _scatter_axis(prim, ins, node):
    out = _copy(ins[0])
    index = _along_index(ins[1], prim.axis)
    try:
        if prim.mode == "set":
            out[index] = ins[2]
        else:
            _accumulate(prim.mode, out, index, ins[2])
    except IndexError as e:
        raise _bounds_error("put_along_axis", e) from None
    return [out]
