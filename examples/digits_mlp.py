"""Train an MLP on scikit-learn's handwritten digits with a compiled training step.

The data set (1,797 8x8 images, 10 classes) ships inside scikit-learn, so nothing is
downloaded. The training step -- forward pass with dropout, loss, gradients and the AdamW
update -- is one ``nv.compile``d function whose state is
``[model.state, optimizer.state, nv.random.state]``: the parameters, the optimizer's moments
and step, and the random key that draws the dropout masks are its inputs and outputs, so the
Python function is traced once and then replayed.

    python examples/digits_mlp.py              # full setting (reaches >= 95% test accuracy)
    python examples/digits_mlp.py --epochs 2   # a quick run
    python examples/digits_mlp.py --plot loss.png   # and the loss curve (needs matplotlib)
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial

import numpy as np

import nuvec as nv
import nuvec.nn as nn
import nuvec.optimizers as optim


class MLP(nn.Module):
    """``in -> hidden -> ... -> classes`` with ReLU and dropout between the layers."""

    def __init__(self, sizes: list[int], dropout: float) -> None:
        super().__init__()
        self.layers = [nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
        self.drop = nn.Dropout(dropout)

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = self.drop(nn.relu(layer(x)))
        return self.layers[-1](x)


def load_digits(seed: int, test_fraction: float = 0.2):
    """The digits, scaled to [0, 1], split into train and test sets (a seeded shuffle)."""
    from sklearn.datasets import load_digits as sk_load

    d = sk_load()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(len(y) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def progress(
    epoch: int,
    epochs: int,
    done: int,
    total: int,
    loss: float,
    seconds: float,
    width: int = 30,
    out=sys.stdout,
) -> None:
    """One line of ``[#####.....]`` progress per epoch, rewritten in place; ``seconds`` is the
    time the epoch has taken so far."""
    filled = int(width * done / total)
    bar = "#" * filled + "." * (width - filled)
    out.write(
        f"\repoch {epoch:3d}/{epochs} [{bar}] {done:4d}/{total} loss {loss:.4f} {seconds:5.2f} s"
    )
    if done == total:
        out.write("\n")
    out.flush()


def accuracy(model, x, y) -> float:
    model.eval()
    pred = nv.argmax(model(nv.array(x)), axis=-1)
    model.train()
    return float(nv.mean(pred == nv.array(y)).item())


def training_setup(args, n_features: int, steps_per_epoch: int) -> tuple:
    """The MLP (``args.hidden``, ``args.dropout``), its AdamW optimizer (a warm-up epoch from
    ``args.lr / 10``, then cosine decay to ``args.lr / 20`` over ``args.epochs``), its
    loss-and-gradient function (mean cross-entropy) and the state a compiled step reads and
    writes."""
    model = MLP([n_features, *args.hidden, 10], args.dropout)
    total_steps = steps_per_epoch * args.epochs
    schedule = optim.join_schedules(
        [
            optim.linear_schedule(args.lr / 10, args.lr, max(1, steps_per_epoch)),
            optim.cosine_decay(args.lr, max(1, total_steps - steps_per_epoch), args.lr / 20),
        ],
        [steps_per_epoch],
    )
    optimizer = optim.AdamW(learning_rate=schedule, weight_decay=1e-4)
    optimizer.init(model.trainable_parameters())

    def loss_fn(model, x, y):
        return nn.losses.cross_entropy(model(x), y, reduction="mean")

    loss_and_grad = nn.value_and_grad(model, loss_fn)
    return model, optimizer, loss_and_grad, [model.state, optimizer.state, nv.random.state]


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--hidden", type=int, nargs="+", default=[256, 256])
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-compile", action="store_true", help="run the step eagerly")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--plot", metavar="PATH", help="save the loss curve as a PNG (matplotlib)")
    args = p.parse_args(argv)

    nv.random.seed(args.seed)
    x_train, y_train, x_test, y_test = load_digits(args.seed)
    steps_per_epoch = len(y_train) // args.batch_size
    total_steps = steps_per_epoch * args.epochs
    model, optimizer, loss_and_grad, state = training_setup(args, x_train.shape[1], steps_per_epoch)

    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        optimizer.update(model, grads)
        return loss

    if not args.no_compile:
        step = partial(nv.compile, inputs=state, outputs=state)(step)

    print(
        f"digits: {len(y_train)} train / {len(y_test)} test images, MLP "
        f"{[x_train.shape[1], *args.hidden, 10]}, {args.epochs} epochs "
        f"({'compiled' if not args.no_compile else 'eager'} step)"
    )
    rng = np.random.default_rng(args.seed + 1)
    start = time.perf_counter()
    losses, epoch_means = [], []
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(len(y_train))
        running = 0.0
        epoch_start = time.perf_counter()
        for i in range(steps_per_epoch):
            idx = order[i * args.batch_size : (i + 1) * args.batch_size]
            loss = step(nv.array(x_train[idx]), nv.array(y_train[idx]))
            nv.eval(state)
            losses.append(loss.item())
            running += losses[-1]
            if not args.quiet and (i + 1 == steps_per_epoch or i % 5 == 0):
                progress(
                    epoch,
                    args.epochs,
                    i + 1,
                    steps_per_epoch,
                    running / (i + 1),
                    time.perf_counter() - epoch_start,
                )
        epoch_means.append((epoch * steps_per_epoch, running / steps_per_epoch))
    elapsed = time.perf_counter() - start
    acc = accuracy(model, x_test, y_test)
    print(
        f"trained {total_steps} steps in {elapsed:.1f} s "
        f"({total_steps / max(elapsed, 1e-9):.0f} steps/s)"
    )
    print(f"test accuracy: {acc * 100:.2f}%")
    if args.plot:
        from plotting import save_loss_curve

        save_loss_curve(
            args.plot,
            losses,
            f"digits MLP: test accuracy {acc * 100:.2f}%",
            marks={"epoch mean": epoch_means},
        )
    return acc


if __name__ == "__main__":
    main()
