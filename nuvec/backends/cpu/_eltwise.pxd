# Declarations shared with _rows.pyx, _gemm.pyx and _executable.pyx (cimport): the launch
# struct of the element-wise runtime and running work on the launch threads.
from libc.stdint cimport int64_t, uint32_t

cdef extern from "csrc/nv_eltwise.h":
    ctypedef void (*nv_range_fn)(void *ctx, int64_t start, int64_t end) noexcept nogil
    ctypedef void (*nv_kernel_fn)(int64_t n, char **p, const int64_t *s) noexcept nogil
    ctypedef int (*nv_bcast_fn)(int64_t n, char **p, uint32_t mask) noexcept nogil
    enum:
        NV_MAX_ARGS
        NV_MAX_DIMS
    ctypedef struct nv_launch_t:
        nv_kernel_fn fn
        nv_bcast_fn bfn
        int nin
        int nargs
        int ndim
        int64_t shape[64]
        int64_t strides[32][64]
        int64_t itemsize[32]
        char *ptr[32]
        int flush_denormals

cdef void parallel_for(nv_range_fn fn, void *ctx, int64_t size, int64_t grain) noexcept nogil

# how many of ``want`` threads to use now: fewer while other processes keep cores busy (_gemm.pyx)
cdef int free_threads(int want) noexcept nogil

# merges the launch's axes (nv_launch_coalesce); returns its size
cdef int64_t coalesce(nv_launch_t *L) noexcept nogil

# runs a coalesced launch as Kernel does (threads, denormal mode); NOGIL_MIN: release the GIL
cdef void run_launch(nv_launch_t *L, int64_t size, int64_t grain) noexcept nogil
# element counts from which a launch releases the GIL
cdef int64_t nogil_min() noexcept nogil

# a Kernel's launch on these operands (outputs made where ``outs`` gives none), coalesced, not
# run; ``keep`` receives arrays that must outlive the launch; returns the outputs
cdef list fill_launch(object kernel, list inputs, tuple shape, list outs, nv_launch_t *L,
                      list keep, int64_t *size)
