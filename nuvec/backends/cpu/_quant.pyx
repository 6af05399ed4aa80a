# cython: language_level=3
"""Quantized matrix products and dequantization on packed weights (csrc/nv_quant.c), on the
element-wise launch threads. All arrays C-contiguous; x, scales, biases and out float32 or
float64 alike; w the packed codes (any dtype, read as bytes); lut None (affine codes) or
float32 (256,) values of the codes (the float modes).

    from nuvec.backends.cpu._quant import qmm, dequantize
    qmm(x, w, scales, biases, lut, bits, group_size, transpose, out)  # out (M, N)
    dequantize(w, scales, biases, lut, row_len, bits, group_size, out)
"""
cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t

from nuvec.backends.cpu._eltwise cimport parallel_for

cnp.import_array()

cdef extern from "csrc/nv_quant.h" nogil:
    int nv_qmm_t_f32(const float *x, const uint8_t *w, const float *scales,
                     const float *biases, const float *lut, int64_t M, int64_t N, int64_t K,
                     int bits, int gs, int64_t n0, int64_t n1, float *out)
    int nv_qmm_t_f64(const double *x, const uint8_t *w, const double *scales,
                     const double *biases, const float *lut, int64_t M, int64_t N, int64_t K,
                     int bits, int gs, int64_t n0, int64_t n1, double *out)
    int nv_qmm_n_f32(const float *x, const uint8_t *w, const float *scales,
                     const float *biases, const float *lut, int64_t M, int64_t N, int64_t K,
                     int bits, int gs, int64_t g0, int64_t g1, float *out)
    int nv_qmm_n_f64(const double *x, const uint8_t *w, const double *scales,
                     const double *biases, const float *lut, int64_t M, int64_t N, int64_t K,
                     int bits, int gs, int64_t g0, int64_t g1, double *out)
    void nv_dequantize_f32(const uint8_t *w, const float *scales, const float *biases,
                           const float *lut, int64_t row_len, int bits, int gs, int64_t r0,
                           int64_t r1, float *out)
    void nv_dequantize_f64(const uint8_t *w, const double *scales, const double *biases,
                           const float *lut, int64_t row_len, int bits, int gs, int64_t r0,
                           int64_t r1, double *out)


ctypedef struct QJob:
    bint f64, transpose
    const char *x
    const uint8_t *w
    const char *scales
    const char *biases
    const float *lut
    char *out
    int64_t M, N, K, row_len
    int bits, gs, failed


cdef void _qmm_part(void *ctx, int64_t a, int64_t b) noexcept nogil:
    cdef QJob *j = <QJob *>ctx
    cdef int rc
    if j.f64 and j.transpose:
        rc = nv_qmm_t_f64(<const double *>j.x, j.w, <const double *>j.scales,
                          <const double *>j.biases, j.lut, j.M, j.N, j.K, j.bits, j.gs, a, b,
                          <double *>j.out)
    elif j.f64:
        rc = nv_qmm_n_f64(<const double *>j.x, j.w, <const double *>j.scales,
                          <const double *>j.biases, j.lut, j.M, j.N, j.K, j.bits, j.gs, a, b,
                          <double *>j.out)
    elif j.transpose:
        rc = nv_qmm_t_f32(<const float *>j.x, j.w, <const float *>j.scales,
                          <const float *>j.biases, j.lut, j.M, j.N, j.K, j.bits, j.gs, a, b,
                          <float *>j.out)
    else:
        rc = nv_qmm_n_f32(<const float *>j.x, j.w, <const float *>j.scales,
                          <const float *>j.biases, j.lut, j.M, j.N, j.K, j.bits, j.gs, a, b,
                          <float *>j.out)
    if rc != 0:
        j.failed = 1


cdef void _deq_part(void *ctx, int64_t a, int64_t b) noexcept nogil:
    cdef QJob *j = <QJob *>ctx
    if j.f64:
        nv_dequantize_f64(j.w, <const double *>j.scales, <const double *>j.biases, j.lut,
                          j.row_len, j.bits, j.gs, a, b, <double *>j.out)
    else:
        nv_dequantize_f32(j.w, <const float *>j.scales, <const float *>j.biases, j.lut,
                          j.row_len, j.bits, j.gs, a, b, <float *>j.out)


cdef char *_data(cnp.ndarray a) except NULL:
    if not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise ValueError("_quant: operands must be C-contiguous")
    return <char *>cnp.PyArray_DATA(a)


cdef void _job(QJob *j, w, scales, biases, lut, int bits, int gs, out) except *:
    j.f64 = out.dtype.itemsize == 8
    j.w = <const uint8_t *>_data(w)
    j.scales = _data(scales)
    j.biases = NULL if biases is None else _data(biases)
    j.lut = NULL if lut is None else <const float *>_data(lut)
    j.out = _data(out)
    j.bits = bits
    j.gs = gs
    j.failed = 0


def qmm(x, w, scales, biases, lut, int bits, int group_size, bint transpose, out):
    """``out = x @ W.T`` (transpose; W (N, K)) or ``x @ W`` (W (K, N)), W the decoded
    ``w``; x (M, K), out (M, N)."""
    cdef QJob j
    _job(&j, w, scales, biases, lut, bits, group_size, out)
    j.x = _data(x)
    j.transpose = transpose
    j.M, j.K = x.shape[0], x.shape[1]
    j.N = out.shape[1]
    cdef int64_t size = j.N if transpose else j.N // group_size
    # parts of at least ~4M multiply-adds: waking a thread costs more than smaller ones
    cdef int64_t work = j.K * (j.M + 2) * (1 if transpose else group_size)
    cdef int64_t grain = max(1, (1 << 22) // max(1, work))
    with nogil:
        parallel_for(_qmm_part, &j, size, grain)
    if j.failed:
        raise MemoryError("quantized_matmul: out of memory for the decoding buffers")


def dequantize(w, scales, biases, lut, int64_t row_len, int bits, int group_size, out):
    """``out`` (rows, row_len) = the decoded rows of the packed ``w``."""
    cdef QJob j
    _job(&j, w, scales, biases, lut, bits, group_size, out)
    j.row_len = row_len
    cdef int64_t rows = out.size // row_len if row_len else 0
    with nogil:
        parallel_for(_deq_part, &j, rows, max(1, (1 << 18) // max(1, row_len)))
