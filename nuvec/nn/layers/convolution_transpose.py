"""Transposed convolution layers (channels last): ConvTranspose1d/2d/3d.

Each layer calls ``nv.conv_transpose1d/2d/3d`` (the adjoint of a strided convolution).

The weight is ``(C_out, *kernel, C_in)`` as in MLX, uniform in ``[-k, k]`` with
``k = 1/sqrt(C_in * prod(kernel))``; the bias starts at zeros. An input of spatial size ``n``
gives ``(n - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1``.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> nn.ConvTranspose2d(3, 8, kernel_size=2, stride=2)(nv.ones((1, 4, 4, 3))).shape
(1, 8, 8, 8)
"""

from __future__ import annotations

import nuvec as nv

from .base import Module
from .convolution import IntOrTuple, _init_weight, _stride_padding_dilation
from ...ops.conv import _tuple


class _ConvTranspose(Module):
    _nd = 0

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntOrTuple,
        stride: IntOrTuple = 1,
        padding: IntOrTuple = 0,
        dilation: IntOrTuple = 1,
        output_padding: IntOrTuple = 0,
        bias: bool = True,
    ) -> None:
        super().__init__()
        op, nd = type(self).__name__, self._nd
        kernel = _tuple(kernel_size, nd, "kernel_size", op, 1)
        # hyper-parameters are plain attributes, not tree members
        self.__dict__.update(
            **_stride_padding_dilation(nd, op, stride, padding, dilation),
            output_padding=_tuple(output_padding, nd, "output_padding", op, 0),
        )
        _init_weight(self, out_channels, kernel, in_channels, bias)

    def _extra_repr(self) -> str:
        w = self.weight.shape
        return (
            f"{w[-1]}, {w[0]}, kernel_size={tuple(w[1:-1])}, stride={self.stride}, "
            f"padding={self.padding}, dilation={self.dilation}, "
            f"output_padding={self.output_padding}, bias={'bias' in self}"
        )

    def __call__(self, x):
        y = self._op(x, self.weight, self.stride, self.padding, self.dilation, self.output_padding)
        return y + self.bias if "bias" in self else y


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-d convolution over ``(N, L, C_in)`` inputs."""

    _nd = 1
    _op = staticmethod(nv.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-d convolution over ``(N, H, W, C_in)`` inputs."""

    _nd = 2
    _op = staticmethod(nv.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-d convolution over ``(N, D, H, W, C_in)`` inputs."""

    _nd = 3
    _op = staticmethod(nv.conv_transpose3d)
