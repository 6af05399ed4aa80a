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
axes collapse into one stride, or a batch by one matrix, are passed as they are; any other
layout (heads split from a batch of sequences, a batch that broadcasts, a slice with steps) is
first copied into contiguous batches, so every such product goes through this handle (and a
CUDA graph can record it).
``matmul`` returns None for other dtypes (the caller uses CuPy), and where this machine's
cuBLAS cannot be found.

    c = matmul(a, b)          # a: (..., m, k), b: (..., k, n) CuPy arrays, or None
"""

from __future__ import annotations

import ctypes
import threading

import cupy as cp
import numpy as np

_N, _T = 0, 1  # cublasOperation_t
_WORKSPACE = 32 << 20  # bytes per handle (Hopper's largest recommendation)
_I32 = (1 << 31) - 1
_local = threading.local()
_lib: list = []  # [ctypes library] or [None] when it cannot be loaded
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


def matmul(a, b):
    """``a @ b`` through nuvec's cuBLAS handle, or None where this path does not apply."""
    dt = a.dtype.type
    if dt not in _ONE or b.dtype != a.dtype or a.ndim < 2 or b.ndim < 2:
        return None
    c = _strided_batches(a, b)
    if c is None:
        try:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:  # batches that do not broadcast: the caller's error to raise
            return None
        a = cp.ascontiguousarray(cp.broadcast_to(a, batch + a.shape[-2:]))
        if b.ndim > 2:
            b = cp.ascontiguousarray(cp.broadcast_to(b, batch + b.shape[-2:]))
        c = _strided_batches(a, b)
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
