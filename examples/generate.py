"""Token-by-token generation with a Llama-style model from nuvec.nn: loads a checkpoint in
MLX's layout (a tiny one is made when none is given), quantizes it to 4 bits, fills a KV
cache with the prompt and decodes with one compiled step.

    python examples/generate.py                        # tiny checkpoint, 4-bit, 32 tokens
    python examples/generate.py --model DIR --prompt 1 2 3 --max-tokens 64 --temp 0.7
    python examples/generate.py --no-compile           # the eager decode step
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import nuvec as nv  # noqa: E402

from llama import Llama, ModelArgs, quantize_model  # noqa: E402
import make_tiny_llama  # noqa: E402


def load(model_dir: str, bits: int, group_size: int) -> Llama:
    """The model of ``model_dir`` (config.json, model.safetensors); quantized to ``bits``
    (0: as stored). A checkpoint stored quantized is loaded into the quantized layers."""
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    model = Llama(ModelArgs.from_config(config))
    q = config.get("quantization")
    if q:
        quantize_model(model, q["group_size"], q["bits"])
    model.load_weights(os.path.join(model_dir, "model.safetensors"))
    if bits and not q:
        quantize_model(model, group_size, bits)
    nv.eval(model.parameters())
    return model


def generate(
    model: Llama,
    prompt: list[int],
    max_tokens: int,
    *,
    temp: float = 0.0,
    seed: int = 0,
    compiled: bool = True,
    max_len: int = 256,
):
    """The ``max_tokens`` tokens after ``prompt`` and the seconds of the decode steps after
    the first (which traces and compiles)."""
    nv.random.seed(seed)
    cache = model.make_cache(1, max_len)
    logits, new = model(nv.array([prompt]), cache, nv.array([0], nv.int32))
    cache[:] = new

    def step(token, position, key=None):
        logits, new = model(token, cache, position)
        for c, kv in zip(cache, new):  # the cache's own lists: the compiled step's state
            c[:] = kv
        logits = logits[:, -1, :]
        if temp > 0:
            nxt = nv.random.categorical(logits * (1 / temp), key=key)
        else:
            nxt = nv.argmax(logits, axis=-1)
        return nxt.astype(nv.int32).reshape(1, 1)

    # The cache as the compiled step's state: updated in place after each call, so that
    # nothing but the cache holds its arrays and the step writes the new position into
    # their buffers instead of copying them.
    decode = nv.compile(step, inputs=cache, outputs=cache) if compiled else step
    key = nv.random.key(seed)
    first = (
        nv.argmax(logits[:, -1, :], axis=-1)
        if temp <= 0
        else nv.random.categorical(logits[:, -1, :] * (1 / temp), key=key)
    )
    token = first.astype(nv.int32).reshape(1, 1)
    nv.eval(token)
    out = [token.item()]
    t0 = time.perf_counter()
    for i in range(max_tokens - 1):
        if i == 1:
            t0 = time.perf_counter()
        position = nv.array([len(prompt) + i], nv.int32)
        if temp > 0:  # greedy decoding draws nothing: no key to split
            key, sub = nv.random.split(key)
            nv.eval(sub)  # computed inputs: the compiled step replays its tape
            token = decode(token, position, sub)
        else:
            token = decode(token, position)
        out.append(token.item())
    return out, time.perf_counter() - t0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="a checkpoint directory (default: a tiny one, made now)")
    ap.add_argument("--prompt", type=int, nargs="+", default=[1, 17, 42, 7])
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--temp", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bits", type=int, default=4, help="quantize to this many bits (0: no)")
    ap.add_argument("--group-size", type=int, default=64)
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model
        if model_dir is None:
            model_dir = os.path.join(tmp, "tiny_llama")
            make_tiny_llama.main([model_dir, "--seed", str(args.seed)])
        model = load(model_dir, args.bits, args.group_size)
    tokens, secs = generate(
        model,
        args.prompt,
        args.max_tokens,
        temp=args.temp,
        seed=args.seed,
        compiled=not args.no_compile,
    )
    print("tokens:", " ".join(map(str, tokens)))
    steps = max(1, len(tokens) - 2)
    print(f"decode: {steps / secs:.1f} tokens/s ({'eager' if args.no_compile else 'compiled'})")


if __name__ == "__main__":
    main()
