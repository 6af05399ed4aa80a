"""MLX's quantization formats on NumPy data: the one place that knows the packed layouts.

A quantized matrix keeps its leading axes; along the last axis every ``group_size`` values
share a scale (and, in the affine mode, a bias), and each value becomes a ``bits``-bit code.
Each row of codes is a little-endian bit stream (code ``j`` at bit ``j * bits``) stored as
uint32 words, ``32 / bits`` codes per word for 2, 4 and 8 bits and straddling words for 3, 5
and 6, exactly as MLX packs it, so MLX-quantized checkpoints load unchanged.

Modes (MLX's names): ``affine`` (``w ~ scale * q + bias``, scales and biases in ``w``'s
dtype), ``mxfp4`` (4-bit e2m1 codes, groups of 32, e8m0 power-of-two scales as uint8),
``mxfp8`` (e4m3 codes, groups of 32, e8m0 scales), ``nvfp4`` (e2m1 codes, groups of 16, e4m3
scales).

>>> import numpy as np
>>> wq, s, b = quantize_affine(np.linspace(-1, 1, 64, dtype=np.float32)[None], 64, 4)
>>> wq.shape, wq.dtype, s.shape
((1, 8), dtype('uint32'), (1, 1))
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

MODES = {"affine": (64, 4), "mxfp4": (32, 4), "mxfp8": (32, 8), "nvfp4": (16, 4)}
AFFINE_GROUPS = (32, 64, 128)
AFFINE_BITS = (2, 3, 4, 5, 6, 8)

FP4_VALUES = np.array(
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
    np.float32,
)
E4M3_VALUES = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)


def fixed_params(mode: str) -> tuple[int, int]:
    """The (group_size, bits) a float mode requires (affine: its defaults)."""
    return MODES[mode]


def code_values(mode: str):
    """What each code stands for, float32 (256,) (the C kernels' table), or None: the code
    itself (affine)."""
    if mode == "affine":
        return None
    lut = np.zeros(256, np.float32)
    if mode == "mxfp8":
        lut[:] = E4M3_VALUES
    else:
        lut[:16] = FP4_VALUES
    return lut


def pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """Codes (..., n) of ``bits`` bits each (n * bits a multiple of 32) to uint32 words."""
    codes = codes.astype(np.uint8)
    lead, n = codes.shape[:-1], codes.shape[-1]
    if 32 % bits == 0:  # whole codes per word: shifted and or-ed
        per = 32 // bits
        shifts = np.arange(0, 32, bits, dtype=np.uint32)
        words = codes.reshape(*lead, n // per, per).astype(np.uint32) << shifts
        return np.bitwise_or.reduce(words, axis=-1)
    stream = (codes[..., None] >> np.arange(bits, dtype=np.uint8)) & 1  # (..., n, bits)
    stream = stream.reshape(*lead, n * bits)
    packed = np.packbits(stream, axis=-1, bitorder="little")  # bytes, LE bits
    return np.ascontiguousarray(packed).view(np.uint32).reshape(*lead, n * bits // 32)


def unpack(words: np.ndarray, bits: int) -> np.ndarray:
    """uint32 words (..., m) to their ``32 * m / bits`` codes (uint8)."""
    words = np.ascontiguousarray(words, dtype=np.uint32)
    lead = words.shape[:-1]
    stream = np.unpackbits(words.view(np.uint8), axis=-1, bitorder="little")
    stream = stream.reshape(*lead, -1, bits)
    return (stream << np.arange(bits, dtype=np.uint8)).sum(-1, dtype=np.uint8)


def quantize_affine(w: np.ndarray, group_size: int, bits: int):
    """MLX's affine quantization (its CPU kernel's arithmetic, float32): per group the scale
    spans min..max, the edge of larger magnitude is hit exactly (bias = edge) and codes round
    half to even. Returns (packed uint32, scales, biases), scales and biases in ``w``'s
    dtype."""
    n_bins = np.float32((1 << bits) - 1)
    g = w.astype(np.float32).reshape(*w.shape[:-1], w.shape[-1] // group_size, group_size)
    w_max, w_min = g.max(-1), g.min(-1)
    neg_edge = np.abs(w_min) > np.abs(w_max)
    scale = np.maximum((w_max - w_min) / n_bins, np.float32(1e-7))
    scale = np.where(neg_edge, scale, -scale)
    edge = np.where(neg_edge, w_min, w_max)
    q0 = np.rint(edge / scale)
    nonzero = q0 != 0
    scale = np.where(nonzero, edge / np.where(nonzero, q0, np.float32(1)), scale)
    bias = np.where(nonzero, edge, np.float32(0))
    q = np.clip(np.rint((g - bias[..., None]) / scale[..., None]), 0, n_bins)
    codes = q.astype(np.uint8).reshape(w.shape)
    return pack(codes, bits), scale.astype(w.dtype), bias.astype(w.dtype)


def _e8m0(scale: np.ndarray) -> np.ndarray:
    """The least power-of-two exponents not below positive scales (ceil(log2), exactly:
    no code overflows its range; 0 stays 0), as int32."""
    m, e = np.frexp(scale.astype(np.float32))  # scale = m * 2^e, m in [0.5, 1)
    return np.where(scale == 0, 0, np.where(m == 0.5, e - 1, e)).astype(np.int32)


def _to_e4m3(x: np.ndarray) -> np.ndarray:
    """float32 to e4m3 (round to nearest even, saturating at 448) as its uint8 bits."""
    x = np.clip(x.astype(np.float32), -448.0, 448.0)
    return x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)


def _nearest_fp4(x: np.ndarray) -> np.ndarray:
    """The index of the nearest e2m1 value (the first of equals)."""
    return np.argmin(np.abs(x[..., None] - FP4_VALUES.astype(x.dtype)), axis=-1)


NVFP4_RANGE = np.float32(448.0 * 6.0)  # nvfp4's global scale maps amax to this


def quantize_float(w: np.ndarray, mode: str, global_scale=None):
    """The float modes as MLX computes them (in ``w``'s dtype): returns (packed uint32,
    uint8 scales). nvfp4's optional ``global_scale`` (float32) divides the per-group scales
    into e4m3's range: they are stored times ``448 * 6 / global_scale``."""
    group_size, bits = MODES[mode]
    maxval = w.dtype.type(6.0 if bits == 4 else 448.0)
    g = w.reshape(*w.shape[:-1], w.shape[-1] // group_size, group_size)
    scales = (np.abs(g).max(-1, keepdims=True) / maxval).astype(w.dtype)
    if mode == "nvfp4":
        encode = np.float32(1) if global_scale is None else NVFP4_RANGE / np.float32(global_scale)
        sbits = _to_e4m3(scales.astype(np.float32) * encode)
        g = (g / E4M3_VALUES[sbits].astype(w.dtype) * encode).astype(w.dtype)
    else:
        e = _e8m0(scales.astype(np.float32))
        g = (g / np.power(w.dtype.type(2), e).astype(w.dtype)).astype(w.dtype)
        sbits = (e + 127).astype(np.uint8)
    codes = _nearest_fp4(g) if bits == 4 else _to_e4m3(g.astype(np.float32))
    codes = codes.reshape(w.shape)
    return pack(codes, bits), sbits.reshape(*w.shape[:-1], -1)


def float_scales(scales: np.ndarray, mode: str, global_scale=None) -> np.ndarray:
    """uint8 scales of a float mode as float32 values (e8m0: 2^(s - 127), the zero code
    2^-127 as MLX decodes it; nvfp4: e4m3, times ``global_scale / (448 * 6)`` if given)."""
    if mode == "nvfp4":
        if global_scale is None:
            return E4M3_VALUES[scales]
        return E4M3_VALUES[scales] * (np.float32(global_scale) / NVFP4_RANGE)
    s = scales.astype(np.int32)
    bf16 = np.where(s == 0, 0x40, s << 7).astype(np.uint16)
    return bf16.view(ml_dtypes.bfloat16).astype(np.float32)
