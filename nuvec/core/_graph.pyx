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


def consumers_count(list order):
    """How many times each node's outputs are used by other nodes in ``order``, by id."""
    cdef dict counts = {}
    for a in order:
        for x in a._inputs:
            counts[id(x)] = counts.get(id(x), 0) + 1
    return counts
