"""Positional encodings: rotary (RoPE), sinusoidal, and ALiBi's attention biases.

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

    def __init__(
        self, dims: int, traditional: bool = False, base: float = 10000, scale: float = 1.0
    ) -> None:
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
        return nv.fast.rope(
            x,
            self.dims,
            traditional=self.traditional,
            base=self.base,
            scale=self.scale,
            offset=int(offset),
        )


class SinusoidalPositionalEncoding(Module):
    r"""Sinusoidal encoding of (possibly fractional) positions ``x``: output
    ``x.shape + (dims,)``, the sines of ``x`` times ``dims/2`` frequencies spaced
    geometrically from ``max_freq`` down to ``min_freq``, then their cosines (cosines first
    with ``cos_first``), all times ``scale`` (default :math:`\sqrt{2/dims}`). With
    ``full_turns`` the frequencies are multiplied by :math:`2\pi`.
    """

    def __init__(
        self,
        dims: int,
        min_freq: float = 0.0001,
        max_freq: float = 1,
        scale: Optional[float] = None,
        cos_first: bool = False,
        full_turns: bool = False,
    ) -> None:
        super().__init__()
        if dims <= 0 or dims % 2:
            raise ValueError(
                f"SinusoidalPositionalEncoding: dims must be positive and even, got {dims}"
            )
        half = dims // 2
        frac = (
            np.ones(1, np.float32)
            if half == 1
            else 1 - np.arange(half, dtype=np.float32) / np.float32(half - 1)
        )
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


def _alibi_slopes(n: int) -> list:
    """The heads' slopes: ``2^(-8 i / n)`` for ``i = 1..n`` when ``n`` is a power of two;
    otherwise those of the power of two below ``n``, then every other slope of twice that
    power for the remaining heads."""
    if n & (n - 1) == 0:
        return [2.0 ** (-8.0 * i / n) for i in range(1, n + 1)]
    low = 1 << (n.bit_length() - 1)
    return _alibi_slopes(low) + _alibi_slopes(2 * low)[0::2][: n - low]


class ALiBi(Module):
    """Attention with linear biases: adds ``-slope_h * |i - j|`` to the attention scores
    ``(B, H, L_q, L_k)`` of head ``h`` (query ``i`` counted from ``offset``); an optional
    additive ``mask`` is added too.

    >>> scores = ALiBi()(nv.zeros((1, 2, 2, 2)))
    >>> scores[0, 0].tolist()
    [[0.0, -0.0625], [-0.0625, 0.0]]
    """

    @staticmethod
    def create_alibi_slope(num_heads: int, dtype=nv.float32):
        """The slopes, shape ``(num_heads, 1, 1)``."""
        return nv.reshape(nv.array(_alibi_slopes(num_heads), dtype=dtype), (num_heads, 1, 1))

    @staticmethod
    def create_alibi_matrix(
        q_sequence_length: int,
        k_sequence_length: int,
        num_heads: int,
        offset: int,
        dtype=nv.float32,
    ):
        """The biases ``(1, num_heads, q_sequence_length - offset, k_sequence_length)``."""
        q = nv.arange(offset, q_sequence_length)
        k = nv.arange(0, k_sequence_length)
        distance = -nv.abs(q[:, None] - k[None, :])[None, None]
        return nv.astype(distance * ALiBi.create_alibi_slope(num_heads, dtype), dtype)

    def __call__(self, attention_scores, offset: int = 0, mask=None):
        if attention_scores.ndim != 4:
            raise ValueError(
                f"ALiBi: expects scores (B, H, L_q, L_k), got shape {tuple(attention_scores.shape)}"
            )
        _, heads, lq, lk = attention_scores.shape
        bias = self.create_alibi_matrix(lq + offset, lk, heads, offset, attention_scores.dtype)
        if mask is not None:
            bias = bias + mask
        return attention_scores + bias
