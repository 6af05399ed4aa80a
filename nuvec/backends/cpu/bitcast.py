"""CPU implementations of View and ConvertFP8 (nuvec.primitives.bitcast) on NumPy."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ...primitives.bitcast import ConvertFP8, View
from ..registry import register


@register(View)
def _view(prim, ins, node):
    x = np.ascontiguousarray(ins[0])
    return [x.view(prim.dtype.np).reshape(node._shape)]


def encode_fp8(x: np.ndarray) -> np.ndarray:
    """fp8 e4m3 codes of ``x`` as MLX writes them: nearest even, saturating at 448."""
    f = np.asarray(x, dtype=np.float32)
    codes = f.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    sign = (f.view(np.uint32) >> 24).astype(np.uint8) & np.uint8(0x80)
    big = ~(np.abs(f) < np.float32(464.0))  # also infinities and NaN
    return np.where(big, sign | np.uint8(0x7E), codes)


def decode_fp8(codes: np.ndarray, np_dtype) -> np.ndarray:
    """Values of e4m3 ``codes`` as MLX reads them (0x7F is 480: no NaN code)."""
    c = np.asarray(codes, dtype=np.uint8)
    mag = ((c & np.uint8(0x7F)).astype(np.uint16) << np.uint16(7)).view(np.float16)
    v = mag.astype(np.float32) * np.float32(256.0)
    return np.where(c & np.uint8(0x80), -v, v).astype(np_dtype)


@register(ConvertFP8)
def _convert_fp8(prim, ins, node):
    if prim.to_fp8:
        return [encode_fp8(ins[0])]
    return [decode_fp8(ins[0], prim.dtype.np)]
