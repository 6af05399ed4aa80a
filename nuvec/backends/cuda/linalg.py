"""Matrix products on the GPU: cuBLAS for float32 / float64 (full float32, no TF32) through
nuvec's own handle where the operands' layout allows (``gemm``: a CUDA graph can record it),
else through CuPy (complex64, other layouts; CuPy's own kernels for integers). float16 and
bfloat16 are multiplied in float32 and rounded once, as on the CPU."""

from __future__ import annotations

import cupy as cp

from ...primitives.linalg import AddMM, Matmul
from .gemm import matmul as _gemm
from .runtime import computable, finish, gpu


def _product(a, b):
    r = _gemm(a, b)
    return cp.matmul(a, b) if r is None else r


@gpu(Matmul)
def _matmul(prim, ins, node):
    d = node._dtype
    a, b = (computable(x, d) for x in ins)
    return [finish(_product(a, b), d)]


@gpu(AddMM)
def _addmm(prim, ins, node):
    d = node._dtype
    c, a, b = (computable(x, d) for x in ins)
    r = _product(a, b)
    if prim.alpha != 1.0:
        r *= prim.alpha
    if prim.beta != 0.0 and r.size:
        c = c.astype(r.dtype, copy=False)
        if prim.beta == 1.0:
            r += c
        else:
            r += prim.beta * c
    return [finish(r, d)]
