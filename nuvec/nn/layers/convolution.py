"""Convolution layers (channels last), built on ``nuvec.ops.conv`` (im2col + matmul).

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> nn.Conv2d(3, 8, kernel_size=3, padding=1)(nv.ones((2, 16, 16, 3))).shape
(2, 16, 16, 8)
"""

from __future__ import annotations

import math
from typing import Sequence, Union

import nuvec as nv

from .base import Module
from ...ops.conv import _tuple, conv1d, conv2d, conv3d

IntOrTuple = Union[int, Sequence[int]]


def _stride_padding_dilation(nd: int, op: str, stride, padding, dilation) -> dict:
    """A convolution layer's stride, padding and dilation, one int per spatial axis."""
    return dict(
        stride=_tuple(stride, nd, "stride", op, 1),
        padding=_tuple(padding, nd, "padding", op, 0),
        dilation=_tuple(dilation, nd, "dilation", op, 1),
    )


def _init_weight(
    layer: Module, out_channels: int, kernel: tuple, in_channels: int, bias: bool
) -> None:
    """A weight ``(out_channels, *kernel, in_channels)`` uniform in ``[-k, k]``,
    ``k = 1/sqrt(in_channels * prod(kernel))``, and a bias of zeros if ``bias``."""
    scale = math.sqrt(1.0 / (in_channels * math.prod(kernel)))
    layer.weight = nv.random.uniform(
        low=-scale, high=scale, shape=(out_channels, *kernel, in_channels)
    )
    if bias:
        layer.bias = nv.zeros((out_channels,))


class _Conv(Module):
    _nd = 0
    _name = "Conv"

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntOrTuple,
        stride: IntOrTuple = 1,
        padding: IntOrTuple = 0,
        dilation: IntOrTuple = 1,
        groups: int = 1,
        bias: bool = True,
    ) -> None:
        super().__init__()
        op = self._name
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{op}: groups ({groups}) must divide in_channels "
                f"({in_channels}) and out_channels ({out_channels})"
            )
        kernel = _tuple(kernel_size, self._nd, "kernel_size", op, 1)
        # hyper-parameters are plain attributes, not tree members
        self.__dict__.update(
            **_stride_padding_dilation(self._nd, op, stride, padding, dilation),
            groups=groups,
        )
        _init_weight(self, out_channels, kernel, in_channels // groups, bias)

    def _extra_repr(self) -> str:
        w = self.weight.shape
        return (
            f"{w[-1] * self.groups}, {w[0]}, kernel_size={tuple(w[1:-1])}, "
            f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, "
            f"groups={self.groups}, bias={'bias' in self}"
        )

    def __call__(self, x):
        y = self._op(x, self.weight, self.stride, self.padding, self.dilation, self.groups)
        return y + self.bias if "bias" in self else y


class Conv1d(_Conv):
    """1-d convolution over ``(N, L, C_in)`` inputs; weight ``(C_out, K, C_in / groups)``
    uniform in ``[-k, k]``, ``k = 1/sqrt(C_in / groups * K)``; bias zeros."""

    _nd = 1
    _name = "Conv1d"
    _op = staticmethod(conv1d)


class Conv2d(_Conv):
    """2-d convolution over ``(N, H, W, C_in)`` inputs; weight
    ``(C_out, KH, KW, C_in / groups)`` uniform in ``[-k, k]``,
    ``k = 1/sqrt(C_in / groups * KH * KW)``; bias zeros."""

    _nd = 2
    _name = "Conv2d"
    _op = staticmethod(conv2d)


class Conv3d(_Conv):
    """3-d convolution over ``(N, D, H, W, C_in)`` inputs; weight
    ``(C_out, KD, KH, KW, C_in / groups)`` uniform in ``[-k, k]``,
    ``k = 1/sqrt(C_in / groups * KD * KH * KW)``; bias zeros."""

    _nd = 3
    _name = "Conv3d"
    _op = staticmethod(conv3d)
