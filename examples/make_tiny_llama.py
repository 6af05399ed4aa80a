"""Writes a tiny Llama checkpoint in MLX's (mlx-lm's) layout: config.json and
model.safetensors, random weights from a fixed seed; with --bits, the linear and embedding
weights quantized as mlx-lm stores them (uint32 codes, scales, biases; "quantization" in the
config).

    python examples/make_tiny_llama.py /tmp/tiny_llama --bits 4
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nuvec as nv  # noqa: E402

CONFIG = dict(
    model_type="llama",
    hidden_size=128,
    num_hidden_layers=2,
    intermediate_size=256,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=256,
    rms_norm_eps=1e-5,
    rope_theta=10000.0,
    tie_word_embeddings=False,
)


def weights(config: dict, seed: int) -> dict:
    """mlx-lm's parameter names and shapes, normal weights scaled by 1/sqrt(fan in)."""
    rng = np.random.default_rng(seed)
    d, h, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    hd = d // config["num_attention_heads"]
    kv = config["num_key_value_heads"] * hd

    def lin(out, inp):
        return (rng.standard_normal((out, inp)) / np.sqrt(inp)).astype(np.float32)

    w = {
        "model.embed_tokens.weight": rng.standard_normal((v, d)).astype(np.float32),
        "model.norm.weight": np.ones(d, np.float32),
        "lm_head.weight": lin(v, d),
    }
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w.update(
            {
                p + "self_attn.q_proj.weight": lin(d, d),
                p + "self_attn.k_proj.weight": lin(kv, d),
                p + "self_attn.v_proj.weight": lin(kv, d),
                p + "self_attn.o_proj.weight": lin(d, d),
                p + "mlp.gate_proj.weight": lin(h, d),
                p + "mlp.up_proj.weight": lin(h, d),
                p + "mlp.down_proj.weight": lin(d, h),
                p + "input_layernorm.weight": (1 + 0.1 * rng.standard_normal(d)).astype(np.float32),
                p + "post_attention_layernorm.weight": np.ones(d, np.float32),
            }
        )
    return w


def quantized(w: dict, group_size: int, bits: int) -> dict:
    out = {}
    for name, a in w.items():
        if a.ndim == 2 and a.shape[-1] % group_size == 0:
            q, s, b = nv.quantize(nv.array(a), group_size, bits)
            stem = name[: -len(".weight")]
            out[name], out[stem + ".scales"], out[stem + ".biases"] = q, s, b
        else:
            out[name] = nv.array(a)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--bits", type=int, default=0, help="quantize (0: float32)")
    ap.add_argument("--group-size", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    config = dict(CONFIG)
    w = weights(config, args.seed)
    if args.bits:
        config["quantization"] = {"group_size": args.group_size, "bits": args.bits}
        arrays = quantized(w, args.group_size, args.bits)
    else:
        arrays = {k: nv.array(a) for k, a in w.items()}
    nv.save_safetensors(os.path.join(args.out, "model.safetensors"), arrays)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"wrote {args.out} ({len(arrays)} arrays)")


if __name__ == "__main__":
    main()
