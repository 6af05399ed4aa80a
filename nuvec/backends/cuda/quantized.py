"""Quantization on the GPU: quantized products and dequantization through NVRTC kernels that
read the packed codes (``quant_formats``' layout) directly, computing in float32 (float64 for
float64 data); quantize itself runs on the host (NumPy, MLX's arithmetic) and is uploaded,
as it is an offline step.

Kernels (one source, compiled once per device by ``nvrtc.load``):
- ``nvq_mm_t_{f32,f64}``: ``out[m, n] = sum_k x[m, k] W[n, k]``, one warp per output, the
  lanes striding over k in a fixed order and reduced by shuffles (the same bits each run);
- ``nvq_mm_n_*``: ``out[m, n] = sum_k x[m, k] W[k, n]``, one thread per output;
- ``nvq_deq_*``: one thread per decoded value.
A code's value is ``scale * v + bias`` (v the code, or ``lut[code]`` in the float modes).
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from ...core import dtypes as dt
from ...primitives import quant_formats as qf
from ...primitives.quantized import Dequantize, QuantizedMatmul, Quantize
from . import nvrtc
from .runtime import finish, from_f32, gpu, is_half, to_f32, upload

_SOURCE = r"""
template <typename T>
__device__ __forceinline__ T nvq_value(const unsigned char *row, long long j, int bits,
                                       const float *lut, T scale, T bias) {
    long long bit = j * bits;
    unsigned w = row[bit >> 3];
    int shift = (int)(bit & 7);
    if (shift + bits > 8) w |= (unsigned)row[(bit >> 3) + 1] << 8;
    unsigned code = (w >> shift) & ((1u << bits) - 1u);
    T v = lut ? (T)lut[code] : (T)code;
    T s = scale * v;
    return s + bias;
}

template <typename T>
__device__ void nvq_mm_t(const T *x, const unsigned char *w, const T *scales, const T *biases,
                         const float *lut, long long M, long long N, long long K, int bits,
                         int gs, T *out) {
    long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= M * N) return;
    long long m = warp / N, n = warp % N, groups = K / gs;
    const unsigned char *row = w + n * (K * bits / 8);
    const T *xm = x + m * K;
    T acc = 0;
    for (long long k = lane; k < K; k += 32) {
        long long g = n * groups + k / gs;
        acc += xm[k] * nvq_value<T>(row, k, bits, lut, scales[g], biases ? biases[g] : (T)0);
    }
    for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) out[m * N + n] = acc;
}

template <typename T>
__device__ void nvq_mm_n(const T *x, const unsigned char *w, const T *scales, const T *biases,
                         const float *lut, long long M, long long N, long long K, int bits,
                         int gs, T *out) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M * N) return;
    long long m = i / N, n = i % N, groups = N / gs, row_bytes = N * bits / 8;
    T acc = 0;
    for (long long k = 0; k < K; k++) {
        long long g = k * groups + n / gs;
        acc += x[m * K + k] * nvq_value<T>(w + k * row_bytes, n, bits, lut, scales[g],
                                           biases ? biases[g] : (T)0);
    }
    out[i] = acc;
}

template <typename T>
__device__ void nvq_deq(const unsigned char *w, const T *scales, const T *biases,
                        const float *lut, long long rows, long long row_len, int bits, int gs,
                        T *out) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * row_len) return;
    long long r = i / row_len, j = i % row_len, g = r * (row_len / gs) + j / gs;
    out[i] = nvq_value<T>(w + r * (row_len * bits / 8), j, bits, lut, scales[g],
                          biases ? biases[g] : (T)0);
}

#define NVQ_ENTRIES(T, S)                                                                     \
extern "C" __global__ void nvq_mm_t_##S(const T *x, const unsigned char *w, const T *sc,      \
        const T *bi, const float *lut, long long M, long long N, long long K, int bits,       \
        int gs, T *out) { nvq_mm_t<T>(x, w, sc, bi, lut, M, N, K, bits, gs, out); }           \
extern "C" __global__ void nvq_mm_n_##S(const T *x, const unsigned char *w, const T *sc,      \
        const T *bi, const float *lut, long long M, long long N, long long K, int bits,       \
        int gs, T *out) { nvq_mm_n<T>(x, w, sc, bi, lut, M, N, K, bits, gs, out); }           \
extern "C" __global__ void nvq_deq_##S(const unsigned char *w, const T *sc, const T *bi,      \
        const float *lut, long long rows, long long row_len, int bits, int gs, T *out) {      \
    nvq_deq<T>(w, sc, bi, lut, rows, row_len, bits, gs, out); }
NVQ_ENTRIES(float, f32)
NVQ_ENTRIES(double, f64)
"""
_NAMES = [f"nvq_{k}_{s}" for k in ("mm_t", "mm_n", "deq") for s in ("f32", "f64")]
_kernels: dict = {}
_luts: dict = {}
_THREADS = 256


def _fn(kind: str, f64: bool):
    if not _kernels:
        _kernels.update(zip(_NAMES, nvrtc.load(_SOURCE, _NAMES, name="nuvec_quant.cu")))
    return _kernels[f"nvq_{kind}_{'f64' if f64 else 'f32'}"]


def _lut(mode: str):
    """The float modes' code values on the device (None: affine)."""
    if mode == "affine":
        return None
    if mode not in _luts:
        _luts[mode] = cp.asarray(qf.code_values(mode))
    return _luts[mode]


def _compute(x: cp.ndarray, d: dt.Dtype, ct) -> cp.ndarray:
    """``x`` (nuvec's storage of dtype ``d``) as a C-contiguous ``ct`` array."""
    if is_half(d):
        x = to_f32(x, d)
    return cp.ascontiguousarray(x, dtype=ct)


def _scales(prim, scales, biases, sd: dt.Dtype, ct, global_scale=None):
    if prim.affine:
        return _compute(scales, sd, ct), _compute(biases, sd, ct)
    host = qf.float_scales(cp.asnumpy(scales), prim.mode, global_scale)
    return cp.asarray(host, dtype=ct), None


def _ptr(a):
    """An optional device pointer as a kernel argument (8 bytes; 0: none)."""
    return np.uint64(0 if a is None else a.data.ptr)


@gpu(Quantize)
def _quantize(prim, ins, node):
    w = node._inputs[0]._dtype
    host = cp.asnumpy(ins[0])
    if w == dt.bfloat16:
        host = host.view(dt.bfloat16.np)
    global_scale = float(cp.asnumpy(ins[1]).reshape(())) if len(ins) > 1 else None
    outs = (
        qf.quantize_affine(host, prim.group_size, prim.bits)
        if prim.affine
        else qf.quantize_float(host, prim.mode, global_scale)
    )
    return [upload(o) for o in outs]


@gpu(Dequantize)
def _dequantize(prim, ins, node):
    sd = node._inputs[1]._dtype
    f64 = prim.dtype == dt.float64 or sd == dt.float64
    ct = np.float64 if f64 else np.float32
    w = cp.ascontiguousarray(ins[0])
    global_scale = (
        float(cp.asnumpy(ins[2]).reshape(())) if not prim.affine and len(ins) > 2 else None
    )
    scales, biases = _scales(prim, ins[1], ins[2] if prim.affine else None, sd, ct, global_scale)
    row_len = w.shape[-1] * 32 // prim.bits
    rows = w.size * 32 // prim.bits // max(1, row_len)
    out = cp.empty(tuple(w.shape[:-1]) + (row_len,), ct)
    n = out.size
    half = prim.affine and is_half(sd)
    _fn("deq", f64)(
        ((n + _THREADS - 1) // _THREADS,),
        (_THREADS,),
        (
            w,
            scales,
            _ptr(None if half else biases),
            _ptr(_lut(prim.mode)),
            np.int64(rows),
            np.int64(row_len),
            np.int32(prim.bits),
            np.int32(prim.group_size),
            out,
        ),
    )
    if half:
        # half-precision scales: MLX rounds the product and then the sum in that precision
        # (as the CPU does). The float32 product of a code (at most 8 bits) and a half scale
        # is exact, and a float32 sum of two halves rounds to the half sum's bits.
        prod = to_f32(from_f32(out.astype(np.float32, copy=False), sd), sd)
        b = cp.repeat(biases.reshape(prod.shape[:-1] + (-1,)), prim.group_size, axis=-1)
        return [finish(to_f32(from_f32(prod + b, sd), sd), prim.dtype)]
    return [finish(out, prim.dtype)]


def _product(prim, f64: bool, x, w, scales, biases, lut, n: int):
    """One weight's product: x (M, K) C-contiguous, out (M, n)."""
    m, k = x.shape
    out = cp.empty((m, n), np.float64 if f64 else np.float32)
    threads = m * n * 32 if prim.transpose else m * n
    _fn("mm_t" if prim.transpose else "mm_n", f64)(
        ((threads + _THREADS - 1) // _THREADS,),
        (_THREADS,),
        (
            x,
            w,
            scales,
            _ptr(biases),
            _ptr(lut),
            np.int64(m),
            np.int64(n),
            np.int64(k),
            np.int32(prim.bits),
            np.int32(prim.group_size),
            out,
        ),
    )
    return out


@gpu(QuantizedMatmul)
def _quantized_matmul(prim, ins, node):
    xd = node._inputs[0]._dtype
    f64 = xd == dt.float64
    ct = np.float64 if f64 else np.float32
    sd = node._inputs[2]._dtype
    scales, biases = _scales(prim, ins[2], ins[3] if prim.affine else None, sd, ct)
    x, w, lut = _compute(ins[0], xd, ct), cp.ascontiguousarray(ins[1]), _lut(prim.mode)
    n = prim.out_features(w)
    if w.ndim == 2:  # one weight: every row of x in one product
        xf = x.reshape(-1, x.shape[-1])
        out = _product(prim, f64, xf, w, scales, biases, lut, n)
        return [finish(out.reshape(tuple(x.shape[:-1]) + (n,)), xd)]
    # a weight per batch entry (gather_qmm): one product per entry of the broadcast batch
    lead = np.broadcast_shapes(x.shape[:-2], w.shape[:-2])
    xb = cp.broadcast_to(x, lead + x.shape[-2:])
    wb = cp.broadcast_to(w, lead + w.shape[-2:])
    sb = cp.broadcast_to(scales, lead + scales.shape[-2:])
    bb = None if biases is None else cp.broadcast_to(biases, lead + biases.shape[-2:])
    out = cp.empty(lead + (x.shape[-2], n), ct)
    for idx in np.ndindex(*lead):
        out[idx] = _product(
            prim,
            f64,
            cp.ascontiguousarray(xb[idx]),
            cp.ascontiguousarray(wb[idx]),
            cp.ascontiguousarray(sb[idx]),
            None if bb is None else cp.ascontiguousarray(bb[idx]),
            lut,
            n,
        )
    return [finish(out, xd)]
