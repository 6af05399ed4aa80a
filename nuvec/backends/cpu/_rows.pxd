# Declarations shared with _executable.pyx (cimport): row reductions on data pointers.
from libc.stdint cimport int64_t, uintptr_t

cdef enum:
    MIN, MAX, SUM, COLS, SOFTMAX, LOGSUMEXP, SOFTMAX_PRODUCT      # what a job computes

cdef void reduce_rows(int what, bint f64, const char *x, char *out, int64_t n,
                      int64_t rows) noexcept nogil

cdef int logsumexp_rows_at(const char *x, char *sums, char *shifts, int64_t n, int64_t rows,
                           uintptr_t shifted_exp) noexcept nogil
