# cython: language_level=3
"""Matrix products through a CBLAS ``?gemm`` found at run time (blas.py loads it: MKL where it
is installed), called by address with the GIL released: no ctypes cost per call.

    from nuvec.backends.cpu import _gemm
    _gemm.set_routines(sgemm_address, dgemm_address)     # once, from blas.py
    _gemm.product(a, b, out)    # True: out = a @ b; False: not handled here (use NumPy)

``product`` takes float32 or float64 operands of at least two dimensions whose batch
dimensions broadcast to ``out``'s (C-contiguous). A matrix that BLAS cannot read in place (no
unit stride in either dimension) is copied first; transposed views are passed as they are.
"""
import numpy as np

cdef extern from *:
    """
    typedef void (*nv_sgemm_t)(int, int, int, int, int, int, float, const float *, int,
                               const float *, int, float, float *, int);
    typedef void (*nv_dgemm_t)(int, int, int, int, int, int, double, const double *, int,
                               const double *, int, double, double *, int);
    """
    ctypedef void (*nv_sgemm_t)(int, int, int, int, int, int, float, const float *, int,
                                const float *, int, float, float *, int) noexcept nogil
    ctypedef void (*nv_dgemm_t)(int, int, int, int, int, int, double, const double *, int,
                                const double *, int, double, double *, int) noexcept nogil

cdef enum:
    ROW_MAJOR = 101     # CBLAS's enum values
    NO_TRANS = 111
    TRANS = 112
    INT_MAX = 2147483647

cdef nv_sgemm_t _sgemm = NULL
cdef nv_dgemm_t _dgemm = NULL
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def set_routines(size_t sgemm, size_t dgemm) -> None:
    """Installs the CBLAS ``sgemm`` / ``dgemm`` at these addresses (0: none)."""
    global _sgemm, _dgemm
    _sgemm = <nv_sgemm_t>sgemm
    _dgemm = <nv_dgemm_t>dgemm


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


def product(a, b, out) -> bool:
    """``out[...] = a @ b`` through BLAS when the dtypes and sizes allow it (see the module
    docstring); returns whether it did."""
    dt = out.dtype
    if a.dtype != dt or b.dtype != dt or (dt != _F32 and dt != _F64) or _sgemm == NULL:
        return False
    if a.ndim < 2 or b.ndim < 2 or not out.flags.c_contiguous or out.size == 0:
        return False
    cdef Py_ssize_t m = a.shape[a.ndim - 2], k = a.shape[a.ndim - 1], n = b.shape[b.ndim - 1]
    if k == 0 or m > INT_MAX or n > INT_MAX or k > INT_MAX:
        return False
    cdef Py_ssize_t item = dt.itemsize
    cdef int ta, tb, lda, ldb
    if not _layout(m, k, a.strides[a.ndim - 2], a.strides[a.ndim - 1], item, &ta, &lda):
        a = np.ascontiguousarray(a)
        if not _layout(m, k, a.strides[a.ndim - 2], a.strides[a.ndim - 1], item, &ta, &lda):
            return False
    if not _layout(k, n, b.strides[b.ndim - 2], b.strides[b.ndim - 1], item, &tb, &ldb):
        b = np.ascontiguousarray(b)
        if not _layout(k, n, b.strides[b.ndim - 2], b.strides[b.ndim - 1], item, &tb, &ldb):
            return False
    batch = out.shape[:out.ndim - 2]
    cdef Py_ssize_t nb = 1, i, d, rem, off_a, off_b, nd = len(batch)
    cdef Py_ssize_t[32] dims, sa, sb
    if nd > 32:
        return False
    if nd:      # batch strides of the operands broadcast to out's batch (0 where broadcast)
        a = np.broadcast_to(a, batch + a.shape[a.ndim - 2:])
        b = np.broadcast_to(b, batch + b.shape[b.ndim - 2:])
        for d in range(nd):
            dims[d] = batch[d]
            sa[d] = a.strides[d]
            sb[d] = b.strides[d]
            nb *= dims[d]
    cdef char *pa = <char *><size_t>a.ctypes.data
    cdef char *pb = <char *><size_t>b.ctypes.data
    cdef char *pc = <char *><size_t>out.ctypes.data
    cdef Py_ssize_t step_c = m * n * item
    cdef bint single = item == 4
    with nogil:
        for i in range(nb):
            off_a = 0
            off_b = 0
            rem = i
            for d in range(nd - 1, -1, -1):
                off_a += (rem % dims[d]) * sa[d]
                off_b += (rem % dims[d]) * sb[d]
                rem //= dims[d]
            if single:
                _sgemm(ROW_MAJOR, ta, tb, <int>m, <int>n, <int>k, 1.0,
                       <const float *>(pa + off_a), lda, <const float *>(pb + off_b), ldb,
                       0.0, <float *>(pc + i * step_c), <int>n)
            else:
                _dgemm(ROW_MAJOR, ta, tb, <int>m, <int>n, <int>k, 1.0,
                       <const double *>(pa + off_a), lda, <const double *>(pb + off_b), ldb,
                       0.0, <double *>(pc + i * step_c), <int>n)
    return True
