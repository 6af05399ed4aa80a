"""Pooling layers (channels last): MaxPool1d/2d/3d, AvgPool1d/2d/3d.

``stride`` defaults to ``kernel_size``. Max pooling pads with ``-inf``, average pooling with
zeros (which count in the average).

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> nn.MaxPool2d(2)(nv.ones((1, 4, 4, 3))).shape
(1, 2, 2, 3)
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

from .base import Module
from ...ops.conv import _tuple, pool

IntOrTuple = Union[int, Sequence[int]]


class _Pool(Module):
    _nd = 0
    _kind = "max"

    def __init__(
        self, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None, padding: IntOrTuple = 0
    ) -> None:
        super().__init__()
        name = type(self).__name__
        kernel = _tuple(kernel_size, self._nd, "kernel_size", name, 1)
        # plain attributes (tuples would otherwise become tree members)
        self.__dict__.update(
            _kernel=kernel,
            _stride=kernel if stride is None else _tuple(stride, self._nd, "stride", name, 1),
            _padding=_tuple(padding, self._nd, "padding", name, 0),
        )

    def _extra_repr(self) -> str:
        return f"kernel_size={self._kernel}, stride={self._stride}, padding={self._padding}"

    def __call__(self, x):
        return pool(x, self._kernel, self._stride, self._padding, self._kind, type(self).__name__)


class MaxPool1d(_Pool):
    """Max over windows of ``(N, L, C)`` inputs."""

    _nd, _kind = 1, "max"


class AvgPool1d(_Pool):
    """Average over windows of ``(N, L, C)`` inputs."""

    _nd, _kind = 1, "avg"


class MaxPool2d(_Pool):
    """Max over windows of ``(N, H, W, C)`` inputs."""

    _nd, _kind = 2, "max"


class AvgPool2d(_Pool):
    """Average over windows of ``(N, H, W, C)`` inputs."""

    _nd, _kind = 2, "avg"


class MaxPool3d(_Pool):
    """Max over windows of ``(N, D, H, W, C)`` inputs."""

    _nd, _kind = 3, "max"


class AvgPool3d(_Pool):
    """Average over windows of ``(N, D, H, W, C)`` inputs."""

    _nd, _kind = 3, "avg"
