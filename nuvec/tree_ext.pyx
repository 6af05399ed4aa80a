# cython: language_level=3, boundscheck=False, wraparound=False
"""The hot path of nuvec.tree: walking a tree into its arrays and its structure.

Same output as ``nuvec.tree._flat`` (which stays as the fallback when this is not built)."""

cdef object _Array = None
cdef object _LEAF = None
cdef str _STATIC = "static"


def setup(array_type, leaf_marker):
    global _Array, _LEAF
    _Array = array_type
    _LEAF = leaf_marker


cdef tuple _children(object seq, list out):
    cdef Py_ssize_t n = len(seq), i
    cdef list tmp = [None] * n
    for i in range(n):
        tmp[i] = flat(seq[i], out)
    return tuple(tmp)



cpdef object flat(object obj, list out):
    cdef object t = type(obj)
    cdef tuple keys
    cdef list vals
    cdef object k
    if t is _Array:
        out.append(obj)
        return _LEAF
    if t is list:
        return (list, _children(obj, out))
    if t is tuple:
        return (tuple, _children(obj, out))
    if t is dict:
        keys = tuple(obj)
        vals = []
        for k in keys:
            vals.append(flat((<dict>obj)[k], out))
        return (dict, keys, tuple(vals))
    if obj is None or t is int or t is float or t is bool or t is str:
        return (_STATIC, t, obj)
    if isinstance(obj, _Array):
        out.append(obj)
        return _LEAF
    if isinstance(obj, dict):
        keys = tuple(obj)
        vals = []
        for k in keys:
            vals.append(flat(obj[k], out))
        return (t, keys, tuple(vals))
    if isinstance(obj, (tuple, list)):
        return (t, _children(obj, out))
    return (_STATIC, t, obj)
