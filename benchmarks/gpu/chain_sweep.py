"""The benchmark chains compiled (exact, no fast math) on the GPU and on the CPU: how many results
differ, over every float16 / bfloat16 input and 2^24 float32 bit patterns (every 256th).

    PYTHONPATH=. python benchmarks/gpu/chain_sweep.py        # on a machine with an NVIDIA GPU

Compiled kernels compute each element the same way on every device, so every bit should agree
(NaN payloads aside).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import nuvec as nv

CHAINS = {
    "gelu": lambda x: x * 0.5 * (1 + nv.erf(x * 0.70710678)),
    "gelu_tanh": lambda x: 0.5 * x * (1 + nv.tanh(0.79788456 * (x + 0.044715 * x * x * x))),
    "swish": lambda x: x * nv.sigmoid(x),
    "10op": lambda x: nv.maximum(nv.exp(-nv.abs(nv.tanh(x * 1.5 + 0.25) * x - 0.5)) * 3, 0.1),
}


def inputs(dtype: str) -> np.ndarray:
    """Every bit pattern of a 16-bit float dtype; every 256th of float32."""
    if dtype == "float32":
        return (np.arange(1 << 24, dtype=np.uint64) << 8).astype(np.uint32).view(np.float32)
    npdt = np.dtype(np.float16) if dtype == "float16" else np.dtype(ml_dtypes.bfloat16)
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(npdt)


def differ(fn, x: np.ndarray) -> int:
    """Results of ``nv.compile(fn)`` that differ between the GPU and the CPU (any NaN equals any
    NaN)."""
    out = []
    for dev in (nv.cpu, nv.gpu):
        with nv.stream(dev):
            out.append(np.asarray(nv.compile(fn)(nv.array(x)).astype(nv.float32)))
    a, b = out
    bad = (a.view(np.uint32) != b.view(np.uint32)) & ~(np.isnan(a) & np.isnan(b))
    return int(bad.sum())


if __name__ == "__main__":
    for dtype in ("bfloat16", "float16", "float32"):
        x = inputs(dtype)
        for name, fn in CHAINS.items():
            print(f"{dtype:9s} {name:10s} {differ(fn, x)} of {x.size} differ", flush=True)
