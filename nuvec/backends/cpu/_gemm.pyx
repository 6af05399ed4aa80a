# cython: language_level=3
"""Matrix products through a CBLAS ``?gemm`` found at run time (blas.py loads it: MKL where it
is installed), called by address with the GIL released: no ctypes cost per call.

    from nuvec.backends.cpu import _gemm
    _gemm.set_routines(sgemm_address, dgemm_address)     # once, from blas.py
    _gemm.set_threads(mkl_set_num_threads_local_address, 2, follow_load=True)
    _gemm.product(a, b, out)    # True: out = a @ b; False: not handled here (use NumPy)

``product`` takes float32 or float64 operands of at least two dimensions whose batch
dimensions broadcast to ``out``'s. ``out`` has rows of unit stride, any row and batch strides
(C-contiguous, or a transposed view that keeps the last axis: a product written straight into
the layout its reader wants). A matrix that BLAS cannot read in place (no unit stride in
either dimension) is copied first; transposed views are passed as they are.
"""
cimport numpy as cnp
from libc.stdlib cimport free, malloc

import numpy as np

from nuvec.backends.cpu._eltwise cimport free_threads

from nuvec.backends.cpu._views import broadcast_view

cnp.import_array()

cdef extern from *:
    """
    typedef void (*nv_sgemm_t)(int, int, int, int, int, int, float, const float *, int,
                               const float *, int, float, float *, int);
    typedef void (*nv_dgemm_t)(int, int, int, int, int, int, double, const double *, int,
                               const double *, int, double, double *, int);
    typedef void (*nv_sgemm_batch_t)(int, const int *, const int *, const int *, const int *,
                                     const int *, const float *, const float **, const int *,
                                     const float **, const int *, const float *, float **,
                                     const int *, int, const int *);
    typedef void (*nv_dgemm_batch_t)(int, const int *, const int *, const int *, const int *,
                                     const int *, const double *, const double **, const int *,
                                     const double **, const int *, const double *, double **,
                                     const int *, int, const int *);
    typedef int (*nv_set_threads_t)(int);
    """
    ctypedef void (*nv_sgemm_batch_t)(int, const int *, const int *, const int *, const int *,
                                      const int *, const float *, const float **, const int *,
                                      const float **, const int *, const float *, float **,
                                      const int *, int, const int *) noexcept nogil
    ctypedef void (*nv_dgemm_batch_t)(int, const int *, const int *, const int *, const int *,
                                      const int *, const double *, const double **,
                                      const int *, const double **, const int *,
                                      const double *, double **, const int *, int,
                                      const int *) noexcept nogil
    ctypedef void (*nv_sgemm_t)(int, int, int, int, int, int, float, const float *, int,
                                const float *, int, float, float *, int) noexcept nogil
    ctypedef int (*nv_set_threads_t)(int) noexcept nogil
    ctypedef void (*nv_dgemm_t)(int, int, int, int, int, int, double, const double *, int,
                                const double *, int, double, double *, int) noexcept nogil

cdef enum:
    ROW_MAJOR = 101     # CBLAS's enum values
    NO_TRANS = 111
    TRANS = 112
    INT_MAX = 2147483647

cdef nv_sgemm_t _sgemm = NULL
cdef nv_dgemm_t _dgemm = NULL
cdef nv_sgemm_batch_t _sgemm_batch = NULL     # MKL's ?gemm_batch: one call for a batch
cdef nv_dgemm_batch_t _dgemm_batch = NULL
# MKL's mkl_set_num_threads_local (NULL: the library's own thread count on every call)
cdef nv_set_threads_t _set_threads = NULL
cdef int _most_threads = 1
cdef bint _follow_load = False
# multiply-adds below which one thread is faster than waking the team (a decode step's
# attention products: waking it costs milliseconds on a busy machine)
cdef Py_ssize_t SMALL_PRODUCT = 1 << 18
# products of THIN_MIN to THIN_MAX - 1 columns run transposed (``_thin``)
cdef Py_ssize_t THIN_MIN = 3, THIN_MAX = 16
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def set_routines(size_t sgemm, size_t dgemm, size_t sgemm_batch=0, size_t dgemm_batch=0) -> None:
    """Installs the CBLAS ``sgemm`` / ``dgemm`` at these addresses (0: none), and MKL's
    ``cblas_?gemm_batch`` (0: batches loop over ``?gemm``)."""
    global _sgemm, _dgemm, _sgemm_batch, _dgemm_batch
    _sgemm = <nv_sgemm_t>sgemm
    _dgemm = <nv_dgemm_t>dgemm
    _sgemm_batch = <nv_sgemm_batch_t>sgemm_batch
    _dgemm_batch = <nv_dgemm_batch_t>dgemm_batch


def set_threads(size_t set_local, int most, bint follow_load) -> None:
    """Installs MKL's ``mkl_set_num_threads_local`` (0: none): each product then runs on
    ``most`` threads, one for a small product, and (``follow_load``) fewer while other
    processes keep cores busy (``_eltwise.free_threads``)."""
    global _set_threads, _most_threads, _follow_load
    _set_threads = <nv_set_threads_t>set_local
    _most_threads = most if most > 1 else 1
    _follow_load = follow_load


cdef inline int _product_threads(Py_ssize_t madds) noexcept nogil:
    if madds < SMALL_PRODUCT or _most_threads == 1:
        return 1
    return free_threads(_most_threads) if _follow_load else _most_threads


def installed() -> bool:
    return _sgemm != NULL and _dgemm != NULL


cdef bint _layout(Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t s0, Py_ssize_t s1,
                  Py_ssize_t item, int *trans, int *ld):
    """How BLAS reads a (rows, cols) matrix with byte strides (s0, s1): row-major as it is,
    or as the transpose of a row-major (cols, rows) matrix. False: neither."""
    if rows == 1:           # the stride of a dimension of one element is never followed
        s0 = cols * item
    if cols == 1:
        s1 = item
    if s0 < 0 or s1 < 0 or s0 % item or s1 % item:
        return False
    s0 //= item
    s1 //= item
    if s1 == 1 or cols == 1:
        ld[0] = <int>(s0 if rows > 1 else cols)
        if ld[0] >= cols and s0 <= INT_MAX:
            trans[0] = NO_TRANS
            return True
    if s0 == 1 or rows == 1:
        ld[0] = <int>(s1 if cols > 1 else rows)
        if ld[0] >= rows and s1 <= INT_MAX:
            trans[0] = TRANS
            return True
    return False


cdef inline void _offsets(Py_ssize_t i, Py_ssize_t nd, const Py_ssize_t *dims,
                          const Py_ssize_t *sa, const Py_ssize_t *sb, const Py_ssize_t *sc,
                          Py_ssize_t *off_a, Py_ssize_t *off_b, Py_ssize_t *off_c) noexcept nogil:
    """Byte offsets of batch item ``i`` (C order over ``dims``) in the operands and out."""
    cdef Py_ssize_t d, rem = i, j
    off_a[0] = 0
    off_b[0] = 0
    off_c[0] = 0
    for d in range(nd - 1, -1, -1):
        j = rem % dims[d]
        off_a[0] += j * sa[d]
        off_b[0] += j * sb[d]
        off_c[0] += j * sc[d]
        rem //= dims[d]


cdef int _batch(bint single, Py_ssize_t nb, Py_ssize_t nd, const Py_ssize_t *dims,
                 const Py_ssize_t *sa, const Py_ssize_t *sb, const Py_ssize_t *sc, char *pa,
                 char *pb, char *pc, int ta, int tb, int m, int n, int k, int lda, int ldb,
                 int ldc) noexcept nogil:
    """Every product of the batch in one call of MKL's ``?gemm_batch`` (one group of ``nb``
    products, any batch strides): MKL spreads the batch over its threads. -1: no memory for
    the pointer arrays (nothing done)."""
    cdef void **ptrs = <void **>malloc(3 * nb * sizeof(void *))
    cdef Py_ssize_t i, off_a, off_b, off_c
    cdef int size = <int>nb
    cdef float one_f = 1.0, zero_f = 0.0
    cdef double one_d = 1.0, zero_d = 0.0
    if ptrs == NULL:
        return -1
    for i in range(nb):
        _offsets(i, nd, dims, sa, sb, sc, &off_a, &off_b, &off_c)
        ptrs[i] = pa + off_a
        ptrs[nb + i] = pb + off_b
        ptrs[2 * nb + i] = pc + off_c
    if single:
        _sgemm_batch(ROW_MAJOR, &ta, &tb, &m, &n, &k, &one_f, <const float **>ptrs, &lda,
                     <const float **>(ptrs + nb), &ldb, &zero_f, <float **>(ptrs + 2 * nb),
                     &ldc, 1, &size)
    else:
        _dgemm_batch(ROW_MAJOR, &ta, &tb, &m, &n, &k, &one_d, <const double **>ptrs, &lda,
                     <const double **>(ptrs + nb), &ldb, &zero_d, <double **>(ptrs + 2 * nb),
                     &ldc, 1, &size)
    free(ptrs)
    return 0


def product(a, b, out) -> bool:
    """``out[...] = a @ b`` through BLAS when the dtypes and sizes allow it (see the module
    docstring); returns whether it did."""
    cdef gemm_plan_t p
    cdef int found = plan_product(a, b, out, &p)
    cdef int status
    if found == 2:              # an operand BLAS cannot read in place: copied first
        a = np.ascontiguousarray(a)
        found = plan_product(a, b, out, &p)
    if found == 3:
        b = np.ascontiguousarray(b)
        found = plan_product(a, b, out, &p)
    if found != 1:
        return False
    cdef char *pa = <char *>cnp.PyArray_DATA(<cnp.ndarray>a)     # (not .ctypes: 1 us each)
    cdef char *pb = <char *>cnp.PyArray_DATA(<cnp.ndarray>b)
    cdef char *pc = <char *>cnp.PyArray_DATA(<cnp.ndarray>out)
    with nogil:
        status = run_product(&p, pa, pb, pc)
    if status < 0:
        raise MemoryError(f"matmul: no memory for the pointers of a batch of {p.nb}")
    return True


cdef int plan_product(object a, object b, object out, gemm_plan_t *p) except -1:
    """How BLAS computes ``out[...] = a @ b`` (``run_product`` with the three arrays' data
    pointers, or any arrays of the same shapes, dtypes and strides): 1, planned; 0, not
    BLAS's (dtypes, sizes); 2 (3), ``a`` (``b``) cannot be read in place (copy it first)."""
    dt = out.dtype
    if a.dtype != dt or b.dtype != dt or (dt != _F32 and dt != _F64) or _sgemm == NULL:
        return 0
    if a.ndim < 2 or b.ndim < 2 or out.size == 0:
        return 0
    cdef Py_ssize_t m = a.shape[a.ndim - 2], k = a.shape[a.ndim - 1], n = b.shape[b.ndim - 1]
    if k == 0 or m > INT_MAX or n > INT_MAX or k > INT_MAX:
        return 0
    cdef Py_ssize_t item = dt.itemsize
    cdef Py_ssize_t row_c = out.strides[out.ndim - 2] if m > 1 else n * item
    if (out.strides[out.ndim - 1] != item and n > 1) or row_c < n * item or row_c % item \
            or row_c // item > INT_MAX or any(st <= 0 and d > 1 for st, d in zip(out.strides, out.shape)):
        return 0                    # (out never overlaps itself)
    p.ldc = <int>(row_c // item)
    if not _layout(m, k, a.strides[a.ndim - 2], a.strides[a.ndim - 1], item, &p.ta, &p.lda):
        return 2
    if not _layout(k, n, b.strides[b.ndim - 2], b.strides[b.ndim - 1], item, &p.tb, &p.ldb):
        return 3
    batch = out.shape[:out.ndim - 2]
    cdef Py_ssize_t nb = 1, d, nd = len(batch)
    if nd > 32:
        return 0
    if nd:      # batch strides of the operands broadcast to out's batch (0 where broadcast)
        a = broadcast_view(a, batch + a.shape[a.ndim - 2:])
        b = broadcast_view(b, batch + b.shape[b.ndim - 2:])
        for d in range(nd):
            p.dims[d] = batch[d]
            p.sa[d] = a.strides[d]
            p.sb[d] = b.strides[d]
            p.sc[d] = out.strides[d]
            nb *= p.dims[d]
    p.single = item == 4
    p.item = item
    p.m = <int>m
    p.n = <int>n
    p.k = <int>k
    p.nb = nb
    p.nd = nd
    p.madds = out.size * k
    return 1


cdef int run_product(const gemm_plan_t *p, char *pa, char *pb, char *pc) noexcept nogil:
    """The planned product (``plan_product``) on these data pointers, on the threads a
    product of its size takes now; -1: no memory for a batch's pointers (nothing done)."""
    cdef int status = 0, previous = 0
    if _set_threads != NULL:
        previous = _set_threads(_product_threads(p.madds))
    if p.nb > 1 and p.nb <= INT_MAX and _sgemm_batch != NULL and _dgemm_batch != NULL:
        status = _batch(p.single, p.nb, p.nd, p.dims, p.sa, p.sb, p.sc, pa, pb, pc, p.ta, p.tb,
                        p.m, p.n, p.k, p.lda, p.ldb, p.ldc)
    elif p.nb == 1 and THIN_MIN <= p.n < THIN_MAX and p.m >= 4 * p.n:
        _thin(p.single, pa, pb, pc, p.ta, p.tb, p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.item)
    else:
        _loop(p.single, p.nb, p.nd, p.dims, p.sa, p.sb, p.sc, pa, pb, pc, p.ta, p.tb, p.m, p.n,
              p.k, p.lda, p.ldb, p.ldc)
    if _set_threads != NULL:
        _set_threads(previous)
    return status


cdef void _thin(bint single, char *pa, char *pb, char *pc, int ta, int tb, Py_ssize_t m,
                Py_ssize_t n, Py_ssize_t k, int lda, int ldb, int ldc,
                Py_ssize_t item) noexcept nogil:
    """A product of few columns (THIN_MIN <= n < THIN_MAX, many rows) as its transpose,
    B^T A^T, into a (n, m) buffer, then copied over: MKL's row-major path for such shapes
    took 2.5-5x as long as the transposed call (256 x 512 x 10: 240 against 86 us, one
    thread; 2048 x 512 x 10: 2336 against 468 us). The choice depends only on the shapes,
    so a product's bits are the same eagerly and compiled."""
    cdef void *tmp = malloc(m * n * item)
    cdef Py_ssize_t i, j
    if tmp == NULL:
        _loop(single, 1, 0, NULL, NULL, NULL, NULL, pa, pb, pc, ta, tb, m, n, k, lda, ldb, ldc)
        return
    cdef int tb_t = TRANS if tb == NO_TRANS else NO_TRANS
    cdef int ta_t = TRANS if ta == NO_TRANS else NO_TRANS
    if single:
        _sgemm(ROW_MAJOR, tb_t, ta_t, <int>n, <int>m, <int>k, 1.0, <const float *>pb, ldb,
               <const float *>pa, lda, 0.0, <float *>tmp, <int>m)
        for i in range(m):
            for j in range(n):
                (<float *>pc)[i * ldc + j] = (<float *>tmp)[j * m + i]
    else:
        _dgemm(ROW_MAJOR, tb_t, ta_t, <int>n, <int>m, <int>k, 1.0, <const double *>pb, ldb,
               <const double *>pa, lda, 0.0, <double *>tmp, <int>m)
        for i in range(m):
            for j in range(n):
                (<double *>pc)[i * ldc + j] = (<double *>tmp)[j * m + i]
    free(tmp)


cdef void _loop(bint single, Py_ssize_t nb, Py_ssize_t nd, const Py_ssize_t *dims,
                const Py_ssize_t *sa, const Py_ssize_t *sb, const Py_ssize_t *sc, char *pa,
                char *pb, char *pc, int ta, int tb, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k,
                int lda, int ldb, int ldc) noexcept nogil:
    """The products of the batch one ``?gemm`` call after another."""
    cdef Py_ssize_t i, off_a, off_b, off_c
    for i in range(nb):
        _offsets(i, nd, dims, sa, sb, sc, &off_a, &off_b, &off_c)
        if single:
            _sgemm(ROW_MAJOR, ta, tb, <int>m, <int>n, <int>k, 1.0,
                   <const float *>(pa + off_a), lda, <const float *>(pb + off_b), ldb,
                   0.0, <float *>(pc + off_c), ldc)
        else:
            _dgemm(ROW_MAJOR, ta, tb, <int>m, <int>n, <int>k, 1.0,
                   <const double *>(pa + off_a), lda, <const double *>(pb + off_b), ldb,
                   0.0, <double *>(pc + off_c), ldc)
