"""Random bits on the CPU: threefry2x32 (20 rounds) in vectorised NumPy uint32 arithmetic.

For a key (k0, k1) and n words, the counters are the pairs (i, i + h) for i < h = ceil(n / 2),
except that for an odd n the last pair is (h - 1, 0) (MLX's stream); the output words are the
first components for all i, then the second ones, cut to n. Narrower
widths take the little-endian bytes of those words. Integer arithmetic only: the same key
gives the same bits on every machine.
"""

from __future__ import annotations

import numpy as np

from ...primitives.random import RandomBits
from ..registry import register

_ROT = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def threefry2x32(
    k0: np.ndarray, k1: np.ndarray, x0: np.ndarray, x1: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The threefry-2x32 block function (20 rounds); all arguments broadcast (uint32)."""
    k0 = np.asarray(k0, np.uint32)
    k1 = np.asarray(k1, np.uint32)
    ks = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0 = np.asarray(x0, np.uint32) + k0
    x1 = np.asarray(x1, np.uint32) + k1
    for i in range(5):
        for r in _ROT[i % 2]:
            x0 = x0 + x1
            x1 = (x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))
            x1 = x1 ^ x0
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def random_words(keys: np.ndarray, n: int) -> np.ndarray:
    """``n`` uint32 words per key: shape ``keys.shape[:-1] + (n,)``."""
    keys = np.asarray(keys, np.uint32)
    half = (n + 1) // 2
    ctr = np.arange(half, dtype=np.uint32)
    second = ctr + np.uint32(half)
    if n % 2:
        second[-1] = 0  # the middle word of an odd count (its second result is dropped)
    k0 = keys[..., 0:1]
    k1 = keys[..., 1:2]
    with np.errstate(over="ignore"):
        y0, y1 = threefry2x32(k0, k1, ctr, second)
    return np.concatenate([y0, y1], axis=-1)[..., :n]


@register(RandomBits)
def _random_bits(prim, ins, node):
    keys = ins[0]
    count = 1
    for d in prim.shape:
        count *= d
    nbytes = count * prim.width
    words = random_words(keys, (nbytes + 3) // 4)
    lead = keys.shape[:-1]
    raw = np.ascontiguousarray(words.astype("<u4", copy=False)).view(np.uint8)
    raw = raw.reshape(lead + (-1,))[..., :nbytes]
    out = np.ascontiguousarray(raw).view(node._dtype.np.newbyteorder("<"))
    return [out.astype(node._dtype.np, copy=False).reshape(lead + prim.shape)]
