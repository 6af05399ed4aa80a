# Declarations shared with _eltwise.pyx (cimport): the buffer cache's C-level entry points.
cimport numpy as cnp

cdef class Buffer:
    cdef char *ptr
    cdef Py_ssize_t nbytes        # bytes asked for
    cdef Py_ssize_t cap           # bytes of the size class actually held
    cdef Py_ssize_t exports

cdef object empty_nd(int nd, cnp.npy_intp *dims, cnp.dtype descr)
