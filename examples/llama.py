"""A Llama-style decoder built from nuvec.nn (grouped kv heads, RoPE, RMSNorm, SwiGLU), its
weights in MLX's (mlx-lm's) safetensors layout, and a KV cache of fixed size so that one
compiled decode step serves every position. It uses only names MLX has too, so the same
file runs on MLX with ``nuvec`` / ``nuvec.nn`` standing for ``mlx.core`` / ``mlx.nn`` (the
generation benchmark does that).

    model = Llama(ModelArgs.from_config(config))
    model.load_weights("model.safetensors")
    cache = model.make_cache(batch=1, max_len=256)
    logits, cache = model(tokens, cache, position)        # position: an int32 array

The cache is a list of ``[keys, values]`` lists: a compiled decode step can take it as its
state (``nv.compile(step, inputs=cache, outputs=cache)``, the lists updated in place), and
then writes each new position into the cache's own buffers.
"""

from __future__ import annotations

from dataclasses import dataclass

import nuvec as nv
import nuvec.nn as nn


@dataclass
class ModelArgs:
    hidden_size: int
    num_hidden_layers: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    vocab_size: int
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False

    @classmethod
    def from_config(cls, config: dict) -> "ModelArgs":
        return cls(**{k: config[k] for k in cls.__dataclass_fields__ if k in config})


class Attention(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.n_heads, self.n_kv = args.num_attention_heads, args.num_key_value_heads
        self.head_dim = args.hidden_size // self.n_heads
        self.scale = self.head_dim**-0.5
        self.rope_theta = args.rope_theta
        d = args.hidden_size
        self.q_proj = nn.Linear(d, self.n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d, self.n_kv * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d, self.n_kv * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.n_heads * self.head_dim, d, bias=False)

    def __call__(self, x, cache, position):
        """x (B, L, d); cache (keys, values), each (B, n_kv, max_len, head_dim); the L new
        positions start at ``position`` (int32, shape (1,))."""
        b, length, _ = x.shape

        def heads(t, n):
            return nv.transpose(nv.reshape(t, (b, length, n, self.head_dim)), (0, 2, 1, 3))

        q = heads(self.q_proj(x), self.n_heads)
        k = heads(self.k_proj(x), self.n_kv)
        v = heads(self.v_proj(x), self.n_kv)
        q = nv.fast.rope(
            q, self.head_dim, traditional=False, base=self.rope_theta, scale=1.0, offset=position
        )
        k = nv.fast.rope(
            k, self.head_dim, traditional=False, base=self.rope_theta, scale=1.0, offset=position
        )
        keys = nv.slice_update(cache[0], k, position, axes=(2,))
        values = nv.slice_update(cache[1], v, position, axes=(2,))
        # query i (at position + i) sees the cache entries up to its own position
        max_len = keys.shape[2]
        seen = nv.arange(max_len)[None, :] <= (position + nv.arange(length))[:, None]
        o = nv.fast.scaled_dot_product_attention(q, keys, values, scale=self.scale, mask=seen)
        o = nv.reshape(nv.transpose(o, (0, 2, 1, 3)), (b, length, -1))
        return self.o_proj(o), (keys, values)


class MLP(nn.Module):
    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def __call__(self, x):
        return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.self_attn = Attention(args)
        self.mlp = MLP(args.hidden_size, args.intermediate_size)
        self.input_layernorm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)
        self.post_attention_layernorm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)

    def __call__(self, x, cache, position):
        h, cache = self.self_attn(self.input_layernorm(x), cache, position)
        x = x + h
        return x + self.mlp(self.post_attention_layernorm(x)), cache


class LlamaModel(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(args.vocab_size, args.hidden_size)
        self.layers = [Block(args) for _ in range(args.num_hidden_layers)]
        self.norm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)


class Llama(nn.Module):
    """Parameter names as mlx-lm's Llama (``model.layers.N.self_attn.q_proj.weight``,
    ``lm_head.weight``), so its checkpoints load."""

    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.args = args
        self.model = LlamaModel(args)
        if not args.tie_word_embeddings:
            self.lm_head = nn.Linear(args.hidden_size, args.vocab_size, bias=False)

    def make_cache(self, batch: int, max_len: int, dtype=nv.float32) -> list:
        """A ``[keys, values]`` list per layer, each (batch, kv heads, max_len, head_dim)."""
        a = self.args
        shape = (batch, a.num_key_value_heads, max_len, a.hidden_size // a.num_attention_heads)
        return [
            [nv.zeros(shape, dtype), nv.zeros(shape, dtype)] for _ in range(a.num_hidden_layers)
        ]

    def __call__(self, tokens, cache: list, position):
        """Logits (B, L, vocab) of ``tokens`` (B, L) at positions ``position + i``, and the
        cache with their keys and values written in."""
        x = self.model.embed_tokens(tokens)
        new_cache = []
        for layer, c in zip(self.model.layers, cache):
            x, c = layer(x, c, position)
            new_cache.append(list(c))
        x = self.model.norm(x)
        if self.args.tie_word_embeddings:
            return self.model.embed_tokens.as_linear(x), new_cache
        return self.lm_head(x), new_cache


def quantize_model(model: Llama, group_size: int = 64, bits: int = 4) -> None:
    """mlx-lm's choice: every Linear and the embedding whose input size the group divides."""
    nn.quantize(
        model,
        group_size,
        bits,
        class_predicate=lambda _, m: (
            isinstance(m, (nn.Linear, nn.Embedding)) and m.weight.shape[-1] % group_size == 0
        ),
    )
