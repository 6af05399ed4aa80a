"""Quantized layers: ``QuantizedLinear``, ``QuantizedEmbedding`` and ``nn.quantize``, which
swaps every layer with a ``to_quantized`` method (``Linear``, ``Embedding``) for its
quantized twin in place. Their parameters are MLX's (``weight`` uint32 codes, ``scales``,
``biases`` or None), so an MLX-quantized checkpoint loads with ``load_weights``.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 64))
>>> nn.quantize(model, group_size=32, bits=4)
>>> type(model.layers[0]).__name__, model(nv.ones((1, 64))).shape
('QuantizedLinear', (1, 64))
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Union

import nuvec as nv

from ...primitives.quant_formats import MODES
from ...utils import tree_map_with_path
from .base import Module

__all__ = ["QuantizedLinear", "QuantizedEmbedding", "QQLinear", "quantize"]


def _mode_params(mode: str, group_size, bits) -> tuple[int, int]:
    if mode not in MODES:
        raise ValueError(
            f"quantize: invalid quantization mode {mode!r}; valid modes are {', '.join(MODES)}"
        )
    g, b = MODES[mode]
    return group_size or g, bits or b


def quantize(
    model: Module,
    group_size: Optional[int] = None,
    bits: Optional[int] = None,
    *,
    mode: str = "affine",
    quantize_input: bool = False,
    class_predicate: Optional[Callable[[str, Module], Union[bool, dict]]] = None,
) -> None:
    """Replace, in place, the leaf modules of ``model`` that ``class_predicate(path,
    module)`` selects (default: those with ``to_quantized``) by their quantized form; the
    predicate may return a dict of ``to_quantized`` arguments instead of True.
    ``quantize_input`` (nvfp4 and mxfp8, Linear layers) makes them ``QQLinear``."""
    predicate = class_predicate or (lambda _, m: hasattr(m, "to_quantized"))

    def swap(path, m):
        chosen = predicate(path, m)
        if not chosen:
            return m
        if not hasattr(m, "to_quantized"):
            raise ValueError(f"quantize: unable to quantize a module of type {type(m).__name__}")
        if isinstance(chosen, bool):
            kwargs = dict(group_size=group_size, bits=bits, mode=mode)
            if quantize_input:
                kwargs["quantize_input"] = True
            return m.to_quantized(**kwargs)
        if isinstance(chosen, dict):
            kwargs = {k: v for k, v in chosen.items() if k != "quantize_input" or v}
            return m.to_quantized(**kwargs)
        raise ValueError(
            "quantize: class_predicate must return a bool or a dict of arguments for to_quantized"
        )

    leaves = tree_map_with_path(swap, model.leaf_modules(), is_leaf=Module.is_module)
    model.update_modules(leaves)


class _Quantized(Module):
    """The quantization settings and packed parameters the quantized layers share."""

    def _set_quantized(self, weight, group_size, bits, mode: str) -> None:
        self.group_size, self.bits = _mode_params(mode, group_size, bits)
        self.mode = mode
        self.weight, self.scales, *biases = nv.quantize(
            weight, self.group_size, self.bits, mode=mode
        )
        self.biases = biases[0] if biases else None

    @classmethod
    def _from_weight(cls, weight, group_size, bits, mode: str):
        """A layer of this class holding ``weight`` quantized (its other members unset)."""
        q = cls.__new__(cls)
        Module.__init__(q)
        q._set_quantized(weight, group_size, bits, mode)
        return q

    def _extra(self) -> str:
        return f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}"

    def _matmul(self, x):
        """``x @ W.T`` through the packed weight."""
        return nv.quantized_matmul(
            x,
            self["weight"],
            scales=self["scales"],
            biases=self.get("biases"),
            transpose=True,
            group_size=self.group_size,
            bits=self.bits,
            mode=self.mode,
        )


class QuantizedLinear(_Quantized):
    """``Linear`` with a quantized weight: ``y = quantized_matmul(x, W) + b``. Its
    parameters are frozen (the codes have no gradient)."""

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        bias: bool = True,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "affine",
    ) -> None:
        super().__init__()
        k = math.sqrt(1 / input_dims)
        self._set_quantized(
            nv.random.uniform(low=-k, high=k, shape=(output_dims, input_dims)),
            group_size,
            bits,
            mode,
        )
        if bias:
            self.bias = nv.zeros((output_dims,))
        self.freeze()

    def _extra_repr(self) -> str:
        out_dims, packed = self.weight.shape
        return (
            f"input_dims={packed * 32 // self.bits}, output_dims={out_dims}, "
            f"bias={'bias' in self}, {self._extra()}"
        )

    def __call__(self, x):
        y = self._matmul(x)
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_linear(
        cls,
        linear: Module,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "affine",
    ) -> "QuantizedLinear":
        """The quantized form of a ``Linear`` (its bias kept as it is)."""
        q = cls._from_weight(linear.weight, group_size, bits, mode)
        if "bias" in linear:
            q.bias = linear.bias
        q.freeze()
        return q


class QuantizedEmbedding(_Quantized):
    """``Embedding`` with a quantized table: rows are looked up packed and dequantized."""

    def __init__(
        self,
        num_embeddings: int,
        dims: int,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "affine",
    ) -> None:
        super().__init__()
        self._set_quantized(
            nv.random.normal(shape=(num_embeddings, dims), scale=math.sqrt(1 / dims)),
            group_size,
            bits,
            mode,
        )
        self.num_embeddings, self.dims = num_embeddings, dims
        self.freeze()

    def _extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.dims}, {self._extra()}"

    def __call__(self, x):
        biases = self.get("biases")
        return nv.dequantize(
            self["weight"][x],
            scales=self["scales"][x],
            biases=None if biases is None else biases[x],
            group_size=self.group_size,
            bits=self.bits,
            mode=self.mode,
        )

    def as_linear(self, x):
        """``x @ table.T`` through the packed table (tied input and output embeddings)."""
        return self._matmul(x)

    @classmethod
    def from_embedding(
        cls,
        embedding: Module,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "affine",
    ) -> "QuantizedEmbedding":
        """The quantized form of an ``Embedding``."""
        q = cls._from_weight(embedding.weight, group_size, bits, mode)
        q.num_embeddings, q.dims = embedding.weight.shape
        q.freeze()
        return q


class QQLinear(Module):
    """A bias-free ``Linear`` whose input and weight are both quantized (``nv.qqmm``; modes
    nvfp4 and mxfp8). Training keeps the float weight, quantized on the fly so that it gets
    gradients; ``eval()`` stores it packed (``weight`` codes and ``scales``) and ``train()``
    decodes it again.

    >>> import nuvec as nv
    >>> import nuvec.nn as nn
    >>> layer = nn.QQLinear(64, 16, mode="mxfp8")
    >>> layer(nv.ones((2, 64))).shape
    (2, 16)
    """

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "nvfp4",
    ) -> None:
        super().__init__()
        self.group_size, self.bits = _mode_params(mode, group_size, bits)
        self.mode = mode
        k = math.sqrt(1 / input_dims)
        self.weight = nv.random.uniform(low=-k, high=k, shape=(output_dims, input_dims))
        self._quantized = False

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        if self.weight.dtype == nv.uint32:
            in_dims = in_dims * 32 // self.bits
        return (
            f"input_dims={in_dims}, output_dims={out_dims}, group_size={self.group_size}, "
            f"bits={self.bits}, mode={self.mode}"
        )

    def quantize(self) -> None:
        """Store the weight packed (what ``eval()`` does)."""
        if not self._quantized:
            self.weight, self.scales = nv.quantize(
                self.weight, self.group_size, self.bits, mode=self.mode
            )
            self._quantized = True

    def dequantize(self) -> None:
        """Store the weight as floats again (what ``train()`` does)."""
        if self._quantized:
            self.weight = nv.dequantize(
                self.weight,
                scales=self.scales,
                group_size=self.group_size,
                bits=self.bits,
                mode=self.mode,
            )
            del self.scales
            self._quantized = False

    def _set_training_mode(self, mode: bool) -> None:
        super()._set_training_mode(mode)
        if mode:
            self.dequantize()
        else:
            self.quantize()

    def __call__(self, x):
        return nv.qqmm(
            x,
            self["weight"],
            scales=self.get("scales"),
            group_size=self.group_size,
            bits=self.bits,
            mode=self.mode,
        )

    @classmethod
    def from_linear(
        cls,
        linear: Module,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "nvfp4",
    ) -> "QQLinear":
        """A ``QQLinear`` with a bias-free ``Linear``'s weight, in the same training mode."""
        if linear.get("bias") is not None:
            raise NotImplementedError("QQLinear.from_linear: a bias is not supported")
        out_dims, in_dims = linear.weight.shape
        q = cls(in_dims, out_dims, group_size, bits, mode)
        q.weight = linear.weight
        q.train(linear.training)
        return q
