# cython: language_level=3
"""Launch generated element-wise kernels on NumPy arrays (layout checks, outputs, threads).

A ``Kernel`` wraps the address of a generated C function (nuvec/codegen/dialects/c.py), and
of its ``NAME_bcast`` loops where it has them (``bcast_address``; 0 where not), with
the dtypes of its inputs and outputs. Calling it with input arrays and the result shape
checks and broadcasts the inputs (any strides: 0-stride, transposed, sliced, negative),
allocates C-contiguous outputs from the buffer cache, and runs the kernel, across threads
with the GIL released when the array is large::

    k = Kernel(address, ("float32", "float32"), ("float32",), grain=65536)
    (out,) = k([a, b], (1000, 1000))
"""
cimport cython
cimport numpy as cnp
from libc.stdint cimport int64_t, uint32_t, uintptr_t
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from nuvec.backends.cpu._allocator cimport empty_nd

import os

import numpy as np

from nuvec.backends.cpu.cores import usable_cpus

cnp.import_array()

cdef extern from "csrc/nv_eltwise.h":
    int64_t nv_launch_coalesce(nv_launch_t *L) noexcept nogil
    void nv_launch_run(nv_launch_t *L, int nthreads, int64_t grain) noexcept nogil
    int nv_free_threads(int want) noexcept nogil
    int nv_flush_supported() noexcept nogil
    void nv_use_openmp(void *parallel, void *thread_num, void *num_threads) noexcept nogil
    void nv_parallel_for(nv_range_fn fn, void *ctx, int64_t size, int nthreads, int64_t grain,
                         int flush_denormals) noexcept nogil

cdef extern from "numpy/arrayobject.h":
    int NV_EquivTypes "PyArray_EquivTypes" (cnp.PyArray_Descr *a, cnp.PyArray_Descr *b) noexcept

cdef int _nthreads = 1
# whether the count follows the load: the default, until a count is set (set_num_threads)
cdef bint _adaptive = True
# Cores other threads keep busy for a while (a BLAS library's workers spin after each call,
# see nuvec/backends/cpu/blas.py): until ``_shared_until`` (monotonic seconds) a launch uses
# at most ``_shared_threads`` threads, so that its workers do not queue behind them.
cdef double _shared_until = 0.0
cdef int _shared_threads = 1


cdef inline double _now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


def share_cores(double seconds, int threads) -> None:
    """Other threads occupy cores for the next ``seconds``: until then launches use at most
    ``threads`` threads (at least 1). A later call replaces an earlier one."""
    global _shared_until, _shared_threads
    _shared_threads = threads if threads > 1 else 1
    _shared_until = _now() + seconds


def use_openmp(size_t parallel, size_t thread_num, size_t num_threads) -> None:
    """Runs parallel launches on the OpenMP team of the runtime whose ``GOMP_parallel``,
    ``omp_get_thread_num`` and ``omp_get_num_threads`` are at these addresses (blas.py: the
    team MKL's matmuls run on); all 0: on nuvec's own threads again."""
    nv_use_openmp(<void *>parallel, <void *>thread_num, <void *>num_threads)


def threads_now() -> int:
    """How many threads a large launch would use now."""
    return _threads_now()


cdef int free_threads(int want) noexcept nogil:
    return nv_free_threads(want)


cdef inline int _threads_now() noexcept nogil:
    cdef int nt = _nthreads
    if _adaptive and nt > 1:
        nt = nv_free_threads(nt)    # fewer while other processes keep cores busy
    if nt > _shared_threads and _shared_until > 0.0 and _now() < _shared_until:
        nt = _shared_threads
    return nt


def _default_threads() -> int | None:
    """NUVEC_NUM_THREADS where it is set, else None (the usable CPUs, following the load)."""
    env = os.environ.get("NUVEC_NUM_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"NUVEC_NUM_THREADS must be an integer, got {env!r}") from None
    return None


def set_num_threads(n: int | None) -> int | None:
    """Sets how many threads large element-wise launches (and nuvec's row kernels) use;
    returns the previous setting. ``None`` is the default: the CPUs this process may use
    (affinity mask and cgroup quota, ``cores.usable_cpus``), fewer while other processes keep
    some of them busy. A number is used as it is.

    >>> from nuvec.backends.cpu import kernels
    >>> prev = kernels.set_num_threads(1)
    >>> kernels.get_num_threads()
    1
    >>> _ = kernels.set_num_threads(prev)
    """
    global _nthreads, _adaptive
    if n is not None and n < 1:
        raise ValueError(f"set_num_threads: need at least 1 thread, got {n}")
    prev = None if _adaptive else _nthreads
    if n is None:
        _nthreads, _adaptive = usable_cpus(), True
    else:
        _nthreads, _adaptive = n, False
    return prev


def get_num_threads() -> int:
    """The most threads a large launch uses (``threads_now`` says how many it would use now)."""
    return _nthreads


set_num_threads(_default_threads())


cdef bint _flush = False


def set_flush_denormals(bint on) -> bool:
    """The CPU's element-wise kernels (single ops and fused groups) treat subnormal inputs as
    zero and flush subnormal results to zero (``on``), or keep IEEE subnormals (the default).
    Returns False, changing nothing, where the processor has no such mode (x86's MXCSR only).
    NumPy's reductions, BLAS and GPU kernels are not affected.

    >>> import nuvec as nv
    >>> nv.set_flush_denormals(True)          # e.g. before a long Adam training run on x86
    True
    >>> (nv.array([1e-20]) * nv.array([1e-20])).item()
    0.0
    >>> nv.set_flush_denormals(False)
    True
    """
    global _flush
    if not nv_flush_supported():
        return False
    _flush = on
    return True


def flush_denormals() -> bool:
    """Whether element-wise kernels flush subnormals (``set_flush_denormals``)."""
    return _flush


cdef void parallel_for(nv_range_fn fn, void *ctx, int64_t size, int64_t grain) noexcept nogil:
    """``fn(ctx, start, end)`` over ``[0, size)`` on the threads (and in the denormal mode) that
    an element-wise launch would use now, in parts of at least ``grain``: nuvec's other C
    kernels (row reductions, _rows.pyx) share the launch threads this way."""
    nv_parallel_for(fn, ctx, size, _threads_now(), grain, _flush)


cdef int64_t coalesce(nv_launch_t *L) noexcept nogil:
    return nv_launch_coalesce(L)


cdef void run_launch(nv_launch_t *L, int64_t size, int64_t grain) noexcept nogil:
    """Runs a coalesced launch of ``size`` elements as ``Kernel`` does (its threads and
    denormal mode; one thread below ``NOGIL_MIN``): the compiled tape's executable calls its
    kernels this way (``executable.pyx``); release the GIL around it from ``NOGIL_MIN``."""
    L.flush_denormals = _flush
    if size < NOGIL_MIN:
        nv_launch_run(L, 1, grain)
    else:
        nv_launch_run(L, _threads_now(), grain)


# element counts below which the GIL is kept (releasing it costs more than the work)
cdef int64_t NOGIL_MIN = 16384


cdef int64_t nogil_min() noexcept nogil:
    return NOGIL_MIN


@cython.final
cdef class Kernel:
    """A generated element-wise kernel, callable on NumPy arrays (see the module docstring)."""
    cdef nv_kernel_fn fn
    cdef nv_bcast_fn bfn                 # NAME_bcast, or NULL
    cdef int nin, nout
    cdef readonly tuple in_descrs, out_descrs
    cdef readonly int64_t grain
    cdef readonly object name
    cdef readonly object source          # "prebuilt" or "jit"
    cdef object keepalive                # the loaded library, so the code stays mapped

    def __init__(self, uintptr_t address, tuple in_dtypes, tuple out_dtypes, int64_t grain,
                 name=None, source=None, keepalive=None, uintptr_t bcast_address=0):
        if address == 0:
            raise ValueError("Kernel: null function address")
        if len(in_dtypes) + len(out_dtypes) > NV_MAX_ARGS:
            raise ValueError(f"Kernel: at most {NV_MAX_ARGS} arrays, got "
                             f"{len(in_dtypes) + len(out_dtypes)}")
        self.fn = <nv_kernel_fn>address
        self.bfn = <nv_bcast_fn>bcast_address
        self.nin = len(in_dtypes)
        self.nout = len(out_dtypes)
        self.in_descrs = tuple(np.dtype(d) for d in in_dtypes)
        self.out_descrs = tuple(np.dtype(d) for d in out_dtypes)
        self.grain = grain
        self.name = name
        self.source = source
        self.keepalive = keepalive

    @property
    def address(self) -> int:
        return <uintptr_t>self.fn

    @property
    def bcast_address(self) -> int:
        """The address of the kernel's loops for one broadcast input (``NAME_bcast``), or 0."""
        return <uintptr_t>self.bfn

    def __repr__(self):
        return f"<Kernel {self.name} ({self.source})>"

    def __call__(self, inputs, shape, outs=None):
        """Run on ``inputs`` (broadcastable to ``shape``); returns a list of new outputs.

        ``outs`` (nv.compile's buffer donation) may give, per output, an array to write into
        instead: C-contiguous, writable, of ``shape`` and the output's dtype (else a new one is
        made). It may be one of the inputs (then exactly aliased: each element is read before
        it is written)."""
        if type(inputs) is not list:
            inputs = list(inputs)
        if type(shape) is not tuple:
            shape = tuple(shape)
        if outs is not None and type(outs) is not list:
            outs = list(outs)
        return self._run(<list>inputs, <tuple>shape, outs)

    cdef list _run(self, list inputs, tuple shape, list outs):
        cdef nv_launch_t L
        cdef list keep = []       # NumPy scalars viewed as 0-d arrays, alive until the launch
        cdef int64_t size
        cdef int nt
        outs = self.fill(inputs, shape, outs, &L, keep, &size)
        if size == 0:
            return outs
        if size < NOGIL_MIN:
            nv_launch_run(&L, 1, self.grain)
        else:
            nt = _threads_now()
            with nogil:
                nv_launch_run(&L, nt, self.grain)
        return outs

    cdef list fill(self, list inputs, tuple shape, list outs, nv_launch_t *L, list keep,
                   int64_t *size_out):
        """Checks the operands, makes the outputs (or takes ``outs``'), and fills and
        coalesces the launch ``L`` (``size_out``: its element count); returns the outputs.
        ``keep`` receives arrays that must stay alive until the launch has run."""
        cdef int nd = len(shape)
        cdef int i, d, k, and_
        cdef cnp.ndarray a
        cdef cnp.npy_intp dims[64]
        cdef cnp.npy_intp *ashape
        cdef cnp.npy_intp *astr
        cdef int64_t size = 1
        if len(inputs) != self.nin:
            raise ValueError(f"{self.name}: expected {self.nin} inputs, got {len(inputs)}")
        if nd > NV_MAX_DIMS:
            raise ValueError(f"{self.name}: {nd} dimensions, at most {NV_MAX_DIMS}")
        for d in range(nd):
            dims[d] = shape[d]
            if dims[d] < 0:
                raise ValueError(f"{self.name}: negative dimension in shape {shape}")
            L.shape[d] = dims[d]
            size *= dims[d]
        L.ndim = nd
        L.nin = self.nin
        L.nargs = self.nin + self.nout
        for i in range(self.nin):
            obj = inputs[i]
            if not cnp.PyArray_Check(obj) and isinstance(obj, np.generic):
                obj = np.asarray(obj)                     # a NumPy scalar: view it as 0-d
                keep.append(obj)                          # alive until the launch is done
            if not cnp.PyArray_Check(obj):
                raise TypeError(f"{self.name}: input {i} is {type(obj).__name__}, "
                                "expected a NumPy array")
            a = <cnp.ndarray>obj
            want = self.in_descrs[i]
            if <void *>cnp.PyArray_DESCR(a) != <void *>want and \
                    not NV_EquivTypes(cnp.PyArray_DESCR(a), <cnp.PyArray_Descr *>want):
                raise TypeError(f"{self.name}: input {i} has dtype {obj.dtype}, "
                                f"expected {want}")
            and_ = cnp.PyArray_NDIM(a)
            if and_ > nd:
                raise ValueError(f"{self.name}: input {i} of shape {obj.shape} has more "
                                 f"dimensions than the result {shape}")
            ashape = cnp.PyArray_DIMS(a)
            astr = cnp.PyArray_STRIDES(a)
            k = nd - and_
            for d in range(k):
                L.strides[i][d] = 0
            for d in range(and_):
                if ashape[d] == dims[k + d]:
                    L.strides[i][k + d] = astr[d] if ashape[d] != 1 else 0
                elif ashape[d] == 1:
                    L.strides[i][k + d] = 0
                else:
                    raise ValueError(f"{self.name}: input {i} of shape {obj.shape} does not "
                                     f"broadcast to {shape}")
            L.itemsize[i] = cnp.PyArray_ITEMSIZE(a)
            L.ptr[i] = <char *>cnp.PyArray_DATA(a)
        given = outs
        outs = []
        cdef cnp.ndarray o
        cdef int64_t st
        for k in range(self.nout):
            g = given[k] if given is not None else None
            if g is not None and cnp.PyArray_Check(g) and \
                    cnp.PyArray_ISCARRAY(<cnp.ndarray>g) and g.shape == shape and \
                    NV_EquivTypes(cnp.PyArray_DESCR(<cnp.ndarray>g),
                                  <cnp.PyArray_Descr *>self.out_descrs[k]):
                o = <cnp.ndarray>g
            else:
                o = <cnp.ndarray>empty_nd(nd, dims, <cnp.dtype>self.out_descrs[k])
            outs.append(o)
            i = self.nin + k
            L.itemsize[i] = cnp.PyArray_ITEMSIZE(o)
            L.ptr[i] = <char *>cnp.PyArray_DATA(o)
            st = L.itemsize[i]
            for d in range(nd - 1, -1, -1):
                L.strides[i][d] = st
                st *= dims[d]
        L.fn = self.fn
        L.bfn = self.bfn
        L.flush_denormals = _flush
        size_out[0] = size
        if size:
            nv_launch_coalesce(L)
        return outs


cdef list fill_launch(object kernel, list inputs, tuple shape, list outs, nv_launch_t *L,
                      list keep, int64_t *size):
    """``Kernel.fill`` of ``kernel`` (a Kernel): its launch on these operands, not run."""
    return (<Kernel?>kernel).fill(inputs, shape, outs, L, keep, size)
