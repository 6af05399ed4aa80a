"""The DFT on the GPU: cuFFT through CuPy (complex64, float32 for real signals), on the
primitive's stream (CuPy plans on the current stream, which ``gpu`` sets)."""

from __future__ import annotations

import cupy as cp

from ...primitives.fft import FFT
from .runtime import finish, gpu


@gpu(FFT)
def _fft(prim, ins, node):
    x = ins[0]
    axes = list(prim.axes)
    if prim.real and prim.inverse:
        r = cp.fft.irfftn(x, s=[node._shape[a] for a in axes], axes=axes)
    elif prim.real:
        r = cp.fft.rfftn(x, axes=axes)
    elif prim.inverse:
        r = cp.fft.ifftn(x, axes=axes)
    else:
        r = cp.fft.fftn(x, axes=axes)
    return [finish(r, node._dtype)]
