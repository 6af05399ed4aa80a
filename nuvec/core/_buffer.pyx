# cython: language_level=3, auto_pickle=False
"""The Python buffer protocol for ``Array`` (``memoryview(a)``, ``bytes(a)``, ``np.asarray``).

Python 3.11 has no ``__buffer__`` for classes written in Python, so ``Array`` derives from
``BufferExporter``, a C type with no state of its own whose ``bf_getbuffer`` slot exports the
array's host data: it evaluates the array, takes the buffer of the NumPy array behind it (the
memory itself on the CPU, strides and all, no copy; for a GPU array a read-only host copy, so
that a write through the view can never be silently lost), and
reports MLX's struct format for the dtype (``q``/``Q`` for 64-bit integers). While a view
exists it holds the array and the NumPy array, so neither the array nor its memory can go
away under it. The view is writable exactly where the memory is (a broadcast view is not).

bfloat16 has no struct format that NumPy reads, and NumPy asks for the buffer before
``__array__``: an exported buffer would make ``np.asarray`` of a bfloat16 array fail, so
bfloat16 exports none (a BufferError) and NumPy takes ml_dtypes' bfloat16 through
``__array__``. (MLX exports the format "bfloat16", which NumPy refuses.)
"""
from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.mem cimport PyMem_Free, PyMem_Malloc

import numpy as np

# The struct-module format of each dtype (MLX's choices); bytes objects that live as long as
# the module, so their pointers can be handed to consumers.
cdef dict _FORMATS = {
    "bool": b"?",
    "uint8": b"B",
    "uint16": b"H",
    "uint32": b"I",
    "uint64": b"Q",
    "int8": b"b",
    "int16": b"h",
    "int32": b"i",
    "int64": b"q",
    "float16": b"e",
    "float32": b"f",
    "float64": b"d",
    "complex64": b"Zf",
}


cdef class BufferExporter:
    """Base of ``Array``: the C-level buffer export (see the module docstring)."""

    def __getbuffer__(self, Py_buffer *view, int flags):
        cdef object me = self
        name = me._dtype.name
        if name == "bfloat16":
            raise BufferError(
                "memoryview: a bfloat16 array has no buffer format NumPy reads; use "
                "a.view(nuvec.uint16) for its bits or np.asarray(a) for ml_dtypes' bfloat16"
            )
        fmt = _FORMATS.get(name)
        if fmt is None:
            raise BufferError(f"memoryview: no buffer format for dtype {name}")
        host = me._host()
        # Device data reaches the host as a copy: writing to it would not reach the array.
        cdef bint copied = not isinstance(me._data, np.ndarray)
        if copied and flags & PyBUF_WRITABLE:
            raise BufferError(
                "buffer: the array lives on the GPU, so its buffer is a read-only host copy; "
                "a writable buffer needs an array in CPU memory"
            )
        cdef Py_buffer *inner = <Py_buffer *>PyMem_Malloc(sizeof(Py_buffer))
        if inner == NULL:
            raise MemoryError()
        try:
            PyObject_GetBuffer(host, inner, flags)
        except BaseException:
            PyMem_Free(inner)
            raise
        view.buf = inner.buf
        view.obj = self
        view.len = inner.len
        view.itemsize = inner.itemsize
        view.readonly = inner.readonly or copied
        view.ndim = inner.ndim
        view.format = <char *>fmt if inner.format != NULL else NULL
        view.shape = inner.shape
        view.strides = inner.strides
        view.suboffsets = inner.suboffsets
        view.internal = inner

    def __releasebuffer__(self, Py_buffer *view):
        cdef Py_buffer *inner = <Py_buffer *>view.internal
        if inner != NULL:
            PyBuffer_Release(inner)
            PyMem_Free(inner)
            view.internal = NULL
