# The Array's C fields, shared with the Cython modules that walk the graph (cimport): they
# read and write a node's fields as struct members instead of through attribute lookups.

cdef public class ArrayBase [object NvArrayObject, type NvArrayType]:
    cdef object _shape        # tuple of ints
    cdef object _dtype        # core.dtypes.Dtype
    cdef object _prim         # the Primitive that makes this array; None for data, placeholders
    cdef object _inputs       # tuple of arrays
    cdef object _siblings     # all outputs of a multi-output primitive, or None
    cdef object _pos          # this array's index among its siblings (int)
    cdef object _data         # the backend's data once evaluated, else None
    cdef object _stream       # core.device.Stream
    cdef object _tracer       # bool: depends on a transform's or compile's traced input
    cdef Py_ssize_t _readers  # how many unevaluated arrays take this one as an input
    cdef object __weakref__

cdef ArrayBase new_node(object shape, object dtype, object prim, tuple inputs, object stream,
                        bint reads=*)
