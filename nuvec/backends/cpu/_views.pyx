# cython: language_level=3
"""Views made in C: ``np.broadcast_to`` builds an iterator in Python (about 15 us a call),
and a compiled transformer step broadcasts a few dozen times.

    from nuvec.backends.cpu._views import broadcast_view
    broadcast_view(np.ones((3, 1)), (2, 3, 4)).strides    # (0, 8, 0)
"""
cimport numpy as cnp

import numpy as np

cnp.import_array()

cdef extern from "numpy/arrayobject.h":
    object PyArray_NewFromDescr(cnp.PyTypeObject *subtype, cnp.dtype descr, int nd,
                                cnp.npy_intp *dims, cnp.npy_intp *strides, void *data,
                                int flags, object obj)
    int PyArray_SetBaseObject(cnp.ndarray arr, object obj) except -1


def broadcast_view(x, shape) -> np.ndarray:
    """``np.broadcast_to(x, shape)``: a read-only view of the NumPy array ``x`` with stride 0
    along the axes it is broadcast on (ValueError if it does not broadcast)."""
    cdef cnp.ndarray a = x if isinstance(x, np.ndarray) else np.asarray(x)
    cdef int nd = len(shape), xd = a.ndim, k = nd - xd, d
    cdef cnp.npy_intp dims[64]
    cdef cnp.npy_intp strides[64]
    if nd > 64 or k < 0:
        raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {tuple(shape)}")
    for d in range(nd):
        dims[d] = shape[d]
        if d < k:
            strides[d] = 0
        elif a.shape[d - k] == dims[d]:
            strides[d] = a.strides[d - k] if dims[d] != 1 else 0
        elif a.shape[d - k] == 1:
            strides[d] = 0
        else:
            raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to "
                             f"{tuple(shape)}")
    cdef cnp.dtype descr = a.dtype
    cnp.Py_INCREF(descr)          # PyArray_NewFromDescr steals a reference to descr
    view = PyArray_NewFromDescr(<cnp.PyTypeObject *>np.ndarray, descr, nd, dims, strides,
                                cnp.PyArray_DATA(a), 0, None)       # flags 0: read-only
    cnp.Py_INCREF(a)              # PyArray_SetBaseObject steals a reference to a
    PyArray_SetBaseObject(<cnp.ndarray>view, a)
    return view
