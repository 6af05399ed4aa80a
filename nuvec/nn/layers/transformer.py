"""Attention, and the transformer: encoder, decoder and the encoder-decoder model.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> mha = nn.MultiHeadAttention(16, 4)
>>> x = nv.ones((2, 5, 16))
>>> mask = nn.MultiHeadAttention.create_additive_causal_mask(5)
>>> mha(x, x, x, mask).shape
(2, 5, 16)
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import nuvec as nv

from .activations import relu
from .base import Module
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm


scaled_dot_product_attention = nv.fast.scaled_dot_product_attention


class MultiHeadAttention(Module):
    """Multi-head attention: queries, keys and values are projected (``query_proj``,
    ``key_proj``, ``value_proj``), split into ``num_heads`` heads, attended with scale
    ``1/sqrt(head_dims)``, merged and projected by ``out_proj``. ``mask`` is additive (see
    ``create_additive_causal_mask``), boolean (True: attend) or ``"causal"``."""

    def __init__(
        self,
        dims: int,
        num_heads: int,
        query_input_dims: Optional[int] = None,
        key_input_dims: Optional[int] = None,
        value_input_dims: Optional[int] = None,
        value_dims: Optional[int] = None,
        value_output_dims: Optional[int] = None,
        bias: bool = False,
    ) -> None:
        super().__init__()
        if dims % num_heads:
            raise ValueError(
                f"MultiHeadAttention: dims ({dims}) must be divisible by num_heads ({num_heads})"
            )
        query_input_dims = query_input_dims or dims
        key_input_dims = key_input_dims or dims
        value_input_dims = value_input_dims or key_input_dims
        value_dims = value_dims or dims
        value_output_dims = value_output_dims or dims
        if value_dims % num_heads:
            raise ValueError(
                f"MultiHeadAttention: value_dims ({value_dims}) must be "
                f"divisible by num_heads ({num_heads})"
            )
        self.num_heads = num_heads
        self.query_proj = Linear(query_input_dims, dims, bias=bias)
        self.key_proj = Linear(key_input_dims, dims, bias=bias)
        self.value_proj = Linear(value_input_dims, value_dims, bias=bias)
        self.out_proj = Linear(value_dims, value_output_dims, bias=bias)

    def _heads(self, x):
        b, n, d = x.shape
        return nv.transpose(
            nv.reshape(x, (b, n, self.num_heads, d // self.num_heads)), (0, 2, 1, 3)
        )

    def __call__(self, queries, keys, values, mask=None):
        q = self._heads(self.query_proj(queries))
        k = self._heads(self.key_proj(keys))
        v = self._heads(self.value_proj(values))
        scale = math.sqrt(1.0 / q.shape[-1])
        o = scaled_dot_product_attention(q, k, v, scale=scale, mask=mask)
        b, h, n, d = o.shape
        o = nv.reshape(nv.transpose(o, (0, 2, 1, 3)), (b, n, h * d))
        return self.out_proj(o)

    @staticmethod
    def create_additive_causal_mask(N: int, dtype=nv.float32):
        """An ``(N, N)`` mask: 0 where key ``j <= i`` (query ``i``), a very negative number
        elsewhere."""
        idx = nv.arange(N)
        future = nv.expand_dims(idx, 1) < nv.expand_dims(idx, 0)
        return nv.astype(future, dtype) * nv.finfo(dtype).min


class TransformerEncoderLayer(Module):
    """Self-attention then an MLP (``dims -> mlp_dims -> dims``, default ``4 * dims``, with
    ``activation``), each with a residual connection, layer norm and dropout. With
    ``norm_first`` (default) the norms come before each block (pre-norm)."""

    def __init__(
        self,
        dims: int,
        num_heads: int,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation: Callable = relu,
        norm_first: bool = True,
    ) -> None:
        super().__init__()
        mlp_dims = mlp_dims or dims * 4
        self.attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def __call__(self, x, mask):
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.attention(y, y, y, mask))
            y = self.activation(self.linear1(self.ln2(x)))
            return x + self.linear2(self.dropout2(y))
        x = self.ln1(x + self.dropout1(self.attention(x, x, x, mask)))
        y = self.activation(self.linear1(x))
        return self.ln2(x + self.linear2(self.dropout2(y)))


class _LayerStack(Module):
    """``num_layers`` layers of ``layer_type``, then a final LayerNorm."""

    layer_type: type

    def __init__(
        self,
        num_layers: int,
        dims: int,
        num_heads: int,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation: Callable = relu,
        norm_first: bool = True,
        checkpoint: bool = False,
    ) -> None:
        super().__init__()
        self.layers = [
            self.layer_type(dims, num_heads, mlp_dims, dropout, activation, norm_first)
            for _ in range(num_layers)
        ]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint


class TransformerEncoder(_LayerStack):
    """``num_layers`` encoder layers, then a final LayerNorm. ``checkpoint`` is accepted
    for MLX compatibility; it only trades memory for compute there, and results are the
    same here without it (see ``nn.utils.checkpoint``)."""

    layer_type = TransformerEncoderLayer

    def __call__(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return self.ln(x)


class TransformerDecoderLayer(Module):
    """Self-attention over ``x`` (``x_mask``), cross-attention from ``x`` to ``memory``
    (``memory_mask``), then an MLP (``dims -> mlp_dims -> dims``, default ``4 * dims``);
    each block with a residual connection, a layer norm (before the block with
    ``norm_first``, after the residual otherwise) and dropout.

    >>> layer = TransformerDecoderLayer(16, 4)
    >>> layer(nv.ones((2, 3, 16)), nv.ones((2, 5, 16)), None, None).shape
    (2, 3, 16)
    """

    def __init__(
        self,
        dims: int,
        num_heads: int,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation: Callable = relu,
        norm_first: bool = True,
    ) -> None:
        super().__init__()
        mlp_dims = mlp_dims or dims * 4
        self.self_attention = MultiHeadAttention(dims, num_heads)
        self.cross_attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.ln3 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def _mlp(self, x):
        return self.linear2(self.dropout3(self.activation(self.linear1(x))))

    def __call__(self, x, memory, x_mask, memory_mask):
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.self_attention(y, y, y, x_mask))
            y = self.ln2(x)
            x = x + self.dropout2(self.cross_attention(y, memory, memory, memory_mask))
            return x + self._mlp(self.ln3(x))
        x = self.ln1(x + self.dropout1(self.self_attention(x, x, x, x_mask)))
        x = self.ln2(x + self.dropout2(self.cross_attention(x, memory, memory, memory_mask)))
        return self.ln3(x + self._mlp(x))


class TransformerDecoder(_LayerStack):
    """``num_layers`` decoder layers, then a final LayerNorm (``checkpoint`` as in
    ``TransformerEncoder``)."""

    layer_type = TransformerDecoderLayer

    def __call__(self, x, memory, x_mask, memory_mask):
        for layer in self.layers:
            x = layer(x, memory, x_mask, memory_mask)
        return self.ln(x)


class Transformer(Module):
    """The encoder-decoder transformer: ``decoder(tgt, encoder(src, src_mask), tgt_mask,
    memory_mask)``. ``custom_encoder`` / ``custom_decoder`` (any modules with those call
    signatures) replace the standard ones.

    >>> model = Transformer(dims=16, num_heads=4, num_encoder_layers=1, num_decoder_layers=1)
    >>> model(nv.ones((2, 6, 16)), nv.ones((2, 3, 16)), None, None, None).shape
    (2, 3, 16)
    """

    def __init__(
        self,
        dims: int = 512,
        num_heads: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation: Callable = relu,
        custom_encoder: Optional[Module] = None,
        custom_decoder: Optional[Module] = None,
        norm_first: bool = True,
        checkpoint: bool = False,
    ) -> None:
        super().__init__()
        self.encoder = (
            custom_encoder
            if custom_encoder is not None
            else TransformerEncoder(
                num_encoder_layers,
                dims,
                num_heads,
                mlp_dims,
                dropout,
                activation,
                norm_first,
                checkpoint,
            )
        )
        self.decoder = (
            custom_decoder
            if custom_decoder is not None
            else TransformerDecoder(
                num_decoder_layers,
                dims,
                num_heads,
                mlp_dims,
                dropout,
                activation,
                norm_first,
                checkpoint,
            )
        )

    def __call__(self, src, tgt, src_mask, tgt_mask, memory_mask):
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)
