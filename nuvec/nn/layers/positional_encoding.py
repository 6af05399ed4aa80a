"""Positional encodings: rotary (RoPE) and sinusoidal.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> nn.RoPE(8)(nv.ones((1, 5, 8))).shape
(1, 5, 8)
>>> nn.SinusoidalPositionalEncoding(16)(nv.arange(10)).shape
(10, 16)
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

import nuvec as nv

from .base import Module


class RoPE(Module):
    r"""Rotary positional encoding over the first ``dims`` features of ``x``
    (``(..., L, D)``; positions run along axis -2, starting at ``offset``).

    Feature pair ``i`` at position :math:`p` is rotated by the angle
    :math:`p \cdot scale \cdot base^{-2i/dims}`. The pairs are ``(j, j + dims/2)``, or
    adjacent features ``(2j, 2j + 1)`` when ``traditional``. Features past ``dims`` pass
    through unchanged.
    """

    def __init__(self, dims: int, traditional: bool = False, base: float = 10000,
                 scale: float = 1.0) -> None:
        super().__init__()
        if dims <= 0 or dims % 2:
            raise ValueError(f"RoPE: dims must be positive and even, got {dims}")
        self.dims = dims
        self.traditional = traditional
        self.base = base
        self.scale = scale

    def _extra_repr(self) -> str:
        return f"{self.dims}, traditional={self.traditional}"

    def __call__(self, x, offset: int = 0):
        return nv.fast.rope(x, self.dims, traditional=self.traditional, base=self.base,
                            scale=self.scale, offset=int(offset))


class SinusoidalPositionalEncoding(Module):
    r"""Sinusoidal encoding of (possibly fractional) positions ``x``: output
    ``x.shape + (dims,)``, the sines of ``x`` times ``dims/2`` frequencies spaced
    geometrically from ``max_freq`` down to ``min_freq``, then their cosines (cosines first
    with ``cos_first``), all times ``scale`` (default :math:`\sqrt{2/dims}`). With
    ``full_turns`` the frequencies are multiplied by :math:`2\pi`.
    """

    def __init__(self, dims: int, min_freq: float = 0.0001, max_freq: float = 1,
                 scale: Optional[float] = None, cos_first: bool = False,
                 full_turns: bool = False) -> None:
        super().__init__()
        if dims <= 0 or dims % 2:
            raise ValueError(f"SinusoidalPositionalEncoding: dims must be positive and even, "
                             f"got {dims}")
        half = dims // 2
        frac = np.ones(1, np.float32) if half == 1 else \
            1 - np.arange(half, dtype=np.float32) / np.float32(half - 1)
        lo, hi = math.log(min_freq), math.log(max_freq)
        sig = np.exp(frac * np.float32(hi - lo) + np.float32(lo)).astype(np.float32)
        if full_turns:
            sig = sig * np.float32(2 * math.pi)
        self._sigmas = nv.array(sig)  # underscore: state, not a parameter
        self.scale = scale if scale is not None else (2 / dims) ** 0.5
        self.cos_first = cos_first

    def __call__(self, x):
        y = nv.expand_dims(x, -1) * self._sigmas
        c, s = nv.cos(y), nv.sin(y)
        y = nv.concatenate([c, s] if self.cos_first else [s, c], axis=-1)
        return y * self.scale if self.scale != 1 else y
