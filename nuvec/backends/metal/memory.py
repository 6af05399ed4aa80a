"""Unified memory: NumPy arrays over shim buffers, and ``MetalArray``, the data of an array
evaluated on the Apple GPU.

Apple GPUs share memory with the CPU. A shim buffer (``shim.Device.buffer``, shared storage)
is wrapped as a NumPy array without a copy, so kernels write into memory NumPy reads, and the
CPU implementations of the primitives Metal has no kernel for read GPU results in place::

    x = empty(dev, (3, 4), np.float32)     # NumPy array whose memory is a new shim buffer
    locate(x[1:, ::2])                     # (that buffer, byte offset of the view's first element)
    y = to_shared(dev, host_array)         # a copy in a shim buffer (broadcast axes stay 0-strided)

``dev`` is a ``shim.Device``: the Metal device, or the host device (CPU memory, no kernels),
which is how the tests run all of this on Linux.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from . import shim

__all__ = ["MetalArray", "empty", "locate", "to_shared", "is_addressable"]


class Waitable(Protocol):
    def wait_for(self, ticket: int) -> None: ...


def empty(device: shim.Device, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A C-contiguous array of ``shape`` and ``dtype`` in a new shared buffer (zero-filled).
    Empty arrays hold no buffer (Metal buffers have at least one byte; nothing reads them)."""
    dt = np.dtype(dtype)
    n = 1
    for s in shape:
        n *= int(s)
    if n == 0:
        return np.empty(shape, dt)
    buf = device.buffer(n * dt.itemsize)
    # the interface NumPy sees is plain bytes: dtypes such as ml_dtypes' bfloat16 have no
    # array-interface type string of their own
    return buf.as_array(np.uint8, n * dt.itemsize).view(dt).reshape(shape)


def locate(a: np.ndarray) -> tuple[shim.Buffer, int] | None:
    """The shim buffer ``a``'s memory lies in and the byte offset of its first element, or
    None when ``a`` is not a view of a shim buffer (or is empty)."""
    if a.size == 0:
        return None
    o = a
    while True:
        base = o.base
        if base is None:
            return None
        owner = getattr(base, "owner", None)
        if isinstance(owner, shim.Buffer):
            break
        if not isinstance(base, np.ndarray):
            return None
        o = base
    off = a.ctypes.data - owner.address
    if not 0 <= off < owner.nbytes:
        return None
    return owner, off


def is_addressable(a: np.ndarray) -> bool:
    """Whether a kernel can read ``a`` in place: in a shim buffer, at an element-aligned
    offset with whole-element strides."""
    loc = locate(a)
    if loc is None:
        return False
    if loc[1] % a.itemsize:
        return False
    return all(st % a.itemsize == 0 for st in a.strides)


def to_shared(device: shim.Device, a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` in a new shared buffer, as a view of ``a``'s shape. Broadcast axes
    (stride 0) are stored once and broadcast again, so a scalar broadcast to a large shape
    costs one element."""
    a = np.asarray(a)
    if a.size == 0:
        return np.empty(a.shape, a.dtype)
    compact_idx = tuple(
        slice(0, 1) if (st == 0 and n > 1) else slice(None) for n, st in zip(a.shape, a.strides)
    )
    compact = a[compact_idx]
    shared = empty(device, compact.shape, a.dtype)
    shared[...] = compact
    if compact.shape == a.shape:
        return shared
    return np.broadcast_to(shared, a.shape)


class MetalArray:
    """What an array evaluated on the Apple GPU holds as its data: a NumPy array in shared
    memory plus the point in its command stream that finishes writing it.

    Dispatches only queue work. ``get()`` (what ``registry.to_host`` calls: ``item``,
    ``tolist``, printing, conversion to NumPy) waits for that work, then returns the NumPy
    array itself, without a copy. The NumPy-like attributes (shape, dtype, strides, ...) need
    no wait; ``tobytes`` and indexing wait.

    >>> m = MetalArray(np.arange(3.0))     # already computed (a CPU result, a constant)
    >>> m.get()
    array([0., 1., 2.])
    """

    __slots__ = ("array", "_queue", "_ticket")

    def __init__(self, array: np.ndarray, queue: Waitable | None = None, ticket: int = 0) -> None:
        self.array = array
        self._queue = queue
        self._ticket = ticket

    @property
    def pending(self) -> Waitable | None:
        """The queue whose work still writes this array, or None once it is known done."""
        return self._queue

    def wait(self) -> None:
        """Blocks until the GPU work that writes this array has finished (raises the
        stream's error if it failed)."""
        q = self._queue
        if q is not None:
            q.wait_for(self._ticket)
            self._queue = None

    def get(self) -> np.ndarray:
        self.wait()
        return self.array

    # NumPy-like metadata: no wait needed
    shape = property(lambda self: self.array.shape)
    dtype = property(lambda self: self.array.dtype)
    strides = property(lambda self: self.array.strides)
    itemsize = property(lambda self: self.array.itemsize)
    size = property(lambda self: self.array.size)
    ndim = property(lambda self: self.array.ndim)
    nbytes = property(lambda self: self.array.nbytes)
    flags = property(lambda self: self.array.flags)

    def __len__(self) -> int:
        return len(self.array)

    def tobytes(self) -> bytes:
        return self.get().tobytes()

    def __getitem__(self, key) -> Any:
        return self.get()[key]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        a = self.get()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __repr__(self) -> str:
        state = "pending" if self._queue is not None else "ready"
        return f"MetalArray(shape={self.shape}, dtype={self.dtype}, {state})"
