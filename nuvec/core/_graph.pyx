# cython: language_level=3
"""Graph walks, iterative (a chain of a million operations needs no recursion)."""


def topo_order(list outputs):
    """The unevaluated nodes that ``outputs`` depend on, inputs before consumers.

    One array per node: siblings of a multi-output primitive appear once. Evaluated
    arrays (and placeholders, which have no primitive) are leaves and are not listed.
    """
    cdef list order = []
    cdef set seen = set()
    cdef list stack = []
    cdef list children
    cdef Py_ssize_t i
    cdef object a, x, s
    for a in outputs:
        if a._data is not None or a._prim is None or id(a) in seen:
            continue
        stack.append([a, list(a._inputs), 0])
        _mark(a, seen)
        while stack:
            top = stack[len(stack) - 1]
            children = top[1]
            i = top[2]
            while i < len(children):
                x = children[i]
                i += 1
                if x._data is None and x._prim is not None and id(x) not in seen:
                    _mark(x, seen)
                    top[2] = i
                    stack.append([x, list(x._inputs), 0])
                    break
            else:
                stack.pop()
                order.append(top[0])
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
    ``impls[(device type, primitive type)]`` (filled by ``lookup(node)`` on a miss); stores the
    outputs' data and detaches non-tracers from their inputs. Clears ``order`` as it goes, so
    an intermediate's memory is released as soon as its last consumer has run."""
    cdef Py_ssize_t i, j, n = len(order)
    cdef list datas
    cdef object node, prim, ins, x, fn, outs, sib, key, d
    for i in range(n):
        node = order[i]
        order[i] = None
        prim = node._prim
        ins = node._inputs
        datas = []
        for x in ins:
            d = x._data
            if d is None:
                on_placeholder()
            datas.append(d)
        key = (node._stream.device.type, type(prim))
        fn = impls.get(key)
        if fn is None:
            fn = lookup(node)
            impls[key] = fn
        outs = fn(prim, datas, node)
        sib = node._siblings
        if sib is None:
            node._data = outs[0]
            if not node._tracer:
                for x in ins:
                    x._readers -= 1
                node._inputs = ()
                node._prim = None
        else:
            for j in range(len(sib)):
                x = sib[j]
                x._data = outs[j]
            if not node._tracer:
                for x in ins:
                    x._readers -= 1
                for j in range(len(sib)):
                    x = sib[j]
                    x._inputs = ()
                    x._prim = None
                    x._siblings = None
