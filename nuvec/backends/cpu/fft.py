"""The DFT on the CPU: NumPy's pocketfft, which keeps single precision (complex64 in and out,
float32 for real signals), over the primitive's axes in any layout."""

from __future__ import annotations

import numpy as np

from ...primitives.fft import FFT
from ..registry import register


@register(FFT)
def _fft(prim, ins, node):
    x = ins[0]
    axes = list(prim.axes)
    if prim.real and prim.inverse:
        s = [node._shape[a] for a in axes]
        r = np.fft.irfftn(x, s=s, axes=axes)
    elif prim.real:
        r = np.fft.rfftn(x, axes=axes)
    elif prim.inverse:
        r = np.fft.ifftn(x, axes=axes)
    else:
        r = np.fft.fftn(x, axes=axes)
    return [r.astype(node._dtype.np, copy=False)]
