"""The generation benchmark's model in PyTorch, as a PyTorch user writes it: examples/llama.py's
Llama (grouped kv heads, RoPE over halves, RMSNorm, SwiGLU) with a preallocated KV cache,
decoded greedily at batch 1 under ``torch.inference_mode``. Its weights are the checkpoint's
float32 ones: PyTorch has no 4-bit CPU product in its user API, so it runs the model unquantized.

    python -m benchmarks.torch_llama WEIGHTS.npz CONFIG.json TOKENS   # prints RESULT {...}

``WEIGHTS.npz`` holds mlx-lm's parameter names (benchmarks/generation.py writes it from the
checkpoint). ``compiled`` is ``torch.compile`` of the decode step (inductor), ``eager`` the
plain module; the first steps, which compile, are not timed.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


class Llama(torch.nn.Module):
    def __init__(self, config: dict, weights: dict[str, np.ndarray], max_len: int = 256):
        super().__init__()
        self.w = {k: torch.from_numpy(v) for k, v in weights.items()}
        self.d, self.layers = config["hidden_size"], config["num_hidden_layers"]
        self.heads, self.kv = config["num_attention_heads"], config["num_key_value_heads"]
        self.hd, self.eps = self.d // self.heads, config["rms_norm_eps"]
        half = self.hd // 2
        inv = config["rope_theta"] ** (-torch.arange(half, dtype=torch.float32) / half)
        angles = torch.arange(max_len, dtype=torch.float32)[:, None] * inv[None, :]
        self.cos, self.sin = angles.cos(), angles.sin()
        shape = (1, self.kv, max_len, self.hd)
        self.cache = [(torch.zeros(shape), torch.zeros(shape)) for _ in range(self.layers)]

    def _norm(self, x, name):
        return F.rms_norm(x, (self.d,), self.w[name], self.eps)

    def _rope(self, t, pos):
        cos, sin = self.cos[pos : pos + t.shape[2]], self.sin[pos : pos + t.shape[2]]
        a, b = t.chunk(2, dim=-1)
        return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)

    def forward(self, tokens, pos: int):
        w, length = self.w, tokens.shape[1]
        x = F.embedding(tokens, w["model.embed_tokens.weight"])
        for i, (keys, values) in enumerate(self.cache):
            p = f"model.layers.{i}."
            h = self._norm(x, p + "input_layernorm.weight")

            def heads(name, n, h=h, p=p):
                t = F.linear(h, w[p + name]).view(1, length, n, self.hd)
                return t.transpose(1, 2)

            q = self._rope(heads("self_attn.q_proj.weight", self.heads), pos)
            k = self._rope(heads("self_attn.k_proj.weight", self.kv), pos)
            keys[:, :, pos : pos + length] = k
            values[:, :, pos : pos + length] = heads("self_attn.v_proj.weight", self.kv)
            o = F.scaled_dot_product_attention(
                q,
                keys[:, :, : pos + length],
                values[:, :, : pos + length],
                is_causal=length > 1,
                enable_gqa=True,
            )
            o = o.transpose(1, 2).reshape(1, length, self.d)
            x = x + F.linear(o, w[p + "self_attn.o_proj.weight"])
            h = self._norm(x, p + "post_attention_layernorm.weight")
            gate = F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"]))
            up = F.linear(h, w[p + "mlp.up_proj.weight"])
            x = x + F.linear(gate * up, w[p + "mlp.down_proj.weight"])
        x = self._norm(x, "model.norm.weight")
        return F.linear(x[:, -1], w["lm_head.weight"])


def generate(model: Llama, step, prompt: list[int], tokens: int) -> tuple[list[int], float]:
    """Greedy tokens after ``prompt`` and the seconds of the decode steps after the first."""
    token = model(torch.tensor([prompt]), 0).argmax(-1, keepdim=True)
    out = [int(token)]
    t0 = time.perf_counter()
    for i in range(tokens - 1):
        if i == 1:
            t0 = time.perf_counter()
        token = step(token, len(prompt) + i).argmax(-1, keepdim=True)
        out.append(int(token))
    return out, time.perf_counter() - t0


def main(argv: list[str]) -> dict:
    weights_file, config_file, tokens = argv[0], argv[1], int(argv[2])
    with open(config_file) as f:
        config = json.load(f)
    weights = dict(np.load(weights_file))
    out = {}
    with torch.inference_mode():
        for mode in ("compiled", "eager"):
            model = Llama(config, weights)
            step = torch.compile(model) if mode == "compiled" else model
            generate(model, step, [1, 2, 3], 8)  # warm-up (and compilation)
            toks, secs = generate(model, step, [1, 2, 3], tokens)
            out[mode], out[mode + "_tokens"] = (len(toks) - 2) / secs, toks
    return out


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(sys.argv[1:])))
