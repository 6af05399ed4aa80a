# cython: language_level=3, auto_pickle=False
"""The Array's C base: its fields, its one constructor path, the arithmetic operators' eager
fast path, and the Python buffer protocol.

``ArrayBase`` holds a node's fields as C struct members (``_array.pxd``), so the Cython graph
walks (``_graph.pyx``) read and write them directly; Python code reaches them through member
descriptors, as it reached the slots of a Python class. ``Array`` (``array.py``) derives from
it and adds the methods. Every node is made by ``new_node`` (``make``, ``make_multi``,
``constant``, ``placeholder``).

``a + b``, ``a - b``, ``a * b`` and ``a / b`` on two arrays of one dtype (broadcast to their
common shape by Broadcast nodes made here, ``binary_node``, which ``ops._binary`` calls for every
binary op), or an array of a floating dtype with a Python float or int whose broadcast constant is cached (weak
typing gives it the array's dtype, see ``ops._common.scalar_operand``), make their node here
without entering Python; everything else (tracers, promotion, broadcasting, other types,
errors) goes through the public ops as before.

Buffer protocol (``memoryview(a)``, ``bytes(a)``, ``np.asarray``): Python 3.11 has no
``__buffer__`` for classes written in Python, so the C base's ``bf_getbuffer`` slot exports
the array's host data: it evaluates the array, takes the buffer of the NumPy array behind it
(the memory itself on the CPU, strides and all, no copy; for a GPU array a read-only host
copy, so that a write through the view can never be silently lost), and reports MLX's struct
format for the dtype (``q``/``Q`` for 64-bit integers). While a view exists it holds the array
and the NumPy array, so neither can go away under it. The view is writable exactly where the
memory is (a broadcast view is not). bfloat16 has no struct format that NumPy reads, and
NumPy asks for the buffer before ``__array__``: an exported buffer would make ``np.asarray``
of a bfloat16 array fail, so bfloat16 exports none (a BufferError) and NumPy takes ml_dtypes'
bfloat16 through ``__array__``. (MLX exports the format "bfloat16", which NumPy refuses.)
"""
cimport cython
from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.mem cimport PyMem_Free, PyMem_Malloc

import numpy as np

cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        const char *name
        int type
        Py_ssize_t offset
        int flags
        const char *doc
    ctypedef struct _TypeObject "PyTypeObject":
        void *tp_dict
    object PyDescr_NewMember(_TypeObject *tp, PyMemberDef *m)
    void PyType_Modified(_TypeObject *tp)

cdef extern from *:
    """
    static PyObject *nv_alloc(PyObject *t, PyObject *noargs) {
        return ((PyTypeObject *)t)->tp_new((PyTypeObject *)t, noargs, NULL);
    }
    """
    # a new instance of type ``t`` (a subtype of ArrayBase) through its tp_new, no call
    object nv_alloc(object t, object noargs)

cdef extern from "structmember.h":
    enum:
        T_OBJECT_EX
        T_PYSSIZET


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

# set by ``setup`` (array.py and nuvec.ops, which this module cannot import)
cdef type _Array = None            # the user type, core.array.Array
cdef object _state = None          # core.device._state (this thread's stream)
cdef list _cached_default = None   # core.device._cached_default
cdef object _current_stream = None
cdef object _from_numpy = None     # core.dtypes.from_numpy
cdef object _shapeless = None      # core.shapeless
cdef object _ops = None            # nuvec.ops
cdef object _binary = None         # ops.elementwise._binary
cdef object _operand = None        # array._operand
cdef dict _scalar_views = None     # ops._common._SCALAR_VIEWS
cdef tuple _prims = None           # the Binary primitives of add, subtract, multiply, divide
cdef object _Broadcast = None      # primitives.shape.Broadcast
cdef object _broadcast_shape = None  # primitives.shape.broadcast_shape

cdef enum:
    ADD, SUB, MUL, DIV

cdef tuple _NAMES = ("add", "subtract", "multiply", "divide")
cdef tuple _RESULTS = ("promote", "promote", "promote", "float")
cdef object _ZERO = 0


def setup_core(array_type, state, cached_default, current_stream, from_numpy, shapeless):
    """The core's objects this module uses (array.py, at import)."""
    global _Array, _state, _cached_default, _current_stream, _from_numpy, _shapeless
    _Array = array_type
    _state = state
    _cached_default = cached_default
    _current_stream = current_stream
    _from_numpy = from_numpy
    _shapeless = shapeless


def setup_ops(ops, binary, operand, scalar_views, prims):
    """The ops layer's objects the operators call (nuvec.ops, at import). ``prims``: the
    Binary primitives of add, subtract, multiply and divide (none fixes a shape)."""
    global _ops, _binary, _operand, _scalar_views, _prims
    for p in prims:
        if p.fixes_shape:
            raise ValueError(f"setup_ops: primitive {p!r} fixes a shape")
    _ops, _binary, _operand, _scalar_views, _prims = ops, binary, operand, scalar_views, prims


def setup_broadcast(broadcast, broadcast_shape):
    """The Broadcast primitive class and the shape rule (``primitives.shape``) that
    ``binary_node`` and the operators use to broadcast two operands (nuvec.ops, at import)."""
    global _Broadcast, _broadcast_shape
    _Broadcast, _broadcast_shape = broadcast, broadcast_shape


# How two operand shapes broadcast, by the pair of shapes: (shape, the Broadcast primitive
# of the left operand or None where it has that shape already, the right one's). Primitives
# are immutable, so one Broadcast serves every node of its target shape.
cdef dict _plans = {}


cdef tuple _plan(object sx, object sy):
    """The broadcast plan of shapes ``sx`` and ``sy``, or None where they do not broadcast
    (the ops raise the error that names the operation)."""
    key = (sx, sy)
    p = _plans.get(key)
    if p is not None:
        return <tuple>p
    if _Broadcast is None:
        return None
    try:
        shape = _broadcast_shape((sx, sy), "broadcast")
    except ValueError:
        return None
    p = (shape, None if sx == shape else _Broadcast(shape),
         None if sy == shape else _Broadcast(shape))
    if len(_plans) >= 4096:
        _plans.clear()
    _plans[key] = p
    return <tuple>p


cdef ArrayBase _broadcast_pair(object prim, ArrayBase x, ArrayBase y, object dtype,
                               object stream):
    """The node of binary ``prim`` (result ``dtype``) over ``x`` and ``y`` (one dtype),
    each broadcast to their common shape first by a Broadcast node where its shape differs;
    None where the shapes do not broadcast."""
    cdef tuple p = _plan(x._shape, y._shape)
    if p is None:
        return None
    shape = p[0]
    if p[1] is not None:
        x = new_node(shape, x._dtype, p[1], (x,), stream)
    if p[2] is not None:
        y = new_node(shape, y._dtype, p[2], (y,), stream)
    return new_node(shape, dtype, prim, (x, y), stream)


def binary_node(prim, x, y, dtype, stream):
    """The node of the Binary primitive ``prim`` (which fixes no shape) with result dtype
    ``dtype`` over arrays ``x`` and ``y`` of one dtype, broadcast to their common shape
    (Broadcast nodes, as ``broadcast_arrays`` makes them outside a shapeless trace); None
    where the shapes do not broadcast."""
    cdef ArrayBase a = <ArrayBase?>x
    cdef ArrayBase b = <ArrayBase?>y
    if a._shape is b._shape or a._shape == b._shape:
        return new_node(a._shape, dtype, prim, (a, b), stream)
    return _broadcast_pair(prim, a, b, dtype, stream)


cdef inline object _stream_now():
    """core.device.current_stream(), inline."""
    s = _state.stream
    if s is not None:
        return s
    s = _cached_default[0]
    if s is not None:
        return s
    return _current_stream()


cdef ArrayBase new_node(object shape, object dtype, object prim, tuple inputs, object stream,
                        bint reads=True):
    """A node of ``prim`` over ``inputs`` (counted as their reader unless ``reads`` is false:
    siblings count as one reader); a tracer where one of them is. The one place nodes are
    made (``make``, ``make_multi``, ``constant``, ...)."""
    cdef ArrayBase a = <ArrayBase>nv_alloc(_Array, ())
    cdef ArrayBase x
    cdef bint tracer = False
    a._shape = shape
    a._dtype = dtype
    a._prim = prim
    a._inputs = inputs
    a._pos = _ZERO
    a._stream = stream
    for o in inputs:
        x = <ArrayBase?>o
        if reads:
            x._readers += 1
        if x._tracer:
            tracer = True
    a._tracer = tracer
    return a


def make(prim, inputs, stream=None):
    """The single output of ``prim`` applied to ``inputs`` (``Array.make``)."""
    ((shape, dtype),) = prim.infer(inputs)
    cdef ArrayBase a = new_node(
        shape, dtype, prim, inputs if type(inputs) is tuple else tuple(inputs),
        stream if stream is not None else _stream_now())
    if prim.fixes_shape and _shapeless.running:
        _shapeless.note(a)
    return a


def make_multi(prim, inputs, stream=None):
    """The outputs of a multi-output ``prim`` (siblings, evaluated together)."""
    specs = prim.infer(inputs)
    stream = stream if stream is not None else _stream_now()
    cdef tuple ins = inputs if type(inputs) is tuple else tuple(inputs)
    cdef list outs = []
    cdef ArrayBase a
    cdef Py_ssize_t i = 0
    cdef bint note = prim.fixes_shape and _shapeless.running
    for shape, dtype in specs:
        a = new_node(shape, dtype, prim, ins, stream, i == 0)
        a._pos = i
        outs.append(a)
        i += 1
    sib = tuple(outs)
    for a in outs:
        a._siblings = sib
        if note:
            _shapeless.note(a)
    return outs


def constant(data, stream=None, dtype=None):
    """An evaluated array over backend data (``Array.constant``)."""
    cdef ArrayBase a = new_node(
        tuple(data.shape), dtype if dtype is not None else _from_numpy(data.dtype), None, (),
        stream if stream is not None else _stream_now())
    a._data = data
    return a


def placeholder(shape, dtype, stream=None, tracer=True):
    """A data-less input for tracing (``Array.placeholder``)."""
    cdef ArrayBase a = new_node(
        tuple(shape), dtype, None, (), stream if stream is not None else _stream_now())
    a._tracer = True if tracer else False
    return a


# A direct-mapped cache in front of ``_scalar_views``, by identity: the same float or int
# object (a literal in the caller's code is one object), dtype, shape tuple and stream give
# the same constant, found with no key built. Each slot holds what it compares, so no
# identity can be reused while it is there.
cdef enum:
    _NSLOTS = 256
cdef list _slots = [None] * _NSLOTS


cdef inline ArrayBase _scalar(object v, ArrayBase like):
    """The cached broadcast constant of Python float or int ``v`` next to ``like``, a floating
    array (weak typing: the constant has ``like``'s dtype), or None (the ops decide)."""
    d = like._dtype
    shape = like._shape
    stream = like._stream
    cdef size_t h = (<size_t><void *>v >> 4) ^ (<size_t><void *>d >> 3) ^ \
        (<size_t><void *>shape >> 5) ^ (<size_t><void *>stream >> 6)
    h = (h ^ (h >> 8)) & (_NSLOTS - 1)
    cdef object e = _slots[h]
    cdef tuple t
    if e is not None:
        t = <tuple>e
        if t[0] is v and t[1] is d and t[2] is shape and t[3] is stream:
            return <ArrayBase>t[4]
    if d.kind not in "fc":
        return None
    # the key of ops._common.scalar_operand
    key = (v if v or type(v) is not float else repr(v), d.name, shape, id(stream))
    c = _scalar_views.get(key)
    if c is None:
        return None
    _slots[h] = (v, d, shape, stream, c)
    return <ArrayBase>c


cdef object _fast(int k, object left, object right):
    """``left <op k> right`` made here where no promotion, broadcast or trace is involved,
    else None."""
    cdef ArrayBase x, y, c
    tl, tr = type(left), type(right)
    if tl is _Array:
        x = <ArrayBase>left
        if x._tracer:
            return None
        if tr is _Array:
            y = <ArrayBase>right
            if y._tracer or x._dtype is not y._dtype:
                return None
            if k == DIV and x._dtype.kind not in "fc":
                return None
            if x._shape is not y._shape and x._shape != y._shape:
                return _broadcast_pair(_prims[k], x, y, x._dtype, _stream_now())
            return new_node(x._shape, x._dtype, _prims[k], (x, y), _stream_now())
        if tr is float or tr is int:
            c = _scalar(right, x)
            if c is None:
                return None
            return new_node(x._shape, x._dtype, _prims[k], (x, c), _stream_now())
        return None
    if tr is _Array and (tl is float or tl is int):
        y = <ArrayBase>right
        if y._tracer:
            return None
        c = _scalar(left, y)
        if c is None:
            return None
        return new_node(y._shape, y._dtype, _prims[k], (c, y), _stream_now())
    return None


cdef object _slow(int k, object self, object o, bint reflected):
    """The operator through the ops (``self`` is the array whose method was called)."""
    name = _NAMES[k]
    t = type(o)
    if t is float or t is int or (t is _Array and not reflected):
        if reflected:
            return _binary(name, o, self, None, result=_RESULTS[k])
        return _binary(name, self, o, None, result=_RESULTS[k])
    o = _operand(o, name)
    f = getattr(_ops, name)
    return f(o, self) if reflected else f(self, o)


@cython.trashcan(True)
cdef public class ArrayBase [object NvArrayObject, type NvArrayType]:
    """Base of ``Array``: its C fields, the arithmetic operators and the buffer export (see
    the module docstring)."""

    def __add__(self, o):
        r = _fast(ADD, self, o)
        return r if r is not None else _slow(ADD, self, o, False)

    def __radd__(self, o):
        r = _fast(ADD, o, self)
        return r if r is not None else _slow(ADD, self, o, True)

    def __sub__(self, o):
        r = _fast(SUB, self, o)
        return r if r is not None else _slow(SUB, self, o, False)

    def __rsub__(self, o):
        r = _fast(SUB, o, self)
        return r if r is not None else _slow(SUB, self, o, True)

    def __mul__(self, o):
        r = _fast(MUL, self, o)
        return r if r is not None else _slow(MUL, self, o, False)

    def __rmul__(self, o):
        r = _fast(MUL, o, self)
        return r if r is not None else _slow(MUL, self, o, True)

    def __truediv__(self, o):
        r = _fast(DIV, self, o)
        return r if r is not None else _slow(DIV, self, o, False)

    def __rtruediv__(self, o):
        r = _fast(DIV, o, self)
        return r if r is not None else _slow(DIV, self, o, True)

    def __getbuffer__(self, Py_buffer *view, int flags):
        cdef object me = self
        name = self._dtype.name
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
        cdef bint copied = not isinstance(self._data, np.ndarray)
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


#: The fields, in the order ``Array._adopt`` copies them.
FIELDS = ("_shape", "_dtype", "_prim", "_inputs", "_siblings", "_pos", "_data", "_stream",
          "_tracer", "_readers")

# Python reaches the fields through member descriptors (what a Python class's slots are, and
# what Python 3.11 specialises attribute access on), not through Cython's property getters.
cdef PyMemberDef _MEMBERS[10]

cdef extern from *:
    """
    #include <stddef.h>
    #define OFF_shape offsetof(struct NvArrayObject, _shape)
    #define OFF_dtype offsetof(struct NvArrayObject, _dtype)
    #define OFF_prim offsetof(struct NvArrayObject, _prim)
    #define OFF_inputs offsetof(struct NvArrayObject, _inputs)
    #define OFF_siblings offsetof(struct NvArrayObject, _siblings)
    #define OFF_pos offsetof(struct NvArrayObject, _pos)
    #define OFF_data offsetof(struct NvArrayObject, _data)
    #define OFF_stream offsetof(struct NvArrayObject, _stream)
    #define OFF_tracer offsetof(struct NvArrayObject, _tracer)
    #define OFF_readers offsetof(struct NvArrayObject, _readers)
    """
    Py_ssize_t OFF_shape, OFF_dtype, OFF_prim, OFF_inputs, OFF_siblings, OFF_pos, OFF_data
    Py_ssize_t OFF_stream, OFF_tracer, OFF_readers


cdef void _install_members() except *:
    cdef Py_ssize_t[10] offsets
    offsets[0] = OFF_shape
    offsets[1] = OFF_dtype
    offsets[2] = OFF_prim
    offsets[3] = OFF_inputs
    offsets[4] = OFF_siblings
    offsets[5] = OFF_pos
    offsets[6] = OFF_data
    offsets[7] = OFF_stream
    offsets[8] = OFF_tracer
    offsets[9] = OFF_readers
    cdef list keep = []
    cdef int i
    cdef dict tdict = <dict>(<_TypeObject *>ArrayBase).tp_dict
    for i in range(10):
        name = FIELDS[i].encode()
        keep.append(name)
        _MEMBERS[i].name = <const char *>name
        _MEMBERS[i].type = T_PYSSIZET if i == 9 else T_OBJECT_EX
        _MEMBERS[i].offset = offsets[i]
        _MEMBERS[i].flags = 0
        _MEMBERS[i].doc = NULL
        tdict[FIELDS[i]] = PyDescr_NewMember(<_TypeObject *>ArrayBase, &_MEMBERS[i])
    _NAME_KEEP.extend(keep)
    PyType_Modified(<_TypeObject *>ArrayBase)


cdef list _NAME_KEEP = []   # the member names' bytes, alive as long as the descriptors
_install_members()
