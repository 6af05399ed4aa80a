"""Affine layers: Identity, Linear, Bilinear.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> nn.Linear(3, 2)(nv.ones((4, 3))).shape
(4, 2)
"""

from __future__ import annotations

import math
from typing import Any

import nuvec as nv

from ...core import shapeless
from .base import Module
from .quantized import QQLinear, QuantizedLinear


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def __call__(self, x):
        return x


class Linear(Module):
    r"""``y = x W^T + b``, with ``W`` of shape ``(output_dims, input_dims)``.

    ``W`` and ``b`` start uniform in :math:`[-k, k]`, :math:`k = 1/\sqrt{input\_dims}`.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True) -> None:
        super().__init__()
        if input_dims <= 0 or output_dims <= 0:
            raise ValueError(
                f"Linear: dimensions must be positive, got {input_dims} and {output_dims}"
            )
        k = math.sqrt(1.0 / input_dims)
        self.weight = nv.random.uniform(low=-k, high=k, shape=(output_dims, input_dims))
        if bias:
            self.bias = nv.random.uniform(low=-k, high=k, shape=(output_dims,))

    def _extra_repr(self) -> str:
        out, inp = self.weight.shape
        return f"input_dims={inp}, output_dims={out}, bias={'bias' in self}"

    def to_quantized(
        self,
        group_size: int | None = None,
        bits: int | None = None,
        mode: str = "affine",
        quantize_input: bool = False,
    ) -> Module:
        """This layer as a ``QuantizedLinear`` (see ``nn.quantize``), or with
        ``quantize_input`` as a ``QQLinear`` (its inputs quantized too)."""
        if quantize_input:
            return QQLinear.from_linear(self, group_size, bits, mode)
        return QuantizedLinear.from_linear(self, group_size, bits, mode)

    def __call__(self, x):
        w = self["weight"]
        if x.ndim == 0 or x.shape[-1] != w.shape[1]:
            raise ValueError(
                f"Linear: expected inputs with last dimension {w.shape[1]}, got "
                f"shape {tuple(x.shape)}"
            )
        # one 2-d product over all leading axes: one BLAS call forward, and the weight's
        # gradient is one product too (not a batch of them summed); under a shapeless trace
        # the leading sizes follow each replay
        lead = tuple(shapeless.sizes(x))[:-1]
        x2 = x if x.ndim == 2 else nv.flatten(x, 0, -2) if x.ndim > 2 else nv.expand_dims(x, 0)
        if "bias" in self:
            y = nv.addmm(self["bias"], x2, nv.transpose(w))
        else:
            y = nv.matmul(x2, nv.transpose(w))
        return nv.reshape(y, lead + (w.shape[0],)) if x.ndim != 2 else y


class Bilinear(Module):
    r"""``y_k = x_1^T W_k x_2 + b_k``, with ``W`` of shape
    ``(output_dims, input2_dims, input1_dims)``.

    ``W`` and ``b`` start uniform in :math:`[-k, k]`, :math:`k = 1/\sqrt{input1\_dims}`.
    """

    def __init__(
        self, input1_dims: int, input2_dims: int, output_dims: int, bias: bool = True
    ) -> None:
        super().__init__()
        k = math.sqrt(1.0 / input1_dims)
        self.weight = nv.random.uniform(
            low=-k, high=k, shape=(output_dims, input2_dims, input1_dims)
        )
        if bias:
            self.bias = nv.random.uniform(low=-k, high=k, shape=(output_dims,))

    def _extra_repr(self) -> str:
        out, in2, in1 = self.weight.shape
        return f"input1_dims={in1}, input2_dims={in2}, output_dims={out}, bias={'bias' in self}"

    def __call__(self, x1, x2):
        out, in2, in1 = self.weight.shape
        if x1.shape[-1] != in1 or x2.shape[-1] != in2:
            raise ValueError(
                f"Bilinear: inputs' last dimensions must be {in1} and {in2}, got "
                f"{x1.shape[-1]} and {x2.shape[-1]}"
            )
        lead = x1.shape[:-1]
        a = nv.reshape(x1, (-1, in1))
        b = nv.reshape(x2, (-1, 1, in2))
        # contract x1 first: (n, in1) @ (in1, out*in2) -> (n, out, in2)
        w = nv.reshape(self.weight, (out * in2, in1))
        t = nv.reshape(nv.matmul(a, nv.transpose(w)), (-1, out, in2))
        # then x2: (n, 1, in2) @ (n, in2, out) -> (n, 1, out)
        y = nv.matmul(b, nv.swapaxes(t, -1, -2))
        y = nv.reshape(y, lead + (out,))
        if "bias" in self:
            y = y + self.bias
        return y
