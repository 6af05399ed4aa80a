"""logsumexp and softmax over the trailing axes of a C-contiguous array, one kernel each.

Written as CuPy operations, a logsumexp is eight kernels (max, the non-finite fix, subtract,
exp, sum, log, add) and a softmax five; in a training step's cross-entropy each is a launch
of a few microseconds on a few kilobytes. Here a group of threads owns a row: it finds the
row's maximum, sums ``exp(x - max)`` and writes the result, reading the row (from L1/L2) twice.
A row of at most 1024 elements gets one warp, a longer one a block of 256 threads. The sums
add each thread's strided share and then the threads' partial sums in a fixed tree, so the
result is the same on every call (not the CPU's order: see ``reduction``).

    out = logsumexp_rows(x, n)   # x: C-contiguous float32/float64, rows of n elements
    out = softmax_rows(x, n)
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

#define NV_ROWS(T, S)                                                                          \
extern "C" __global__ void nv_lse_rows_##S(const T *x, T *out, long long rows, long long n,   \
                                           int group) { nv_lse<T>(x, out, rows, n, group); }   \
extern "C" __global__ void nv_softmax_rows_##S(const T *x, T *out, long long rows,            \
        long long n, int group) { nv_softmax<T>(x, out, rows, n, group); }
NV_ROWS(float, f32)
NV_ROWS(double, f64)
"""
_NAMES = [f"nv_{k}_rows_{s}" for k in ("lse", "softmax") for s in ("f32", "f64")]
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


def _launch(kind: str, x: cp.ndarray, out: cp.ndarray, n: int) -> None:
    rows = x.size // n
    group = 32 if n <= _WARP_ROW_MAX else _BLOCK
    per_block = _BLOCK // group
    _fn(kind, x.dtype)(
        ((rows + per_block - 1) // per_block,),
        (_BLOCK,),
        (x, out, np.int64(rows), np.int64(n), np.int32(group)),
    )


def logsumexp_rows(x: cp.ndarray, n: int) -> cp.ndarray:
    """``log(sum(exp(x)))`` of each row of ``n`` elements (``applies``), one value per row,
    shifted by the row's maximum where it is finite."""
    out = cp.empty(x.size // n, x.dtype)
    _launch("lse", x, out, n)
    return out


def softmax_rows(x: cp.ndarray, n: int) -> cp.ndarray:
    """``exp(x - max) / sum(exp(x - max))`` of each row of ``n`` elements (``applies``), in
    ``x``'s shape."""
    out = cp.empty(x.shape, x.dtype)
    _launch("softmax", x, out, n)
    return out
