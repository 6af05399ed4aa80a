# cython: language_level=3
"""The per-call bookkeeping of a recorded CUDA executable (``executable.Executable``), in
Cython: every call walks each buffer the graph writes (may it be overwritten? which arrays
lent over it are still held?) and each input and output, so that walk runs here rather than
as Python bytecode.

* ``Buffer``: a device buffer the graph reads or writes, and the arrays it lent it to;
  ``settle`` records the reference counts with nothing lent, ``reclaim`` says whether the
  buffer may be overwritten now (arrays still held elsewhere get a copy of their own), and
  ``hand_out`` gives the array over it;
* ``reclaim_all``, ``copies_of``, ``outputs``: the loops of one launch over those buffers.

Reference counts are read with ``Py_REFCNT`` from functions written the same way (the same
local names) where they are recorded and where they are compared, so the two agree.

    b = Buffer(cupy_array); b.settle(); ok = b.reclaim(); a = b.hand_out(shape, dtype, stream)
"""

from cpython.ref cimport Py_REFCNT

from nuvec.core.array import Array


cdef object _wrap(object shape, object dtype, object stream, object data):
    """An evaluated array over device ``data`` (of ``shape``), made by the core's one
    constructor path."""
    return Array.constant(data, stream, dtype)


cdef class Buffer:
    """A device buffer the executable writes (a graph's output or input), and the arrays it
    lent it to."""

    cdef public object data  # the CuPy array
    cdef public object base  # reference counts with nothing lent (``settle``)
    cdef public list lent  # arrays handed out over ``data``

    def __init__(self, data) -> None:
        self.data = data
        self.lent = []
        self.base = None

    cdef tuple _counts(self):
        cdef object d = self.data
        cdef object m = d.data
        cdef object mem = m.mem
        cdef object b = d.base
        return (Py_REFCNT(d), Py_REFCNT(m), Py_REFCNT(mem),
                Py_REFCNT(b) if b is not None else 0)

    cpdef settle(self):
        """Records the reference counts with nothing lent (after recording)."""
        self.base = self._counts()

    cpdef bint reclaim(self, object keep=None) except -1:
        """Whether the buffer may be overwritten now: arrays it was lent to that someone still
        holds get a copy of their own (queued on the current stream), except ``keep`` (a state
        array that only the state holds, updated in place); False when another object (a
        view) refers to it. (No local names the buffer's data here, so that the counts
        compare with ``settle``'s.)"""
        cdef Py_ssize_t lent = 0
        cdef list held = []
        cdef object a
        for a in self.lent:
            if a._data is self.data:
                lent += 1
                if a is not keep and Py_REFCNT(a) > _LENT_REFS:
                    held.append(a)
        cdef tuple c = self._counts()
        cdef tuple b = self.base
        if c[0] != b[0] + lent or c[1] != b[1] or c[2] != b[2] or c[3] != b[3]:
            return False
        for a in held:
            a._data = self.data.copy()
        if held or lent != len(self.lent):
            self.lent = [a for a in self.lent if a._data is self.data]  # unseen: reusable
        return True

    cpdef object hand_out(self, object shape, object dtype, object stream):
        """An array over the buffer (a lent array no one else sees, or a new one)."""
        cdef object a
        if self.lent:
            a = self.lent[0]
            a._readers = 0
            if len(self.lent) != 1:
                self.lent = [a]
            return a
        a = _wrap(shape, dtype, stream, self.data)
        self.lent = [a]
        return a


cdef Py_ssize_t _lent_refs():
    """References to an array held only in a ``Buffer.lent`` list, as ``reclaim`` counts
    them (the list's and the loop variable's)."""
    cdef Buffer probe = Buffer.__new__(Buffer)
    probe.lent = [Array.__new__(Array)]
    cdef object a
    for a in probe.lent:
        return Py_REFCNT(a)
    return 0


cdef Py_ssize_t _LENT_REFS = _lent_refs()


def reclaim_all(list written, dict keep):
    """Reclaims every buffer of ``written`` (``Buffer.reclaim``, with ``keep``'s array for a
    buffer, by its id, where it has one): the number of arrays detached (given a copy of their
    own), or -1 where a buffer cannot be overwritten (an earlier result has a view of it)."""
    cdef Py_ssize_t detached = 0, held
    cdef Buffer b
    for b in written:
        held = len(b.lent)
        if not b.reclaim(keep.get(id(b)) if keep else None):
            return -1
        detached += held - len(b.lent)
    return detached


def copies_of(list ins, list inputs, dict fed, list src):
    """The inputs a launch copies into the graph's buffers, as (position, buffer, array, data):
    all but those already there (the state the graph wrote, or the array copied last time) and
    those the graph does not read (None in ``ins``);
    None where one cannot be copied (not C-contiguous, or another shape or dtype)."""
    cdef list copies = []
    cdef Py_ssize_t i
    cdef Buffer b
    cdef object x, d, s, bd
    for i in range(len(ins)):
        if ins[i] is None:  # an input the graph does not read
            continue
        b = ins[i]
        x = inputs[i]
        d = x._data
        bd = b.data
        if d is bd:
            continue
        if i not in fed:
            s = src[i]
            if s is not None and s[0]() is x and s[1] == id(d) and s[2] == d.data.ptr:
                continue
        if not d.flags.c_contiguous or d.shape != bd.shape or d.dtype != bd.dtype:
            return None
        copies.append((i, b, x, d))
    return copies


def outputs(list plan, list inputs, object stream):
    """The output arrays of a launch, from its plan (``Executable._plan``): (0, buffer, shape,
    dtype) an array over a buffer the graph writes, (1, buffer, shape, dtype) another array over
    a buffer already handed out in this call, (2, j) the same array as output j, (3, slot,
    same) an input (itself, or a new array over its data), (4, constant, data) a constant."""
    cdef list out = []
    cdef tuple p
    cdef Buffer b
    cdef int kind
    cdef object a, v, c
    for p in plan:
        kind = p[0]
        if kind == 0:
            b = p[1]
            out.append(b.hand_out(p[2], p[3], stream))
        elif kind == 1:  # the function returned one value twice: another array
            b = p[1]
            a = _wrap(p[2], p[3], stream, b.data)
            b.lent.append(a)
            out.append(a)
        elif kind == 2:
            out.append(out[p[1]])
        elif kind == 3:
            v = inputs[p[1]]
            out.append(v if p[2] else _wrap(v._shape, v._dtype, v._stream, v._data))
        else:
            c = p[1]
            out.append(c if p[2] is None else _wrap(c._shape, c._dtype, c._stream, p[2]))
    return out
