# cython: language_level=3
cimport cython

from ._tape cimport Tape


@cython.final
cdef class Entry:
    # one cached trace: the tape, how to rebuild the outputs, and what it was traced for
    cdef public Tape tape
    cdef public int out_kind
    cdef public object out_def
    cdef public Py_ssize_t n_out
    cdef public object sig          # the signature (for miss reasons and introspection)
    cdef public object info         # what the trace made (introspection)
    cdef public object post_def     # stateful: the state's structure after the call
    cdef public object pre_def      # stateful: the state's structure before the call
    cdef public object ready        # an Event while its fused kernels build, else None
    cdef public object conditions   # shapeless: the shape comparisons its trace took, or None
    cdef public Entry alternative   # shapeless: the entry of the same key traced before it

    cpdef wait_ready(self)
    cpdef object build(self, list outs)
