"""Matrix products through nuvec's own cuBLAS handle, so that a CUDA graph can record them.

CuPy refuses every cuBLAS call while a stream records a graph (its ``setStream`` raises), so
a compiled step with a matmul could not be recorded (``executable``). This module calls cuBLAS
itself, through ctypes, from the same library CuPy loaded:

* one handle per thread and device, with a workspace of its own allocated with the handle
  (cuBLAS then allocates nothing while a graph records);
* the current CuPy stream set on the handle before each call;
* ``cublas{S,D}gemmStridedBatched``: plain float32 / float64 arithmetic (the default math
  mode: no TF32, as CuPy's default), host-side alpha = 1 and beta = 0.

Taken for float32 / float64 operands: matrices with a unit stride along rows or columns (a
transposed view is used in place, through the transpose flag; a leading dimension wider than
the matrix, as for one head of a (L, heads, dims) array, is passed as such) in batches whose
axes collapse into one stride, or a batch by one matrix, are passed as they are; batches at
other strides (heads split from a batch of sequences, a batch that broadcasts) go to
``cublas{S,D}gemmBatched`` with arrays of the matrices' addresses, so attention's operands are
never copied; any other layout (a slice with steps) is first copied into contiguous batches, so
every such product goes through this handle (and a CUDA graph can record it). While a graph
records (``recording``), an address array is written once the recording ends: its memory and
the addresses in it are fixed for the graph's life, which keeps it.
``matmul`` returns None for other dtypes (the caller uses CuPy), and where this machine's
cuBLAS cannot be found.

    c = matmul(a, b)          # a: (..., m, k), b: (..., k, n) CuPy arrays, or None
"""

from __future__ import annotations

import contextlib
import ctypes
import threading

import cupy as cp
import numpy as np

_N, _T = 0, 1  # cublasOperation_t
_WORKSPACE = 32 << 20  # bytes per handle (Hopper's largest recommendation)
_I32 = (1 << 31) - 1
_local = threading.local()
_recording = threading.local()  # .uploads: a list while this thread records a graph
_lib: list = []  # [ctypes library] or [None] when it cannot be loaded
#: products by path (tests): one stride per batch, address arrays, copied batches
calls = {"strided": 0, "pointers": 0, "copied": 0}
_ONE = {np.float32: ctypes.c_float(1.0), np.float64: ctypes.c_double(1.0)}
_ZERO = {np.float32: ctypes.c_float(0.0), np.float64: ctypes.c_double(0.0)}


def _library():
    if not _lib:
        _lib.append(_load())
    return _lib[0]


def _load():
    """CuPy's libcublas (found in this process's memory map once CuPy has loaded it)."""
    try:
        cp.cuda.device.get_cublas_handle()
        with open("/proc/self/maps") as f:
            paths = {ln.split()[-1] for ln in f if "libcublas.so" in ln and "Lt" not in ln}
        lib = ctypes.CDLL(sorted(paths)[0]) if paths else ctypes.CDLL("libcublas.so")
        for name in ("cublasSgemmStridedBatched", "cublasDgemmStridedBatched"):
            fn = getattr(lib, name)
            fn.restype = ctypes.c_int
            fn.argtypes = (
                [
                    ctypes.c_void_p,
                    ctypes.c_int,
                    ctypes.c_int,
                    ctypes.c_int,
                    ctypes.c_int,
                    ctypes.c_int,
                    ctypes.c_void_p,
                ]
                + [ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong] * 2
                + [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_int]
            )
        for name in ("cublasSgemmBatched", "cublasDgemmBatched"):
            fn = getattr(lib, name)
            fn.restype = ctypes.c_int
            fn.argtypes = (
                [ctypes.c_void_p] + [ctypes.c_int] * 5 + [ctypes.c_void_p]
                + [ctypes.c_void_p, ctypes.c_int] * 2
                + [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
            )  # fmt: skip
        lib.cublasSetStream_v2.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.cublasSetWorkspace_v2.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        return lib
    except Exception:  # noqa: BLE001 - no usable cuBLAS here: CuPy's matmul serves
        return None


class _Handle:
    def __init__(self, lib) -> None:
        self.ptr = ctypes.c_void_p()
        if lib.cublasCreate_v2(ctypes.byref(self.ptr)) != 0:
            raise RuntimeError("matmul: cublasCreate failed")
        self.workspace = cp.empty(_WORKSPACE, np.uint8)  # kept as long as the handle
        lib.cublasSetWorkspace_v2(self.ptr, self.workspace.data.ptr, _WORKSPACE)


def _handle(lib) -> _Handle:
    dev = cp.cuda.runtime.getDevice()
    handles = getattr(_local, "handles", None)
    if handles is None:
        handles = _local.handles = {}
    h = handles.get(dev)
    if h is None:
        h = handles[dev] = _Handle(lib)
    return h


def _layout(x, rows: int, cols: int):
    """(transposed?, leading dimension) of matrix ``x[..., rows, cols]`` seen column-major,
    or None unless one of its last two axes has unit stride and the other a stride of at least
    the matrix's extent along the first (a row or a column of a wider array: attention's
    heads)."""
    s = x.itemsize
    r, c = x.strides[-2:]
    if c == s and rows == 1:
        return _N, max(cols, 1)
    if c == s and r % s == 0 and r >= cols * s:
        return _N, r // s
    if r == s and cols == 1:
        return _T, max(rows, 1)
    if r == s and c % s == 0 and c >= rows * s:
        return _T, c // s
    return None


def _batch_stride(x, batch: tuple):
    """Elements between consecutive matrices of ``x`` (0: one matrix for the whole batch), or
    None if its batch axes do not collapse into one non-negative stride."""
    if x.ndim == 2:
        return 0
    if x.shape[:-2] != batch:
        return None
    step = None
    expect = 0
    for dim, st in zip(reversed(x.shape[:-2]), reversed(x.strides[:-2])):
        if dim == 1:
            continue
        if step is None:
            if st <= 0 or st % x.itemsize:
                return None
            step, expect = st, st
        elif st != expect:
            return None
        expect *= dim
    return 0 if step is None else step // x.itemsize


@contextlib.contextmanager
def recording(uploads: list):
    """While this thread records a graph: the address arrays that products make are listed in
    ``uploads`` as (device array, host values), for the recorder to write once the recording
    has ended (and to keep as long as the graph)."""
    prev = getattr(_recording, "uploads", None)
    _recording.uploads = uploads
    try:
        yield
    finally:
        _recording.uploads = prev


def matmul(a, b):
    """``a @ b`` through nuvec's cuBLAS handle, or None where this path does not apply."""
    dt = a.dtype.type
    if dt not in _ONE or b.dtype != a.dtype or a.ndim < 2 or b.ndim < 2:
        return None
    c = _strided_batches(a, b)
    if c is not None:
        calls["strided"] += 1
        return c
    c = _pointer_batches(a, b)
    if c is None:
        try:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:  # batches that do not broadcast: the caller's error to raise
            return None
        a = cp.ascontiguousarray(cp.broadcast_to(a, batch + a.shape[-2:]))
        if b.ndim > 2:
            b = cp.ascontiguousarray(cp.broadcast_to(b, batch + b.shape[-2:]))
        c = _strided_batches(a, b)
        if c is not None:
            calls["copied"] += 1
    return c


def _batch_offsets(x, batch: tuple):
    """Byte offsets of the matrices of ``x`` over the (broadcast) ``batch``, in order."""
    lead = len(batch) - (x.ndim - 2)
    offs = np.zeros(batch, np.int64)
    for ax, (dim, st) in enumerate(zip(x.shape[:-2], x.strides[:-2])):
        if dim != 1:
            shape = [1] * len(batch)
            shape[lead + ax] = dim
            offs = offs + (np.arange(dim, dtype=np.int64) * st).reshape(shape)
    return offs.reshape(-1)


def _pointer_batches(a, b):
    """``matmul`` for batches at any strides whose matrices each have a unit stride along
    rows or columns: ``cublas{S,D}gemmBatched`` over arrays of the matrices' addresses; else
    None. While a graph records, the address array is written after the recording (see
    ``recording``); outside one, before the product on the current stream."""
    dt = a.dtype.type
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if b.shape[-2] != k or 0 in (m, n, k) or max(m, n, k) > _I32:
        return None
    try:
        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except ValueError:  # batches that do not broadcast: the caller's error to raise
        return None
    count = 1
    for d in batch:
        count *= d
    la, lb = _layout(a, m, k), _layout(b, k, n)
    if count == 0 or count > _I32 or la is None or lb is None:
        return None
    stream = cp.cuda.get_current_stream()
    uploads = getattr(_recording, "uploads", None)
    if stream.is_capturing() and uploads is None:
        return None  # a recording that would not write the addresses
    lib = _library()
    if lib is None:
        return None
    h = _handle(lib)
    c = cp.empty(batch + (m, n), dt)
    size = c.itemsize
    host = np.empty(3 * count, np.uint64)  # b's matrices, a's, c's (cuBLAS's A, B, C)
    host[:count] = b.data.ptr + _batch_offsets(b, batch)
    host[count : 2 * count] = a.data.ptr + _batch_offsets(a, batch)
    host[2 * count :] = c.data.ptr + np.arange(count, dtype=np.uint64) * (m * n * size)
    ptrs = cp.empty(3 * count, np.uint64)
    if stream.is_capturing():
        uploads.append((ptrs, host))
    else:
        ptrs.set(host, stream=stream)
    lib.cublasSetStream_v2(h.ptr, stream.ptr)
    fn = lib.cublasSgemmBatched if dt is np.float32 else lib.cublasDgemmBatched
    p = ptrs.data.ptr
    status = fn(
        h.ptr,
        lb[0],
        la[0],
        n,
        m,
        k,
        ctypes.byref(_ONE[dt]),
        p,
        lb[1],
        p + 8 * count,
        la[1],
        ctypes.byref(_ZERO[dt]),
        p + 16 * count,
        n,
        count,
    )
    if status != 0:
        raise RuntimeError(
            f"matmul: cuBLAS batched gemm failed with status {status} for shapes {a.shape} "
            f"and {b.shape}"
        )
    calls["pointers"] += 1
    return c


def _strided_batches(a, b):
    """``matmul`` for operands whose matrices lie at one stride each, else None."""
    dt = a.dtype.type
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if b.shape[-2] != k or 0 in (m, n, k) or max(m, n, k) > _I32 or b.ndim > a.ndim:
        return None
    batch = a.shape[:-2]
    count = 1
    for d in batch:
        count *= d
    if count == 0 or count > _I32:
        return None
    la, lb = _layout(a, m, k), _layout(b, k, n)
    sa, sb = _batch_stride(a, batch), _batch_stride(b, batch)
    if la is None or lb is None or sa is None or sb is None or (count > 1 and sa == 0):
        return None
    lib = _library()
    if lib is None:
        return None
    h = _handle(lib)
    c = cp.empty(batch + (m, n), dt)
    lib.cublasSetStream_v2(h.ptr, cp.cuda.get_current_stream().ptr)
    fn = lib.cublasSgemmStridedBatched if dt is np.float32 else lib.cublasDgemmStridedBatched
    # row-major C = A B is column-major C^T = B^T A^T: B's matrix comes first
    status = fn(
        h.ptr,
        lb[0],
        la[0],
        n,
        m,
        k,
        ctypes.byref(_ONE[dt]),
        b.data.ptr,
        lb[1],
        sb,
        a.data.ptr,
        la[1],
        sa,
        ctypes.byref(_ZERO[dt]),
        c.data.ptr,
        n,
        m * n,
        count,
    )
    if status != 0:
        raise RuntimeError(
            f"matmul: cuBLAS gemm failed with status {status} for shapes {a.shape} and {b.shape}"
        )
    return c
