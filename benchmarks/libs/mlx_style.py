"""Shared adapter for MLX-API libraries (MLX itself and nuvec): the same code drives both.

Only the public MLX API is used: ``core.array``, ``core.eval``, ``core.compile``, element-wise
functions, ``nn.Sequential``/``nn.Linear``/``nn.ReLU``, ``nn.losses.cross_entropy``,
``nn.value_and_grad`` and ``optimizers.Adam``. Names are looked up when a workload needs them,
so a missing piece fails only the workloads that use it.
"""

from __future__ import annotations

import functools
import itertools
import importlib
from typing import Any, Callable

import numpy as np

from .. import workloads as W
from .base import ArrayAdapter, Thunk


class _LazyF:
    """``F`` namespace resolved on use: ``F.erf`` -> ``core.erf`` (AttributeError if missing)."""

    def __init__(self, core: Any) -> None:
        self._core = core

    def __getattr__(self, name: str) -> Any:
        return getattr(self._core, name)


class MLXStyleAdapter(ArrayAdapter):
    """Adapter over modules with MLX's API: ``modules = (core, nn, optimizers)`` import names."""

    modules: tuple[str, str, str] = ("mlx.core", "mlx.nn", "mlx.optimizers")

    def load(self) -> str:
        self.core = importlib.import_module(self.modules[0])
        self.F = _LazyF(self.core)
        return str(getattr(self.core, "__version__", "unknown"))

    def asarray(self, a: np.ndarray) -> Any:
        return self.core.array(a)

    def sync(self, out: Any) -> Any:
        self.core.eval(out)
        return out

    def to_numpy(self, out: Any) -> np.ndarray:
        return np.array(out)

    def compile_fn(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return self.core.compile(fn)

    def train(self, variant: str, case: str = "mlp_step") -> tuple[Thunk, Callable[[Any], float]]:
        core = self.core
        nn = importlib.import_module(self.modules[1])
        optim = importlib.import_module(self.modules[2])
        core.random.seed(0)
        if case == "transformer_step":
            model = _language_model(nn, core)
            data = W.lm_data()
        else:
            s = W.MLP_SIZES
            model = nn.Sequential(
                nn.Linear(s[0], s[1]),
                nn.ReLU(),
                nn.Linear(s[1], s[2]),
                nn.ReLU(),
                nn.Linear(s[2], s[3]),
            )
            data = W.train_data()
        core.eval(model.parameters())
        opt = optim.Adam(learning_rate=1e-3)
        opt.init(model.trainable_parameters())  # slots exist before tracing: no state-shape retrace
        batches = itertools.cycle([(core.array(x), core.array(y)) for x, y in data])

        def loss_fn(model: Any, x: Any, y: Any) -> Any:
            return nn.losses.cross_entropy(model(x), y, reduction="mean")

        loss_and_grad = nn.value_and_grad(model, loss_fn)

        def step(x: Any, y: Any) -> Any:
            loss, grads = loss_and_grad(model, x, y)
            opt.update(model, grads)
            return loss

        state = [model.state, opt.state]
        if self.is_compiled(variant):
            step = functools.partial(core.compile, inputs=state, outputs=state)(step)

        def thunk() -> Any:
            loss = step(*next(batches))
            core.eval(loss, state)
            return loss

        return thunk, lambda a: float(a.item())


def _language_model(nn: Any, core: Any) -> Any:
    """The transformer of ``workloads.LM`` written with MLX's nn (token and position
    embeddings, nn.TransformerEncoder with a causal mask, a linear head)."""
    c = W.LM

    class LanguageModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tokens = nn.Embedding(c["vocab"], c["dims"])
            self.positions = nn.Embedding(c["seq"], c["dims"])
            self.encoder = nn.TransformerEncoder(
                c["layers"], c["dims"], c["heads"], mlp_dims=4 * c["dims"]
            )
            self.head = nn.Linear(c["dims"], c["vocab"])

        def __call__(self, x: Any) -> Any:
            n = x.shape[1]
            mask = nn.MultiHeadAttention.create_additive_causal_mask(n)
            h = self.tokens(x) + self.positions(core.arange(n))
            return self.head(self.encoder(h, mask))

    return LanguageModel()
