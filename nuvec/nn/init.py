"""Parameter initialisers (MLX's ``mlx.nn.init``).

Each function returns an initialiser: a function of an array that returns a new array of the
same shape (the input's values are not used), drawn from ``nv.random``'s global key.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> w = nn.init.glorot_uniform()(nv.zeros((64, 32)))
>>> w.shape, w.dtype
((64, 32), nuvec.float32)
"""

from __future__ import annotations

import math
from typing import Callable, Literal

import numpy as np

import nuvec as nv

Initializer = Callable[..., "nv.array"]


def constant(value: float, dtype=nv.float32) -> Initializer:
    """Fills with ``value``."""

    def init(a):
        return nv.full(a.shape, value, dtype=dtype)

    return init


def normal(mean: float = 0.0, std: float = 1.0, dtype=nv.float32) -> Initializer:
    """Draws from the normal distribution ``N(mean, std^2)``."""

    def init(a):
        return nv.random.normal(shape=a.shape, scale=std, loc=mean, dtype=dtype)

    return init


def uniform(low: float = 0.0, high: float = 1.0, dtype=nv.float32) -> Initializer:
    """Draws uniformly from ``[low, high)``."""

    def init(a):
        return nv.random.uniform(low, high, a.shape, dtype=dtype)

    return init


def identity(dtype=nv.float32) -> Initializer:
    """The identity matrix (square 2-d arrays only)."""

    def init(a):
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise ValueError(f"init.identity: needs a square 2-d array, got shape {tuple(a.shape)}")
        return nv.array(np.eye(a.shape[0]), dtype=dtype)

    return init


def _fans(a, name: str) -> tuple[int, int]:
    if a.ndim < 2:
        raise ValueError(
            f"{name}: needs an array of at least 2 dimensions to compute fan in "
            f"and fan out, got shape {tuple(a.shape)}"
        )
    receptive = math.prod(a.shape[1:-1])
    return a.shape[-1] * receptive, a.shape[0] * receptive


def glorot_normal(dtype=nv.float32) -> Initializer:
    """Normal with std ``gain * sqrt(2 / (fan_in + fan_out))`` (Xavier/Glorot)."""

    def init(a, gain: float = 1.0):
        fan_in, fan_out = _fans(a, "init.glorot_normal")
        std = gain * math.sqrt(2.0 / (fan_in + fan_out))
        return nv.random.normal(shape=a.shape, scale=std, dtype=dtype)

    return init


def glorot_uniform(dtype=nv.float32) -> Initializer:
    """Uniform in ``+-gain * sqrt(6 / (fan_in + fan_out))`` (Xavier/Glorot)."""

    def init(a, gain: float = 1.0):
        fan_in, fan_out = _fans(a, "init.glorot_uniform")
        limit = gain * math.sqrt(6.0 / (fan_in + fan_out))
        return nv.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return init


def _fan(a, mode: str, name: str) -> int:
    fan_in, fan_out = _fans(a, name)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{name}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    return fan_in if mode == "fan_in" else fan_out


def he_normal(dtype=nv.float32) -> Initializer:
    """Normal with std ``gain / sqrt(fan)`` (He/Kaiming), ``fan`` per ``mode``."""

    def init(a, mode: Literal["fan_in", "fan_out"] = "fan_in", gain: float = 1.0):
        std = gain / math.sqrt(_fan(a, mode, "init.he_normal"))
        return nv.random.normal(shape=a.shape, scale=std, dtype=dtype)

    return init


def he_uniform(dtype=nv.float32) -> Initializer:
    """Uniform in ``+-gain * sqrt(3 / fan)`` (He/Kaiming), ``fan`` per ``mode``."""

    def init(a, mode: Literal["fan_in", "fan_out"] = "fan_in", gain: float = 1.0):
        limit = gain * math.sqrt(3.0 / _fan(a, mode, "init.he_uniform"))
        return nv.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return init


def sparse(sparsity: float, mean: float = 0.0, std: float = 1.0, dtype=nv.float32) -> Initializer:
    """Normal values, with ``ceil(sparsity * cols)`` zeros in each row of a 2-d array (so
    each output feature of a ``Linear`` weight keeps the same number of inputs)."""
    if not 0.0 <= sparsity <= 1.0:
        raise ValueError(f"init.sparse: sparsity must be in [0, 1], got {sparsity}")

    def init(a):
        if a.ndim != 2:
            raise ValueError(f"init.sparse: needs a 2-d array, got shape {tuple(a.shape)}")
        rows, cols = a.shape
        zeros = math.ceil(sparsity * cols)
        vals = np.asarray(nv.random.normal(shape=(rows, cols), scale=std, loc=mean))
        order = np.argsort(np.asarray(nv.random.uniform(shape=(rows, cols))), axis=1)
        vals = vals.copy()
        np.put_along_axis(vals, order[:, :zeros], 0.0, axis=1)
        return nv.array(vals, dtype=dtype)

    return init


def orthogonal(gain: float = 1.0, dtype=nv.float32) -> Initializer:
    """A (semi-)orthogonal 2-d matrix times ``gain``: orthonormal rows or columns,
    whichever are fewer (QR of a normal draw, signs fixed so the draw is uniform)."""

    def init(a):
        if a.ndim != 2:
            raise ValueError(
                f"init.orthogonal: needs a 2D array, got a {a.ndim}D array of "
                f"shape {tuple(a.shape)}"
            )
        rows, cols = a.shape
        m = np.asarray(nv.random.normal(shape=(max(rows, cols), min(rows, cols))), dtype=np.float64)
        q, r = np.linalg.qr(m)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return nv.array(gain * q, dtype=dtype)

    return init
