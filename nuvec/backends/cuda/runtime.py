"""What every CUDA implementation shares: CuPy data, streams, uploads, host reads.

Data layout. An evaluated array on the GPU holds a ``cupy.ndarray`` as ``_data`` (any strides:
shape primitives return CuPy views). CuPy has no bfloat16, so a bfloat16 array is stored as a
``uint16`` CuPy array of the same shape holding the bfloat16 bit patterns; the Array's nuvec
dtype says bfloat16, the generated kernels load and store the bits (``nv_bf16_to_f32`` /
``nv_f32_to_bf16``), and ``to_host`` views the bits as ``ml_dtypes.bfloat16`` again. Every other
dtype is CuPy's own. Operations CuPy cannot do on bfloat16 (reductions, matmul, sort) convert to
float32 through the element-wise engine first (exact) and round once at the end.

Streams. Each nuvec GPU ``Stream`` maps to one CUDA stream (``cupy.cuda.Stream``), created on
first use. They are *blocking* streams (they order with CUDA's legacy default stream), so a
host read through CuPy (``get``) on the default stream waits for the work queued on them.
Evaluation only queues work: the host waits when a value is read (``item``, ``tolist``,
conversion to NumPy, printing) or on ``synchronize()``. A node whose input was made on another
GPU stream first makes its stream wait on an event recorded on the producer's stream.

Registration: ``@gpu(PrimClass)`` registers ``fn(prim, datas, node)`` for the "gpu" device,
wrapped so that it runs with the node's CUDA stream current (CuPy allocates on, and launches
into, that stream) and every input is a CuPy array: NumPy data (constants made on a GPU stream,
or arrays evaluated on the CPU) is uploaded first. An upload of an array that lives on a GPU
stream replaces its ``_data`` (it is uploaded once); a CPU array is left as it is.
"""

from __future__ import annotations

import threading
from typing import Callable

import cupy as cp
import ml_dtypes
import numpy as np

from ...core import dtypes as dt
from ...core.device import DeviceType, Stream
from ..registry import register

BF16_NP = np.dtype(ml_dtypes.bfloat16)
_U16 = np.dtype(np.uint16)
ndarray = cp.ndarray

_streams: dict[Stream, cp.cuda.Stream] = {}
_lock = threading.Lock()


def storage_dtype(d: dt.Dtype) -> np.dtype:
    """The CuPy dtype that holds nuvec dtype ``d`` on the device (bfloat16 -> uint16)."""
    return _U16 if d == dt.bfloat16 else d.np


def empty(shape, d: dt.Dtype) -> cp.ndarray:
    """A new C-contiguous device array for dtype ``d`` (on the current stream's pool)."""
    return cp.empty(shape, storage_dtype(d))


_last: list = [None, None]  # the last (nuvec stream, CUDA stream) looked up


def cuda_stream(s: Stream) -> cp.cuda.Stream:
    """The CUDA stream of nuvec stream ``s`` (made on first use, blocking)."""
    if s is _last[0]:
        return _last[1]
    cs = _streams.get(s)
    if cs is None:
        with _lock:
            cs = _streams.get(s)
            if cs is None:
                cs = cp.cuda.Stream(non_blocking=False)
                _streams[s] = cs
    _last[0], _last[1] = s, cs
    return cs


def upload(data, d: dt.Dtype | None = None) -> cp.ndarray:
    """Host data (NumPy, any strides) as a device array in nuvec's storage for ``d`` (by
    default the data's own dtype). The copy is queued on the current stream."""
    # (np.ascontiguousarray would make a 0-d array 1-d: a scalar constant replayed by a
    # shapeless tape then broadcast from (1,) to the traced shape ())
    a = np.asarray(data, order="C")
    if a.dtype == BF16_NP:
        a = a.view(_U16)
    elif d is not None and d != dt.bfloat16 and a.dtype != d.np:
        a = a.astype(d.np)
    if a.size == 1:  # a scalar (ops make many): a fill kernel, no copy from the host
        return cp.full(a.shape, a.reshape(-1)[0], dtype=a.dtype)
    return cp.asarray(a)


def to_host(data, d: dt.Dtype | None = None) -> np.ndarray:
    """Device data as NumPy (waits for the work that makes it); bfloat16 bits viewed back.
    A transposed view comes back in its layout (its strides in the same order), as a NumPy view
    of the CPU's would: export stores a captured weight in the layout it was used in."""
    order = None
    if data.ndim > 1 and not data.flags.c_contiguous:
        order = sorted(range(data.ndim), key=lambda i: -abs(data.strides[i]))
        if not data.transpose(order).flags.c_contiguous:
            order = None
    if order is None:
        h = data.get()
    else:
        h = data.transpose(order).get().transpose(np.argsort(order))
    if d is not None and d == dt.bfloat16 and h.dtype == _U16:
        h = h.view(BF16_NP)
    return h


def synchronize(s: Stream | None = None) -> None:
    """Waits for the work queued on ``s`` (every nuvec GPU stream when None)."""
    if s is not None:
        cs = _streams.get(s)
        if cs is not None:
            cs.synchronize()
        return
    for cs in list(_streams.values()):
        cs.synchronize()


def _prepare_inputs(datas: list, node, cs: cp.cuda.Stream) -> None:
    """Uploads NumPy inputs and orders this stream after other GPU streams' producers."""
    own = node._stream
    ins = node._inputs
    for i, d in enumerate(datas):
        if i >= len(ins):  # a replayed tape step may pass data without its input arrays
            if type(d) is not ndarray:
                datas[i] = upload(np.asarray(d))
            continue
        x = ins[i]
        if type(d) is not ndarray:
            if not isinstance(d, np.ndarray):
                d = np.asarray(d)
            dev = upload(d, x._dtype)
            datas[i] = dev
            if x._stream.device.type is DeviceType.gpu and x._data is d:
                x._data = dev
            continue
        xs = x._stream
        if xs is not own and xs != own:
            other = _streams.get(xs)
            if other is not None and other is not cs:
                cs.wait_event(other.record())


def gpu(prim_type: type) -> Callable[[Callable], Callable]:
    """Registers ``fn(prim, datas, node)`` for ``prim_type`` on the GPU (see the module doc)."""

    def deco(fn: Callable) -> Callable:
        def run(prim, datas, node, fn=fn):
            cs = cuda_stream(node._stream)
            with cs:
                _prepare_inputs(datas, node, cs)
                return fn(prim, datas, node)

        run.__name__ = f"gpu_{fn.__name__}"
        run.__wrapped__ = fn
        register(prim_type, "gpu")(run)
        return fn

    return deco


def is_half(d: dt.Dtype) -> bool:
    return d == dt.float16 or d == dt.bfloat16


def to_f32(x: cp.ndarray, d: dt.Dtype) -> cp.ndarray:
    """float16 / bfloat16 device data as float32 (exact; through the element-wise engine)."""
    from . import kernels

    return kernels.astype(x, d, dt.float32)


def from_f32(x: cp.ndarray, d: dt.Dtype) -> cp.ndarray:
    """float32 device data rounded to ``d`` (float16 / bfloat16: round to nearest even)."""
    from . import kernels

    return kernels.astype(x, dt.float32, d)


def computable(x: cp.ndarray, d: dt.Dtype) -> cp.ndarray:
    """``x`` in a dtype CuPy computes with: bfloat16 (and float16) as float32, else as is."""
    return to_f32(x, d) if is_half(d) else x


def finish(r, d: dt.Dtype) -> cp.ndarray:
    """A CuPy result in nuvec's storage of dtype ``d`` (rounding halves once)."""
    r = cp.asarray(r)
    if is_half(d):
        if r.dtype != np.float32:
            r = r.astype(np.float32)
        return from_f32(r, d)
    if r.dtype != d.np:
        r = r.astype(d.np)
    return r
