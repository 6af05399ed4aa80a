"""The discrete Fourier transform as one primitive, ``FFT(axes, inverse, real, odd)``.

Four transforms share it (MLX's one primitive): complex to complex forward (``fftn``) and
inverse (``ifftn``), real to complex (``rfftn``: the last transformed axis keeps ``n // 2 + 1``
frequencies) and complex to real (``irfftn``: the last transformed axis grows to
``2 * (m - 1) + odd``; ``odd`` says whether the signal's length was odd, so the output's shape
follows from the input's and shapeless compilation can replay it). Inputs are complex64
(float32 for ``rfftn``), outputs complex64 (float32 for ``irfftn``); the inverse transforms
divide by the number of points, the forward ones do not (the public functions scale for the
other normalisations).

The rules are MLX's: the transform is linear, so its jvp is the same transform of the tangent,
and its vjp the adjoint: the opposite transform, scaled, with the real transforms' halved or
doubled interior frequencies (each stands for itself and its mirror) weighted by a mask.
"""

from __future__ import annotations

from ..core import dtypes as dt
from ..core.array import Array
from ..core.primitive import Primitive
from ._common import arange_along, batched_axes, ops as _ops


class FFT(Primitive):
    """The DFT over ``axes`` (non-negative, distinct); see the module docstring."""

    __slots__ = ("axes", "inverse", "real", "odd")
    name = "fft"

    def __init__(self, axes, inverse: bool, real: bool, odd: bool = False) -> None:
        self.axes = tuple(int(a) for a in axes)
        self.inverse = bool(inverse)
        self.real = bool(real)
        self.odd = bool(odd) and self.real and self.inverse

    @property
    def params(self) -> tuple:
        return (self.axes, self.inverse, self.real, self.odd)

    def infer(self, inputs):
        (x,) = inputs
        want = dt.float32 if self.real and not self.inverse else dt.complex64
        if x._dtype != want:
            raise TypeError(f"fft: the primitive takes {want.name} input, got {x._dtype.name}")
        if (
            not self.axes
            or len(set(self.axes)) != len(self.axes)
            or not all(0 <= a < x.ndim for a in self.axes)
        ):
            raise ValueError(f"fft: invalid axes {self.axes} for an array of dimension {x.ndim}")
        shape = list(x._shape)
        if self.real:
            last = self.axes[-1]
            shape[last] = 2 * (shape[last] - 1) + self.odd if self.inverse else shape[last] // 2 + 1
        out = dt.float32 if self.real and self.inverse else dt.complex64
        return [(tuple(shape), out)]

    # -- transforms -----------------------------------------------------------------------

    def jvp(self, primals, tangents, argnums):
        # linear: the tangent's transform (in the dtype the primitive takes)
        (x,), (t,) = primals, tangents
        return [Array.make(self, [_ops().astype(t, x._dtype)])]

    def _interior_mask(self, size: int, odd: bool, ndim: int, inner, outer) -> Array:
        """``inner`` at the frequencies of the last axis that stand for a mirrored pair too
        (all but the zero frequency and, for an even length, the Nyquist one), else ``outer``."""
        ops = _ops()
        k = arange_along(size, self.axes[-1], ndim)
        interior = ops.logical_and(ops.greater(k, 0), ops.less(k, size - 1 + odd))
        return ops.where(interior, inner, outer)

    def vjp(self, primals, cotangents, argnums, outputs):
        from .. import fft

        ops = _ops()
        (x,), (g,) = primals, cotangents
        axes = list(self.axes)
        sizes = g.shape if self.inverse else x.shape
        n = 1.0
        for a in axes:
            n *= sizes[a]
        if self.real and self.inverse:
            m = x.shape[axes[-1]]
            mask = self._interior_mask(
                m,
                g.shape[axes[-1]] % 2 == 1,
                x.ndim,
                ops.creation.array(2 / n, dt.complex64),
                ops.creation.array(1 / n, dt.complex64),
            )
            return [ops.multiply(fft.rfftn(ops.astype(g, dt.float32), axes=axes), mask)]
        if self.real:
            m = g.shape[axes[-1]]
            mask = self._interior_mask(
                m,
                x.shape[axes[-1]] % 2 == 1,
                x.ndim,
                ops.creation.array(0.5, dt.complex64),
                ops.creation.array(1.0, dt.complex64),
            )
            back = fft.irfftn(
                ops.multiply(ops.astype(g, dt.complex64), mask),
                s=[x.shape[a] for a in axes],
                axes=axes,
            )
            return [ops.multiply(back, ops.creation.array(n, dt.float32))]
        g = ops.astype(g, dt.complex64)
        if self.inverse:
            return [ops.multiply(fft.fftn(g, axes=axes), ops.creation.array(1 / n, dt.complex64))]
        return [ops.multiply(fft.ifftn(g, axes=axes), ops.creation.array(n, dt.complex64))]

    def vmap(self, inputs, axes):
        (x,), (b,) = inputs, axes
        return [
            Array.make(FFT(batched_axes(self.axes, b), self.inverse, self.real, self.odd), [x])
        ], [b]
