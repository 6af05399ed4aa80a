"""An MLX-style training step for tests: a model, ``nn.value_and_grad`` of the mean
cross-entropy, Adam, and the step ``loss = step(x, y)`` that updates the model in place;
compiled with the state as its inputs and outputs, or not.

    from training_step import adam_step, mlp

    t = adam_step(lambda: mlp(8, 16, 4), seed=5, compiled=True)
    loss = t.step(x, y)
    nv.eval(loss, t.state)

Tests compare a compiled step with an uncompiled one built from the same seed: both start from
the same parameters and, with dropout, draw the same masks.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import nuvec as nv
import nuvec.nn as nn
import nuvec.optimizers as optim


def mlp(*sizes: int, dropout: float = 0.0) -> nn.Sequential:
    """Linear layers of ``sizes`` (``mlp(8, 16, 4)``: 8 -> 16 -> 4) with a ReLU after each
    but the last, and a Dropout of ``dropout`` after the first ReLU where it is not 0."""
    if len(sizes) < 2:
        raise ValueError(f"mlp: sizes needs at least two entries, got {sizes}")
    layers: list = []
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(i, o))
        if k < len(sizes) - 2:
            layers.append(nn.ReLU())
            if k == 0 and dropout:
                layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers)


@dataclasses.dataclass
class TrainingStep:
    """What ``adam_step`` built: the model, its optimizer, the state list the compiled step
    threads (``[model.state, opt.state]``, plus ``nv.random.state`` where asked) and the step."""

    model: nn.Module
    opt: optim.Optimizer
    state: list
    step: Callable


def _loss(model: nn.Module, x: nv.Array, y: nv.Array) -> nv.Array:
    return nn.losses.cross_entropy(model(x), y, reduction="mean")


def adam_step(
    make_model: Callable[[], nn.Module],
    *,
    seed: int,
    compiled: bool,
    learning_rate: float = 1e-2,
    random_state: bool = False,
) -> TrainingStep:
    """Seeds the global key with ``seed``, makes the model (its parameters evaluated), an
    initialised ``optim.Adam(learning_rate)`` and the step; ``compiled`` compiles it with
    ``inputs=state, outputs=state``; ``random_state`` names ``nv.random.state`` in the state
    (a step with dropout threads it either way)."""
    nv.random.seed(seed)
    model = make_model()
    nv.eval(model.parameters())
    opt = optim.Adam(learning_rate=learning_rate)
    opt.init(model.trainable_parameters())
    loss_and_grad = nn.value_and_grad(model, _loss)

    def step(x: nv.Array, y: nv.Array) -> nv.Array:
        loss, grads = loss_and_grad(model, x, y)
        opt.update(model, grads)
        return loss

    state = [model.state, opt.state] + ([nv.random.state] if random_state else [])
    fn = nv.compile(step, inputs=state, outputs=state) if compiled else step
    return TrainingStep(model, opt, state, fn)
