# cython: language_level=3
"""Max / min and sums along the innermost axis of C-contiguous float32 / float64 arrays
(nv_rows.c): NumPy's values (signed zeros and NaN payloads, pairwise sums: see nv_rows.c),
several times NumPy's speed on short rows (softmax, logsumexp, cross-entropy, layer norm).

    from nuvec.backends.cpu._rows import extreme_rows, sum_rows
    extreme_rows(x, out, True)     # out.flat[r] = max of row r of x (out: x.size // n items)
    sum_rows(x, out)               # out.flat[r] = np.add.reduce(row r)
"""
from libc.stdint cimport int64_t

cdef extern from "csrc/nv_rows.h" nogil:
    void nv_rows_extreme_f32(const float *x, int64_t rows, int64_t n, int want_max, float *out)
    void nv_rows_extreme_f64(const double *x, int64_t rows, int64_t n, int want_max,
                             double *out)
    void nv_rows_sum_f32(const float *x, int64_t rows, int64_t n, float *out)
    void nv_rows_sum_f64(const double *x, int64_t rows, int64_t n, double *out)


cdef enum:
    MIN, MAX, SUM       # what _rows computes per row


cdef void _rows(x, out, int what):
    """One row kernel of nv_rows.c over x's innermost rows into out (see the callers)."""
    cdef int64_t n = x.shape[x.ndim - 1]
    cdef int64_t rows = x.size // n
    cdef const float[::1] xf
    cdef float[::1] of
    cdef const double[::1] xd
    cdef double[::1] od
    if x.dtype.itemsize == 4:
        xf = x.reshape(-1)
        of = out.reshape(-1)
        with nogil:
            if what == SUM:
                nv_rows_sum_f32(&xf[0], rows, n, &of[0])
            else:
                nv_rows_extreme_f32(&xf[0], rows, n, what == MAX, &of[0])
    else:
        xd = x.reshape(-1)
        od = out.reshape(-1)
        with nogil:
            if what == SUM:
                nv_rows_sum_f64(&xd[0], rows, n, &od[0])
            else:
                nv_rows_extreme_f64(&xd[0], rows, n, what == MAX, &od[0])


def extreme_rows(x, out, bint want_max) -> None:
    """Writes the max (``want_max``) or min of each innermost row of ``x`` into ``out``. Both
    C-contiguous, of one dtype (float32 or float64); rows of at least one element."""
    _rows(x, out, MAX if want_max else MIN)


def sum_rows(x, out) -> None:
    """Writes the sum of each innermost row of ``x`` into ``out`` with NumPy's pairwise bits.
    Both C-contiguous, of one dtype (float32 or float64); rows of at least one element."""
    _rows(x, out, SUM)


ctypedef fused real:
    float
    double


cdef void _add_rows(real[:, ::1] target, const int64_t[::1] idx,
                    const real[:, ::1] update) noexcept nogil:
    cdef Py_ssize_t j, c, width = target.shape[1]
    cdef real *row
    cdef const real *src
    for j in range(idx.shape[0]):
        row = &target[idx[j], 0]
        src = &update[j, 0]
        for c in range(width):
            row[c] = row[c] + src[c]


def add_rows(target, idx, update) -> None:
    """``target[idx[j]] += update[j]`` for j in order: ``np.add.at``'s order, so its bits.
    ``target`` (rows, width) and ``update`` (len(idx), width) C-contiguous, of one dtype
    (float32 or float64); ``idx`` int64 in [0, rows) (the caller checks)."""
    if target.dtype.itemsize == 4:
        _add_rows[float](target, idx, update)
    else:
        _add_rows[double](target, idx, update)
