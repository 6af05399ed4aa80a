"""A small character-level transformer language model, trained with a compiled step.

It learns to continue the text in ``examples/data/`` (the first chapter of Jane Austen's
*Pride and Prejudice*, 1813, in the public domain). The model is a token embedding plus
sinusoidal positions, a stack of pre-norm transformer encoder layers under a causal mask
(multi-head attention, layer norm, a GELU MLP, dropout) and a linear read-out. Inside the
compiled step the element-wise chains -- the GELU, the layer norms' arithmetic, the
residual adds, the dropout scaling and the AdamW update -- fuse into generated kernels.

    python examples/char_transformer.py               # full setting
    python examples/char_transformer.py --steps 30    # a quick run
    python examples/char_transformer.py --plot loss.png   # and the loss curves (matplotlib)
"""

from __future__ import annotations

import argparse
import math
import os
import time
from functools import partial

import numpy as np

import nuvec as nv
import nuvec.nn as nn
import nuvec.optimizers as optim

DATA = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "data", "pride_and_prejudice_ch1.txt"
)


class CharLM(nn.Module):
    def __init__(self, vocab: int, dims: int, heads: int, layers: int, dropout: float) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, dims)
        self.positions = nn.SinusoidalPositionalEncoding(dims)
        self.encoder = nn.TransformerEncoder(
            layers, dims, heads, mlp_dims=4 * dims, dropout=dropout, activation=nn.gelu_approx
        )
        self.out = nn.Linear(dims, vocab)

    def __call__(self, ids):
        length = ids.shape[1]
        h = self.embedding(ids) + self.positions(nv.arange(length, dtype=nv.float32))
        mask = nn.MultiHeadAttention.create_additive_causal_mask(length)
        return self.out(self.encoder(h, mask))


def load_text(path: str = DATA):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    lookup = {c: i for i, c in enumerate(chars)}
    ids = np.array([lookup[c] for c in text], np.int32)
    return text, chars, ids


def batches(ids: np.ndarray, batch: int, context: int, rng: np.random.Generator):
    """Random windows: inputs ``ids[o:o+context]`` and targets shifted by one."""
    while True:
        starts = rng.integers(0, len(ids) - context - 1, batch)
        x = np.stack([ids[s : s + context] for s in starts])
        y = np.stack([ids[s + 1 : s + context + 1] for s in starts])
        yield nv.array(x), nv.array(y)


def evaluate(model, ids: np.ndarray, context: int, batch: int = 16) -> float:
    """Mean next-character loss over consecutive windows of ``ids``."""
    model.eval()
    n = (len(ids) - 1) // context
    x = ids[: n * context].reshape(n, context)
    y = ids[1 : n * context + 1].reshape(n, context)
    total = 0.0
    for i in range(0, n, batch):
        logits = model(nv.array(x[i : i + batch]))
        loss = nn.losses.cross_entropy(logits, nv.array(y[i : i + batch]), reduction="sum")
        total += loss.item()
    model.train()
    return total / (n * context)


def generate(
    model, prompt: str, chars: list[str], length: int, context: int, temperature: float
) -> str:
    """Samples ``length`` characters after ``prompt``."""
    lookup = {c: i for i, c in enumerate(chars)}
    ids = [lookup[c] for c in prompt if c in lookup]
    model.eval()
    for _ in range(length):
        window = nv.array(np.array(ids[-context:], np.int32)[None])
        logits = model(window)[0, -1]
        nxt = nv.random.categorical(logits * (1.0 / temperature))
        ids.append(int(nxt.item()))
    model.train()
    return "".join(chars[i] for i in ids)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--dims", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sample", type=int, default=200, help="characters to generate")
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--plot", metavar="PATH", help="save the loss curves as a PNG (matplotlib)")
    args = p.parse_args(argv)

    nv.random.seed(args.seed)
    text, chars, ids = load_text()
    split = int(len(ids) * 0.9)
    train_ids, val_ids = ids[:split], ids[split:]
    model = CharLM(len(chars), args.dims, args.heads, args.layers, args.dropout)
    warmup = max(1, args.steps // 10)
    schedule = optim.join_schedules(
        [
            optim.linear_schedule(0.0, args.lr, warmup),
            optim.cosine_decay(args.lr, max(1, args.steps - warmup), args.lr / 10),
        ],
        [warmup],
    )
    optimizer = optim.AdamW(learning_rate=schedule, weight_decay=0.01)
    optimizer.init(model.trainable_parameters())

    def loss_fn(model, x, y):
        return nn.losses.cross_entropy(model(x), y, reduction="mean")

    loss_and_grad = nn.value_and_grad(model, loss_fn)
    state = [model.state, optimizer.state, nv.random.state]

    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        grads, _ = optim.clip_grad_norm(grads, 1.0)
        optimizer.update(model, grads)
        return loss

    if not args.no_compile:
        step = partial(nv.compile, inputs=state, outputs=state)(step)

    n_params = sum(v.size for v in _leaves(model.trainable_parameters()))
    print(
        f"text: {len(text)} characters, vocabulary {len(chars)}; model: {args.layers} layers, "
        f"{args.dims} dims, {args.heads} heads, {n_params} parameters"
    )
    print(
        f"initial validation loss {evaluate(model, val_ids, args.context):.3f} "
        f"(uniform guessing: {math.log(len(chars)):.3f})"
    )
    data = batches(train_ids, args.batch_size, args.context, np.random.default_rng(args.seed))
    start = time.perf_counter()
    running = None
    eval_time = 0.0
    losses, validation = [], []
    for i in range(1, args.steps + 1):
        x, y = next(data)
        loss = step(x, y)
        nv.eval(state)
        losses.append(loss.item())
        running = losses[-1] if running is None else 0.9 * running + 0.1 * losses[-1]
        if i % max(1, args.steps // 10) == 0 or i == args.steps:
            t = time.perf_counter()
            val = evaluate(model, val_ids, args.context)
            eval_time += time.perf_counter() - t
            validation.append((i, val))
            print(
                f"step {i:5d}  train loss {running:.3f}  validation loss {val:.3f}  "
                f"lr {optimizer.learning_rate.item():.2e}  "
                f"{time.perf_counter() - start - eval_time:6.1f} s training",
                flush=True,
            )
    elapsed = time.perf_counter() - start - eval_time
    val = evaluate(model, val_ids, args.context)
    rate = args.steps / max(elapsed, 1e-9)
    print(f"{args.steps} training steps in {elapsed:.1f} s ({rate:.1f} steps/s)")
    print(f"validation loss {val:.3f}")
    if args.plot:
        from plotting import save_loss_curve

        save_loss_curve(
            args.plot,
            losses,
            f"character transformer: validation loss {val:.3f}",
            marks={"validation loss": validation},
        )
    if args.sample > 0:
        print("sample:")
        print(generate(model, "It is a truth", chars, args.sample, args.context, 0.6))
    return {"train_loss": running, "val_loss": val}


def _leaves(tree):
    if isinstance(tree, dict):
        for v in tree.values():
            yield from _leaves(v)
    elif isinstance(tree, (list, tuple)):
        for v in tree:
            yield from _leaves(v)
    elif isinstance(tree, nv.array):
        yield tree


if __name__ == "__main__":
    main()
