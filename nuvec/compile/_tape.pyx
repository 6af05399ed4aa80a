# cython: language_level=3
"""The replayable tape: a flat list of steps over numbered slots (inputs, then constants,
then step outputs). Replaying does no graph analysis: it reads each step's argument slots,
runs the step and stores its outputs.

Two ways to replay, same results:

- eager (every input has data, each input a step reads (``read_inputs``) data of the tape's
  device, the tape holds no tracer, each step has an implementation on that device; an
  input that is only returned, such as an unused random key on the host, may live
  elsewhere): steps run now on the backend data (NumPy on the CPU,
  CuPy on a CUDA GPU, queued on the tape's stream); intermediates are plain backend arrays
  dropped after their last use, and the outputs are new, evaluated arrays;
- lazy (otherwise): steps become graph nodes, as the uncompiled function would make them;
  ``call`` (a compiled function's call) also replays lazily where a kernel could write its
  output over an input that owns its memory, so that the input's buffer is reused when the
  caller lets go of the input before evaluating (MLX's donation).

A shapeless tape infers every step's shapes again on each replay (which checks what the trace
relied on: sizes of a reshape, bounds of a slice), resolves its shape-relative steps to the
concrete nodes for the inputs' shapes (``Primitive.resolve``), and broadcasts the operands of
its element-wise steps as the uncompiled operations do.
"""
cimport cython
from cpython.ref cimport PyObject
from libc.stdint cimport uintptr_t

from nuvec.core._array cimport ArrayBase, new_node

import numpy as np

from ..core.array import Array
from ..backends import registry
from ..primitives.misc import Copy
from ..primitives.shape import Broadcast, broadcast_shape

cdef object _ndarray = np.ndarray
cdef object _broadcast_to = np.broadcast_to

cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(object o)


cdef inline object _make(tuple shape, object dtype, object prim, tuple inputs, object stream,
                         object data, bint tracer):
    # the core's one constructor path (it counts the node as its inputs' reader, as
    # __setitem__ needs to know who reads an array)
    cdef ArrayBase a = new_node(shape, dtype, prim, inputs, stream)
    a._data = data
    a._tracer = True if tracer else False
    return a


cdef str _device(stream):
    return stream.device.type.value


@cython.final
cdef class DStep:
    """One operation of a Draft: ``outs = prim(*args)`` on ``stream``. ``node`` is the traced
    array it came from (its shapes, dtypes and siblings describe the call); a fused step has
    ``members`` (the steps it replaces) and, once built, its ``kernel``."""

    def __init__(self, prim, tuple args, tuple outs, stream, node=None, tuple members=()):
        self.prim = prim
        self.args = args
        self.outs = outs
        self.stream = stream
        self.node = node
        self.members = members
        self.kernel = None

    def __repr__(self):
        return f"DStep({self.prim!r}, {self.args} -> {self.outs})"


@cython.final
cdef class Step:
    """One step of a tape (see the module docstring)."""

    def __repr__(self):
        return f"Step({self.prim!r}, args={self.args}, out={self.out}..{self.out + self.nout})"


@cython.final
cdef class Tape:
    """A simplified, possibly fused, traced function (see the module docstring)."""

    def __init__(self):
        self.views = {}
        self.donations = 0
        self.data_type = _ndarray
        self.executable = None
        self.scope = None
        self.donation_base = None
        self.donors = None
        self.read_inputs = ()

    cpdef list run(self, list inputs):
        """The output arrays (one per output leaf) of the tape on ``inputs`` (arrays)."""
        cdef object x
        cdef Py_ssize_t i
        # Cython passes ``self`` borrowed to a cdef/cpdef call (``entry.tape.run(...)`` hands
        # over the attribute itself). A replay lets other threads run (kernels release the
        # GIL; impls are Python), and one of them may drop the tape's last reference (the
        # kernel worker swapping in the fused tape): keep the tape alive until the end.
        cdef Tape alive = self
        cdef object data_type = self.data_type
        if self.eager_ok:
            for x in inputs:
                if x._data is None:
                    return self._arrays(inputs, False)
            # only what a step reads must be the device's data: an input that is merely
            # returned (an unused random key on the host, say) stays where it is
            for i in self.read_inputs:
                if type((<object>inputs[i])._data) is not data_type:
                    return self._arrays(inputs, False)
            if self.executable is None:
                return self._on_data(inputs)
            return self.executable(inputs)    # the backend's form (a CUDA graph, say)
        return self._arrays(inputs, False)

    cpdef list call(self, list inputs):
        """``run`` for a compiled function's call (not a stateful step's): where a fused
        kernel could write its output over an input's buffer (the input read there for the
        last time, with the output's shape and dtype) and that input owns its memory, the
        steps become graph nodes instead of running now, as MLX's compiled calls are lazy:
        if the caller drops its own reference before evaluating (``y = f(x); del x``), the
        fused node writes into ``x``'s buffer (``backends/cpu/compiled.py``); a reference it
        keeps keeps ``x``'s value."""
        cdef tuple donors
        cdef Py_ssize_t i
        cdef Tape alive = self
        if self.eager_ok and self.donation_base is not None:
            donors = self.donors if self.donors is not None else self._donors()
            for i in donors:
                d = (<object>inputs[i])._data
                if type(d) is _ndarray and d.flags.c_contiguous and d.flags.writeable and (
                        (d.base is None and d.flags.owndata)
                        or type(d.base) is self.donation_base):
                    return self._arrays(inputs, False)
        return self.run(inputs)

    cdef tuple _donors(self):
        """The inputs that a fused step of this tape could write its output over (see
        ``call``), found once."""
        cdef list found = []
        cdef dict last = {}
        cdef Py_ssize_t k = 0, p
        cdef Step st
        cdef set outs = set(self.outputs)
        draft = self.draft
        for st in self.steps:
            for a in st.args:
                last[a] = k
            k += 1
        k = 0
        if not self.shapeless and draft is not None:
            for st in self.steps:
                spec = getattr(st.prim, "spec", None)
                # a fused kernel (built, or still being built: its graph node donates as the
                # kernel would), or an unfused element-wise op (its implementation donates)
                if st.prim.elementwise:
                    for p in range(len(st.args)):
                        a = st.args[p]
                        # the tape's input slot i is the draft's value i
                        if (a < self.n_inputs and a not in outs and last[a] == k
                                and st.args.count(a) == 1 and draft.shape[a] == st.shape
                                and draft.dtype[a] == st.dtypes[0] and a not in found
                                and (spec is None or spec.single_reader(p) >= 0)):
                            found.append(a)
                k += 1
        self.donors = tuple(found)
        return self.donors

    cpdef list replay_data(self, list inputs):
        """The steps run on the inputs' device data, within the backend's ``scope`` (a CUDA
        stream) where it set one: what a backend's ``executable`` calls to run or record
        them."""
        cdef Tape alive = self
        if self.scope is None:
            return self._on_data(inputs)
        with self.scope:
            return self._on_data(inputs)

    cdef list _on_data(self, list inputs):
        if self.shapeless and not self.single:
            return self._arrays(inputs, True)
        return self._eager(inputs)

    cdef list _eager(self, list inputs):
        cdef list values
        cdef list outs
        cdef Step one
        cdef Py_ssize_t i, k, n_in = self.n_inputs, nc = len(self.const_data)
        cdef Step step
        cdef list datas
        cdef object res, v
        cdef tuple shape
        if self.single:
            # one fused kernel whose outputs are the function's: no slot table needed
            one = <Step>self.steps[0]
            datas = []
            for i in one.args:
                if i < self.n_inputs:
                    datas.append((<object>inputs[i])._data)
                else:
                    datas.append(self.const_data[i - self.n_inputs])
            if self.shapeless:      # the kernel broadcasts its inputs to their common shape
                shape = broadcast_shape([d.shape for d in datas], "compiled")
            else:
                shape = one.shape
            res = one.kernel(datas, shape)
            outs = []
            for k in range(one.nout):
                v = res[k]
                outs.append(_make(shape, self.out_dtypes[k], None, (), self.stream, v, False))
            return outs
        values = [None] * self.n_slots
        for i in range(n_in):
            values[i] = (<object>inputs[i])._data
        for i in range(nc):
            values[n_in + i] = self.const_data[i]
        for step in self.steps:
            datas = [values[i] for i in step.args]
            if step.kernel is not None:
                if step.donate is not None:
                    res = self._run_donating(step, values, datas)
                else:
                    res = step.kernel(datas, step.shape)
            else:
                res = step.impl(step.prim, datas, step.node)
            for k in range(step.nout):
                values[step.out + k] = res[k]
            for i in step.release:
                values[i] = None
        return self._outputs(values, inputs, True)

    cdef object _run_donating(self, Step step, list values, list datas):
        """Runs a fused step writing an output into the buffer of an argument that nothing
        but this replay references: an intermediate of the tape (never an input, constant or
        output) at its last use, of the output's shape and dtype, that owns its memory (a
        buffer-cache array, no view of anything) and that no other object refers to
        (reference counts of the array and of its buffer)."""
        cdef Py_ssize_t p, o
        cdef tuple pair
        cdef list outs = None
        for pair in step.donate:
            p = pair[0]
            o = pair[1]
            values[step.args[p]] = None       # released here anyway (its last use)
            if _donatable(datas[p], self.donation_base):
                if outs is None:
                    outs = [None] * step.nout
                if outs[o] is None:
                    outs[o] = datas[p]
        if outs is None:
            return step.kernel(datas, step.shape)
        self.donations += 1
        return step.kernel(datas, step.shape, outs)

    cdef list _arrays(self, list inputs, bint evaluate_now):
        """Replay over arrays: lazy graph nodes, or (``evaluate_now``) nodes computed at once."""
        cdef list values = [None] * self.n_slots
        cdef Py_ssize_t i, k, n_in = self.n_inputs
        cdef Step step
        cdef list ins
        cdef tuple tins
        cdef object a, x, prim, node, impl
        cdef bint tracer
        for i in range(n_in):
            values[i] = inputs[i]
        for i in range(len(self.consts)):
            values[n_in + i] = self.consts[i]
        for step in self.steps:
            ins = [values[i] for i in step.args]
            prim = step.prim
            impl = step.impl
            if self.shapeless:
                if step.broadcast_operands:
                    self._broadcast(step, ins, evaluate_now)
                tins = tuple(ins)
                if prim.relative:     # the concrete node for these inputs' shapes
                    prim, tins = prim.resolve(tins)
                    if evaluate_now:
                        impl = registry.implementation(type(prim), _device(step.stream))
                if step.nout == 1:
                    outs = [Array.make(prim, tins, step.stream)]
                else:
                    outs = Array.make_multi(prim, tins, step.stream)
            else:
                tins = tuple(ins)
                tracer = False
                for x in tins:
                    if x._tracer:
                        tracer = True
                        break
                if step.nout == 1:
                    outs = [_make(step.shape, step.dtypes[0], prim, tins, step.stream, None,
                                  tracer)]
                else:
                    outs = []
                    for k in range(step.nout):
                        a = _make(step.node.siblings[k]._shape, step.dtypes[k], prim, (),
                                  step.stream, None, tracer)
                        a._pos = k
                        a._inputs = tins
                        outs.append(a)
                    for x in tins:        # one read per input for the whole group
                        x._readers += 1
                    sib = tuple(outs)
                    for a in outs:
                        a._siblings = sib
            if evaluate_now:
                node = outs[0]
                if step.kernel is not None and step.nout == 1 and prim.elementwise:
                    res = step.kernel([x._data for x in tins], node._shape)
                else:
                    res = impl(prim, [x._data for x in tins], node)
                for x in tins:
                    x._readers -= 1
                for k in range(step.nout):
                    a = outs[k]
                    a._data = res[k]
                    a._prim = None
                    a._inputs = ()
                    a._siblings = None
            for k in range(step.nout):
                values[step.out + k] = outs[k]
            for i in step.release:
                values[i] = None
        return self._outputs(values, inputs, False)

    cdef _broadcast(self, Step step, list ins, bint evaluate_now):
        """Broadcasts an element-wise step's operands to their common shape (shapeless)."""
        cdef list shapes = [x._shape for x in ins]
        cdef Py_ssize_t i
        first = shapes[0]
        for s in shapes:
            if s != first:
                break
        else:
            return
        shape = broadcast_shape(shapes, step.prim.name)
        for i in range(len(ins)):
            x = ins[i]
            if x._shape == shape:
                continue
            slot = step.args[i]
            cached = None
            if self.n_inputs <= slot < self.n_inputs + len(self.consts):
                cached = self.views.get((slot, shape))
            if cached is None:
                if evaluate_now or x._data is not None:
                    cached = _make(shape, x._dtype, None, (), x._stream,
                                   _broadcast_to(x._data, shape), False)
                else:
                    cached = Array.make(Broadcast(shape), (x,), x._stream)
                if self.n_inputs <= slot < self.n_inputs + len(self.consts) and \
                        cached._data is not None:
                    if len(self.views) >= 64:
                        self.views.clear()
                    self.views[(slot, shape)] = cached
            ins[i] = cached

    cpdef list _outputs(self, list values, list inputs, bint raw):
        """Fresh output arrays, as the function returns them: output j is the same object as
        output ``plan[j] >= 0`` where the function returned one object twice; ``-2``: the
        input itself (the function returned its argument); otherwise a new array (over the
        step's data, or a constant's, or an input's: one value computed once by CSE but
        returned as two arrays gives two). ``raw``: ``values`` holds the steps' backend data
        (the eager replay's, or a backend executable's, which calls this through the
        object), else arrays."""
        cdef list out = []
        cdef Py_ssize_t j, slot, plan, n_in = self.n_inputs, n_c = len(self.consts)
        cdef object v, a, c
        cdef dict taken = None
        if self.dup_outputs:
            taken = {}
        for j in range(len(self.outputs)):
            plan = self.out_plan[j]
            if plan >= 0:
                out.append(out[plan])
                continue
            slot = self.outputs[j]
            if slot < n_in:
                v = inputs[slot]
                if plan == -2:
                    a = v
                else:
                    a = _fresh(v)
            elif slot < n_in + n_c:
                c = self.consts[slot - n_in]
                a = c if c._data is None else _fresh(c)
            else:
                v = values[slot]
                if raw:
                    a = _make(v.shape, self.out_dtypes[j], None, (), self.stream, v, False)
                else:
                    a = v
                    if taken is not None:
                        if slot in taken:
                            a = _fresh(v)
                        taken[slot] = True
            out.append(a)
        return out


cdef object _fresh(object v):
    """A new array with the value of ``v`` (sharing its data, or a copy node if lazy)."""
    if v._data is not None:
        return _make(v._shape, v._dtype, None, (), v._stream, v._data, False)
    return Array.make(Copy(), (v,), v._stream)


cdef bint _donatable(object d, object base):
    """Whether the replay holds the only reference to ``d`` (one: the ``datas`` list) and
    ``d`` holds the only reference to its memory (a ``base``: the backend's buffer-cache
    buffer, not a view)."""
    if type(d) is not _ndarray or Py_REFCNT(d) != 2:   # ``datas`` + this call's argument
        return False
    b = (<object>d).base
    if type(b) is not base or Py_REFCNT(b) != 2:       # ``d.base`` + the local ``b``
        return False
    return (<object>d).flags.c_contiguous and (<object>d).flags.writeable
