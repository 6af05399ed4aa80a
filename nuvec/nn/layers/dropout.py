"""Dropout layers: random zeroing in training mode, identity in evaluation mode.

The mask is drawn with ``nv.random.bernoulli`` from the global key ``nv.random.state``, so a
compiled step that lists ``nv.random.state`` among its inputs and outputs draws a new mask on
each call (and the same masks as the uncompiled step for the same seed).
"""

from __future__ import annotations

import nuvec as nv

from .base import Module


def _check_p(p: float, name: str) -> float:
    if not 0.0 <= p < 1.0:
        raise ValueError(f"{name}: the drop probability must be in [0, 1), got {p}")
    return 1.0 - p


class Dropout(Module):
    """Zeroes each element with probability ``p`` and scales the rest by ``1/(1-p)``."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self._p_1 = _check_p(p, "Dropout")

    def _extra_repr(self) -> str:
        return f"p={1 - self._p_1}"

    def __call__(self, x):
        if self._p_1 == 1.0 or not self.training:
            return x
        mask = nv.random.bernoulli(self._p_1, x.shape)
        return (mask * x) * (1.0 / self._p_1)


class Dropout2d(Module):
    """Zeroes whole channels of ``(N, H, W, C)`` or ``(H, W, C)`` inputs with probability
    ``p`` (the same choice over H and W), scaling the rest by ``1/(1-p)``."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self._p_1 = _check_p(p, "Dropout2d")

    def _extra_repr(self) -> str:
        return f"p={1 - self._p_1}"

    def __call__(self, x):
        if x.ndim not in (3, 4):
            raise ValueError(f"Dropout2d: expects 3-d or 4-d input, got {x.ndim}-d")
        if self._p_1 == 1.0 or not self.training:
            return x
        shape = list(x.shape)
        shape[-2] = shape[-3] = 1
        mask = nv.random.bernoulli(self._p_1, tuple(shape))
        return (mask * x) * (1.0 / self._p_1)


class Dropout3d(Module):
    """Zeroes whole channels of ``(N, D, H, W, C)`` or ``(D, H, W, C)`` inputs with
    probability ``p`` (the same choice over D, H and W), scaling the rest by ``1/(1-p)``."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self._p_1 = _check_p(p, "Dropout3d")

    def _extra_repr(self) -> str:
        return f"p={1 - self._p_1}"

    def __call__(self, x):
        if x.ndim not in (4, 5):
            raise ValueError(f"Dropout3d: expects 4-d or 5-d input, got {x.ndim}-d")
        if self._p_1 == 1.0 or not self.training:
            return x
        shape = list(x.shape)
        shape[-2] = shape[-3] = shape[-4] = 1
        mask = nv.random.bernoulli(self._p_1, tuple(shape))
        return (mask * x) * (1.0 / self._p_1)
