# Declarations shared with _rows.pyx (cimport): running a range of work on the launch threads.
from libc.stdint cimport int64_t

cdef extern from "csrc/nv_eltwise.h":
    ctypedef void (*nv_range_fn)(void *ctx, int64_t start, int64_t end) noexcept nogil

cdef void parallel_for(nv_range_fn fn, void *ctx, int64_t size, int64_t grain) noexcept nogil

# how many of ``want`` threads to use now: fewer while other processes keep cores busy (_gemm.pyx)
cdef int free_threads(int want) noexcept nogil
