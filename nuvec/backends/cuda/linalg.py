"""Matrix products on the GPU: cuBLAS through CuPy for float32 / float64 / complex64 (full
float32: CuPy leaves TF32 off unless CUPY_TF32=1), CuPy's own kernels for integers. float16 and
bfloat16 are multiplied in float32 and rounded once, as on the CPU."""
from __future__ import annotations

import cupy as cp

from ...primitives.linalg import AddMM, Matmul
from .runtime import computable, finish, gpu


@gpu(Matmul)
def _matmul(prim, ins, node):
    d = node._dtype
    a, b = (computable(x, d) for x in ins)
    return [finish(cp.matmul(a, b), d)]


@gpu(AddMM)
def _addmm(prim, ins, node):
    d = node._dtype
    c, a, b = (computable(x, d) for x in ins)
    r = cp.matmul(a, b)
    if prim.alpha != 1.0:
        r *= prim.alpha
    if prim.beta != 0.0 and r.size:
        c = c.astype(r.dtype, copy=False)
        if prim.beta == 1.0:
            r += c
        else:
            r += prim.beta * c
    return [finish(r, d)]
