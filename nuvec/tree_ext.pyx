# cython: language_level=3, boundscheck=False, wraparound=False
"""The hot path of nuvec.tree: walking a tree into its arrays and its structure.

Same output as ``nuvec.tree._flat``, its Python form, which the tests compare it with. Also
the per-call checks of a compiled stateful step (``nuvec.compile.state``, ``.inplace``)."""
cimport numpy as cnp
from cpython.ref cimport PyObject

cnp.import_array()

cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(object o)

cdef object _ndarray = cnp.ndarray

cdef object _Array = None
cdef object _LEAF = None
cdef str _STATIC = "static"


def setup(array_type, leaf_marker):
    global _Array, _LEAF
    _Array = array_type
    _LEAF = leaf_marker


cpdef object flat(object obj, list out):
    return _walk(obj, out, None, None)


cdef inline void _listed(object c, list conts, set seen):
    """``c`` appended to ``conts`` unless already there (a walk that lists no containers:
    ``conts`` None)."""
    cdef object cid
    if conts is None:
        return
    cid = id(c)
    if cid not in seen:
        seen.add(cid)
        conts.append(c)


cdef tuple _children(object seq, list out, list conts, set seen):
    cdef Py_ssize_t n = len(seq), i
    cdef list tmp = [None] * n
    for i in range(n):
        tmp[i] = _walk(seq[i], out, conts, seen)
    return tuple(tmp)


cdef object _walk(object obj, list out, list conts, set seen):
    """``flat``'s structure of ``obj``, its arrays appended to ``out``; where ``conts`` is a
    list, each list and dict also listed there once (as ``containers`` does, in this walk's
    order)."""
    cdef object t = type(obj)
    cdef tuple keys
    cdef list vals
    cdef object k
    if t is _Array:
        out.append(obj)
        return _LEAF
    if t is list:
        _listed(obj, conts, seen)
        return (list, _children(obj, out, conts, seen))
    if t is tuple:
        return (tuple, _children(obj, out, conts, seen))
    if t is dict:
        _listed(obj, conts, seen)
        keys = tuple(obj)
        vals = []
        for k in keys:
            vals.append(_walk((<dict>obj)[k], out, conts, seen))
        return (dict, keys, tuple(vals))
    if obj is None or t is int or t is float or t is bool or t is str:
        return (_STATIC, t, obj)
    if isinstance(obj, _Array):
        out.append(obj)
        return _LEAF
    if isinstance(obj, dict):
        _listed(obj, conts, seen)
        keys = tuple(obj)
        vals = []
        for k in keys:
            vals.append(_walk(obj[k], out, conts, seen))
        return (t, keys, tuple(vals))
    if isinstance(obj, (tuple, list)):
        if isinstance(obj, list):
            _listed(obj, conts, seen)
        return (t, _children(obj, out, conts, seen))
    return (_STATIC, t, obj)


cpdef object flat_listed(object obj, list out, list conts):
    """``flat(obj, out)`` (the same structure and arrays), also appending to ``conts`` every
    list and dict of ``obj`` not already there, each once: one walk for a compiled stateful
    call's state, its arrays and its containers."""
    cdef set seen = {id(c) for c in conts}
    return _walk(obj, out, conts, seen)


cpdef list containers(tuple trees):
    """Every list and dict reachable in ``trees``, each once (depth first, the last item of a
    container first; tuples are walked through, not listed): a compiled stateful call
    (``nuvec.compile.state.containers``) walks its state this way on every call."""
    cdef list out = []
    cdef set seen = set()
    cdef list stack = list(trees)
    cdef object t, tid
    while stack:
        t = stack.pop()
        if isinstance(t, dict):
            tid = id(t)
            if tid not in seen:
                seen.add(tid)
                out.append(t)
                stack.extend((<dict>t).values())
        elif isinstance(t, list):
            tid = id(t)
            if tid not in seen:
                seen.add(tid)
                out.append(t)
                stack.extend(<list>t)
        elif isinstance(t, tuple):
            stack.extend(<tuple>t)
    return out


cpdef tuple modes_of(list conts):
    """The mode flags (training, frozen parameters) of the modules among ``conts``, as
    ``nuvec.compile.state._modes_of``."""
    cdef list out = []
    cdef object c, d
    for c in conts:
        if type(c) is dict or type(c) is list:
            continue  # plain containers have no instance dict
        d = getattr(c, "__dict__", None)
        if d and ("_training" in d or "_no_grad" in d):
            out.append((d.get("_training"), tuple(sorted(d.get("_no_grad", ())))))
    return tuple(out)


cdef object _Arr = None


def arrays_setup(array_type):
    """The array type ``arrays`` collects (set by the evaluation module, which may be
    imported before ``nuvec.tree`` calls ``setup``)."""
    global _Arr
    _Arr = array_type


cpdef void arrays(object obj, list out):
    """Only the arrays of ``obj``, in ``flat``'s order (depth first, dict values in key
    order), building no structure: what ``nv.eval`` walks (``arrays_setup`` first)."""
    cdef object t = type(obj)
    cdef object v
    if t is _Arr:
        out.append(obj)
    elif t is list or t is tuple:
        for v in obj:
            arrays(v, out)
    elif t is dict:
        for v in (<dict>obj).values():
            arrays(v, out)
    elif obj is None or t is int or t is float or t is bool or t is str:
        return
    elif isinstance(obj, _Arr):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            arrays(v, out)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            arrays(v, out)


cpdef list unevaluated(list arrays):
    """The arrays among ``arrays`` that have no data yet."""
    cdef list out = []
    cdef object a
    for a in arrays:
        if a._data is None:
            out.append(a)
    return out


cpdef bint state_key(list leaves, list out):
    """Appends each array's dtype name and shape to ``out`` (a stateful call's cache key);
    False (stopping there) at an array that a transform traces."""
    cdef object a
    for a in leaves:
        if a._tracer:
            return False
        out.append(a._dtype.name)
        out.append(a._shape)
    return True


cpdef list sole_held(list ins, object slots, object base):
    """The slots ``i`` among ``slots`` whose array ``ins[i]`` (a state leaf) and its buffer only
    the state holds: the array is referred to by the state's container and the stateful call's
    two lists of leaves (``s_leaves`` and ``ins``), its data (a C-contiguous, writeable, aligned
    NumPy array) only by the array, and the data owns its memory or holds a ``base`` (the
    backend's buffer-cache buffer) that nothing else holds (``compile.inplace``)."""
    cdef list out = []
    cdef Py_ssize_t i
    cdef object a, d, b
    cdef PyObject *bp
    for i in slots:
        a = ins[i]
        # a: container + s_leaves + ins + this local
        if Py_REFCNT(a) != 4:
            continue
        d = a._data
        # d: a._data + this local
        if type(d) is not _ndarray or Py_REFCNT(d) != 2:
            continue
        if not (cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>d)
                and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>d)
                and cnp.PyArray_ISALIGNED(<cnp.ndarray>d)):
            continue
        bp = cnp.PyArray_BASE(<cnp.ndarray>d)
        if bp == NULL:
            out.append(i)
            continue
        b = <object>bp
        # b: d.base + this local
        if type(b) is base and Py_REFCNT(b) == 2:
            out.append(i)
    return out


cpdef bint holds_object(list items, object target):
    """Whether ``target`` itself (identity, not equality) is among ``items``."""
    cdef object x
    for x in items:
        if x is target:
            return True
    return False


cpdef bint same_objects(list a, list b):
    """Whether ``a`` and ``b`` hold the same objects in the same order (identity)."""
    cdef Py_ssize_t i, n = len(a)
    if len(b) != n:
        return False
    for i in range(n):
        if a[i] is not b[i]:
            return False
    return True


cpdef store(list slots, list values):
    """``c[k] = v`` for each ``(c, k)`` of ``slots`` and ``v`` of ``values``; on any error puts
    the old values back (past any ``__setitem__`` of a subclass) and re-raises."""
    cdef Py_ssize_t i, n = len(slots)
    cdef list old = [None] * n
    cdef tuple ck
    for i in range(n):
        ck = slots[i]
        old[i] = ck[0][ck[1]]
    try:
        for i in range(n):
            ck = slots[i]
            ck[0][ck[1]] = values[i]
    except BaseException:
        for i in range(n):
            ck = slots[i]
            c = ck[0]
            (dict.__setitem__ if isinstance(c, dict) else list.__setitem__)(c, ck[1], old[i])
        raise
