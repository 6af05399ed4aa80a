"""What is measured: the workloads, written once over a small namespace of array functions.

Every array library's adapter supplies ``F`` (an object with ``add``, ``multiply``, ``exp``,
``tanh``, ``erf``, ``sigmoid``); the formulas below use Python operators and ``F`` only, so
NumPy, JAX, PyTorch, MLX and nuvec run exactly the same arithmetic. Python float constants stay
weakly typed (float32 results) in all of them.

    y = CHAINS["gelu_tanh"].fn(F, x)
    CHAINS["gelu_tanh"].ideal_bytes(n)   # what one fused kernel must read and write
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

GROUPS = ("eager", "fused", "overhead", "first_call", "train", "memory")
"""Workload groups, in run order; ``machine`` (the limits) always runs first."""

SQRT_HALF = 0.7071067811865476
SQRT_2_OVER_PI = 0.7978845608028654

ELEMENTWISE = {  # name -> number of inputs
    "add": 2,
    "multiply": 2,
    "exp": 1,
    "tanh": 1,
    "erf": 1,
    "sigmoid": 1,
}


def gelu_erf(F: Any, x: Any) -> Any:
    """GELU with the exact erf form: 5 element-wise ops."""
    return x * 0.5 * (1.0 + F.erf(x * SQRT_HALF))


def gelu_tanh(F: Any, x: Any) -> Any:
    """GELU, tanh approximation: 9 element-wise ops."""
    return 0.5 * x * (1.0 + F.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))


def swiglu(F: Any, a: Any, b: Any) -> Any:
    """SwiGLU's gate: silu(a) * b, 3 element-wise ops."""
    return a * F.sigmoid(a) * b


def chain10(F: Any, x: Any) -> Any:
    """Ten arithmetic ops on one input; the values stay finite and O(1) for normal inputs."""
    y = x * 1.5
    y = y + 0.5
    y = y * x
    y = y - 2.0
    y = y / 3.0
    y = y + x
    y = y * 0.25
    y = y - x
    y = y * 0.5
    return y + 1.0


@dataclass(frozen=True)
class Chain:
    """A fused-chain workload: its formula, input count and how to check results."""

    name: str
    fn: Callable[..., Any]
    n_inputs: int

    def ideal_bytes(self, n: int, itemsize: int = 4) -> int:
        """Bytes an ideal fused kernel moves: every input read once, the output written once."""
        return (self.n_inputs + 1) * n * itemsize


CHAINS = {
    c.name: c
    for c in (
        Chain("gelu_erf", gelu_erf, 1),
        Chain("gelu_tanh", gelu_tanh, 1),
        Chain("swiglu", swiglu, 2),
        Chain("chain10", chain10, 1),
    )
}


def ops200(F: Any, x: Any) -> Any:
    """A 200-op element-wise function (50 x: scale, add input, tanh, shift), for first-call latency.

    Constants differ per step so that nothing can be merged away; tanh keeps values bounded.
    """
    y = x
    for i in range(50):
        y = y * (1.0 + 0.01 * i)
        y = y + x
        y = F.tanh(y)
        y = y - 0.001 * i
    return y


def ops200_c_body() -> str:
    """The same 200 ops as C statements on float ``y`` and ``x`` (for the C compiler's
    reference time)."""
    lines = []
    for i in range(50):
        lines += [
            f"y = y * {1.0 + 0.01 * i!r}f;",
            "y = y + x;",
            "y = tanhf(y);",
            f"y = y - {0.001 * i!r}f;",
        ]
    return "\n    ".join(lines)


# --- float64 references, for a sanity check of every library's result (not of its accuracy) ---


class RefF:
    """NumPy float64 implementation of ``F`` used to check results."""

    add = staticmethod(np.add)
    multiply = staticmethod(np.multiply)
    exp = staticmethod(np.exp)
    tanh = staticmethod(np.tanh)
    erf = staticmethod(np.vectorize(math.erf, otypes=[np.float64]))

    @staticmethod
    def sigmoid(x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-x))


CHECK_N = 4096  # elements compared against the float64 reference


def check(result: np.ndarray, expected: np.ndarray) -> dict[str, Any]:
    """Compare the first CHECK_N elements: max relative error (with an absolute floor of 1)."""
    got = np.asarray(result, dtype=np.float64).ravel()[:CHECK_N]
    exp = np.asarray(expected, dtype=np.float64).ravel()[:CHECK_N]
    if got.shape != exp.shape:
        return {"ok": False, "max_rel_err": None, "why": f"shape {got.shape} != {exp.shape}"}
    err = float(np.max(np.abs(got - exp) / np.maximum(np.abs(exp), 1.0))) if got.size else 0.0
    ok = bool(np.isfinite(err) and err < 1e-3)
    return {"ok": ok, "max_rel_err": err}


def inputs(n: int, count: int, seed: int = 0) -> list[np.ndarray]:
    """``count`` float32 arrays of ``n`` standard-normal values (clipped to +-4), reproducible."""
    rng = np.random.default_rng(seed)
    return [np.clip(rng.standard_normal(n, dtype=np.float32), -4, 4) for _ in range(count)]


# --- training step: MLP 784-512-512-10, ReLU, cross-entropy, batch 256, Adam ---

MLP_SIZES = (784, 512, 512, 10)
BATCH = 256


def train_flops(sizes: tuple[int, ...] = MLP_SIZES, batch: int = BATCH) -> int:
    """Matmul FLOPs of one step: forward, weight gradients, and input gradients past layer 1."""
    mm = [i * o for i, o in zip(sizes[:-1], sizes[1:])]
    return 2 * batch * (2 * sum(mm) + sum(mm[1:]))


# Each step takes the next of BATCHES distinct batches, as a training loop does. Subnormal
# floats cost x86 cores a microcode assist per operation, and NumPy, OpenBLAS and nuvec keep
# them by default, while XLA's CPU runtime flushes them to zero. On one repeated batch the MLP
# memorised its 256 random labels within about 12 steps, its gradients underflowed, and a step
# took 25-70 ms instead of 5 (jax.jit's did not change). With distinct batches that is gone,
# but after about 650 steps Adam's first moments of units whose gradient is zero (ReLUs that
# stopped firing) decay into subnormals (85% of one layer's) and nuvec's step goes from 5 to
# 7 ms. A benchmark run takes fewer steps than that; the nv.compile+flush variant shows nuvec
# with subnormals flushed, the mode jax.jit runs in.
BATCHES = 64


def train_data(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``BATCHES`` batches: random float32 inputs (256, 784) and int32 labels in [0, 10) that a
    fixed random linear map of the input decides (one in ten random instead). The loss of a
    later batch then falls below the first one's within a few steps, which the harness checks,
    even for a library slow enough to take only a few steps."""
    rng = np.random.default_rng(seed)
    proj = rng.standard_normal((MLP_SIZES[0], MLP_SIZES[-1])).astype(np.float32)
    out = []
    for _ in range(BATCHES):
        x = rng.standard_normal((BATCH, MLP_SIZES[0]), dtype=np.float32)
        y = np.argmax(x @ proj, axis=1).astype(np.int32)
        noisy = rng.random(BATCH) < 0.1
        y[noisy] = rng.integers(0, MLP_SIZES[-1], size=int(noisy.sum()))
        out.append((x, y))
    return out


def train_ideal_bytes(sizes: tuple[int, ...] = MLP_SIZES, batch: int = BATCH) -> int:
    """Memory a step must hold beyond its inputs: params, grads, Adam's two moments, activations."""
    params = sum(i * o + o for i, o in zip(sizes[:-1], sizes[1:]))
    acts = batch * sum(sizes[1:])
    return 4 * (4 * params + 2 * acts)


# --- training step: a small causal transformer language model, Adam ---
# token + position embeddings, pre-norm encoder layers (attention with a causal mask, MLP of
# 4 x dims with ReLU), a final LayerNorm, a linear head over the vocabulary; cross-entropy on
# the next token. MLX's nn.TransformerEncoder with its defaults (norm_first=True).

LM = dict(vocab=96, dims=128, heads=4, layers=2, seq=64, batch=32)


def lm_data(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``BATCHES`` random batches of token ids: inputs and next-token targets, int32 (32, 64)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(BATCHES):
        t = rng.integers(0, LM["vocab"], size=(LM["batch"], LM["seq"] + 1)).astype(np.int32)
        out.append((t[:, :-1], t[:, 1:]))
    return out


def lm_flops() -> int:
    """Matmul FLOPs of one step (forward x 3): projections and MLP (12 d^2 per token and layer),
    attention scores and mixing (2 seq d), the head (d vocab)."""
    d, tokens = LM["dims"], LM["batch"] * LM["seq"]
    per_token = LM["layers"] * (12 * d * d + 2 * LM["seq"] * d) + d * LM["vocab"]
    return 2 * 3 * tokens * per_token


TRAIN_FLOPS = {"mlp_step": train_flops, "transformer_step": lm_flops}
