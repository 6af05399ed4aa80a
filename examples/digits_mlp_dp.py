"""Data-parallel training of the digits MLP over MPI: the same model, data and optimizer as
``digits_mlp.py``, with each global batch split across the processes.

Every process builds the same model (same seed), walks the same shuffled global batches and
takes its own contiguous share of each; ``average_gradients`` makes every process's gradient
the gradient of the global batch's mean loss, so all processes apply the same update and the
loss curve is the one-process curve (up to float32 sums taken in another order). The compiled
step holds the gradient average: its all_sum communicates on every call.

    python examples/digits_mlp_dp.py --epochs 3                      # one process
    python -m nuvec.launch -n 4 examples/digits_mlp_dp.py --epochs 3 # four processes
    python -m nuvec.launch -n 4 --backend nccl examples/digits_mlp_dp.py --device gpu
                                                                     # four GPUs over NCCL

Dropout is off by default (``--dropout 0``): each process would draw its own masks for its
share of the batch, so the runs would agree only statistically.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial

import numpy as np

import nuvec as nv
from digits_mlp import accuracy, load_digits, training_setup


def parameter_spread(model, group) -> float:
    """The largest difference of any parameter between two processes (0 when in sync)."""
    flat = nv.concatenate(
        [nv.reshape(p, (-1,)) for _, p in nv.utils.tree_flatten(model.trainable_parameters())]
    )
    spread = nv.distributed.all_max(flat, group=group) - nv.distributed.all_min(flat, group=group)
    return float(nv.max(spread).item())


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=64, help="the global batch (all processes)")
    p.add_argument("--hidden", type=int, nargs="+", default=[256, 256])
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-compile", action="store_true", help="run the step eagerly")
    p.add_argument(
        "--no-average",
        action="store_true",
        help="skip the gradient average (each process trains on its share alone)",
    )
    p.add_argument("--backend", choices=("any", "mpi", "nccl"), default="any")
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="where to train")
    p.add_argument("--losses-out", help="write the loss of every step (JSON) to this file")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)

    if args.device == "gpu":
        nv.set_default_device(nv.gpu)
    world = nv.distributed.init(backend=args.backend)
    rank, size = world.rank(), world.size()
    if args.batch_size % size:
        p.error(
            f"the global batch ({args.batch_size}) must be a multiple of the number of "
            f"processes ({size})"
        )
    local = args.batch_size // size

    nv.random.seed(args.seed)
    x_train, y_train, x_test, y_test = load_digits(args.seed)
    steps_per_epoch = len(y_train) // args.batch_size
    total_steps = steps_per_epoch * args.epochs
    model, optimizer, loss_and_grad, state = training_setup(args, x_train.shape[1], steps_per_epoch)

    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        if not args.no_average:
            grads = nv.distributed.average_gradients(grads, group=world)
        optimizer.update(model, grads)
        # every share has `local` examples: the global mean is the mean of the shares' means
        return nv.distributed.all_sum(loss, group=world) / size

    if not args.no_compile:
        step = partial(nv.compile, inputs=state, outputs=state)(step)

    if rank == 0 and not args.quiet:
        print(
            f"digits on {size} process(es) ({world.backend}, {args.device}): "
            f"global batch {args.batch_size} = {size} x {local}, "
            f"{args.epochs} epochs ({'eager' if args.no_compile else 'compiled'} step)"
        )
    rng = np.random.default_rng(args.seed + 1)  # the same global batches on every process
    losses, step_seconds = [], []
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(len(y_train))
        for i in range(steps_per_epoch):
            batch = order[i * args.batch_size : (i + 1) * args.batch_size]
            mine = batch[rank * local : (rank + 1) * local]
            t = time.perf_counter()
            loss = step(nv.array(x_train[mine]), nv.array(y_train[mine]))
            nv.eval(loss, state)
            losses.append(loss.item())
            step_seconds.append(time.perf_counter() - t)
        if rank == 0 and not args.quiet:
            window = losses[-steps_per_epoch:]
            print(f"epoch {epoch:3d}/{args.epochs} loss {sum(window) / len(window):.4f}")
    elapsed = time.perf_counter() - start
    acc = accuracy(model, x_test, y_test)
    spread = parameter_spread(model, world)
    result = {
        "size": size,
        "losses": losses,
        "accuracy": acc,
        "parameter_spread": spread,
        "seconds": elapsed,
        "step_seconds": step_seconds,
    }
    if rank == 0:
        if not args.quiet:
            print(
                f"trained {total_steps} steps in {elapsed:.1f} s; test accuracy "
                f"{acc * 100:.2f}%; parameters equal on every process: {spread == 0.0}"
            )
        if args.losses_out:
            with open(args.losses_out, "w") as f:
                json.dump(result, f)
    return result


if __name__ == "__main__":
    main()
