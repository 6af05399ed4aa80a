# cython: language_level=3
"""The replay loop of a compiled tape's CPU executable (``executable.py`` plans it).

Each step is an ``Op``: an element-wise kernel (``ELT``: its launch filled once and replayed
with the step's operand pointers, ``_eltwise.run_launch``), a product (``GEMM``: planned once,
``_gemm.run_product``), a row reduction (``ROW``: ``_rows.reduce_rows``), a float32 logsumexp
(``LSE``: ``_rows.logsumexp_rows_at``, NumPy's log in place, the shift added), a
``take_along_axis`` or its additive scatter (``GATHER_AXIS``, ``SCATTER_AXIS``: loops here), a
view (``VIEW``: its operand's address), or a Python implementation (``PY``). The operands' data pointers are
a table per slot: inputs filled at the call, constants and the arena's slots fixed, results of
``PY`` steps and new outputs filled as they are made. An op binds at its first run (from the
operands it saw, whose layouts stay: the inputs' are checked at each call, a ``PY`` step's
result is checked as it is made); where a layout differs it runs through the generic path on
that call (the launcher's checks, the step's own product or implementation).

    ex = Executable(tape, planner)      # planner(tape) -> executable.Plan
    outs = ex(inputs)                   # the evaluated output arrays
"""
cimport cython
cimport numpy as cnp
from cpython.ref cimport PyObject
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uintptr_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from nuvec.backends.cpu._allocator cimport empty_nd
from nuvec.backends.cpu._eltwise cimport (
    fill_launch, nogil_min, nv_bcast_fn, nv_kernel_fn, nv_launch_t, run_launch,
)
from nuvec.backends.cpu._gemm cimport gemm_plan_t, plan_product, run_product
from nuvec.backends.cpu._rows cimport logsumexp_rows_at, reduce_rows
from nuvec.core._array cimport ArrayBase

import threading

import numpy as np

from nuvec.backends.cpu import blas

cnp.import_array()

cdef object _ndarray = np.ndarray
cdef object _get_ident = threading.get_ident
cdef object _float32 = np.dtype(np.float32)


# NumPy's log, called in place on a logsumexp's sums: the eager implementation's bits (a ufunc's
# loop table is NumPy's internal layout, which changes between versions, so it is not read here)
cdef object _np_log = np.log
cdef object _errstate = np.errstate

# op kinds
cdef enum:
    ELT = 0
    GEMM = 1
    PY = 2
    VIEW = 3        # a view of its operand at its address (transpose, reshape, ...)
    ROW = 4         # a row kernel's reduction (sum, max, min: _rows.reduce_rows)
    LSE = 5         # a float32 logsumexp over the innermost axis
    GATHER_AXIS = 6     # take_along_axis
    SCATTER_AXIS = 7    # put_along_axis, adding
# where an ELT or GEMM output goes
cdef enum:
    ARENA = 0       # a fixed place in the arena
    NEW = 1         # a new buffer each call (an output of the tape)
    INTO = 2        # INTO + p: the op's operand p (addmm's bias add into the product, an
                    # output over its dying operand)
# the most axes a bound launch keeps after coalescing (more: the generic launcher each time)
cdef enum:
    MAX_BOUND_DIMS = 8
    MAX_OPS_ARGS = 32
    MAX_DIMS = 32           # of an input (more: the steps' own replay)


@cython.final
cdef class Op:
    """One planned step (see the module docstring)."""
    cdef int kind, nin, nout, out
    cdef int args[MAX_OPS_ARGS]
    cdef int dest[MAX_OPS_ARGS]
    cdef tuple pargs, release, checked, shape, perm
    cdef list descrs, read_by_c
    cdef object kernel, wrapper, impl, prim, node
    cdef cnp.npy_intp dims[MAX_DIMS]
    cdef int nd
    cdef bint bound             # planned from a first run (VIEW: the result was a view)
    cdef bint failed            # cannot be bound: the generic path on every call
    cdef bint eager             # VIEW: its result is read as an array (not only by address)
    # ROW: the job
    cdef int what
    cdef bint f64
    cdef int64_t rn, rrows
    # LSE: the shifted-exp kernel, the rows' shifts
    cdef uintptr_t shifted_exp
    cdef object shifts
    # GATHER_AXIS, SCATTER_AXIS: the operands as (outer, axis, inner) blocks
    cdef int64_t outer, alen, ilen, inner
    cdef int elsize             # the data's element size
    cdef bint idx64
    # a bound ELT launch
    cdef nv_kernel_fn fn
    cdef nv_bcast_fn bfn
    cdef int ndim
    cdef int64_t size, grain
    cdef int64_t lshape[MAX_BOUND_DIMS]
    cdef int64_t lstrides[MAX_OPS_ARGS][MAX_BOUND_DIMS]
    cdef int64_t itemsize[MAX_OPS_ARGS]
    # a bound GEMM
    cdef gemm_plan_t gp


cdef inline char *_ptr(object a):
    return <char *>cnp.PyArray_DATA(<cnp.ndarray>a)


@cython.final
cdef class Executable:
    """A tape's CPU executable (see the module docstring and ``executable.py``)."""
    cdef object tape, planner, lock, arena
    cdef object tape_outputs        # the tape's ``_outputs``, bound once
    cdef Py_ssize_t n_in, n_slots, arena_lo, arena_hi
    cdef list template, ops, in_layouts, py_layouts
    cdef dict views             # slot -> the VIEW op making it
    cdef tuple read_inputs, step_outputs
    cdef char **base_ptrs
    cdef char **ptrs
    cdef int64_t *in_strides    # per input: its dimensions and strides at the first call
    cdef char *odd
    cdef bint after_blas
    cdef public object plan
    cdef public Py_ssize_t calls, plain_replays, donations
    cdef public object last_plain_replay

    def __init__(self, tape, planner):
        self.tape = tape
        self.planner = planner
        self.lock = threading.Lock()
        self.n_in = tape.n_inputs
        self.n_slots = tape.n_slots
        self.in_layouts = None
        self.ops = None
        self.after_blas = blas._WORKERS > 0
        self.base_ptrs = <char **>malloc(max(self.n_slots, 1) * sizeof(char *))
        self.ptrs = <char **>malloc(max(self.n_slots, 1) * sizeof(char *))
        self.odd = <char *>malloc(max(self.n_slots, 1))
        self.in_strides = <int64_t *>malloc(max(self.n_in, 1) * (MAX_DIMS + 1) * sizeof(int64_t))
        if self.base_ptrs == NULL or self.ptrs == NULL or self.odd == NULL or \
                self.in_strides == NULL:
            raise MemoryError("executable: no memory for its pointer tables")
        self.calls = self.plain_replays = 0
        self.last_plain_replay = None

    def __dealloc__(self):
        free(self.base_ptrs)
        free(self.ptrs)
        free(self.odd)
        free(self.in_strides)

    def stateful(self, int n_state):
        """The tape's steps were wrapped for a stateful step's in-place updates
        (``compile.inplace``): plan again, so that the ops call the wrappers."""
        with self.lock:
            self.ops = None         # planned again at the next call

    cdef _build(self):
        """Plans the tape as its steps are now (at the first call: the tape is complete)."""
        cdef Py_ssize_t s
        cdef Op op
        tape = self.tape
        self.read_inputs = tape.read_inputs
        first_step = self.n_in + len(tape.consts)
        self.step_outputs = tuple(sorted({s for s in tape.outputs if s >= first_step}))
        self.tape_outputs = tape._outputs
        plan = self.planner(tape)
        self.plan = plan
        self.arena = plan.arena
        self.arena_lo = <Py_ssize_t>_ptr(plan.arena) if plan.arena.size else 0
        self.arena_hi = self.arena_lo + plan.arena.size
        self.template = list(plan.template)
        for s in range(self.n_slots):
            v = self.template[s]
            self.base_ptrs[s] = _ptr(v) if type(v) is _ndarray else NULL
        self.py_layouts = [None] * self.n_slots
        self.donations = plan.donations
        self.views = {}
        self.ops = []
        for p in plan.ops:
            op = Op()
            op.kind = p.kind
            op.pargs = p.args
            op.nin = len(p.args)
            op.nout = p.nout
            op.out = p.out
            for s in range(min(op.nin, MAX_OPS_ARGS)):     # (PY ops read ``pargs``)
                op.args[s] = p.args[s]
            for s in range(min(len(p.dest), MAX_OPS_ARGS)):
                op.dest[s] = p.dest[s]
            op.release = p.release
            op.checked = p.checked
            op.shape = p.shape
            op.nd = len(p.shape)
            for s in range(min(op.nd, MAX_DIMS)):          # (the plan keeps larger to PY)
                op.dims[s] = p.shape[s]
            op.descrs = p.descrs
            op.perm = p.perm
            op.read_by_c = p.read_by_c
            op.kernel = p.kernel
            op.wrapper = p.wrapper
            op.impl = p.impl
            op.prim = p.prim
            op.node = p.node
            op.bound = op.failed = False
            op.eager = p.eager
            op.what = p.what
            op.f64 = p.f64
            op.rn = p.rn
            op.rrows = p.rrows
            op.shifted_exp = p.shifted_exp
            if op.kind == LSE:
                op.shifts = np.empty(max(p.rrows, 1), np.float32)
            if p.along:
                op.outer, op.alen, op.ilen, op.inner = p.along
            op.elsize = p.itemsize
            op.idx64 = p.idx64
            self.ops.append(op)
            if op.kind == VIEW:
                self.views[op.out] = op

    def unbound(self) -> int:
        """How many ops run through their generic path on every call (no launch, product or
        address could be bound from their first run)."""
        cdef Op op
        cdef Py_ssize_t n = 0
        for op in self.ops or ():
            n += op.failed
        return n

    def __call__(self, list inputs):
        if not self.lock.acquire(False):
            return self._plain(inputs, "another thread is running the executable")
        try:
            return self._run(inputs)
        finally:
            self.lock.release()

    cdef list _plain(self, list inputs, str why):
        self.plain_replays += 1
        self.last_plain_replay = why
        return self.tape.replay_data(inputs)

    cdef bint _inputs_fit(self, list inputs, list values):
        """Fills the inputs' values and pointers; False where an input read by a step is not
        a NumPy array laid out as at the first call (dtype and strides: the shapes are the
        cache key's)."""
        cdef Py_ssize_t i, d, nd
        cdef object x
        cdef cnp.npy_intp *st
        cdef int64_t *rec
        first = self.in_layouts is None
        if first:
            self.in_layouts = [None] * self.n_in
        for i in range(self.n_in):
            values[i] = (<ArrayBase>inputs[i])._data
        for i in self.read_inputs:
            x = values[i]
            if type(x) is not _ndarray or (first and cnp.PyArray_NDIM(<cnp.ndarray>x) > MAX_DIMS):
                if first:
                    self.in_layouts = None      # recorded at a later call
                return False
            nd = cnp.PyArray_NDIM(<cnp.ndarray>x)
            st = cnp.PyArray_STRIDES(<cnp.ndarray>x)
            rec = self.in_strides + i * (MAX_DIMS + 1)
            if first:
                self.in_layouts[i] = x.dtype
                rec[0] = nd
                for d in range(nd):
                    rec[d + 1] = st[d]
            else:
                if rec[0] != nd or <PyObject *>cnp.PyArray_DESCR(<cnp.ndarray>x) != \
                        <PyObject *>self.in_layouts[i]:
                    if rec[0] != nd or x.dtype != self.in_layouts[i]:
                        return False
                for d in range(nd):
                    if rec[d + 1] != st[d]:
                        return False
            self.ptrs[i] = _ptr(x)
        return True

    cdef list _run(self, list inputs):
        cdef list values
        cdef Op op
        if self.ops is None:
            self._build()
        values = list(self.template)
        memcpy(self.ptrs, self.base_ptrs, self.n_slots * sizeof(char *))
        if not self._inputs_fit(inputs, values):
            return self._plain(inputs, "an input is laid out differently from the first call's")
        memset(self.odd, 0, self.n_slots)
        me = _get_ident()
        for op in self.ops:
            if op.kind == ELT:
                self._elt(op, values, me)
            elif op.kind == GEMM:
                self._gemm(op, values)
            elif op.kind == VIEW:
                self._view(op, values)
            elif op.kind == ROW:
                self._row(op, values)
            elif op.kind == LSE:
                self._lse(op, values)
            elif op.kind == GATHER_AXIS or op.kind == SCATTER_AXIS:
                self._along(op, values)
            else:
                self._py(op, values)
            for s in op.release:
                values[<Py_ssize_t>s] = None
        self.calls += 1
        if self.donations:
            self.tape.donations += self.donations
        return self._outputs(values, inputs)

    cdef bint _fits(self, Op op):
        """Whether the op's bound launch holds for this call's operands."""
        cdef object s
        if not op.bound:
            return False
        for s in op.checked:
            if self.odd[<Py_ssize_t>s]:
                return False
        return True

    cdef object _dest(self, Op op, Py_ssize_t o, list values, object donated):
        """The array output ``o`` goes into (ARENA: its view; NEW: a new buffer, or the
        state input a stateful step lends it; INTO + p: operand p)."""
        cdef int d = op.dest[o]
        if d == ARENA:
            return values[op.out + o]
        if d >= INTO:
            return values[op.args[d - INTO]]
        if donated is not None:
            for pair in donated:
                if pair[1] == o:
                    return values[op.args[<Py_ssize_t>pair[0]]]
        return empty_nd(op.nd, op.dims, <cnp.dtype>op.descrs[o])

    cdef _elt(self, Op op, list values, object me):
        cdef nv_launch_t L
        cdef int64_t size
        cdef int a, o, d
        cdef Py_ssize_t slot
        cdef list outs
        donated = None
        w = op.wrapper
        if w is not None:       # compile.inplace: this call may write into a state input
            armed = w.armed
            if armed and w.thread == me:
                donated = armed
                w.uses += 1
        if self._fits(op):
            L.fn = op.fn
            L.bfn = op.bfn
            L.nin = op.nin
            L.nargs = op.nin + op.nout
            L.ndim = op.ndim
            for d in range(op.ndim):
                L.shape[d] = op.lshape[d]
            for a in range(L.nargs):
                L.itemsize[a] = op.itemsize[a]
                for d in range(op.ndim):
                    L.strides[a][d] = op.lstrides[a][d]
            for a in range(op.nin):
                L.ptr[a] = self.ptrs[op.args[a]]
            for o in range(op.nout):
                slot = op.out + o
                if op.dest[o] == NEW:
                    arr = self._dest(op, o, values, donated)
                    values[slot] = arr
                    self.ptrs[slot] = _ptr(arr)
                elif op.dest[o] >= INTO:
                    values[slot] = values[op.args[op.dest[o] - INTO]]
                    self.ptrs[slot] = self.ptrs[op.args[op.dest[o] - INTO]]
                L.ptr[op.nin + o] = self.ptrs[slot]
            size = op.size
        else:
            datas = [self._value(values, <Py_ssize_t>s) for s in op.pargs]
            outs = [self._dest(op, o, values, donated) for o in range(op.nout)]
            keep = []
            outs = fill_launch(op.kernel, datas, op.shape, outs, &L, keep, &size)
            for o in range(op.nout):
                slot = op.out + o
                values[slot] = outs[o]
                self.ptrs[slot] = _ptr(outs[o])
            if not op.bound and not op.failed and self._fits_first(op):
                if L.ndim <= MAX_BOUND_DIMS:
                    self._bind(op, &L, size)
                else:
                    self._unbindable(op)
        if size == 0:
            return
        if size >= nogil_min():
            with nogil:
                run_launch(&L, size, op.grain)
        else:
            run_launch(&L, size, op.grain)

    cdef bint _fits_first(self, Op op):
        """Whether the operands of this call may bind the op (no odd layout among them)."""
        cdef object s
        for s in op.checked:
            if self.odd[<Py_ssize_t>s]:
                return False
        return True

    cdef void _bind(self, Op op, nv_launch_t *L, int64_t size):
        cdef int a, d
        op.fn = L.fn
        op.bfn = L.bfn
        op.ndim = L.ndim
        op.size = size
        op.grain = op.kernel.grain
        for d in range(L.ndim):
            op.lshape[d] = L.shape[d]
        for a in range(L.nargs):
            op.itemsize[a] = L.itemsize[a]
            for d in range(L.ndim):
                op.lstrides[a][d] = L.strides[a][d]
        op.bound = True

    cdef _gemm(self, Op op, list values):
        cdef Py_ssize_t slot = op.out
        cdef char *pa
        cdef char *pb
        cdef char *pc
        cdef int status
        dest = self._dest(op, 0, values, None)
        values[slot] = dest
        self.ptrs[slot] = _ptr(dest)
        if not self._fits(op):
            a = self._value(values, op.args[0])
            b = self._value(values, op.args[1])
            c = dest if op.perm is None else dest.transpose(op.perm)
            if op.bound or op.failed or not self._fits_first(op):
                blas.matmul(a, b, c)        # the operands of this call, as they are
                return
            if plan_product(a, b, c, &op.gp) != 1:
                self._unbindable(op)
                blas.matmul(a, b, c)        # NumPy's matmul where BLAS cannot take it
                return
            op.bound = True
            pa, pb = _ptr(a), _ptr(b)
        else:
            pa, pb = self.ptrs[op.args[0]], self.ptrs[op.args[1]]
        pc = self.ptrs[slot]
        with nogil:
            status = run_product(&op.gp, pa, pb, pc)
        if status < 0:
            raise MemoryError(f"matmul: no memory for the pointers of a batch of {op.gp.nb}")
        if self.after_blas:
            blas.after_call()

    cdef object _value(self, list values, Py_ssize_t slot):
        """The array of ``slot``; a VIEW that ran by address only is made now (its operand is
        kept in ``values`` for as long as the view is: the plan's releases)."""
        cdef Op op
        v = values[slot]
        if v is None and slot in self.views:
            op = self.views[slot]
            v = op.impl(op.prim, [self._value(values, op.args[0])], op.node)[0]
            values[slot] = v
        return v

    cdef _unbindable(self, Op op):
        """The op takes the generic path on every call: the views it reads must be made."""
        op.failed = True
        for s in op.pargs:
            self._needs_value(<Py_ssize_t>s)

    cdef _needs_value(self, Py_ssize_t slot):
        """A VIEW's result (and its operand's, if a VIEW's too) is made as an array."""
        cdef Op op = self.views.get(slot)
        while op is not None and not op.eager:
            op.eager = True
            op = self.views.get(op.args[0])

    cdef _view(self, Op op, list values):
        """A view at its operand's address once a first run showed that it is one (and the
        operand's layout is the first call's); else its implementation."""
        cdef Py_ssize_t src = op.args[0], slot = op.out
        if op.bound and not op.eager and not self.odd[src]:
            self.ptrs[slot] = self.ptrs[src]
            return
        first = self.py_layouts[slot] is None
        self._py(op, values)
        if op.bound or op.failed:
            return
        if first and not self.odd[src] and self.ptrs[slot] == self.ptrs[src]:
            op.bound = True
        else:
            self._unbindable(op)

    cdef _row(self, Op op, list values):
        cdef Py_ssize_t slot = op.out, src = op.args[0]
        cdef char *px
        dest = self._dest(op, 0, values, None)
        values[slot] = dest
        self.ptrs[slot] = _ptr(dest)
        if not self._fits(op):
            x = self._value(values, src)
            if (op.bound or op.failed or not self._fits_first(op) or type(x) is not _ndarray
                    or not x.flags.c_contiguous):
                if not op.bound:
                    self._unbindable(op)
                r = op.impl(op.prim, [x], op.node)[0]
                np.copyto(dest, r)
                return
            op.bound = True
        px = self.ptrs[src]
        if op.rn * op.rrows >= nogil_min():
            with nogil:
                reduce_rows(op.what, op.f64, px, self.ptrs[slot], op.rn, op.rrows)
        else:
            reduce_rows(op.what, op.f64, px, self.ptrs[slot], op.rn, op.rrows)

    cdef bint _binds(self, Op op, list arrays):
        """Whether a LSE, GATHER_AXIS or SCATTER_AXIS op that does not fit this call (``_fits``)
        binds now: at its first run, from C-contiguous NumPy operands (of the plan's dtypes),
        none laid out oddly; an op that cannot runs its implementation on every call. A bound
        op whose operands are laid out otherwise on this call does not (its implementation
        runs on this call)."""
        if op.bound or op.failed:
            return False
        if self._fits_first(op):
            for x in arrays:
                if type(x) is not _ndarray or not (<cnp.ndarray>x).flags.c_contiguous:
                    break
            else:
                op.bound = True
                return True
        self._unbindable(op)
        return False

    cdef _run_impl(self, Op op, list values, object dest):
        """The op's implementation on this call's operands, its result copied to ``dest``."""
        datas = [self._value(values, <Py_ssize_t>s) for s in op.pargs]
        np.copyto(dest, op.impl(op.prim, datas, op.node)[0])

    cdef _lse(self, Op op, list values):
        """``reduction._logsumexp`` of C-contiguous float32 rows: ``_rows``' one pass per row
        (the shift, the sum of the shifted exponentials), NumPy's log of the sums in place, the
        shift added (it is finite: a row's max, or 0)."""
        cdef Py_ssize_t slot = op.out, r
        cdef float *out
        cdef const float *shifts
        cdef int failed
        dest = self._dest(op, 0, values, None)
        values[slot] = dest
        self.ptrs[slot] = _ptr(dest)
        if not self._fits(op):
            x = self._value(values, op.args[0])
            if x.dtype != _float32 or not self._binds(op, [x]):
                if not op.bound and not op.failed:
                    self._unbindable(op)
                self._run_impl(op, values, dest)
                return
        out = <float *>self.ptrs[slot]
        shifts = <const float *>_ptr(op.shifts)
        if op.rn * op.rrows >= nogil_min():
            with nogil:
                failed = logsumexp_rows_at(self.ptrs[op.args[0]], <char *>out, <char *>shifts,
                                           op.rn, op.rrows, op.shifted_exp)
        else:
            failed = logsumexp_rows_at(self.ptrs[op.args[0]], <char *>out, <char *>shifts,
                                       op.rn, op.rrows, op.shifted_exp)
        if failed:
            raise MemoryError("logsumexp: no memory for a row's exponentials")
        # a row of -inf (log(0)) or NaN is taken quietly, as eagerly; the errstate context
        # costs a few microseconds, so only such rows pay it
        for r in range(op.rrows):
            if not out[r] > 0:
                with _errstate(divide="ignore", invalid="ignore"):
                    _np_log(dest, out=dest)
                break
        else:
            _np_log(dest, out=dest)
        for r in range(op.rrows):
            out[r] = out[r] + shifts[r]

    cdef _along(self, Op op, list values):
        """``take_along_axis`` (GATHER_AXIS) or ``put_along_axis`` adding into a copy of its
        first operand (SCATTER_AXIS) over C-contiguous operands; an index out of bounds runs
        the implementation, which raises its error (nothing was written)."""
        cdef Py_ssize_t slot = op.out
        cdef bint ok
        dest = self._dest(op, 0, values, None)
        values[slot] = dest
        self.ptrs[slot] = _ptr(dest)
        if not self._fits(op):
            arrays = [self._value(values, <Py_ssize_t>s) for s in op.pargs]
            if not self._binds(op, arrays):
                self._run_impl(op, values, dest)
                return
        if op.kind == GATHER_AXIS:
            ok = _take_along(self.ptrs[op.args[0]], self.ptrs[op.args[1]], self.ptrs[slot],
                             op.outer, op.alen, op.ilen, op.inner, op.elsize, op.idx64)
        else:
            ok = _add_along(self.ptrs[op.args[0]], self.ptrs[op.args[1]],
                            self.ptrs[op.args[2]], self.ptrs[slot], op.outer, op.alen,
                            op.ilen, op.inner, op.elsize == 8, op.idx64)
        if not ok:
            self._run_impl(op, values, dest)

    cdef _py(self, Op op, list values):
        cdef Py_ssize_t slot, o
        datas = [self._value(values, <Py_ssize_t>s) for s in op.pargs]
        res = op.impl(op.prim, datas, op.node)
        for o in range(op.nout):
            slot = op.out + o
            v = res[o]
            if op.read_by_c[o]:
                if type(v) is not _ndarray:
                    v = np.asarray(v)
                lay = (v.dtype, v.shape, v.strides)
                rec = self.py_layouts[slot]
                if rec is None:
                    self.py_layouts[slot] = lay
                elif rec != lay:
                    self.odd[slot] = 1
                self.ptrs[slot] = _ptr(v)
            values[slot] = v

    cdef list _outputs(self, list values, list inputs):
        """The output arrays (``Tape._outputs`` makes them from the steps' data); a value over
        the arena (a view a Python step made of an intermediate) is copied first."""
        cdef Py_ssize_t slot, p
        for slot in self.step_outputs:
            v = values[slot]
            if type(v) is _ndarray:
                p = <Py_ssize_t>_ptr(v)
                if self.arena_lo <= p < self.arena_hi:
                    values[slot] = v.copy()
        return self.tape_outputs(values, inputs, True)


cdef inline int64_t _index(const char *idx, int64_t t, bint idx64) noexcept nogil:
    if idx64:
        return (<const int64_t *>idx)[t]
    return (<const int32_t *>idx)[t]


cdef bint _in_bounds(const char *idx, int64_t count, int64_t n, bint idx64) noexcept nogil:
    cdef int64_t t, j
    for t in range(count):
        j = _index(idx, t, idx64)
        if j < -n or j >= n:
            return False
    return True


cdef inline int64_t _along_at(const char *idx, int64_t at, int64_t o, int64_t i, int64_t n,
                              int64_t inner, bint idx64) noexcept nogil:
    """The element of the indexed array that index ``at``, at (o, ., i), names: its offset in
    an (outer, n, inner) array, a negative index counted from the end."""
    cdef int64_t j = _index(idx, at, idx64)
    if j < 0:
        j += n
    return (o * n + j) * inner + i


cdef bint _take_along(const char *a, const char *idx, char *out, int64_t outer, int64_t n,
                      int64_t k, int64_t inner, int itemsize, bint idx64) noexcept nogil:
    """``out[o, t, i] = a[o, idx[o, t, i], i]`` (negative indices from the end); False, with
    nothing written, where an index is out of bounds."""
    cdef int64_t o, t, i, at = 0, src
    if not _in_bounds(idx, outer * k * inner, n, idx64):
        return False
    for o in range(outer):
        for t in range(k):
            for i in range(inner):
                src = _along_at(idx, at, o, i, n, inner, idx64)
                if itemsize == 4:
                    (<int32_t *>out)[at] = (<const int32_t *>a)[src]
                elif itemsize == 8:
                    (<int64_t *>out)[at] = (<const int64_t *>a)[src]
                elif itemsize == 2:
                    (<int16_t *>out)[at] = (<const int16_t *>a)[src]
                else:
                    (<int8_t *>out)[at] = (<const int8_t *>a)[src]
                at += 1
    return True


cdef bint _add_along(const char *a, const char *idx, const char *u, char *out, int64_t outer,
                     int64_t n, int64_t k, int64_t inner, bint f64, bint idx64) noexcept nogil:
    """``out = a``, then ``out[o, idx[o, t, i], i] += u[o, t, i]`` one element after another
    in C order (``np.add.at``'s order, so its bits); False, with nothing written, where an
    index is out of bounds."""
    cdef int64_t o, t, i, at = 0, dst
    if not _in_bounds(idx, outer * k * inner, n, idx64):
        return False
    memcpy(out, a, outer * n * inner * (8 if f64 else 4))
    for o in range(outer):
        for t in range(k):
            for i in range(inner):
                dst = _along_at(idx, at, o, i, n, inner, idx64)
                if f64:
                    (<double *>out)[dst] = (<double *>out)[dst] + (<const double *>u)[at]
                else:
                    (<float *>out)[dst] = (<float *>out)[dst] + (<const float *>u)[at]
                at += 1
    return True
