# cython: language_level=3
"""Row reductions of C-contiguous float32 / float64 arrays (nv_rows.c), on the element-wise
launch threads: max / min and sums along the innermost axis, sums over the leading axes, and
float32 softmax and logsumexp rows. NumPy's values bit for bit (signed zeros and NaN payloads,
pairwise and column sums: see nv_rows.c), several times NumPy's speed on short rows (softmax,
logsumexp, cross-entropy, layer norm) and on bias gradients.

    from nuvec.backends.cpu._rows import extreme_rows, sum_rows, sum_cols
    extreme_rows(x, out, True)     # out.flat[r] = max of row r of x (out: x.size // n items)
    sum_rows(x, out)               # out.flat[r] = np.add.reduce(row r)
    sum_cols(x, out)               # out.flat[c] = np.add.reduce(x.reshape(-1, out.size))[c]
    softmax_rows(x, out, exp_address, divide_address)    # see reduction.py
    layer_norm_rows(x, w, b, eps, out)                   # see norm.py
"""
cimport numpy as cnp
from libc.stdint cimport int64_t, uintptr_t

from nuvec.backends.cpu._eltwise cimport parallel_for

cnp.import_array()

cdef extern from "csrc/nv_rows.h" nogil:
    ctypedef void (*nv_kernel_fn)(int64_t n, char **p, const int64_t *s) noexcept nogil
    void nv_rows_extreme_f32(const float *x, int64_t rows, int64_t n, int want_max, float *out)
    void nv_rows_extreme_f64(const double *x, int64_t rows, int64_t n, int want_max,
                             double *out)
    void nv_rows_sum_f32(const float *x, int64_t rows, int64_t n, float *out)
    void nv_rows_sum_f64(const double *x, int64_t rows, int64_t n, double *out)
    void nv_cols_sum_f32(const float *x, int64_t rows, int64_t cols, int64_t c0, int64_t c1,
                         float *out)
    void nv_cols_sum_f64(const double *x, int64_t rows, int64_t cols, int64_t c0, int64_t c1,
                         double *out)
    void nv_softmax_rows_f32(const float *x, int64_t n, int64_t r0, int64_t r1,
                             nv_kernel_fn shifted_exp, nv_kernel_fn divide, float *out)
    int nv_logsumexp_rows_f32(const float *x, int64_t n, int64_t r0, int64_t r1,
                              nv_kernel_fn shifted_exp, float *sums, float *shifts)
    void nv_scaled_softmax_rows_f32(const float *x, const float *mask, int nlead,
                                    const int64_t *lead, const int64_t *mask_step, int64_t n,
                                    float scale, int64_t r0, int64_t r1,
                                    nv_kernel_fn shifted_exp, nv_kernel_fn divide, float *out)
    int nv_norm_avx512()
    void nv_softmax_product_rows_f32(const float *y, const float *g, int64_t n, float scale,
                                     int64_t r0, int64_t r1, float *out)
    void nv_softmax_product_rows_f64(const double *y, const double *g, int64_t n, double scale,
                                     int64_t r0, int64_t r1, double *out)
    int nv_layer_norm_rows_f32(const float *x, const float *w, const float *b, int64_t n,
                               float eps, int64_t r0, int64_t r1, float *out)
    int nv_layer_norm_rows_f64(const double *x, const double *w, const double *b, int64_t n,
                               double eps, int64_t r0, int64_t r1, double *out)
    int nv_layer_norm_vjp_f32(const float *x, const float *w, const float *g, int64_t n,
                              float eps, int64_t rows, int64_t block, int64_t k0, int64_t k1,
                              float *dx, float *dw_part, float *db_part)
    int nv_layer_norm_vjp_f64(const double *x, const double *w, const double *g, int64_t n,
                              double eps, int64_t rows, int64_t block, int64_t k0, int64_t k1,
                              double *dx, double *dw_part, double *db_part)
    void nv_softmax_product_rows_f32_avx512(const float *y, const float *g, int64_t n,
                                            float scale, int64_t r0, int64_t r1, float *out)
    void nv_softmax_product_rows_f64_avx512(const double *y, const double *g, int64_t n,
                                            double scale, int64_t r0, int64_t r1, double *out)
    int nv_layer_norm_rows_f32_avx512(const float *x, const float *w, const float *b, int64_t n,
                               float eps, int64_t r0, int64_t r1, float *out)
    int nv_layer_norm_rows_f64_avx512(const double *x, const double *w, const double *b, int64_t n,
                               double eps, int64_t r0, int64_t r1, double *out)
    int nv_layer_norm_vjp_f32_avx512(const float *x, const float *w, const float *g, int64_t n,
                              float eps, int64_t rows, int64_t block, int64_t k0, int64_t k1,
                              float *dx, float *dw_part, float *db_part)
    int nv_layer_norm_vjp_f64_avx512(const double *x, const double *w, const double *g, int64_t n,
                              double eps, int64_t rows, int64_t block, int64_t k0, int64_t k1,
                              double *dx, double *dw_part, double *db_part)


ctypedef void (*product_f32)(const float *y, const float *g, int64_t n, float scale,
                             int64_t r0, int64_t r1, float *out) noexcept nogil
ctypedef void (*product_f64)(const double *y, const double *g, int64_t n, double scale,
                             int64_t r0, int64_t r1, double *out) noexcept nogil
ctypedef int (*ln_f32)(const float *x, const float *w, const float *b, int64_t n,
                       float eps, int64_t r0, int64_t r1, float *out) noexcept nogil
ctypedef int (*ln_f64)(const double *x, const double *w, const double *b, int64_t n,
                       double eps, int64_t r0, int64_t r1, double *out) noexcept nogil
ctypedef int (*ln_vjp_f32)(const float *x, const float *w, const float *g, int64_t n,
                           float eps, int64_t rows, int64_t block, int64_t k0, int64_t k1,
                           float *dx, float *dw_part, float *db_part) noexcept nogil
ctypedef int (*ln_vjp_f64)(const double *x, const double *w, const double *g, int64_t n,
                           double eps, int64_t rows, int64_t block, int64_t k0, int64_t k1,
                           double *dx, double *dw_part, double *db_part) noexcept nogil


ctypedef struct NormFns:            # nv_norm.c's functions, as built for this processor
    product_f32 product32
    product_f64 product64
    ln_f32 ln32
    ln_f64 ln64
    ln_vjp_f32 vjp32
    ln_vjp_f64 vjp64

cdef NormFns _fns


def use_avx512(bint on) -> bool:
    """Runs the layer norm and softmax-gradient rows through their AVX-512 build (``on``, where
    the processor has it: the default) or the baseline one (tests compare the two); returns
    whether the AVX-512 build is in use."""
    global _fns
    if on and nv_norm_avx512():
        _fns.product32 = nv_softmax_product_rows_f32_avx512
        _fns.product64 = nv_softmax_product_rows_f64_avx512
        _fns.ln32 = nv_layer_norm_rows_f32_avx512
        _fns.ln64 = nv_layer_norm_rows_f64_avx512
        _fns.vjp32 = nv_layer_norm_vjp_f32_avx512
        _fns.vjp64 = nv_layer_norm_vjp_f64_avx512
        return True
    _fns.product32 = nv_softmax_product_rows_f32
    _fns.product64 = nv_softmax_product_rows_f64
    _fns.ln32 = nv_layer_norm_rows_f32
    _fns.ln64 = nv_layer_norm_rows_f64
    _fns.vjp32 = nv_layer_norm_vjp_f32
    _fns.vjp64 = nv_layer_norm_vjp_f64
    return False


use_avx512(True)


# elements one thread takes at least (thread wake-up costs about as much as this work)
cdef int64_t GRAIN = 8192


ctypedef struct Job:
    int what
    bint f64
    const char *x
    char *out
    char *out2                  # logsumexp's shifts; the softmax product's g
    int64_t n                   # row length (COLS: the number of columns)
    int64_t rows
    nv_kernel_fn k1, k2         # softmax's and logsumexp's element-wise kernels
    double scale                # the softmax product's
    int failed


cdef void _part(void *ctx, int64_t a, int64_t b) noexcept nogil:
    """Rows [a, b) of the job (COLS: columns [a, b))."""
    cdef Job *j = <Job *>ctx
    cdef int64_t n = j.n
    cdef const float *xf = <const float *>j.x
    cdef const double *xd = <const double *>j.x
    if j.what == COLS:
        if j.f64:
            nv_cols_sum_f64(xd, j.rows, n, a, b, <double *>j.out)
        else:
            nv_cols_sum_f32(xf, j.rows, n, a, b, <float *>j.out)
    elif j.what == SOFTMAX:
        nv_softmax_rows_f32(xf, n, a, b, j.k1, j.k2, <float *>j.out)
    elif j.what == SOFTMAX_PRODUCT:
        if j.f64:
            _fns.product64(xd, <const double *>j.out2, n, j.scale, a, b,
                                        <double *>j.out)
        else:
            _fns.product32(xf, <const float *>j.out2, n, <float>j.scale, a, b,
                                        <float *>j.out)
    elif j.what == LOGSUMEXP:
        if nv_logsumexp_rows_f32(xf, n, a, b, j.k1, <float *>j.out, <float *>j.out2) != 0:
            j.failed = 1
    elif j.what == SUM:
        if j.f64:
            nv_rows_sum_f64(xd + a * n, b - a, n, <double *>j.out + a)
        else:
            nv_rows_sum_f32(xf + a * n, b - a, n, <float *>j.out + a)
    elif j.f64:
        nv_rows_extreme_f64(xd + a * n, b - a, n, j.what == MAX, <double *>j.out + a)
    else:
        nv_rows_extreme_f32(xf + a * n, b - a, n, j.what == MAX, <float *>j.out + a)


cdef char *_data(a) except NULL:
    """The first byte of a C-contiguous array."""
    if not cnp.PyArray_Check(a) or not cnp.PyArray_ISCARRAY_RO(<cnp.ndarray>a):
        raise ValueError("row kernels need C-contiguous NumPy arrays")
    return <char *>cnp.PyArray_DATA(<cnp.ndarray>a)


cdef inline Job _job(int what, bint f64, const char *x, char *out, char *out2, int64_t n,
                     int64_t rows, uintptr_t k1=0, uintptr_t k2=0,
                     double scale=1.0) noexcept nogil:
    cdef Job j
    j.what = what
    j.f64 = f64
    j.x = x
    j.out = out
    j.out2 = out2
    j.n = n
    j.rows = rows
    j.k1 = <nv_kernel_fn>k1
    j.k2 = <nv_kernel_fn>k2
    j.scale = scale
    j.failed = 0
    return j


cdef int _launch(Job *j) noexcept nogil:
    """Runs a job on the launch threads, by rows (COLS: by whole cache lines of columns);
    nonzero where a row found no memory for its exponentials."""
    if j.what == COLS:
        parallel_for(_part, j, j.n, max(16, GRAIN // max(j.rows, 1)))
    else:
        parallel_for(_part, j, j.rows, max(1, GRAIN // j.n))
    return j.failed


cdef void _run(int what, x, out, out2=None, uintptr_t k1=0, uintptr_t k2=0,
               double scale=1.0) except *:
    """One job of nv_rows.c over x's innermost rows (COLS: over out.size columns)."""
    cdef int64_t n = out.size if what == COLS else x.shape[x.ndim - 1]
    cdef Job j = _job(what, x.dtype.itemsize == 8, _data(x), _data(out),
                      _data(out2) if out2 is not None else NULL, n, x.size // n, k1, k2, scale)
    cdef int failed
    with nogil:
        failed = _launch(&j)
    if failed:
        raise MemoryError("logsumexp: no memory for a row's exponentials")


cdef void reduce_rows(int what, bint f64, const char *x, char *out, int64_t n,
                      int64_t rows) noexcept nogil:
    """A MIN, MAX or SUM job over ``rows`` innermost rows of ``n`` elements, or a COLS job
    over ``n`` columns of ``rows`` rows (C-contiguous data): ``_run`` on data pointers, for
    the compiled tape's executable (``_executable.pyx``)."""
    cdef Job j = _job(what, f64, x, out, NULL, n, rows)
    _launch(&j)


cdef int logsumexp_rows_at(const char *x, char *sums, char *shifts, int64_t n, int64_t rows,
                           uintptr_t shifted_exp) noexcept nogil:
    """``logsumexp_rows`` on data pointers (float32, C-contiguous) for the compiled tape's
    executable; nonzero where a row found no memory for its exponentials."""
    cdef Job j = _job(LOGSUMEXP, False, x, sums, shifts, n, rows, shifted_exp)
    return _launch(&j)


def extreme_rows(x, out, bint want_max) -> None:
    """Writes the max (``want_max``) or min of each innermost row of ``x`` into ``out``. Both
    C-contiguous, of one dtype (float32 or float64); rows of at least one element."""
    _run(MAX if want_max else MIN, x, out)


def sum_rows(x, out) -> None:
    """Writes the sum of each innermost row of ``x`` into ``out`` with NumPy's pairwise bits.
    Both C-contiguous, of one dtype (float32 or float64); rows of at least one element."""
    _run(SUM, x, out)


def sum_cols(x, out) -> None:
    """Writes the sums over the leading axes of ``x`` into ``out``, of ``x``'s trailing shape
    (at least 2 elements): ``np.add.reduce`` over those axes, bit for bit. Both C-contiguous,
    of one dtype (float32 or float64)."""
    _run(COLS, x, out)


def softmax_rows(x, out, uintptr_t shifted_exp, uintptr_t divide) -> None:
    """``out`` = the softmax of each innermost row of float32 ``x`` (both C-contiguous, rows of
    at least one element), computed as max, ``shifted_exp(x, max)``, pairwise sum,
    ``divide(e, sum)``: the addresses of nuvec's element-wise kernels for those two ops."""
    _run(SOFTMAX, x, out, None, shifted_exp, divide)


def softmax_product_rows(y, g, out, double scale=1.0) -> None:
    """``out = (g * y - y * sum(g * y)) * scale`` per innermost row (the softmax's vjp for its
    output ``y``), with the bits of those operations (no scaling when ``scale`` is 1). All
    C-contiguous, of one dtype (float32 or float64), ``out`` a third array; rows of at least
    one element."""
    _run(SOFTMAX_PRODUCT, y, out, g, 0, 0, scale)


def logsumexp_rows(x, sums, shifts, uintptr_t shifted_exp) -> None:
    """Per innermost row of float32 ``x``: ``shifts`` = its max (0 where not finite) and
    ``sums`` = the pairwise sum of ``shifted_exp(x, shift)``; logsumexp is
    ``log(sums) + shifts``. All C-contiguous; rows of at least one element."""
    _run(LOGSUMEXP, x, sums, shifts, shifted_exp)


ctypedef struct AttnJob:
    const float *x
    const float *mask           # NULL: none
    int nlead
    int64_t lead[32]
    int64_t step[32]            # the mask's element steps over the leading axes
    int64_t n
    float scale
    nv_kernel_fn k1, k2
    float *out


cdef void _attn_part(void *ctx, int64_t a, int64_t b) noexcept nogil:
    cdef AttnJob *j = <AttnJob *>ctx
    nv_scaled_softmax_rows_f32(j.x, j.mask, j.nlead, j.lead, j.step, j.n, j.scale, a, b,
                               j.k1, j.k2, j.out)


def scaled_softmax_rows(x, mask, float scale, out, uintptr_t shifted_exp,
                        uintptr_t divide) -> None:
    """``out`` = softmax(x * scale + mask) over the innermost rows of float32 ``x`` (``mask``
    None, or float32 broadcast to x's shape with rows of unit stride; ``out`` C-contiguous,
    possibly ``x``): the products and sums rounded one by one, then the softmax exactly as
    ``softmax_rows``."""
    cdef AttnJob j
    cdef int d
    if x.ndim > 33:
        raise ValueError("scaled_softmax_rows: more than 33 dimensions")
    j.x = <const float *>_data(x)
    j.out = <float *>_data(out)
    j.n = x.shape[x.ndim - 1]
    j.nlead = x.ndim - 1
    j.mask = NULL
    if mask is not None:
        if mask.shape != x.shape or (j.n > 1 and mask.strides[x.ndim - 1] != 4):
            raise ValueError("scaled_softmax_rows: the mask must be broadcast to x's shape "
                             "with rows of unit stride")
        j.mask = <const float *>cnp.PyArray_DATA(<cnp.ndarray>mask)
        for d in range(j.nlead):
            j.step[d] = mask.strides[d] // 4
    for d in range(j.nlead):
        j.lead[d] = x.shape[d]
    j.scale = scale
    j.k1 = <nv_kernel_fn>shifted_exp
    j.k2 = <nv_kernel_fn>divide
    cdef int64_t rows = x.size // j.n
    with nogil:
        parallel_for(_attn_part, &j, rows, max(1, GRAIN // j.n))


# rows per block of the layer norm's backward pass: dw and db are summed per block, then over
# the blocks in order (fixed blocks: the same bits on any number of threads)
cdef enum:
    LN_BLOCK = 32
LAYER_NORM_BLOCK = LN_BLOCK


ctypedef struct LnJob:
    bint f64
    const char *x
    const char *w               # NULL: no weight
    const char *b               # NULL: no bias (forward) / the cotangent g (backward)
    char *out                   # y (forward) / dx (backward)
    char *dw
    char *db
    int64_t n, rows
    double eps
    int failed


cdef void _ln_part(void *ctx, int64_t a, int64_t b) noexcept nogil:
    cdef LnJob *j = <LnJob *>ctx
    cdef int rc
    if j.f64:
        rc = _fns.ln64(<const double *>j.x, <const double *>j.w,
                                    <const double *>j.b, j.n, j.eps, a, b, <double *>j.out)
    else:
        rc = _fns.ln32(<const float *>j.x, <const float *>j.w,
                                    <const float *>j.b, j.n, <float>j.eps, a, b,
                                    <float *>j.out)
    if rc != 0:
        j.failed = 1


cdef void _ln_vjp_part(void *ctx, int64_t a, int64_t b) noexcept nogil:
    cdef LnJob *j = <LnJob *>ctx
    cdef int rc
    if j.f64:
        rc = _fns.vjp64(<const double *>j.x, <const double *>j.w,
                                   <const double *>j.b, j.n, j.eps, j.rows, LN_BLOCK, a, b,
                                   <double *>j.out, <double *>j.dw, <double *>j.db)
    else:
        rc = _fns.vjp32(<const float *>j.x, <const float *>j.w,
                                   <const float *>j.b, j.n, <float>j.eps, j.rows, LN_BLOCK,
                                   a, b, <float *>j.out, <float *>j.dw, <float *>j.db)
    if rc != 0:
        j.failed = 1


cdef char *_maybe(a) except? NULL:
    """The data of a C-contiguous array, or NULL for None."""
    return NULL if a is None else _data(a)


cdef void _ln_job(LnJob *j, x, w, b, double eps, out) except *:
    j.f64 = x.dtype.itemsize == 8
    j.x = _data(x)
    j.w = _maybe(w)
    j.b = _maybe(b)
    j.out = _data(out)
    j.dw = j.db = NULL
    j.n = x.shape[x.ndim - 1]
    j.rows = x.size // j.n
    j.eps = eps
    j.failed = 0


def layer_norm_rows(x, w, b, double eps, out) -> None:
    """``out`` = the layer norm of each innermost row of ``x`` (float32 or float64) with ``w``
    and ``b`` (rows of that length and dtype, or None), with the bits of nv.fast.layer_norm's
    composite form. All C-contiguous; rows of at least one element."""
    cdef LnJob j
    _ln_job(&j, x, w, b, eps, out)
    with nogil:
        parallel_for(_ln_part, &j, j.rows, max(1, GRAIN // j.n))
    if j.failed:
        raise MemoryError("layer_norm: no memory for a row's buffers")


def layer_norm_vjp_rows(x, w, g, double eps, dx, dw_part, db_part) -> None:
    """The layer norm's backward pass (see nv_rows.c): ``dx``, and per block of
    LAYER_NORM_BLOCK rows the sums of ``g * xhat`` (``dw_part``, (blocks, n), or None) and of
    ``g`` (``db_part``, or None); dw and db are those summed over the blocks in order."""
    cdef LnJob j
    _ln_job(&j, x, w, g, eps, dx)
    j.dw = _maybe(dw_part)
    j.db = _maybe(db_part)
    cdef int64_t blocks = (j.rows + LN_BLOCK - 1) // LN_BLOCK
    with nogil:
        parallel_for(_ln_vjp_part, &j, blocks, max(1, GRAIN // (j.n * LN_BLOCK)))
    if j.failed:
        raise MemoryError("layer_norm: no memory for a row's buffers")


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
