"""Gather and scatter primitives on the GPU (CuPy advanced indexing, cupyx scatter ops).

Differences from the CPU, both so that the host never waits for the device: an index out of
range is not reported (CuPy wraps it), and ``scatter`` with ``mode="set"`` and repeated
indices keeps one of the written values, not necessarily the last.

A float ``add`` of rows picked by one index array (an embedding's gradient) runs
``_ROWS_ADD``: one thread per element of the target sums that row's updates one after another
in their original order, as NumPy's ``add.at`` and the CPU do, so the bits equal the CPU's and
do not vary from run to run. Other ``add`` / ``max`` / ``min`` are atomic operations: with
repeated indices a float ``add`` sums in an order that can vary, in the last bits.
Dtypes without atomics compute in a wider one and convert once (8/16-bit integers in int32,
wrapping as the CPU does; float16 / bfloat16 in float32; bool as 0/1 with or = max, and =
min). ``prod``, and ``max`` / ``min`` of 64-bit dtypes (CuPy's atomics round float64 through
float32), run on the host (NumPy's ``ufunc.at``), which waits for the device.
"""

from __future__ import annotations

import cupy as cp
import cupyx
import numpy as np

from ...core import dtypes as dt
from ...primitives.indexing import Gather, GatherAxis, Scatter, ScatterAxis
from .runtime import finish, gpu, is_half, to_f32, to_host, upload

_ATOMIC = {"add": cupyx.scatter_add, "max": cupyx.scatter_max, "min": cupyx.scatter_min}
_HOST = {"prod": np.multiply, "max": np.maximum, "min": np.minimum}
# CuPy's scatter_max / scatter_min round float64 values through float32 (seen on the H200,
# CuPy 14.2); 64-bit extremes run on the host until a device path is verified
_NO_ATOMIC_EXTREMES = (dt.float64, dt.int64, dt.uint64)


def _front(a, axes):
    """A view of ``a`` (NumPy or CuPy) with ``axes`` first, the others after in order."""
    k = len(axes)
    if tuple(axes) == tuple(range(k)):
        return a
    rest = [i for i in range(a.ndim) if i not in axes]
    return a.transpose(tuple(axes) + tuple(rest))


@gpu(Gather)
def _gather(prim, ins, node):
    return [_front(ins[0], prim.axes)[tuple(ins[1:])]]


def _widen(x, d: dt.Dtype):
    """``x`` in a dtype the atomics support (see the module docstring), or ``x`` itself."""
    if d == dt.bool_ or (d.kind in "ui" and d.size < 4):
        return x.astype(cp.int32)
    if is_half(d):
        return to_f32(x, d)
    return x


def _narrow(w, d: dt.Dtype):
    if d == dt.bool_:
        return w != 0
    if is_half(d):
        return finish(w, d)
    if w.dtype != d.np:
        return w.astype(d.np)
    return w


_ROWS_ADD = cp.ElementwiseKernel(
    "raw T upd, raw int64 order, raw int64 start, raw int64 count, int64 width",
    "raw T target",
    """
    const long long r = i / width, c = i % width;
    T acc = target[i];
    for (long long j = start[r], end = start[r] + count[r]; j < end; ++j)
        acc = acc + upd[order[j] * width + c];
    target[i] = acc;
    """,
    "nv_rows_add",
    options=("--fmad=false",),
)


def _rows_add(target, idx, update) -> bool:
    """``target[idx] += update`` in place for rows of a C-contiguous float32/float64 ``target``
    picked by one integer array, each row summing its updates in their original order (the
    module docstring). False (nothing done) when that does not apply. Out-of-range indices
    wrap, as CuPy's scatter does."""
    n = target.shape[0] if target.ndim else 0
    if (
        target.dtype not in (cp.float32, cp.float64)
        or update.dtype != target.dtype
        or not target.flags.c_contiguous
        or n == 0
        or idx.dtype.kind not in "iu"
        or update.shape != idx.shape + target.shape[1:]
        or idx.size == 0
    ):
        return False
    flat = idx.reshape(-1).astype(cp.int64) % n
    m = flat.size
    order = cp.argsort(flat * m + cp.arange(m, dtype=cp.int64))  # by row, then position
    count = cp.bincount(flat, minlength=n)
    start = cp.cumsum(count) - count
    width = target.size // n
    _ROWS_ADD(cp.ascontiguousarray(update), order, start, count, width, target, size=target.size)
    return True


def _combine(mode: str, out, index: tuple, update, d: dt.Dtype, axes):
    """``out`` with ``update`` written or combined at ``index`` of ``_front(out, axes)``."""
    # broadcast index views (an int next to an array) as real arrays: CuPy's scatter kernels
    # index them by their own layout
    index = tuple(cp.ascontiguousarray(i) if isinstance(i, cp.ndarray) else i for i in index)
    if mode == "set":
        _front(out, axes)[index] = update
        return out
    if mode == "prod" or (mode in ("max", "min") and d in _NO_ATOMIC_EXTREMES):
        h = to_host(out, d).copy()
        t = _front(h, axes)
        hidx = tuple(to_host(i) for i in index)
        u = to_host(cp.ascontiguousarray(update), d)
        _HOST[mode].at(t, hidx, u)
        return upload(h, d)
    op = "max" if (d == dt.bool_ and mode == "add") else mode
    w = _widen(out, d)
    u = _widen(cp.ascontiguousarray(update), d)
    if not (
        op == "add"
        and len(index) == 1
        and isinstance(index[0], cp.ndarray)
        and _rows_add(_front(w, axes), index[0], u)
    ):
        _ATOMIC[op](_front(w, axes), index, u)
    return _narrow(w, d) if w is not out else out


@gpu(Scatter)
def _scatter(prim, ins, node):
    return [_combine(prim.mode, ins[0].copy(), tuple(ins[2:]), ins[1], node._dtype, prim.axes)]


def _along_index(idx, axis: int) -> tuple:
    nd = idx.ndim
    out = []
    for d in range(nd):
        if d == axis:
            out.append(idx)
        else:
            shape = [1] * nd
            shape[d] = idx.shape[d]
            out.append(cp.arange(idx.shape[d]).reshape(shape))
    return tuple(out)


@gpu(GatherAxis)
def _gather_axis(prim, ins, node):
    a, idx = ins
    return [a[_along_index(idx, prim.axis)]]


@gpu(ScatterAxis)
def _scatter_axis(prim, ins, node):
    a, idx, upd = ins
    index = _along_index(idx, prim.axis)
    update = cp.broadcast_to(upd, idx.shape)
    return [_combine(prim.mode, a.copy(), index, update, node._dtype, ())]
