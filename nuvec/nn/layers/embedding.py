"""Embedding: a lookup table of vectors.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> nn.Embedding(10, 4)(nv.array([[1, 2, 3]])).shape
(1, 3, 4)
"""

from __future__ import annotations

import math

import nuvec as nv

from .base import Module
from .quantized import QuantizedEmbedding


class Embedding(Module):
    """Maps integer ids in ``[0, num_embeddings)`` to rows of ``weight``
    (``(num_embeddings, dims)``, normal with standard deviation ``1/sqrt(dims)``)."""

    def __init__(self, num_embeddings: int, dims: int) -> None:
        super().__init__()
        scale = math.sqrt(1.0 / dims)
        self.weight = nv.random.normal(shape=(num_embeddings, dims), scale=scale)

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, {self.weight.shape[1]}"

    def __call__(self, x):
        if not nv.issubdtype(x.dtype, nv.integer):
            raise TypeError(f"Embedding: ids must be integers, got {x.dtype}")
        return nv.take(self.weight, x, axis=0)

    def as_linear(self, x):
        """``x @ weight.T``: the table used as an output projection (weight tying)."""
        return nv.matmul(x, nv.transpose(self.weight))

    def to_quantized(
        self,
        group_size: int | None = None,
        bits: int | None = None,
        mode: str = "affine",
        quantize_input: bool = False,
    ) -> Module:
        """This layer as a ``QuantizedEmbedding`` (see ``nn.quantize``); an embedding's
        input is indices, so ``quantize_input`` is refused."""
        if quantize_input:
            raise ValueError(
                "Embedding.to_quantized: quantize_input is not supported (the input is "
                "indices); quantize only the Linear layers' inputs"
            )
        return QuantizedEmbedding.from_embedding(self, group_size, bits, mode)
