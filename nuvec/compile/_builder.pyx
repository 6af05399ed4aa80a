# cython: language_level=3
"""Builds a simplified Draft from a traced graph, in one iterative walk (no recursion, so the
depth of a graph is limited only by memory), linear in the number of nodes:

- an input placeholder becomes an input value;
- an array with no primitive, or with data (captured, or evaluated), is a constant;
- an operation whose arguments are all constants is folded into a constant (evaluated at the
  end of the build), unless its primitive is effectful;
- an identity (broadcast or reshape to the same shape, identity transpose, same-dtype astype,
  a transpose undoing a transpose, a copy on its argument's stream that is not an output) is
  its argument (a broadcast or reshape not when shapeless: an identity only at the traced
  shape); transforms copy their inputs and a gradient through ``x.T`` comes back transposed
  twice, so a training step's tape would otherwise replay those steps on every call;
- equal one-valued constants (same dtype, shape and bytes) are one constant, never a tracer;
- an operation equal to one seen before (primitive type and params, argument ids, stream) is
  that one (hash-based CSE); effectful primitives are never merged.

    draft = build(placeholders, outputs)
"""
from .draft import Draft, INPUT, CONST, STEP
from ._tape cimport DStep

from ..core.evaluate import evaluate
from ..primitives.elementwise import AsType
from ..primitives.misc import Copy
from ..primitives.shape import Broadcast, Reshape, Transpose


cdef bint _is_identity(object prim, object a, bint shapeless):
    """Whether ``prim`` maps its only argument to ``a`` unchanged (never, when shapeless, for
    a broadcast or reshape that is an identity only at the traced shape)."""
    cdef object t = type(prim)
    cdef object x
    if len(a._inputs) != 1:
        return False
    x = a._inputs[0]
    if t is Broadcast or t is Reshape:
        return not shapeless and x._shape == a._shape
    if t is AsType:
        return x._dtype == a._dtype
    if t is Transpose:
        axes = getattr(prim, "axes", None)
        return axes is not None and tuple(axes) == tuple(range(len(axes)))
    return False


cdef object _undone_transpose(object prim, object a, dict ref):
    """The array that ``a = transpose(transpose(z))`` equals when the two permutations cancel
    (``z``, already built), else None."""
    cdef object x, inner
    cdef Py_ssize_t i
    if type(prim) is not Transpose or len(a._inputs) != 1:
        return None
    x = a._inputs[0]
    inner = x._prim
    if type(inner) is not Transpose or x._data is not None or len(x._inputs) != 1:
        return None
    outer_axes = prim.axes
    inner_axes = inner.axes
    if outer_axes is None or inner_axes is None or len(outer_axes) != len(inner_axes):
        return None
    for i in range(len(outer_axes)):
        if inner_axes[outer_axes[i]] != i:
            return None
    z = x._inputs[0]
    return z if id(z) in ref else None


def scalar_bytes(object a):
    """The bytes of the one value every element of ``a`` holds, if that is known without
    computing anything more than a scalar; else None. Never for a tracer."""
    return _scalar_bytes(a)


cdef object _scalar_bytes(object a):
    if a._tracer:
        return None
    d = a._data
    if d is not None:
        if a._shape == () or d.size == 1:
            return d.tobytes()
        strides = d.strides
        for s in strides:
            if s != 0:
                return None
        if d.size == 0:
            return None
        return d[(0,) * d.ndim].tobytes()
    if type(a._prim) is Broadcast and len(a._inputs) == 1:
        x = a._inputs[0]
        if x._data is not None and not x._tracer and x._dtype is a._dtype and \
                (x._shape == () or x._data.size == 1):
            return x._data.tobytes()
    return None


def build(list placeholders, list outputs, bint shapeless=False):
    """The Draft of the graph from ``placeholders`` to ``outputs`` (see the module docstring);
    ``shapeless``: no simplification that holds only at the traced shapes."""
    cdef dict ref = {}           # id(array) -> value id
    cdef dict keep = {}          # id(array) -> array (ids stay valid while we hold them)
    cdef dict cse = {}           # (prim, args, stream) -> step index
    cdef dict scalars = {}       # (dtype, shape, bytes) -> value id
    cdef list stack
    cdef list pending
    cdef list lazy_consts = []
    cdef Py_ssize_t i, n
    cdef object a, x, prim, key, args, s
    cdef bint all_const, effectful
    cdef list kinds, shapes, dtypes, steps
    cdef set output_ids = {id(a) for a in outputs}
    draft = Draft(n_inputs=len(placeholders))
    kinds = draft.kind
    shapes = draft.shape
    dtypes = draft.dtype
    steps = draft.steps
    for i in range(len(placeholders)):
        a = placeholders[i]
        ref[id(a)] = draft.new_value(INPUT, a._shape, a._dtype)
        keep[id(a)] = a
    stack = list(outputs)
    stack.reverse()
    while stack:
        a = stack[len(stack) - 1]
        if id(a) in ref:
            stack.pop()
            continue
        prim = a._prim
        if prim is None or a._data is not None:
            stack.pop()
            _constant(draft, a, ref, keep, scalars, lazy_consts)
            continue
        pending = None
        for x in a._inputs:
            if id(x) not in ref:
                if pending is None:
                    pending = []
                pending.append(x)
        if pending is not None:
            pending.reverse()
            stack.extend(pending)
            continue
        stack.pop()
        args = tuple([ref[id(x)] for x in a._inputs])
        effectful = prim.effectful
        all_const = True
        for v in args:
            if kinds[v] != CONST:
                all_const = False
                break
        if all_const and not effectful:
            # a sub-graph independent of the inputs: one constant per output
            for s in a.siblings:
                _constant(draft, s, ref, keep, scalars, lazy_consts)
            continue
        if a._siblings is None:
            if _is_identity(prim, a, shapeless) or (
                    type(prim) is Copy and id(a) not in output_ids
                    and a._stream == a._inputs[0]._stream):     # (not a device transfer)
                ref[id(a)] = args[0]
                keep[id(a)] = a
                continue
            x = _undone_transpose(prim, a, ref)
            if x is not None:
                ref[id(a)] = ref[id(x)]
                keep[id(a)] = a
                continue
        key = None
        if not effectful:
            # (type, params) is what primitive equality compares; hashing them directly
            # keeps the walk linear and cheap (no Python-level __hash__ per lookup)
            key = (type(prim), prim.params, args, id(a._stream))
            try:
                k = cse.get(key)
            except TypeError:   # a primitive with unhashable params is never merged
                key = None
                k = None
            if key is not None:
                if k is not None:
                    outs = steps[k].outs
                    sib = a.siblings
                    for i in range(len(sib)):
                        ref[id(sib[i])] = outs[i]
                        keep[id(sib[i])] = sib[i]
                    continue
        sib = a._siblings
        if sib is None:
            v = len(kinds)
            kinds.append(STEP)
            shapes.append(a._shape)
            dtypes.append(a._dtype)
            ref[id(a)] = v
            keep[id(a)] = a
            outs = (v,)
        else:
            outs = []
            for s in sib:
                v = len(kinds)
                kinds.append(STEP)
                shapes.append(s._shape)
                dtypes.append(s._dtype)
                ref[id(s)] = v
                keep[id(s)] = s
                outs.append(v)
            outs = tuple(outs)
        steps.append(DStep(prim, args, outs, a._stream, a))
        if key is not None:
            cse[key] = len(steps) - 1
    draft.outputs = [ref[id(a)] for a in outputs]
    # fold: compute the constants that are still lazy (not tracers: an outer transform must
    # see those as they are)
    if lazy_consts:
        evaluate(lazy_consts)
    return draft


cdef _constant(object draft, object a, dict ref, dict keep, dict scalars, list lazy_consts):
    """Records ``a`` as a constant (merged with an equal one-valued constant)."""
    keep[id(a)] = a
    if a._tracer:
        draft.captures_tracer = True
        ref[id(a)] = draft.add_const(a)
        return
    b = _scalar_bytes(a)
    if b is None and a._data is None and a.size == 1 and a._prim is not None:
        evaluate([a])       # a lazy scalar: its value is needed to merge it
        b = a._data.tobytes()
    if b is not None:
        key = (a._dtype.name, a._shape, b)
        v = scalars.get(key)
        if v is not None:
            ref[id(a)] = v
            return
    v = draft.add_const(a)
    ref[id(a)] = v
    if b is not None:
        scalars[key] = v
        draft.scalar_bytes[v] = b
    if a._data is None:
        if type(a._prim) is Broadcast and len(a._inputs) == 1:
            src = a._inputs[0]
            sv = ref.get(id(src))
            if sv is None:
                _constant(draft, src, ref, keep, scalars, lazy_consts)
                sv = ref[id(src)]
            draft.broadcast_source[v] = sv
        lazy_consts.append(a)
