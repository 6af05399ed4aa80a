"""Training steps on the GPU as users write them, for ``benchmarks/gpu/run.py``.

Each library with its own idiom, on the same model and data:

* nuvec, MLX style: ``nn.Sequential`` (or the transformer of ``benchmarks.libs.mlx_style``),
  ``nn.value_and_grad``, ``optim.Adam``, ``nv.compile(step, inputs=state, outputs=state)``
  with ``state = [model.state, optimizer.state]`` (and the same step uncompiled);
* jax.jit over ``jax.value_and_grad`` and ``optax.adam``, parameters and optimizer state
  donated;
* PyTorch eager with ``torch.optim.Adam``, and torch.compile of the model and of the
  optimizer's step (the recipe of PyTorch's tutorials).

Cases: the MLP 784-512-512-10 with cross-entropy at a given batch size, and the character
transformer of ``benchmarks.workloads.LM``. Each step takes the next of a few distinct batches.

    run, sync = train("nuvec", "mlp", 256, compiled=True)
    seconds = per_step(run, sync, reps=100)           # {"synced": ..., "queued": ...}
"""

from __future__ import annotations

import itertools
import statistics
import time
from typing import Callable

import numpy as np

from benchmarks import workloads as W

N_BATCHES = 4


def data(case: str, batch: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``N_BATCHES`` batches of (inputs, int32 targets) for ``case``."""
    rng = np.random.default_rng(0)
    if case == "transformer":
        return W.lm_data()[:N_BATCHES]
    sizes = W.MLP_SIZES
    return [
        (
            rng.standard_normal((batch, sizes[0]), dtype=np.float32),
            rng.integers(0, sizes[-1], batch).astype(np.int32),
        )
        for _ in range(N_BATCHES)
    ]


def _nuvec(case: str, batch: int, compiled: bool):
    import nuvec as nv
    import nuvec.nn as nn
    import nuvec.optimizers as optim

    from benchmarks.libs.mlx_style import _language_model

    nv.set_default_device(nv.gpu)
    nv.random.seed(0)
    if case == "transformer":
        model = _language_model(nn, nv)
    else:
        s = W.MLP_SIZES
        model = nn.Sequential(
            nn.Linear(s[0], s[1]),
            nn.ReLU(),
            nn.Linear(s[1], s[2]),
            nn.ReLU(),
            nn.Linear(s[2], s[3]),
        )
    nv.eval(model.parameters())
    opt = optim.Adam(learning_rate=1e-3)
    opt.init(model.trainable_parameters())
    loss_and_grad = nn.value_and_grad(
        model, lambda m, x, y: nn.losses.cross_entropy(m(x), y, reduction="mean")
    )

    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        opt.update(model, grads)
        return loss

    state = [model.state, opt.state]
    if compiled:
        step = nv.compile(step, inputs=state, outputs=state)
    batches = itertools.cycle([(nv.array(x), nv.array(y)) for x, y in data(case, batch)])

    def run():
        loss = step(*next(batches))
        nv.async_eval(loss, state)

    if compiled:  # what the step compiled to (profile_step.py --tape)
        run.inspect = lambda: step.inspect(*next(batches))  # type: ignore[attr-defined]
    info = (lambda: step.stats().get("executable")) if compiled else None
    return run, nv.synchronize, info


def _torch(case: str, batch: int, compiled: bool):
    import torch

    from benchmarks.libs.torch_lib import _language_model

    torch.set_default_device("cuda")  # the transformer makes its positions at every call
    torch.manual_seed(0)
    if case == "transformer":
        model = _language_model(torch)
    else:
        s = W.MLP_SIZES
        model = torch.nn.Sequential(
            torch.nn.Linear(s[0], s[1]),
            torch.nn.ReLU(),
            torch.nn.Linear(s[1], s[2]),
            torch.nn.ReLU(),
            torch.nn.Linear(s[2], s[3]),
        )
    model = model.cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    batches = itertools.cycle(
        [
            (torch.from_numpy(x).cuda(), torch.from_numpy(y.astype(np.int64)).cuda())
            for x, y in data(case, batch)
        ]
    )
    forward, opt_step = model, opt.step
    if compiled:
        forward, opt_step = torch.compile(model), torch.compile(opt.step)

    def run():
        x, y = next(batches)
        opt.zero_grad(set_to_none=True)
        logits = forward(x)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, -2), y.flatten())
        loss.backward()
        opt_step()

    return run, torch.cuda.synchronize, None


def _jax(case: str, batch: int, precision: str | None = None):
    import contextlib
    import functools

    import jax
    import jax.numpy as jnp
    import optax

    from benchmarks.libs.jax_lib import _language_model, _mlp

    params, loss_fn = _language_model(jax, jnp) if case == "transformer" else _mlp(jax, jnp)
    tx = optax.adam(1e-3)

    # XLA's default float32 products on this GPU run on the tensor cores in TF32; "highest"
    # asks for full float32, nuvec's and PyTorch's default. The precision is read while the
    # step is traced, so the scope sits inside it (around the call it would cost host time).
    def scope():
        return jax.default_matmul_precision(precision) if precision else contextlib.nullcontext()

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def step(params, opt_state, x, y):
        with scope():
            loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss

    state = [params, tx.init(params)]
    batches = itertools.cycle([(jnp.asarray(x), jnp.asarray(y)) for x, y in data(case, batch)])

    def run():
        state[0], state[1], _ = step(state[0], state[1], *next(batches))

    return run, lambda: jax.block_until_ready(state), None


def train(library: str, case: str, batch: int, compiled: bool = True, precision: str | None = None):
    """(run one step, wait for the device, the executable's stats or None). ``precision``
    (jax only): ``jax.default_matmul_precision`` for the step, e.g. ``"highest"``."""
    if library == "nuvec":
        return _nuvec(case, batch, compiled)
    if library == "torch":
        return _torch(case, batch, compiled)
    if library == "jax":
        return _jax(case, batch, precision)
    raise ValueError(f"train: unknown library {library!r}")


def per_step(run: Callable, sync: Callable, reps: int, batches: int = 5, warm: int = 10) -> dict:
    """Median seconds per step, ``synced`` (each step waited for) and ``queued`` (``reps``
    steps, then one wait), after ``warm`` steps (which also compile)."""
    for _ in range(warm):
        run()
    sync()
    synced = []
    for _ in range(reps):
        t = time.perf_counter()
        run()
        sync()
        synced.append(time.perf_counter() - t)
    queued = []
    for _ in range(batches):
        t = time.perf_counter()
        for _ in range(reps):
            run()
        sync()
        queued.append((time.perf_counter() - t) / reps)
    return {"synced": statistics.median(synced), "queued": statistics.median(queued)}
