# cython: language_level=3
"""Freezes a Draft into a Tape: numbered slots (inputs, used constants, step outputs), the
slots each step releases after its last use, each step's implementation, its template node
and, for fused steps, which arguments may lend their buffer to an output. Linear in the
number of steps.

    tape = finalize(draft, stream, shapeless)          # or finalize(..., steps=other_steps)
"""
import copy

import numpy as np

from ..backends import registry
from ..core.array import Array
from ..primitives.compiled import Compiled
from ._tape cimport Step, Tape


def finalize(draft, stream, bint shapeless, steps=None):
    """The Tape of ``draft`` (or of ``steps`` in place of its own)."""
    cdef Py_ssize_t n_in, nxt, first_step_slot, k, sl, p
    cdef dict slot, last_use, impl_cache, dev_cache
    cdef list used_consts, consts, release, out_slots, dsteps, tsteps
    cdef set seen, keep
    cdef Step st
    cdef bint eager
    if steps is not None:
        draft = copy.copy(draft)
        draft.steps = list(steps)
    dsteps = draft.steps
    n_in = draft.n_inputs
    const_index = draft.const_index
    shapes = draft.shape
    dtypes = draft.dtype
    slot = {}
    for k in range(n_in):
        slot[k] = k
    used_consts = []
    seen = set()
    for s in dsteps:
        for a in s.args:
            if a >= n_in and a in const_index and a not in seen:
                seen.add(a)
                used_consts.append(a)
    for a in draft.outputs:
        if a in const_index and a not in seen:
            seen.add(a)
            used_consts.append(a)
    used_consts.sort(key=const_index.__getitem__)
    consts = []
    for v in used_consts:
        slot[v] = n_in + len(consts)
        consts.append(draft.consts[const_index[v]])
    nxt = n_in + len(consts)
    first_step_slot = nxt
    for s in dsteps:
        for o in s.outs:
            slot[o] = nxt
            nxt += 1
    out_slots = [slot[v] for v in draft.outputs]
    keep = set(out_slots)
    last_use = {}
    k = 0
    for s in dsteps:
        for a in s.args:
            last_use[slot[a]] = k
        k += 1
    release = [[] for _ in range(len(dsteps))]
    k = 0
    for s in dsteps:
        for o in s.outs:     # outputs nobody reads (unused siblings) go at once
            sl = slot[o]
            if sl not in last_use and sl not in keep:
                (<list>release[k]).append(sl)
        k += 1
    for sl, k in last_use.items():
        if sl >= first_step_slot and sl not in keep:
            (<list>release[k]).append(sl)
    tape = Tape()
    tape.n_inputs = n_in
    tape.n_slots = nxt
    tape.consts = consts
    tape.const_data = [c._data for c in consts]
    tape.stream = stream
    tape.shapeless = shapeless
    tape.captures_tracer = draft.captures_tracer
    tape.outputs = tuple(out_slots)
    tape.out_dtypes = tuple([dtypes[v] for v in draft.outputs])
    tape.dup_outputs = len(keep) != len(out_slots)
    tape.draft = draft
    dev0 = _device(stream)
    backend = registry.backend_of(stream)
    eager = backend is not None and backend.replays and not draft.captures_tracer
    donates = backend is not None and backend.donation_base is not None and not shapeless
    if eager:
        tape.data_type = backend.data_type
        tape.const_data = backend.replay_constants(consts)    # uploaded once, not per call
        tape.donation_base = backend.donation_base
    for c in tape.const_data:
        if type(c) is not tape.data_type:
            eager = False
    tsteps = []
    impl_cache = {}
    dev_cache = {}
    k = 0
    for s in dsteps:
        st = Step()
        prim = s.prim
        st.prim = prim
        st.args = tuple([slot[a] for a in s.args])
        outs = s.outs
        st.out = slot[outs[0]]
        st.nout = len(outs)
        st.stream = s.stream
        st.shape = shapes[outs[0]]
        st.dtypes = tuple([dtypes[o] for o in outs])
        st.release = tuple(release[k])
        kernel = s.kernel
        st.kernel = kernel
        st.broadcast_operands = bool(shapeless and prim.elementwise and len(s.args) > 1
                                     and kernel is None
                                     and type(prim) is not Compiled)
        dev = dev_cache.get(id(s.stream))
        if dev is None:
            dev = dev_cache[id(s.stream)] = _device(s.stream)
        ikey = (type(prim), dev)
        if ikey in impl_cache:
            impl = impl_cache[ikey]
        else:
            impl = impl_cache[ikey] = registry.implementation(type(prim), dev)
        if impl is None or dev != dev0 or s.stream is not stream and s.stream != stream:
            eager = False
        st.node = s.node if s.node is not None else _template(s, draft)
        if impl is not None and kernel is None and not shapeless:
            # fixed shapes: what the primitive and node fix is worked out once, here
            impl = registry.specialized(prim, st.node, dev, impl)
        st.impl = impl
        st.donate = _donations(s, st, slot, release[k], keep, first_step_slot, draft) \
            if kernel is not None and donates else None
        st.source = s
        tsteps.append(st)
        k += 1
    tape.steps = tsteps
    tape.read_inputs = tuple(sorted({a for st in tsteps for a in st.args if a < tape.n_inputs}))
    tape.eager_ok = eager
    if eager:
        tape.executable = backend.executable(tape)
    return tape


cdef str _device(stream):
    return stream.device.type.value


cdef object _donations(s, Step st, dict slot, list released, set outputs,
                       Py_ssize_t first_step_slot, draft):
    """(argument position, output index) pairs where a fused step may write its output into
    the argument's buffer: an intermediate (made by an earlier step, not a function output)
    read here for the last time, passed once, with the output's shape and dtype. Whether the
    buffer is really free is checked on each call (Tape._run_donating).

    The generated kernels declare their pointers ``restrict``, so the compiler may read an
    input element again after writing an output element. Writing over an input is therefore
    safe only when that element is read once and the output depends on that read: the input
    feeds exactly one node argument of the kernel, and the output's node depends on that
    node (the store then cannot come before the load)."""
    cdef list pairs = []
    cdef set taken = set()
    cdef dict counts = {}
    cdef Py_ssize_t p, o
    spec = s.prim.spec
    for a in st.args:
        counts[a] = counts.get(a, 0) + 1
    p = 0
    for a in s.args:
        sa = st.args[p]
        if not (sa < first_step_slot or sa in outputs or sa not in released
                or counts[sa] != 1 or draft.shape[a] != st.shape):
            reader = spec.single_reader(p)
            o = 0
            for v in s.outs:
                if (o not in taken and draft.dtype[v] == draft.dtype[a] and reader >= 0
                        and spec.depends(spec.outputs[o], reader)):
                    taken.add(o)
                    pairs.append((p, o))
                    break
                o += 1
        p += 1
    return tuple(pairs) or None


cdef object _template(s, draft):
    """A node describing one step's call (its impl reads shapes and dtypes from it)."""
    ins = tuple([Array.placeholder(draft.shape[a], draft.dtype[a], s.stream, tracer=False)
                 for a in s.args])
    if len(s.outs) == 1:
        a = Array.placeholder(draft.shape[s.outs[0]], draft.dtype[s.outs[0]], s.stream,
                              tracer=False)
        a._prim, a._inputs = s.prim, ins
        return a
    outs = []
    for i, o in enumerate(s.outs):
        a = Array.placeholder(draft.shape[o], draft.dtype[o], s.stream, tracer=False)
        a._prim, a._inputs, a._pos = s.prim, ins, i
        outs.append(a)
    sib = tuple(outs)
    for a in outs:
        a._siblings = sib
    return outs[0]
