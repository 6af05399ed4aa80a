"""Random bits on the GPU: the CPU's threefry2x32 (20 rounds, same counters and word order,
see ``nuvec.backends.cpu.random``) as one CUDA kernel, so a key gives the same bits on both.

For each key (k0, k1) and h = ceil(words / 2), thread i computes the block of counters
(i, i + h), or (h - 1, 0) for the last one of an odd count, and writes its two results to
words i and h + i of that key's row.
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from ...primitives.random import RandomBits
from .runtime import gpu

_SOURCE = r"""
__device__ __forceinline__ unsigned int rotl(unsigned int x, int r)
{ return (x << r) | (x >> (32 - r)); }

extern "C" __global__ void nv_threefry(const unsigned int *__restrict__ keys,
                                       long long nkeys, long long half, int odd,
                                       unsigned int *__restrict__ out)
{
    const int R[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
    long long total = nkeys * half;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)blockDim.x * gridDim.x) {
        long long key = t / half, i = t - key * half;
        unsigned int k0 = keys[2 * key], k1 = keys[2 * key + 1];
        unsigned int ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
        unsigned int x0 = (unsigned int)i + k0;
        unsigned int x1 = (odd && i == half - 1 ? 0u : (unsigned int)(i + half)) + k1;
        #pragma unroll
        for (int r = 0; r < 5; r++) {
            #pragma unroll
            for (int j = 0; j < 4; j++) {
                x0 += x1;
                x1 = rotl(x1, R[r % 2][j]);
                x1 ^= x0;
            }
            x0 += ks[(r + 1) % 3];
            x1 += ks[(r + 2) % 3] + (unsigned int)(r + 1);
        }
        out[key * 2 * half + i] = x0;
        out[key * 2 * half + half + i] = x1;
    }
}
"""

_kernel = []


def _threefry():
    if not _kernel:
        _kernel.append(cp.RawKernel(_SOURCE, "nv_threefry", options=("--fmad=false",)))
    return _kernel[0]


def random_words(keys: cp.ndarray, n: int) -> cp.ndarray:
    """``n`` uint32 words per key (shape ``keys.shape[:-1] + (n,)``), as the CPU's."""
    keys = cp.ascontiguousarray(keys, dtype=cp.uint32)
    lead = keys.shape[:-1]
    nkeys = int(np.prod(lead, dtype=np.int64)) if lead else 1
    half = (n + 1) // 2
    out = cp.empty(lead + (2 * half,), cp.uint32)
    total = nkeys * half
    if total:
        grid = min((total + 255) // 256, 1 << 20)
        _threefry()((grid,), (256,), (keys, np.int64(nkeys), np.int64(half), np.int32(n % 2), out))
    return out[..., :n]


@gpu(RandomBits)
def _random_bits(prim, ins, node):
    keys = ins[0]
    count = 1
    for d in prim.shape:
        count *= d
    nbytes = count * prim.width
    words = random_words(keys, (nbytes + 3) // 4)
    lead = keys.shape[:-1]
    raw = cp.ascontiguousarray(words).view(cp.uint8)  # little-endian, as the CPU's
    raw = cp.ascontiguousarray(raw.reshape(lead + (-1,))[..., :nbytes])
    return [raw.view(node._dtype.np).reshape(lead + prim.shape)]
