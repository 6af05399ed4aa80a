"""Linear algebra on the CPU: float32/float64 products through the BLAS that blas.py chose (MKL
or NumPy's), other dtypes through NumPy's matmul (its BLAS for complex, its own loops for
integers). Transposed and strided views go to BLAS as they are. float16 and bfloat16 are
multiplied in float32 and rounded once."""

from __future__ import annotations

import numpy as np

from ...primitives.linalg import AddMM, Matmul, PermutedMatmul
from ...codegen.ir import KernelSpec
from ..registry import register
from . import blas
from .kernels import run

from .memory import empty as _buffer  # results come from the buffer cache

_F32 = np.dtype(np.float32)


def _half(d: np.dtype) -> bool:
    return d.itemsize == 2 and d.kind in "fV"


def _product(a: np.ndarray, b: np.ndarray, shape) -> np.ndarray:
    if _half(a.dtype):
        a, b = a.astype(_F32), b.astype(_F32)
    out = _buffer(shape, a.dtype)
    if out.size:
        blas.matmul(a, b, out)
    return out


@register(Matmul)
def _matmul(prim, ins, node):
    a, b = ins
    r = _product(a, b, node._shape)
    return [r.astype(node._dtype.np, copy=False)]


@register(PermutedMatmul)
def _permuted_matmul(prim, ins, node):
    a, b = ins
    dtype = _F32 if _half(a.dtype) else a.dtype
    out = _buffer(node._shape, dtype)
    inverse = tuple(sorted(range(len(prim.axes)), key=prim.axes.__getitem__))
    if out.size:
        if _half(a.dtype):
            a, b = a.astype(_F32), b.astype(_F32)
        blas.matmul(a, b, out.transpose(inverse))  # the product, in out's layout
    return [out.astype(node._dtype.np, copy=False)]


# the bias add of addmm in place, through the element-wise kernel: its threads, not NumPy's one
# (keyed by NumPy dtype: ``dtype.name`` runs Python code, several microseconds a call)
_ADD = {np.dtype(d): KernelSpec.single("add", (d, d), d) for d in ("float32", "float64")}


@register(AddMM)
def _addmm(prim, ins, node):
    c, a, b = ins
    r = _product(a, b, node._shape)
    if prim.alpha != 1.0:
        r *= prim.alpha
    if prim.beta != 0.0 and r.size:
        c = c.astype(r.dtype, copy=False)
        add = _ADD.get(r.dtype) if prim.beta == 1.0 else None
        if add is not None:
            run(add, [r, c], r.shape, [r])
        elif prim.beta == 1.0:
            r += c
        else:
            r += prim.beta * c
    return [r.astype(node._dtype.np, copy=False)]
