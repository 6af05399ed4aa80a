"""Row kernels: logsumexp and softmax over the trailing axes of a C-contiguous array, and
layer norm's forward and backward passes and the softmax's vjp over its last axis, one kernel
each.

Written as CuPy operations, a logsumexp is eight kernels (max, the non-finite fix, subtract,
exp, sum, log, add) and a softmax five; in a training step's cross-entropy each is a launch
of a few microseconds on a few kilobytes. Here a group of threads owns a row: it finds the
row's maximum, sums ``exp(x - max)`` and writes the result, reading the row (from L1/L2) twice.
A row of at most 1024 elements gets one warp, a longer one a block of 256 threads. The sums
add each thread's strided share and then the threads' partial sums in a fixed tree, so the
result is the same on every call (not the CPU's order: see ``reduction``). Layer norm reads
its row three times (mean, variance, output), its backward pass four; each element-wise
operation is rounded as in the composite form (no contraction: ``nvrtc``).

    out = logsumexp_rows(x, n)   # x: C-contiguous float32/float64, rows of n elements
    out = softmax_rows(x, n)
    out = softmax_product_rows(y, g, scale)
    y = layer_norm_rows(x, w, b, eps)                  # see norm.py
    dx, gx = layer_norm_vjp_rows(x, w, g, eps, True)
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from . import nvrtc

_SOURCE = r"""
#define NV_BLOCK 256
template <typename T> struct nv_fns;
template <> struct nv_fns<float> {
    static __device__ float ex(float v) { return expf(v); }
    static __device__ float lg(float v) { return logf(v); }
    static __device__ float neg_inf() { return __int_as_float(0xff800000); }
};
template <> struct nv_fns<double> {
    static __device__ double ex(double v) { return exp(v); }
    static __device__ double lg(double v) { return log(v); }
    static __device__ double neg_inf() { return __longlong_as_double(0xfff0000000000000ull); }
};
/* the larger of a and b, NaN if either is */
template <typename T> __device__ T nv_max_nan(T a, T b) { return (b > a || b != b) ? b : a; }

/* the group's maximum (max=1) or sum of v; group = 32 (a warp) or the whole block */
template <typename T>
__device__ T nv_group(T v, bool max, int group, T *sh)
{
    for (int o = 16; o > 0; o >>= 1) {
        T w = __shfl_xor_sync(0xffffffffu, v, o);
        v = max ? nv_max_nan(v, w) : v + w;
    }
    if (group == 32) return v;
    const int warp = threadIdx.x >> 5;
    __syncthreads();  /* sh is free (read by the previous call) */
    if ((threadIdx.x & 31) == 0) sh[warp] = v;
    __syncthreads();
    v = sh[0];
    for (int k = 1; k < NV_BLOCK / 32; ++k) v = max ? nv_max_nan(v, sh[k]) : v + sh[k];
    return v;
}

/* the row's maximum (as is: NaN, +-inf) and the sum of exp(x - shift), where shift is the
 * maximum when finite, else 0 (finite_shift) or the maximum itself */
template <typename T>
__device__ void nv_row(const T *r, long long n, int lane, int group, T *sh, bool finite_shift,
                       T &shift, T &sum)
{
    T m = nv_fns<T>::neg_inf();
    for (long long j = lane; j < n; j += group) m = nv_max_nan(m, r[j]);
    m = nv_group(m, true, group, sh);
    shift = (finite_shift && !(m - m == (T)0)) ? (T)0 : m;  /* m - m: NaN unless finite */
    T s = 0;
    for (long long j = lane; j < n; j += group) s += nv_fns<T>::ex(r[j] - shift);
    sum = nv_group(s, false, group, sh);
}

template <typename T>
__device__ void nv_lse(const T *x, T *out, long long rows, long long n, int group)
{
    __shared__ T sh[NV_BLOCK / 32];
    const int lane = threadIdx.x % group;
    const long long row = (long long)blockIdx.x * (NV_BLOCK / group) + threadIdx.x / group;
    if (group == 32 && row >= rows) return;  /* whole warps: no block-wide sync follows */
    T shift, sum;
    nv_row<T>(x + row * n, n, lane, group, sh, true, shift, sum);
    if (lane == 0) out[row] = nv_fns<T>::lg(sum) + shift;
}

template <typename T>
__device__ void nv_softmax(const T *x, T *out, long long rows, long long n, int group)
{
    __shared__ T sh[NV_BLOCK / 32];
    const int lane = threadIdx.x % group;
    const long long row = (long long)blockIdx.x * (NV_BLOCK / group) + threadIdx.x / group;
    if (group == 32 && row >= rows) return;
    T shift, sum;
    nv_row<T>(x + row * n, n, lane, group, sh, false, shift, sum);
    const T *r = x + row * n;
    T *o = out + row * n;
    for (long long j = lane; j < n; j += group) o[j] = nv_fns<T>::ex(r[j] - shift) / sum;
}

/* layer norm's statistics of a row: xc = x - mean is recomputed where needed; returns
 * 1 / sqrt(var + eps) and sets mean (the composite form's operations, each rounded) */
template <typename T>
__device__ T nv_ln_stats(const T *r, long long n, int lane, int group, T *sh, T eps, T &mean)
{
    T s = 0;
    for (long long j = lane; j < n; j += group) s += r[j];
    mean = nv_group(s, false, group, sh) / (T)n;
    T q = 0;
    for (long long j = lane; j < n; j += group) {
        T c = r[j] - mean;
        q += c * c;
    }
    T v = nv_group(q, false, group, sh) / (T)n;
    return (T)1 / sqrt(v + eps);
}

/* y = (x - mean) * rs * w + b; w, b may be null */
template <typename T>
__device__ void nv_ln(const T *x, const T *w, const T *b, T *out, long long rows, long long n,
                      int group, T eps)
{
    __shared__ T sh[NV_BLOCK / 32];
    const int lane = threadIdx.x % group;
    const long long row = (long long)blockIdx.x * (NV_BLOCK / group) + threadIdx.x / group;
    if (group == 32 && row >= rows) return;
    const T *r = x + row * n;
    T mean, rs = nv_ln_stats<T>(r, n, lane, group, sh, eps, mean);
    T *o = out + row * n;
    for (long long j = lane; j < n; j += group) {
        T y = (r[j] - mean) * rs;
        if (w) y = y * w[j];
        if (b) y = y + b[j];
        o[j] = y;
    }
}

/* layer norm's backward pass over a row: xhat = (x - mean) * rs, wg = g * w,
 * dx = (wg - mean(wg) - xhat * mean(wg * xhat)) * rs, and gx = g * xhat (w's gradient before
 * its sum over the rows; gx may be null) */
template <typename T>
__device__ void nv_ln_vjp(const T *x, const T *w, const T *g, T *dx, T *gx, long long rows,
                          long long n, int group, T eps)
{
    __shared__ T sh[NV_BLOCK / 32];
    const int lane = threadIdx.x % group;
    const long long row = (long long)blockIdx.x * (NV_BLOCK / group) + threadIdx.x / group;
    if (group == 32 && row >= rows) return;
    const T *r = x + row * n, *gr = g + row * n;
    T mean, rs = nv_ln_stats<T>(r, n, lane, group, sh, eps, mean);
    T sa = 0, sc = 0;
    for (long long j = lane; j < n; j += group) {
        T wg = w ? gr[j] * w[j] : gr[j];
        sa += wg;
        sc += wg * ((r[j] - mean) * rs);
    }
    const T a = nv_group(sa, false, group, sh) / (T)n;
    const T c = nv_group(sc, false, group, sh) / (T)n;
    T *d = dx + row * n;
    for (long long j = lane; j < n; j += group) {
        T xhat = (r[j] - mean) * rs;
        T wg = w ? gr[j] * w[j] : gr[j];
        d[j] = ((wg - a) - xhat * c) * rs;
        if (gx) gx[row * n + j] = gr[j] * xhat;
    }
}

/* the softmax's vjp: out = (g * y - y * sum(g * y)) * scale (no scaling when scale is 1) */
template <typename T>
__device__ void nv_softmax_product(const T *y, const T *g, T *out, long long rows, long long n,
                                   int group, T scale)
{
    __shared__ T sh[NV_BLOCK / 32];
    const int lane = threadIdx.x % group;
    const long long row = (long long)blockIdx.x * (NV_BLOCK / group) + threadIdx.x / group;
    if (group == 32 && row >= rows) return;
    const T *yr = y + row * n, *gr = g + row * n;
    T s = 0;
    for (long long j = lane; j < n; j += group) s += gr[j] * yr[j];
    s = nv_group(s, false, group, sh);
    T *o = out + row * n;
    for (long long j = lane; j < n; j += group) {
        T v = gr[j] * yr[j] - yr[j] * s;
        o[j] = scale == (T)1 ? v : v * scale;
    }
}

#define NV_ROWS(T, S)                                                                          \
extern "C" __global__ void nv_lse_rows_##S(const T *x, T *out, long long rows, long long n,   \
                                           int group) { nv_lse<T>(x, out, rows, n, group); }   \
extern "C" __global__ void nv_softmax_rows_##S(const T *x, T *out, long long rows,            \
        long long n, int group) { nv_softmax<T>(x, out, rows, n, group); }                  \
extern "C" __global__ void nv_ln_rows_##S(const T *x, const T *w, const T *b, T *out,          \
        long long rows, long long n, int group, T eps)                                         \
    { nv_ln<T>(x, w, b, out, rows, n, group, eps); }                                           \
extern "C" __global__ void nv_ln_vjp_rows_##S(const T *x, const T *w, const T *g, T *dx,       \
        T *gx, long long rows, long long n, int group, T eps)                                  \
    { nv_ln_vjp<T>(x, w, g, dx, gx, rows, n, group, eps); }                                   \
extern "C" __global__ void nv_softmax_product_rows_##S(const T *y, const T *g, T *out,         \
        long long rows, long long n, int group, T scale)                                       \
    { nv_softmax_product<T>(y, g, out, rows, n, group, scale); }
NV_ROWS(float, f32)
NV_ROWS(double, f64)
"""
_KINDS = ("lse", "softmax", "ln", "ln_vjp", "softmax_product")
_NAMES = [f"nv_{k}_rows_{s}" for k in _KINDS for s in ("f32", "f64")]
_BLOCK = 256
_WARP_ROW_MAX = 1024  # rows up to this long get a warp each, longer ones a block
_kernels: dict = {}


def _fn(kind: str, dtype) -> object:
    if not _kernels:
        _kernels.update(zip(_NAMES, nvrtc.load(_SOURCE, _NAMES, name="nuvec_rows.cu")))
    return _kernels[f"nv_{kind}_rows_{'f64' if dtype == np.float64 else 'f32'}"]


def applies(x: cp.ndarray, axes: tuple) -> int:
    """The row length when ``axes`` are the trailing axes of a C-contiguous float32 / float64
    ``x`` with at least one element per row (else 0: not for these kernels)."""
    nd = x.ndim
    if (
        not axes
        or x.dtype.type not in (np.float32, np.float64)
        or not x.flags.c_contiguous
        or x.size == 0
        or sorted(a % nd for a in axes) != list(range(nd - len(axes), nd))
    ):
        return 0
    n = 1
    for d in x.shape[nd - len(axes) :]:
        n *= d
    return n


def _launch(kind: str, x: cp.ndarray, n: int, *args) -> None:
    """Runs kernel ``kind`` over the rows of ``n`` elements of ``x``: arguments ``x, *args``,
    then the row count, ``n`` and the group size (and, for layer norm and the softmax's
    product, the last of ``args``: eps or the scale, in ``x``'s dtype)."""
    rows = x.size // n
    group = 32 if n <= _WARP_ROW_MAX else _BLOCK
    per_block = _BLOCK // group
    tail = (np.int64(rows), np.int64(n), np.int32(group))
    if kind.startswith("ln") or kind == "softmax_product":
        tail += (x.dtype.type(args[-1]),)
        args = args[:-1]
    args = tuple(np.uint64(0) if a is None else a for a in args)  # None: a null pointer
    _fn(kind, x.dtype)(((rows + per_block - 1) // per_block,), (_BLOCK,), (x, *args, *tail))


def logsumexp_rows(x: cp.ndarray, n: int) -> cp.ndarray:
    """``log(sum(exp(x)))`` of each row of ``n`` elements (``applies``), one value per row,
    shifted by the row's maximum where it is finite."""
    out = cp.empty(x.size // n, x.dtype)
    _launch("lse", x, n, out)
    return out


def softmax_rows(x: cp.ndarray, n: int) -> cp.ndarray:
    """``exp(x - max) / sum(exp(x - max))`` of each row of ``n`` elements (``applies``), in
    ``x``'s shape."""
    out = cp.empty(x.shape, x.dtype)
    _launch("softmax", x, n, out)
    return out


def softmax_product_rows(y: cp.ndarray, g: cp.ndarray, scale: float) -> cp.ndarray:
    """``(g * y - y * sum(g * y)) * scale`` over the last axis of C-contiguous ``y`` and
    ``g`` of one shape and dtype (float32 / float64): the softmax's vjp, ``y`` its output."""
    out = cp.empty(y.shape, y.dtype)
    _launch("softmax_product", y, y.shape[-1], g, out, scale)
    return out


def layer_norm_rows(x: cp.ndarray, w, b, eps: float) -> cp.ndarray:
    """Layer norm over the last axis of C-contiguous float32 / float64 ``x`` with weight ``w``
    and bias ``b`` (contiguous, of that axis's length; either may be None)."""
    out = cp.empty(x.shape, x.dtype)
    _launch("ln", x, x.shape[-1], w, b, out, eps)
    return out


def layer_norm_vjp_rows(x: cp.ndarray, w, g: cp.ndarray, eps: float, want_gx: bool):
    """Layer norm's backward pass over the last axis (``layer_norm_rows``'s operands, ``g``
    the cotangent in ``x``'s layout): ``dx`` and, if ``want_gx``, ``g * xhat`` (w's gradient
    before its sum over the rows), else None."""
    dx = cp.empty(x.shape, x.dtype)
    gx = cp.empty(x.shape, x.dtype) if want_gx else None
    _launch("ln_vjp", x, x.shape[-1], w, g, dx, gx, eps)
    return dx, gx
