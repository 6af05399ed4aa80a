"""Transform rules of the primitives of ``nuvec.primitives.fft``."""

from __future__ import annotations

from ... import ops
from ...core import dtypes as dt
from ...core.array import Array
from ...primitives._common import batched_axes
from ...primitives.fft import FFT
from ._common import arange_along


def _fft_interior_mask(prim, size: int, odd: bool, ndim: int, inner, outer) -> Array:
    """``inner`` at the frequencies of the last axis that stand for a mirrored pair too
    (all but the zero frequency and, for an even length, the Nyquist one), else ``outer``."""
    k = arange_along(size, prim.axes[-1], ndim)
    interior = ops.logical_and(ops.greater(k, 0), ops.less(k, size - 1 + odd))
    return ops.where(interior, inner, outer)


def _fft_jvp(prim, primals, tangents, argnums):
    # linear: the tangent's transform (in the dtype the primitive takes)
    (x,), (t,) = primals, tangents
    return [Array.make(prim, [ops.astype(t, x._dtype)])]


def _dft(x: Array, axes, inverse: bool, real: bool, odd: bool = False) -> Array:
    """The unscaled transform of ``x`` (cast to the dtype the primitive takes) over ``axes``:
    what ``nv.fft``'s functions make for a cotangent whose sizes need no crop or padding."""
    want = dt.float32 if real and not inverse else dt.complex64
    return Array.make(FFT(axes, inverse, real, odd), [ops.astype(x, want)])


def _fft_vjp(prim, primals, cotangents, argnums, outputs):
    (x,), (g,) = primals, cotangents
    axes = list(prim.axes)
    sizes = g.shape if prim.inverse else x.shape
    n = 1.0
    for a in axes:
        n *= sizes[a]
    if prim.real and prim.inverse:
        m = x.shape[axes[-1]]
        mask = _fft_interior_mask(
            prim,
            m,
            g.shape[axes[-1]] % 2 == 1,
            x.ndim,
            ops.creation.array(2 / n, dt.complex64),
            ops.creation.array(1 / n, dt.complex64),
        )
        return [ops.multiply(_dft(ops.astype(g, dt.float32), axes, False, True), mask)]
    if prim.real:
        m = g.shape[axes[-1]]
        mask = _fft_interior_mask(
            prim,
            m,
            x.shape[axes[-1]] % 2 == 1,
            x.ndim,
            ops.creation.array(0.5, dt.complex64),
            ops.creation.array(1.0, dt.complex64),
        )
        odd = x.shape[axes[-1]] % 2 == 1
        back = _dft(ops.multiply(ops.astype(g, dt.complex64), mask), axes, True, True, odd)
        return [ops.multiply(back, ops.creation.array(n, dt.float32))]
    g = ops.astype(g, dt.complex64)
    if prim.inverse:
        return [ops.multiply(_dft(g, axes, False, False), ops.creation.array(1 / n, dt.complex64))]
    return [ops.multiply(_dft(g, axes, True, False), ops.creation.array(n, dt.complex64))]


def _fft_vmap(prim, inputs, axes):
    (x,), (b,) = inputs, axes
    return [Array.make(FFT(batched_axes(prim.axes, b), prim.inverse, prim.real, prim.odd), [x])], [
        b
    ]


VJP = {
    FFT: _fft_vjp,
}
JVP = {
    FFT: _fft_jvp,
}
VMAP = {
    FFT: _fft_vmap,
}
