# cython: language_level=3
"""The CPU buffer cache: aligned buffers recycled by size class (MLX's memory API on top).

A loop over large arrays should not pay the kernel's page faults for a fresh output every
call, so freed buffers are kept, by size class, and handed out again. ``empty(shape, dtype)``
returns a C-contiguous NumPy array viewing a ``Buffer``; when the last NumPy view of it dies,
the memory goes back to the cache (not to the system) until the cache exceeds its limit, and
then the least recently freed buffers are released. Only memory made here is ever recycled:
arrays wrapping memory a user owns never enter the cache.

    >>> from nuvec.backends.cpu import _allocator as A
    >>> a = A.empty((1024,), "float32"); p = a.ctypes.data; del a
    >>> A.empty((1024,), "float32").ctypes.data == p       # the same memory comes back
    True

Buffers of 2 MiB and more are aligned to 2 MiB and marked for transparent huge pages (fewer
faults on first touch); smaller ones to 64 bytes (a cache line, enough for any vector load).
All state is guarded by the GIL.
"""
cimport cython
cimport numpy as cnp
from cpython.buffer cimport PyBUF_WRITABLE
from libc.stdint cimport uintptr_t
from libc.stdlib cimport free, realloc
from libc.string cimport memmove

import os

import numpy as np

cnp.import_array()

cdef extern from "<stdlib.h>":
    int posix_memalign(void **memptr, size_t alignment, size_t size) nogil

cdef extern from "<sys/mman.h>":
    int madvise(void *addr, size_t length, int advice) nogil
    int MADV_HUGEPAGE

cdef extern from "numpy/arrayobject.h":
    object PyArray_NewFromDescr(cnp.PyTypeObject *subtype, cnp.dtype descr, int nd,
                                cnp.npy_intp *dims, cnp.npy_intp *strides, void *data,
                                int flags, object obj)
    int PyArray_SetBaseObject(cnp.ndarray arr, object obj) except -1

cdef Py_ssize_t HUGE = 2 * 1024 * 1024

# statistics and limits (bytes)
cdef Py_ssize_t _active = 0          # held by live Buffers (size classes)
cdef Py_ssize_t _peak = 0
cdef Py_ssize_t _cached = 0          # held by the cache
cdef Py_ssize_t _memory_limit
cdef Py_ssize_t _cache_limit
cdef Py_ssize_t _hits = 0, _misses = 0

# The cache: for each size class a stack of free blocks (most recently freed on top), each
# block stamped with a global counter when it was freed; eviction (only when the cache is
# over its limit) frees the block with the smallest stamp among the stacks' bottoms.
cdef struct Block:
    char *ptr
    unsigned long long stamp

cdef class _Stack:
    cdef Block *items
    cdef Py_ssize_t n, cap_items, lo        # live entries are items[lo:n]

    def __dealloc__(self):
        free(self.items)

    cdef int push(self, char *ptr, unsigned long long stamp) except -1:
        cdef Block *grown
        if self.n == self.cap_items:
            if self.lo > 0:                  # compact first
                memmove(self.items, self.items + self.lo, (self.n - self.lo) * sizeof(Block))
                self.n -= self.lo
                self.lo = 0
            else:
                grown = <Block *>realloc(self.items, (2 * self.cap_items + 8) * sizeof(Block))
                if grown == NULL:
                    raise MemoryError()
                self.items = grown
                self.cap_items = 2 * self.cap_items + 8
        self.items[self.n].ptr = ptr
        self.items[self.n].stamp = stamp
        self.n += 1
        return 0


cdef dict _free = {}                 # size class -> _Stack
cdef list _small = [None] * 64        # classes 64..4096 bytes (index cap // 64 - 1)
cdef unsigned long long _clock = 0


cdef inline _Stack _stack_for(Py_ssize_t cap, bint create):
    cdef _Stack st
    if cap <= 4096:
        st = <_Stack>_small[cap // 64 - 1]
        if st is None and create:
            st = _Stack()
            _small[cap // 64 - 1] = st
            _free[cap] = st
        return st
    st = _free.get(cap)
    if st is None and create:
        st = _Stack()
        _free[cap] = st
    return st


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


_memory_limit = <Py_ssize_t>_physical_memory()
_cache_limit = _memory_limit // 4


cdef inline Py_ssize_t size_class(Py_ssize_t n):
    """Round a request up: 64-byte steps up to 4 KiB, then 8 classes per power of two."""
    cdef Py_ssize_t step
    if n <= 64:
        return 64
    if n <= 4096:
        return (n + 63) & ~63
    step = 4096
    while step * 16 <= n:
        step *= 2
    return (n + step - 1) // step * step


cdef void _release_memory(Py_ssize_t nbytes) noexcept:
    """Free cached blocks, least recently freed first, until at least nbytes are gone."""
    global _cached
    cdef _Stack st, best
    cdef Py_ssize_t best_cap = 0
    cdef unsigned long long best_stamp = 0
    while _cached > 0 and nbytes > 0:
        best = None
        for cap, st in _free.items():
            if st.n > st.lo and (best is None or st.items[st.lo].stamp < best_stamp):
                best, best_cap, best_stamp = st, cap, st.items[st.lo].stamp
        if best is None:
            break
        free(best.items[best.lo].ptr)
        best.lo += 1
        if best.lo == best.n:
            best.lo = best.n = 0
        _cached -= best_cap
        nbytes -= best_cap


cdef char *_take(Py_ssize_t cap) except NULL:
    """Memory of size class cap: from the cache if possible, else freshly allocated."""
    global _active, _peak, _cached, _hits, _misses
    cdef _Stack st = _stack_for(cap, False)
    cdef void *mem = NULL
    if st is not None and st.n > st.lo:
        st.n -= 1
        mem = st.items[st.n].ptr
        if st.n == st.lo:
            st.lo = st.n = 0
        _cached -= cap
        _hits += 1
    else:
        _misses += 1
        if _active + _cached + cap > _memory_limit:
            _release_memory(_cached)       # over the limit: give the cache back first
        if posix_memalign(&mem, HUGE if cap >= HUGE else 64, cap) != 0:
            _release_memory(_cached)
            if posix_memalign(&mem, HUGE if cap >= HUGE else 64, cap) != 0:
                raise MemoryError(f"nuvec: cannot allocate {cap} bytes")
        if cap >= HUGE:
            madvise(mem, cap, MADV_HUGEPAGE)
    _active += cap
    if _active > _peak:
        _peak = _active
    return <char *>mem


cdef void _give_back(char *ptr, Py_ssize_t cap) noexcept:
    global _active, _cached, _clock
    cdef _Stack st
    _active -= cap
    if _free is None or _small is None or cap > _cache_limit:   # None: shutdown
        free(ptr)
        return
    if _cached + cap > _cache_limit:
        _release_memory(_cached + cap - _cache_limit)
    try:
        st = _stack_for(cap, True)
        st.push(ptr, _clock)
    except MemoryError:
        free(ptr)
        return
    _clock += 1
    _cached += cap


@cython.freelist(256)
cdef class Buffer:
    """Aligned memory from the cache, exposing the buffer protocol (bytes, writable).

    Do not construct directly; use ``empty``. The memory returns to the cache when this
    object (and so every NumPy array viewing it) is gone.
    """

    def __cinit__(self):
        self.ptr = NULL
        self.nbytes = 0
        self.cap = 0
        self.exports = 0

    def __dealloc__(self):
        if self.ptr != NULL:
            _give_back(self.ptr, self.cap)
            self.ptr = NULL

    def __getbuffer__(self, Py_buffer *view, int flags):
        view.buf = self.ptr
        view.obj = self
        view.len = self.nbytes
        view.readonly = 0
        view.itemsize = 1
        view.format = "B"
        view.ndim = 1
        view.shape = &self.nbytes
        view.strides = &view.itemsize
        view.suboffsets = NULL
        view.internal = NULL
        self.exports += 1

    def __releasebuffer__(self, Py_buffer *view):
        self.exports -= 1

    @property
    def address(self) -> int:
        return <uintptr_t>self.ptr

    @property
    def size(self) -> int:
        return self.nbytes

    @property
    def capacity(self) -> int:
        return self.cap


cdef Buffer _new_buffer(Py_ssize_t nbytes):
    cdef Buffer b = Buffer.__new__(Buffer)
    cdef Py_ssize_t cap = size_class(nbytes)
    b.ptr = _take(cap)
    b.cap = cap
    b.nbytes = nbytes
    return b


cdef object empty_nd(int nd, cnp.npy_intp *dims, cnp.dtype descr):
    """C-contiguous ndarray of dims and descr, viewing a new Buffer (used by _eltwise)."""
    cdef Py_ssize_t n = descr.itemsize
    cdef int i
    for i in range(nd):
        n *= dims[i]
    cdef Buffer b = _new_buffer(n)
    cnp.Py_INCREF(descr)          # PyArray_NewFromDescr steals a reference to descr
    arr = PyArray_NewFromDescr(<cnp.PyTypeObject *>np.ndarray, descr, nd, dims, NULL,
                               b.ptr, cnp.NPY_ARRAY_CARRAY, None)
    cnp.Py_INCREF(b)              # PyArray_SetBaseObject steals a reference to b
    PyArray_SetBaseObject(<cnp.ndarray>arr, b)
    return arr


def empty(shape, dtype) -> np.ndarray:
    """A C-contiguous uninitialised array whose memory comes from the buffer cache.

    >>> empty((2, 3), "int8").shape
    (2, 3)
    """
    cdef cnp.dtype descr = np.dtype(dtype)
    if isinstance(shape, int):
        shape = (shape,)
    cdef int nd = len(shape)
    if nd > 64:
        raise ValueError(f"empty: {nd} dimensions, at most 64")
    cdef cnp.npy_intp dims[64]
    cdef int i
    for i in range(nd):
        dims[i] = shape[i]
        if dims[i] < 0:
            raise ValueError(f"empty: negative dimension in shape {tuple(shape)}")
    return empty_nd(nd, dims, descr)


def is_cached_array(a) -> bool:
    """True when a's memory belongs to this allocator (it came from ``empty``)."""
    base = a
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, Buffer)


# ---- MLX's memory API (re-exported as nv.*) ----------------------------------------------

def get_active_memory() -> int:
    """Bytes held by live arrays made by this allocator (rounded to size classes)."""
    return _active


def get_peak_memory() -> int:
    """The highest active memory since the start or the last ``reset_peak_memory``."""
    return _peak


def reset_peak_memory() -> None:
    """Reset the peak to 0, as MLX does: the next allocation sets it to the active memory
    then, so a later peak reads the most held at once from here on."""
    global _peak
    _peak = 0


def get_cache_memory() -> int:
    """Bytes of freed buffers kept for reuse."""
    return _cached


def set_memory_limit(limit: int) -> int:
    """Set the memory limit in bytes and return the previous one.

    When an allocation would take active plus cached memory over the limit, the cache is
    released first; the allocation then proceeds (a guideline, as in MLX).
    """
    global _memory_limit
    if limit < 0:
        raise ValueError(f"set_memory_limit: the limit must be >= 0, got {limit}")
    prev = _memory_limit
    _memory_limit = limit
    return prev


def get_memory_limit() -> int:
    """The current memory limit in bytes."""
    return _memory_limit


def set_cache_limit(limit: int) -> int:
    """Set the cache limit in bytes (0 disables caching) and return the previous one."""
    global _cache_limit
    if limit < 0:
        raise ValueError(f"set_cache_limit: the limit must be >= 0, got {limit}")
    prev = _cache_limit
    _cache_limit = limit
    if _cached > _cache_limit:
        _release_memory(_cached - _cache_limit)
    return prev


def clear_cache() -> None:
    """Release every cached buffer to the system."""
    _release_memory(_cached)


def cache_stats() -> dict:
    """Counters for tests and diagnostics: hits, misses, cached buffers per size class."""
    return {"hits": _hits, "misses": _misses, "active": _active, "cached": _cached,
            "peak": _peak, "memory_limit": _memory_limit, "cache_limit": _cache_limit,
            "classes": {k: (<_Stack>v).n - (<_Stack>v).lo for k, v in _free.items()
                        if (<_Stack>v).n > (<_Stack>v).lo}}


def size_class_of(nbytes: int) -> int:
    """The size class a request of nbytes is rounded up to."""
    return size_class(nbytes)
