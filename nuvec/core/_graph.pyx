# cython: language_level=3
"""Graph walks, iterative (a chain of a million operations needs no recursion)."""

import numpy as np

cdef object _ndarray = np.ndarray

cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(object o)


def topo_order(list outputs):
    """The unevaluated nodes that ``outputs`` depend on, inputs before consumers.

    One array per node: siblings of a multi-output primitive appear once. Evaluated
    arrays (and placeholders, which have no primitive) are leaves and are not listed.
    """
    cdef list order = []
    cdef set seen = set()
    # the walk's frames as two parallel stacks (a node and the index of its next input):
    # no Python object is made per frame
    cdef list nodes = []
    cdef list next_input = []
    cdef tuple children
    cdef Py_ssize_t i, n, top
    cdef object a, x
    for a in outputs:
        if a._data is not None or a._prim is None or id(a) in seen:
            continue
        nodes.append(a)
        next_input.append(0)
        _mark(a, seen)
        while nodes:
            top = len(nodes) - 1
            a = nodes[top]
            children = a._inputs
            i = next_input[top]
            n = len(children)
            while i < n:
                x = children[i]
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


cdef inline void _mark(object a, set seen):
    sib = a._siblings
    if sib is None:
        seen.add(id(a))
    else:
        for s in sib:
            seen.add(id(s))


def run_nodes(list order, dict impls, object lookup, object on_placeholder):
    """Runs each node of ``order`` (from ``topo_order``): its implementation is
    ``impls[device type][primitive type]``, a pair ``(fn, host_fn)`` that ``lookup(node)``
    gives on a miss, where ``host_fn`` (or None) is ``fn`` without its conversion of inputs to
    NumPy arrays, called when they all are; stores the outputs' data and detaches non-tracers
    from their inputs. Clears ``order`` as it goes, so an intermediate's memory is released as
    soon as its last consumer has run."""
    cdef Py_ssize_t i, j, n = len(order)
    cdef list datas
    cdef object node, prim, ins, x, fn, host_fn, outs, sib, d, dev
    cdef tuple entry
    cdef bint host
    # the device type's table, looked up again only when the device type changes: hashing a
    # DeviceType runs Python code, a primitive class hashes by identity
    cdef object last_dev = None
    cdef dict table = None
    for i in range(n):
        node = order[i]
        order[i] = None
        prim = node._prim
        ins = node._inputs
        datas = []
        host = True
        for x in ins:
            d = x._data
            if d is None:
                on_placeholder()
            elif type(d) is not _ndarray:
                host = False
            datas.append(d)
        # the loop variables would hold the last input and its data through the call: an
        # implementation that asks whether only the graph refers to an input (``lone_input``)
        # must see the graph's references alone
        x = None
        d = None
        dev = node._stream.device.type
        if dev is not last_dev:
            table = impls.get(dev)
            if table is None:
                table = impls[dev] = {}
            last_dev = dev
        entry = table.get(type(prim))
        if entry is None:
            entry = tuple(lookup(node))
            table[type(prim)] = entry
        fn, host_fn = entry
        entry = None
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
                for x in ins:
                    x._readers -= 1
                node._inputs = ()
                node._prim = None
        else:
            for j in range(len(sib)):
                x = sib[j]
                x._data = outs[j]
            outs = None
            if not node._tracer:
                for x in ins:
                    x._readers -= 1
                for j in range(len(sib)):
                    x = sib[j]
                    x._inputs = ()
                    x._prim = None
                    x._siblings = None
        x = None
        sib = None


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
    cdef tuple ins = node._inputs
    if p >= len(ins) or p >= len(datas):
        return None
    cdef object x = ins[p]
    if Py_REFCNT(x) != 2 or x._readers != 1 or x._tracer:
        return None
    cdef object d = x._data
    if type(d) is not _ndarray or datas[p] is not d or Py_REFCNT(d) != 3:
        return None
    # the memory's owner, through views of views (a reshape, a transpose, a slice of an
    # element-wise result: NumPy's base chain stops at each ndarray whose own base is not an
    # ndarray); each link held only by the next one's ``base`` (+ ``b``, this local)
    cdef object b = d.base
    if b is None:
        if not d.flags.owndata:
            return None
    while b is not None:
        if Py_REFCNT(b) != 2:
            return None
        if type(b) is _ndarray:
            if b.flags.owndata:
                break
            b = b.base
            if b is None:
                return None
        elif base is not None and type(b) is base:
            break
        else:
            return None
    b = None
    if not (d.flags.c_contiguous and d.flags.writeable):
        return None
    return d


def donatable_input(object node, list datas, object base):
    """The data of the first input of ``node`` that has ``node``'s shape and dtype and that
    ``lone_input`` lets ``node``'s output overwrite, or None (the element-wise kernels'
    donation: a single op reads each element once, before writing it)."""
    cdef tuple ins = node._inputs
    cdef object shape = node._shape
    cdef object dtype = node._dtype
    cdef Py_ssize_t p
    cdef object x
    for p in range(len(ins)):
        x = ins[p]
        # a count above the graph's own references refuses at once (see lone_input)
        if Py_REFCNT(x) > 2 or x._dtype is not dtype or x._shape != shape:
            continue
        x = None
        d = lone_input(node, datas, p, base)
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
