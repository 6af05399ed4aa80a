"""Quantization on the CPU: quantize through ``quant_formats`` (NumPy, MLX's arithmetic),
dequantize and quantized products through the C kernels of ``_quant.pyx`` (csrc/nv_quant.c),
which decode the packed weight row by row inside the product. float64 data is computed in
float64, everything else in float32 (half-precision results rounded once)."""

from __future__ import annotations

import numpy as np

from ...primitives import quant_formats as qf
from ...primitives.quantized import Dequantize, QuantizedMatmul, Quantize
from ..registry import register, register_specialized
from . import _quant
from .memory import empty


def _compute_dtype(d: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if d == np.float64 else np.dtype(np.float32)


def _scales_and_biases(prim, scales, biases, ct: np.dtype, global_scale=None):
    """The scales (and biases, affine; else None) as C-contiguous ``ct`` arrays."""
    if prim.affine:
        return np.ascontiguousarray(scales, ct), np.ascontiguousarray(biases, ct)
    return np.ascontiguousarray(qf.float_scales(scales, prim.mode, global_scale), ct), None


@register(Quantize)
def _quantize(prim, ins, node):
    w = np.ascontiguousarray(ins[0])
    if prim.affine:
        return list(qf.quantize_affine(w, prim.group_size, prim.bits))
    return list(qf.quantize_float(w, prim.mode, ins[1].item() if len(ins) > 1 else None))


@register(Dequantize)
def _dequantize(prim, ins, node):
    w = np.ascontiguousarray(ins[0])
    out_dtype = np.dtype(prim.dtype.np)
    row_len = w.shape[-1] * 32 // prim.bits
    if prim.affine and ins[1].dtype.itemsize == 2:
        # half-precision scales: MLX's two roundings in that precision (NumPy's half
        # arithmetic rounds each operation)
        codes = qf.unpack(w, prim.bits).reshape(*w.shape[:-1], -1, prim.group_size)
        sc, bi = ins[1][..., None], ins[2][..., None]
        out = (codes.astype(sc.dtype) * sc + bi).reshape(*w.shape[:-1], row_len)
        return [out.astype(out_dtype)]
    ct = _compute_dtype(ins[1].dtype if prim.affine else out_dtype)
    global_scale = ins[2].item() if not prim.affine and len(ins) > 2 else None
    scales, biases = _scales_and_biases(prim, ins[1], ins[-1], ct, global_scale)
    out = empty(tuple(w.shape[:-1]) + (row_len,), ct)
    _quant.dequantize(
        w, scales, biases, qf.code_values(prim.mode), row_len, prim.bits, prim.group_size, out
    )
    return [out if out.dtype == out_dtype else out.astype(out_dtype)]


@register(QuantizedMatmul)
def _quantized_matmul(prim, ins, node):
    x = ins[0]
    out_dtype = np.dtype(x.dtype)
    ct = _compute_dtype(out_dtype)
    scales, biases = _scales_and_biases(prim, ins[2], ins[-1], ct)
    w = ins[1]
    lut = qf.code_values(prim.mode)
    n = w.shape[-2] if prim.transpose else w.shape[-1] * 32 // prim.bits
    if w.ndim == 2:  # one weight: every row of x in one product
        xf = np.ascontiguousarray(x.reshape(-1, x.shape[-1]), ct)
        out = empty((xf.shape[0], n), ct)
        _quant.qmm(
            xf,
            np.ascontiguousarray(w),
            scales,
            biases,
            lut,
            prim.bits,
            prim.group_size,
            prim.transpose,
            out,
        )
        out = out.reshape(tuple(x.shape[:-1]) + (n,))
    else:  # a weight per batch entry
        lead = np.broadcast_shapes(x.shape[:-2], w.shape[:-2])
        xb = np.broadcast_to(x, lead + x.shape[-2:])
        wb = np.broadcast_to(w, lead + w.shape[-2:])
        sb = np.broadcast_to(scales, lead + scales.shape[-2:])
        bb = None if biases is None else np.broadcast_to(biases, lead + biases.shape[-2:])
        out = empty(lead + (x.shape[-2], n), ct)
        for idx in np.ndindex(*lead):
            o = np.empty((x.shape[-2], n), ct)
            _quant.qmm(
                np.ascontiguousarray(xb[idx], ct),
                np.ascontiguousarray(wb[idx]),
                np.ascontiguousarray(sb[idx]),
                None if bb is None else np.ascontiguousarray(bb[idx]),
                lut,
                prim.bits,
                prim.group_size,
                prim.transpose,
                o,
            )
            out[idx] = o
    return [out if out.dtype == out_dtype else out.astype(out_dtype)]


@register_specialized(QuantizedMatmul)
def _quantized_matmul_step(prim, node):
    """A compiled step's product with one 2-D weight: the output's shape, the compute type
    and the code table fixed once; x, scales and biases passed as they are where they
    already have the compute type and layout (the usual case: a model's float32 weights)."""
    x, w = node._inputs[0], node._inputs[1]
    if w.ndim != 2 or len(node._inputs) != 4 or not prim.affine:
        return None
    out_dtype = np.dtype(node._dtype.np)
    ct = _compute_dtype(out_dtype)
    if out_dtype != ct:
        return None
    k = x._shape[-1]
    m = 1
    for d in x._shape[:-1]:
        m *= d
    n = w._shape[-2] if prim.transpose else w._shape[-1] * 32 // prim.bits
    shape = tuple(node._shape)
    bits, gs, transpose = prim.bits, prim.group_size, prim.transpose
    qmm = _quant.qmm
    contiguous = np.ascontiguousarray

    def run(prim, ins, node):
        xf = ins[0].reshape(m, k)
        if xf.dtype != ct or not xf.flags.c_contiguous:
            xf = contiguous(xf, ct)
        s, b = ins[2], ins[3]
        if s.dtype != ct or not s.flags.c_contiguous:
            s = contiguous(s, ct)
        if b.dtype != ct or not b.flags.c_contiguous:
            b = contiguous(b, ct)
        out = empty((m, n), ct)
        qmm(xf, contiguous(ins[1]), s, b, None, bits, gs, transpose, out)
        return [out.reshape(shape)]

    return run
