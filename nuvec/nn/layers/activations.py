"""Activation functions, and a layer class for each.

The element-wise ones made of several ops are compiled shapeless (as in MLX): called
eagerly, each runs as one fused kernel; inside a compiled or differentiated function they are
inlined, so they fuse with their neighbours. Results are the same bits either way.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> nn.relu(nv.array([-1.0, 2.0])).tolist()
[0.0, 2.0]
>>> nn.GELU(approx="tanh")(nv.array([0.0])).tolist()
[0.0]
"""

from __future__ import annotations

import math
from functools import partial

import nuvec as nv

from .base import Module

#: one fused kernel per activation for any shape of a given rank
_fused = partial(nv.compile, shapeless=True)


def sigmoid(x):
    r"""The logistic sigmoid :math:`1 / (1 + e^{-x})`."""
    return nv.sigmoid(x)


def tanh(x):
    """The hyperbolic tangent."""
    return nv.tanh(x)


def relu(x):
    """``max(x, 0)``."""
    return nv.maximum(x, 0)


@_fused
def relu6(x):
    """``min(max(x, 0), 6)``."""
    return nv.minimum(nv.maximum(x, 0), 6)


@_fused
def leaky_relu(x, negative_slope: float = 0.01):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""
    return nv.maximum(negative_slope * x, x)


@_fused
def elu(x, alpha: float = 1.0):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    return nv.where(x > 0, x, alpha * (nv.exp(x) - 1))


_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


@_fused
def selu(x):
    """The scaled ELU: ``scale * elu(x, alpha)`` with the self-normalising constants."""
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


@_fused
def celu(x, alpha: float = 1.0):
    """``max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1)``."""
    return nv.maximum(x, 0.0) + alpha * (nv.exp(nv.minimum(x, 0.0) / alpha) - 1)


@_fused
def gelu(x):
    r"""The exact GELU :math:`x \Phi(x)`, with :math:`\Phi` the normal CDF (via erf)."""
    return x * (1 + nv.erf(x / math.sqrt(2))) / 2


@_fused
def gelu_approx(x):
    """GELU with the tanh approximation
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    # x * x * x, not x ** 3: the same value, and power is a slow generic kernel
    return 0.5 * x * (1 + nv.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * (x * x * x))))


@_fused
def gelu_fast_approx(x):
    """GELU with the sigmoid approximation ``x * sigmoid(1.702 x)``."""
    return x * nv.sigmoid(1.702 * x)


@_fused
def silu(x):
    """``x * sigmoid(x)`` (also called swish)."""
    return x * nv.sigmoid(x)


@_fused
def log_sigmoid(x):
    """``log(sigmoid(x))``, computed stably as ``-softplus(-x)``."""
    return -softplus(-x)


@_fused
def softplus(x):
    """``log(1 + exp(x))``, computed stably."""
    return nv.logaddexp(x, 0)


@_fused
def softsign(x):
    """``x / (1 + |x|)``."""
    return x / (1 + nv.abs(x))


@_fused
def mish(x):
    """``x * tanh(softplus(x))``."""
    return x * nv.tanh(softplus(x))


@_fused
def hardswish(x):
    """``x * min(max(x + 3, 0), 6) / 6``."""
    return x * nv.minimum(nv.maximum(x + 3, 0), 6) / 6


@_fused
def hard_tanh(x, min_val: float = -1.0, max_val: float = 1.0):
    """``x`` clipped to ``[min_val, max_val]``."""
    return nv.minimum(nv.maximum(x, min_val), max_val)


@_fused
def prelu(x, alpha):
    """``max(x, 0) + alpha * min(x, 0)`` with a learned ``alpha`` (broadcast)."""
    return nv.maximum(0, x) + alpha * nv.minimum(0, x)


def glu(x, axis: int = -1):
    """The gated linear unit: ``x`` split in halves ``a, b`` along ``axis``, then
    ``a * sigmoid(b)``."""
    if x.shape[axis] % 2:
        raise ValueError(f"glu: the size of axis {axis} ({x.shape[axis]}) must be even")
    a, b = nv.split(x, 2, axis=axis)
    return a * nv.sigmoid(b)


def softmax(x, axis: int = -1):
    """``exp(x) / sum(exp(x))`` along ``axis``."""
    return nv.softmax(x, axis=axis)


def softmin(x, axis: int = -1):
    """``softmax(-x)`` along ``axis``."""
    return nv.softmax(-x, axis=axis)


def log_softmax(x, axis: int = -1):
    """``x - logsumexp(x)`` along ``axis``, computed as ``(x - max) - log(sum(exp(x - max)))``
    so that equal huge logits give exactly ``log(1/n)`` (``logsumexp`` of ``1e20`` rounds away
    the ``log(n)`` it adds)."""
    shifted = x - nv.stop_gradient(nv.max(x, axis=axis, keepdims=True))
    return shifted - nv.log(nv.sum(nv.exp(shifted), axis=axis, keepdims=True))


def step(x, threshold: float = 0.0):
    """1 where ``x >= threshold``, 0 elsewhere (int32), as MLX (the boundary is included)."""
    return nv.where(x >= threshold, 1, 0)


def relu2(x):
    """``max(x, 0) ** 2`` (squared ReLU)."""
    return nv.square(nv.maximum(x, 0))


def hard_shrink(x, lambd: float = 0.5):
    """``x`` where ``|x| > lambd``, 0 elsewhere.

    >>> hard_shrink(nv.array([-1.0, 0.2, 0.7])).tolist()
    [-1.0, 0.0, 0.699999988079071]
    """
    return nv.where(nv.abs(x) > lambd, x, 0)


def softshrink(x, lambd: float = 0.5):
    """``x - sign(x) * lambd`` where ``|x| > lambd``, 0 elsewhere.

    >>> softshrink(nv.array([-1.0, 0.2, 1.5])).tolist()
    [-0.5, 0.0, 1.0]
    """
    return nv.where(nv.abs(x) > lambd, x - nv.sign(x) * lambd, 0)


# -- layer classes ---------------------------------------------------------------------------
def _layer(fn, doc: str):
    """A parameterless Module class that calls ``fn``."""

    class _Act(Module):
        def __call__(self, x):
            return fn(x)

    _Act.__doc__ = doc
    return _Act


ReLU = _layer(relu, "Applies ``relu``.")
ReLU6 = _layer(relu6, "Applies ``relu6``.")
ReLU2 = _layer(relu2, "Applies ``relu2``.")
SELU = _layer(selu, "Applies ``selu``.")
SiLU = _layer(silu, "Applies ``silu``.")
Sigmoid = _layer(sigmoid, "Applies ``sigmoid``.")
Tanh = _layer(tanh, "Applies ``tanh``.")
Softplus = _layer(softplus, "Applies ``softplus``.")
Softsign = _layer(softsign, "Applies ``softsign``.")
Mish = _layer(mish, "Applies ``mish``.")
Hardswish = _layer(hardswish, "Applies ``hardswish``.")
LogSigmoid = _layer(log_sigmoid, "Applies ``log_sigmoid``.")
for _name, _cls in [
    ("ReLU", ReLU),
    ("ReLU6", ReLU6),
    ("ReLU2", ReLU2),
    ("SELU", SELU),
    ("SiLU", SiLU),
    ("Sigmoid", Sigmoid),
    ("Tanh", Tanh),
    ("Softplus", Softplus),
    ("Softsign", Softsign),
    ("Mish", Mish),
    ("Hardswish", Hardswish),
    ("LogSigmoid", LogSigmoid),
]:
    _cls.__name__ = _cls.__qualname__ = _name


class LeakyReLU(Module):
    """Applies ``leaky_relu`` with ``negative_slope``."""

    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        self._slope = negative_slope

    def __call__(self, x):
        return leaky_relu(x, self._slope)


class ELU(Module):
    """Applies ``elu`` with ``alpha``."""

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = alpha

    def __call__(self, x):
        return elu(x, self._alpha)


class CELU(Module):
    """Applies ``celu`` with ``alpha``."""

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = alpha

    def __call__(self, x):
        return celu(x, self._alpha)


class GELU(Module):
    """GELU: ``approx`` is ``"none"`` (exact, erf), ``"precise"`` or ``"tanh"`` (the tanh
    formula), or ``"fast"`` (the sigmoid formula)."""

    def __init__(self, approx: str = "none") -> None:
        super().__init__()
        fns = {"none": gelu, "precise": gelu_approx, "tanh": gelu_approx, "fast": gelu_fast_approx}
        if approx not in fns:
            raise ValueError(f"GELU: approx must be one of {sorted(fns)}, got {approx!r}")
        self._act = fns[approx]

    def __call__(self, x):
        return self._act(x)


class HardTanh(Module):
    """Applies ``hard_tanh``."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0) -> None:
        super().__init__()
        self._lo, self._hi = min_val, max_val

    def __call__(self, x):
        return hard_tanh(x, self._lo, self._hi)


class PReLU(Module):
    """``prelu`` with a learned slope per channel (``num_parameters`` of them, on the last
    axis), initialised to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25) -> None:
        super().__init__()
        self.weight = nv.full((num_parameters,), init)

    def __call__(self, x):
        return prelu(x, self.weight)


class GLU(Module):
    """Applies ``glu`` along ``axis``."""

    def __init__(self, axis: int = -1) -> None:
        super().__init__()
        self._axis = axis

    def __call__(self, x):
        return glu(x, self._axis)


class Step(Module):
    """Applies ``step`` with ``threshold``."""

    def __init__(self, threshold: float = 0.0) -> None:
        super().__init__()
        self._threshold = threshold

    def __call__(self, x):
        return step(x, self._threshold)


class Softmax(Module):
    """Applies ``softmax`` on the last axis."""

    def __call__(self, x):
        return softmax(x)


class Softmin(Module):
    """Applies ``softmin`` on the last axis."""

    def __call__(self, x):
        return softmin(x)


class LogSoftmax(Module):
    """Applies ``log_softmax`` on the last axis."""

    def __call__(self, x):
        return log_softmax(x)


class HardShrink(Module):
    """Applies ``hard_shrink`` with threshold ``lambd``."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def __call__(self, x):
        return hard_shrink(x, self.lambd)


class Softshrink(Module):
    """Applies ``softshrink`` with threshold ``lambd``."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def __call__(self, x):
        return softshrink(x, self.lambd)
