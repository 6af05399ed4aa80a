"""JAX on the CPU: eager ``jax.numpy`` ops, ``jax.jit``, and training steps with ``optax.adam``."""

from __future__ import annotations

import itertools
import os
from typing import Any, Callable

import numpy as np

from .. import workloads as W
from .base import NotApplicable, ArrayAdapter, Thunk


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
            log = staticmethod(jnp.log)
            log2 = staticmethod(jnp.log2)
            log10 = staticmethod(jnp.log10)
            log1p = staticmethod(jnp.log1p)
            power = staticmethod(jnp.power)

        self.F = F
        return jax.__version__

    def asarray(self, a: np.ndarray) -> Any:
        return self.jnp.asarray(a)

    def sync(self, out: Any) -> Any:
        return self.jax.block_until_ready(out)

    def compile_fn(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return self.jax.jit(fn)

    def train(self, variant: str, case: str = "mlp_step") -> tuple[Thunk, Callable[[Any], float]]:
        jax, jnp = self.jax, self.jnp
        if case == "transformer_step":
            data = W.lm_data()
            params, loss_fn = _language_model(jax, jnp)
        else:
            data = W.train_data()
            params, loss_fn = _mlp(jax, jnp)
        batches = itertools.cycle([(jnp.asarray(x), jnp.asarray(y)) for x, y in data])
        try:
            import optax
        except ImportError:
            raise NotApplicable("optax (JAX's optimizers) is not installed") from None
        tx = optax.adam(1e-3)

        def step(params: Any, opt_state: Any, x: Any, y: Any) -> Any:
            loss, g = jax.value_and_grad(loss_fn)(params, x, y)
            updates, opt_state = tx.update(g, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss

        if self.is_compiled(variant):
            step = jax.jit(step, donate_argnums=(0, 1))  # what a JAX user writes
        state = [params, tx.init(params)]

        def thunk() -> Any:
            *new, loss = step(*state, *next(batches))
            state[:] = new
            return jax.block_until_ready((loss, state))[0]

        return thunk, float


def _linear(rng: np.random.Generator, jnp: Any, i: int, o: int, bias: bool = True) -> dict:
    bound = 1.0 / np.sqrt(i)  # the uniform init of MLX's / PyTorch's Linear
    p = {"w": jnp.asarray(rng.uniform(-bound, bound, (i, o)).astype(np.float32))}
    if bias:
        p["b"] = jnp.asarray(rng.uniform(-bound, bound, (o,)).astype(np.float32))
    return p


def _apply(p: dict, x: Any) -> Any:
    return x @ p["w"] + p["b"] if "b" in p else x @ p["w"]


def _cross_entropy(jax: Any, jnp: Any, logits: Any, y: Any) -> Any:
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, y[..., None], axis=-1))


def _mlp(jax: Any, jnp: Any) -> tuple[Any, Callable]:
    rng = np.random.default_rng(1)
    params = [_linear(rng, jnp, i, o) for i, o in zip(W.MLP_SIZES[:-1], W.MLP_SIZES[1:])]

    def loss_fn(params: Any, x: Any, y: Any) -> Any:
        h = x
        for k, p in enumerate(params):
            h = _apply(p, h)
            if k < len(params) - 1:
                h = jax.nn.relu(h)
        return _cross_entropy(jax, jnp, h, y)

    return params, loss_fn


def _language_model(jax: Any, jnp: Any) -> tuple[Any, Callable]:
    """``workloads.LM`` as MLX's nn.TransformerEncoder computes it (pre-norm layers, attention
    projections without bias, MLP with bias and ReLU, a final LayerNorm)."""
    c = W.LM
    d, h_, v = c["dims"], c["heads"], c["vocab"]
    rng = np.random.default_rng(1)

    def norm() -> dict:
        return {"w": jnp.ones((d,), jnp.float32), "b": jnp.zeros((d,), jnp.float32)}

    emb = d**-0.5  # MLX's Embedding init: normal, standard deviation 1/sqrt(dims)
    params = {
        "tokens": jnp.asarray((rng.standard_normal((v, d)) * emb).astype(np.float32)),
        "positions": jnp.asarray((rng.standard_normal((c["seq"], d)) * emb).astype(np.float32)),
        "layers": [
            {
                "ln1": norm(),
                "ln2": norm(),
                **{k: _linear(rng, jnp, d, d, bias=False) for k in ("q", "k", "v", "o")},
                "fc1": _linear(rng, jnp, d, 4 * d),
                "fc2": _linear(rng, jnp, 4 * d, d),
            }
            for _ in range(c["layers"])
        ],
        "ln": norm(),
        "head": _linear(rng, jnp, d, v),
    }

    def layer_norm(p: dict, x: Any) -> Any:
        mu = jnp.mean(x, -1, keepdims=True)
        var = jnp.mean((x - mu) ** 2, -1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * p["w"] + p["b"]

    def attention(p: dict, x: Any, mask: Any) -> Any:
        b, s, _ = x.shape
        split = lambda t: t.reshape(b, s, h_, d // h_).transpose(0, 2, 1, 3)  # noqa: E731
        q, k, vv = (split(_apply(p[n], x)) for n in ("q", "k", "v"))
        scores = (q * (d // h_) ** -0.5) @ k.transpose(0, 1, 3, 2) + mask
        out = jax.nn.softmax(scores, axis=-1) @ vv
        return _apply(p["o"], out.transpose(0, 2, 1, 3).reshape(b, s, d))

    def loss_fn(params: Any, x: Any, y: Any) -> Any:
        n = x.shape[1]
        mask = jnp.where(jnp.arange(n)[:, None] >= jnp.arange(n)[None, :], 0.0, -1e9)
        h = params["tokens"][x] + params["positions"][:n]
        for p in params["layers"]:
            h = h + attention(p, layer_norm(p["ln1"], h), mask)
            h = h + _apply(p["fc2"], jax.nn.relu(_apply(p["fc1"], layer_norm(p["ln2"], h))))
        return _cross_entropy(jax, jnp, _apply(params["head"], layer_norm(params["ln"], h)), y)

    return params, loss_fn
