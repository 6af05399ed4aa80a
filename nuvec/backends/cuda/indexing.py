"""Gather and scatter primitives on the GPU (CuPy advanced indexing, cupyx scatter ops; one
element-wise kernel for take_along_axis, and for put_along_axis where each position is named
at most once along the axis).

Differences from the CPU, both so that the host never waits for the device: an index out of
range is not reported (CuPy wraps it), and ``scatter`` with ``mode="set"`` and repeated
indices keeps one of the written values, not necessarily the last.

A float ``add`` of rows picked by one index array (an embedding's gradient) runs
``_ROWS_ADD``: one block per target row lists that row's updates and sums them one after
another in their original order, as NumPy's ``add.at`` and the CPU do, so the bits equal the
CPU's and do not vary from run to run; it runs on the device alone (no sort, no count read
back), so a training step that holds it is recorded as one CUDA graph. Other ``add`` /
``max`` / ``min`` are atomic operations: with repeated indices a float ``add`` sums in an
order that can vary, in the last bits.
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


_ROWS_ADD_SRC = r"""
typedef %(T)s T;
// Block b sums the updates of rows b, b + gridDim.x, ...: it scans the indices in chunks of
// 256, lists the chunk's hits of its row in their original order (warp ballots), then each
// thread adds them to its columns one after another. Nothing is read back to the host and
// no sort is needed, so the launch can be recorded in a CUDA graph.
extern "C" __global__ void nv_rows_add_%(T)s(const T* upd, const long long* idx, long long m,
                                            long long n, long long width, T* target) {
    __shared__ long long hits[256];
    __shared__ int warp_hits[8];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    for (long long r = blockIdx.x; r < n; r += gridDim.x) {
        T* row = target + r * width;
        for (long long j0 = 0; j0 < m; j0 += 256) {
            const long long j = j0 + tid;
            bool hit = false;
            if (j < m) {
                long long v = idx[j] %% n;
                if (v < 0) v += n;
                hit = v == r;
            }
            const unsigned mask = __ballot_sync(0xffffffffu, hit);
            if (lane == 0) warp_hits[warp] = __popc(mask);
            __syncthreads();
            int before = 0, total = 0;
            for (int k = 0; k < 8; ++k) {
                const int c = warp_hits[k];
                before += k < warp ? c : 0;
                total += c;
            }
            if (hit) hits[before + __popc(mask & ((1u << lane) - 1u))] = j;
            __syncthreads();
            if (total) {
                for (long long c = tid; c < width; c += 256) {
                    T acc = row[c];
                    for (int k = 0; k < total; ++k) acc = acc + upd[hits[k] * width + c];
                    row[c] = acc;
                }
            }
            __syncthreads();
        }
    }
}
"""
_ROWS_ADD: dict = {}  # float32 / float64 -> the kernel


def _rows_add_kernel(dtype):
    k = _ROWS_ADD.get(dtype)
    if k is None:
        t = "float" if dtype == cp.float32 else "double"
        k = cp.RawKernel(_ROWS_ADD_SRC % {"T": t}, f"nv_rows_add_{t}", options=("--fmad=false",))
        _ROWS_ADD[dtype] = k
    return k


def _rows_add(target, idx, update) -> bool:
    """``target[idx] += update`` in place for rows of a C-contiguous float32/float64 ``target``
    picked by one integer array, each row summing its updates in their original order (the
    module docstring). False (nothing done) when that does not apply. Out-of-range indices
    wrap, as CuPy's scatter does. Device work only (no sort, no count read back), so a
    compiled step that holds it is recorded as one CUDA graph."""
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
    flat = cp.ascontiguousarray(idx.reshape(-1).astype(cp.int64, copy=False))
    width = target.size // n
    blocks = min(n, 65535)
    args = (cp.ascontiguousarray(update), flat, np.int64(flat.size), np.int64(n), np.int64(width))
    _rows_add_kernel(target.dtype)((blocks,), (256,), args + (target,))
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


# take_along_axis / put_along_axis as one element-wise kernel over the indices (CuPy's
# advanced indexing takes 4-6 kernels: index preparation, aranges, the gather): element i of
# the index array (shape (outer, m, inner) around the axis) names a[o, j, r], j wrapped into
# [0, n) as CuPy's indexing wraps it; ``a`` and ``out`` (``raw``) are C-contiguous
_ALONG_SOURCE = """
    const long long r = i % inner;
    const long long o = i / (m * inner);
    long long j = (long long)idx % n;
    if (j < 0) j += n;
    const long long src = (o * n + j) * inner + r;
"""
_GATHER_ALONG = cp.ElementwiseKernel(
    "raw T a, I idx, int64 n, int64 m, int64 inner",
    "T out",
    _ALONG_SOURCE + "out = a[src];",
    "nv_gather_along",
)
# put_along_axis where every position of ``out`` is named at most once along the axis (m == 1,
# as a cross-entropy's gradient has it): a plain store or a single addition per position, the
# same bits as CuPy's atomic add of one value, and no order to depend on
_SET_ALONG = cp.ElementwiseKernel(
    "I idx, T u, int64 n, int64 m, int64 inner",
    "raw T out",
    _ALONG_SOURCE + "out[src] = u;",
    "nv_set_along",
)
_ADD_ALONG = cp.ElementwiseKernel(
    "I idx, T u, int64 n, int64 m, int64 inner",
    "raw T out",
    _ALONG_SOURCE + "out[src] = out[src] + u;",
    "nv_add_along",
)


def _inner(shape: tuple, axis: int) -> int:
    """The element count after ``axis``."""
    inner = 1
    for d in shape[axis + 1 :]:
        inner *= d
    return inner


@gpu(GatherAxis)
def _gather_axis(prim, ins, node):
    a, idx = ins
    ax = prim.axis % idx.ndim
    if idx.size == 0 or a.shape[ax] == 0:
        return [a[_along_index(idx, ax)]]
    out = cp.empty(idx.shape, a.dtype)
    a = cp.ascontiguousarray(a)  # ``src`` is a flat C-order index
    _GATHER_ALONG(a, idx, a.shape[ax], idx.shape[ax], _inner(idx.shape, ax), out)
    return [out]


@gpu(ScatterAxis)
def _scatter_axis(prim, ins, node):
    a, idx, upd = ins
    ax = prim.axis % idx.ndim
    if (
        idx.size
        and idx.shape[ax] == 1
        and a.shape[ax]
        and upd.dtype == a.dtype
        and (prim.mode == "set" or a.dtype in (cp.float32, cp.float64))
    ):
        out = a.copy()  # C order: ``src`` is its flat index
        kernel = _SET_ALONG if prim.mode == "set" else _ADD_ALONG
        kernel(idx, cp.broadcast_to(upd, idx.shape), a.shape[ax], 1, _inner(idx.shape, ax), out)
        return [out]
    index = _along_index(idx, ax)
    update = cp.broadcast_to(upd, idx.shape)
    return [_combine(prim.mode, a.copy(), index, update, node._dtype, ())]
