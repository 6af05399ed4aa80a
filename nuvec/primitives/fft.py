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
from ..core.primitive import Primitive


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
