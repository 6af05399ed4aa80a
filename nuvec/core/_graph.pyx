# cython: language_level=3
"""Graph walks, iterative (a chain of a million operations needs no recursion)."""

import numpy as np

cimport numpy as cnp

from nuvec.core._array cimport ArrayBase

cnp.import_array()

cdef object _ndarray = np.ndarray

cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(object o)


def topo_order(list outputs):
    """The unevaluated nodes that ``outputs`` depend on, inputs before consumers.

    One array per node: siblings of a multi-output primitive appear once. Evaluated
    arrays (and placeholders, which have no primitive) are leaves and are not listed.
    """
    cdef list order = []
    cdef set seen
    cdef list nodes, next_input
    cdef tuple children
    cdef Py_ssize_t i, n, top
    cdef ArrayBase a, x
    if len(outputs) == 1:
        # one node over computed inputs (an eager op evaluated at once): no walk to set up
        a = <ArrayBase?>outputs[0]
        if a._data is not None or a._prim is None:
            return order
        for o in a._inputs:
            x = <ArrayBase>o
            if x._data is None and x._prim is not None:
                break
        else:
            order.append(a)
            return order
    seen = set()
    # the walk's frames as two parallel stacks (a node and the index of its next input):
    # no Python object is made per frame
    nodes = []
    next_input = []
    for o in outputs:
        a = <ArrayBase?>o
        if a._data is not None or a._prim is None or id(a) in seen:
            continue
        nodes.append(a)
        next_input.append(0)
        _mark(a, seen)
        while nodes:
            top = len(nodes) - 1
            a = <ArrayBase>nodes[top]
            children = a._inputs
            i = next_input[top]
            n = len(children)
            while i < n:
                x = <ArrayBase>children[i]
                i += 1
                if x._data is None and x._prim is not None and id(x) not in seen:
                    _mark(x, seen)
                    next_input[top] = i
                    nodes.append(x)
                    next_input.append(0)
                    break
            else:
                nodes.pop()
                next_input.pop()
                order.append(a)
    return order


cdef inline void _mark(ArrayBase a, set seen):
    sib = a._siblings
    if sib is None:
        seen.add(id(a))
    else:
        for s in sib:
            seen.add(id(s))


# The element-wise kernel an implementation's ``kernel_for`` named for a primitive and its
# output and input dtypes: a direct-mapped cache by identity, each slot a tuple (prim, output
# dtype, input dtypes, kernel_for, kernel or False) that holds what it compares, so no identity is
# reused while it is there
cdef enum:
    _NSLOTS = 256
cdef list _slots = [None] * _NSLOTS


# The implementation table of the device type that ran last, kept across calls: finding it
# in ``impls`` hashes and compares a DeviceType, which runs Python code (about 0.3 us, a
# sixth of evaluating one small node)
cdef object _last_impls = None
cdef object _last_dev = None
cdef dict _last_table = None


cdef object _direct_kernel(object prim, ArrayBase node, tuple ins, object kernel_for):
    """The kernel that runs ``node`` (called as ``kernel(datas, shape, outs)``), or None."""
    cdef Py_ssize_t n = len(ins)
    cdef object d0, d1 = None
    cdef object dt = node._dtype
    if n == 1:
        d0 = (<ArrayBase>ins[0])._dtype
    elif n == 2:
        d0 = (<ArrayBase>ins[0])._dtype
        d1 = (<ArrayBase>ins[1])._dtype
    else:
        return None
    cdef size_t h = (<size_t><void *>prim >> 4) ^ (<size_t><void *>dt >> 3) ^ \
        (<size_t><void *>d0 >> 5) ^ (<size_t><void *>d1 >> 6)
    h = (h ^ (h >> 8)) & (_NSLOTS - 1)
    cdef object e = _slots[h]
    cdef tuple t
    if e is not None:
        t = <tuple>e
        if t[0] is prim and t[1] is dt and t[2] is d0 and t[3] is d1 and t[4] is kernel_for:
            k = t[5]
            return None if k is False else k
    k = kernel_for(prim, node)
    if k is None:           # not looked up yet: the implementation looks it up
        return None
    _slots[h] = (prim, dt, d0, d1, kernel_for, k)
    return None if k is False else k


def run_nodes(list order, dict impls, object lookup, object on_placeholder):
    """Runs each node of ``order`` (from ``topo_order``): its implementation is
    ``impls[device type][primitive type]``, a tuple ``(fn, host_fn, kernel_for, base)`` that
    ``lookup(node)`` gives on a miss, where ``host_fn`` (or None) is ``fn`` without its
    conversion of inputs to NumPy arrays, called when they all are; where ``kernel_for`` (or
    None) names for a node on host data the element-wise kernel that ``host_fn`` would call
    (``kernel_for(prim, node)``: the kernel, False for none, None when not known yet), that
    kernel is called here, with the output over a donatable input (``donatable_input`` with
    ``base``). Stores the outputs' data and detaches non-tracers from their inputs. Clears
    ``order`` as it goes, so an intermediate's memory is released as soon as its last
    consumer has run."""
    cdef Py_ssize_t i, j, n = len(order)
    cdef list datas
    cdef ArrayBase node, x
    cdef object prim, fn, host_fn, kernel_for, base, outs, sib, d, dev, o, k, stream
    cdef tuple entry, ins
    cdef bint host
    # the device type's table, looked up again only when the stream changes: hashing a
    # DeviceType runs Python code, a primitive class hashes by identity
    cdef object last_dev = None
    cdef object last_stream = None
    cdef dict table = None
    global _last_impls, _last_dev, _last_table
    for i in range(n):
        node = <ArrayBase>order[i]
        order[i] = None
        prim = node._prim
        ins = node._inputs
        datas = []
        host = True
        for o in ins:
            d = (<ArrayBase>o)._data
            if d is None:
                on_placeholder()
            elif type(d) is not _ndarray:
                host = False
            datas.append(d)
        # the loop variables would hold the last input and its data through the call: an
        # implementation that asks whether only the graph refers to an input (``lone_input``)
        # must see the graph's references alone
        o = None
        d = None
        stream = node._stream
        if stream is not last_stream:
            dev = stream.device.type
            last_stream = stream
            if dev is not last_dev:
                if dev is _last_dev and impls is _last_impls:
                    table = _last_table
                else:
                    table = impls.get(dev)
                    if table is None:
                        table = impls[dev] = {}
                    _last_impls, _last_dev, _last_table = impls, dev, table
                last_dev = dev
        entry = table.get(type(prim))
        if entry is None:
            entry = tuple(lookup(node))
            table[type(prim)] = entry
        fn, host_fn, kernel_for, base = entry
        entry = None
        outs = None
        if host and kernel_for is not None:
            k = _direct_kernel(prim, node, ins, kernel_for)
            if k is not None:
                d = _donatable(node, datas, base)
                outs = k(datas, node._shape, None if d is None else [d])
                d = None
                k = None
        if outs is None:
            if host and host_fn is not None:
                outs = host_fn(prim, datas, node)
            else:
                outs = fn(prim, datas, node)
        fn = host_fn = None
        datas = None
        sib = node._siblings
        if sib is None:
            node._data = outs[0]
            outs = None   # (the data's one holder is its array: see lone_input)
            if not node._tracer:
                for o in ins:
                    (<ArrayBase>o)._readers -= 1
                o = None
                node._inputs = ()
                node._prim = None
        else:
            for j in range(len(sib)):
                x = <ArrayBase>sib[j]
                x._data = outs[j]
            outs = None
            if not node._tracer:
                for o in ins:
                    (<ArrayBase>o)._readers -= 1
                o = None
                for j in range(len(sib)):
                    x = <ArrayBase>sib[j]
                    x._inputs = ()
                    x._prim = None
                    x._siblings = None
        x = None
        sib = None
        ins = None
        prim = None


def lone_input(object node, list datas, Py_ssize_t p, object base):
    """The data of input ``p`` of ``node`` (being run by ``run_nodes``, ``datas`` its inputs'
    data) when nothing but ``node`` refers to that input array and nothing but the array to
    its memory, so an implementation may write ``node``'s output over it (MLX's donation);
    else None.

    The counts are exact: the input array is held by ``node``'s input tuple (once: an array
    passed twice is refused) and this call's local; its data by the array, ``datas`` and the
    local; each link of its base chain (views of views, down to a ``base`` or an ndarray
    owning its memory) by the next link alone. Any other holder (a name in the caller's code,
    a NumPy view or buffer export, a second consumer, a list of arrays being evaluated)
    raises a count and refuses."""
    return _lone(<ArrayBase?>node, datas, p, base)


cdef object _lone(ArrayBase node, list datas, Py_ssize_t p, object base):
    cdef tuple ins = node._inputs
    if p >= len(ins) or p >= len(datas):
        return None
    cdef ArrayBase x = <ArrayBase>ins[p]
    if Py_REFCNT(x) != 2 or x._readers != 1 or x._tracer:
        return None
    cdef object d = x._data
    if type(d) is not _ndarray or datas[p] is not d or Py_REFCNT(d) != 3:
        return None
    # the memory's owner, through views of views (a reshape, a transpose, a slice of an
    # element-wise result: NumPy's base chain stops at each ndarray whose own base is not an
    # ndarray); each link held only by the next one's ``base`` (+ ``b``, this local)
    cdef cnp.ndarray nd = <cnp.ndarray>d
    cdef object b = <object>cnp.PyArray_BASE(nd) if cnp.PyArray_BASE(nd) != NULL else None
    if b is None:
        if not cnp.PyArray_CHKFLAGS(nd, cnp.NPY_ARRAY_OWNDATA):
            return None
    while b is not None:
        if Py_REFCNT(b) != 2:
            return None
        if type(b) is _ndarray:
            if cnp.PyArray_CHKFLAGS(<cnp.ndarray>b, cnp.NPY_ARRAY_OWNDATA):
                break
            b = <object>cnp.PyArray_BASE(<cnp.ndarray>b) \
                if cnp.PyArray_BASE(<cnp.ndarray>b) != NULL else None
            if b is None:
                return None
        elif base is not None and type(b) is base:
            break
        else:
            return None
    b = None
    if not cnp.PyArray_CHKFLAGS(nd, cnp.NPY_ARRAY_C_CONTIGUOUS | cnp.NPY_ARRAY_WRITEABLE):
        return None
    nd = None
    return d


def donatable_input(object node, list datas, object base):
    """The data of the first input of ``node`` that has ``node``'s shape and dtype and that
    ``lone_input`` lets ``node``'s output overwrite, or None (the element-wise kernels'
    donation: a single op reads each element once, before writing it)."""
    return _donatable(<ArrayBase?>node, datas, base)


cdef object _donatable(ArrayBase node, list datas, object base):
    cdef tuple ins = node._inputs
    cdef object shape = node._shape
    cdef object dtype = node._dtype
    cdef Py_ssize_t p
    cdef ArrayBase x
    for p in range(len(ins)):
        x = <ArrayBase>ins[p]
        # a count above the graph's own references refuses at once (see lone_input)
        if Py_REFCNT(x) > 2 or x._dtype is not dtype or (
                x._shape is not shape and x._shape != shape):
            continue
        x = None
        d = _lone(node, datas, p, base)
        if d is not None:
            return d
    return None


def on_host_already(list datas):
    """Whether every datum in ``datas`` is a NumPy array (exactly), as the CPU's data are."""
    cdef object d
    for d in datas:
        if type(d) is not _ndarray:
            return False
    return True
