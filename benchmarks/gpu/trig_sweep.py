"""Every float32 bit pattern through a unary op on the GPU and on the CPU: how many differ.

    python benchmarks/gpu/trig_sweep.py sin cos tan   # on a machine with an NVIDIA GPU

Both devices run nuvec's generated code for the op, so every bit should agree (NaN payloads
aside); the CUDA test suite checks samples, this checks all 2^32 inputs (about 40 s an op).
"""

from __future__ import annotations

import sys
import time

import cupy as cp
import numpy as np

from nuvec.backends.cpu import kernels as cpu_kernels
from nuvec.backends.cuda import kernels as gpu_kernels
from nuvec.codegen.ir import KernelSpec

CHUNK = 1 << 26


def sweep(op: str) -> tuple[int, tuple | None]:
    """(inputs whose results differ, the first of them as (bits, gpu, cpu) or None)."""
    spec = KernelSpec.single(op, ("float32",), "float32")
    bad, first = 0, None
    for start in range(0, 1 << 32, CHUNK):
        x = np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32).view(np.float32)
        want = cpu_kernels.run(spec, [x], (CHUNK,))[0]
        got = cp.asnumpy(gpu_kernels.run(spec, [cp.asarray(x)], (CHUNK,))[0]).view(np.float32)
        diff = (got.view(np.uint32) != want.view(np.uint32)) & ~(np.isnan(got) & np.isnan(want))
        n = int(diff.sum())
        if n and first is None:
            i = int(np.argmax(diff))
            first = (hex(int(x.view(np.uint32)[i])), float(got[i]), float(want[i]))
        bad += n
    return bad, first


if __name__ == "__main__":
    for name in sys.argv[1:]:
        t0 = time.perf_counter()
        count, at = sweep(name)
        took = time.perf_counter() - t0
        print(f"{name}: {count} of 2^32 inputs differ (first: {at}), {took:.0f} s")
