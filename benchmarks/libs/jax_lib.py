"""JAX on the CPU: eager ``jax.numpy`` ops, ``jax.jit``, and an MLP step with a hand-written Adam."""
from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

from .. import workloads as W
from .base import ArrayAdapter, Thunk


class Adapter(ArrayAdapter):
    name = "jax"
    eager = "jax"
    compiled = "jax.jit"

    def load(self) -> str:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp
        cache = os.environ.get("BENCH_JAX_CACHE_DIR")
        if cache:  # persistent compilation cache in the worker's own directory, every entry kept
            jax.config.update("jax_compilation_cache_dir", cache)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        self.jax, self.jnp = jax, jnp

        class F:
            add = staticmethod(jnp.add)
            multiply = staticmethod(jnp.multiply)
            exp = staticmethod(jnp.exp)
            tanh = staticmethod(jnp.tanh)
            erf = staticmethod(jax.scipy.special.erf)
            sigmoid = staticmethod(jax.nn.sigmoid)
        self.F = F
        return jax.__version__

    def asarray(self, a: np.ndarray) -> Any:
        return self.jnp.asarray(a)

    def sync(self, out: Any) -> Any:
        return self.jax.block_until_ready(out)

    def compile_fn(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return self.jax.jit(fn)

    def train(self, variant: str) -> tuple[Thunk, Callable[[Any], float]]:
        jax, jnp = self.jax, self.jnp
        xs, ys = W.train_data()
        x, y = jnp.asarray(xs), jnp.asarray(ys)
        rng = np.random.default_rng(1)
        params = []
        for i, o in zip(W.MLP_SIZES[:-1], W.MLP_SIZES[1:]):
            bound = 1.0 / np.sqrt(i)  # the uniform init of MLX's / PyTorch's Linear
            params.append((jnp.asarray(rng.uniform(-bound, bound, (i, o)).astype(np.float32)),
                           jnp.asarray(rng.uniform(-bound, bound, (o,)).astype(np.float32))))
        m = jax.tree_util.tree_map(jnp.zeros_like, params)
        v = jax.tree_util.tree_map(jnp.zeros_like, params)
        lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8

        def loss_fn(params: Any, x: Any, y: Any) -> Any:
            h = x
            for k, (w, b) in enumerate(params):
                h = h @ w + b
                if k < len(params) - 1:
                    h = jax.nn.relu(h)
            logp = jax.nn.log_softmax(h)
            return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

        def step(params: Any, m: Any, v: Any, t: Any, x: Any, y: Any) -> Any:
            loss, g = jax.value_and_grad(loss_fn)(params, x, y)
            t = t + 1
            m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
            v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
            c1, c2 = 1 - b1 ** t, 1 - b2 ** t
            params = jax.tree_util.tree_map(
                lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, m, v)
            return params, m, v, t, loss

        if self.is_compiled(variant):
            step = jax.jit(step, donate_argnums=(0, 1, 2))  # what a JAX user writes
        state = [params, m, v, jnp.asarray(0.0, jnp.float32)]

        def thunk() -> Any:
            *new, loss = step(*state, x, y)
            state[:] = new
            return jax.block_until_ready((loss, state))[0]
        return thunk, float
