"""NumPy: eager only; every op allocates a fresh output, as users' code does."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from .base import ArrayAdapter, NotApplicable, Thunk


class _F:
    add = staticmethod(np.add)
    multiply = staticmethod(np.multiply)
    exp = staticmethod(np.exp)
    tanh = staticmethod(np.tanh)
    log = staticmethod(np.log)
    log2 = staticmethod(np.log2)
    log10 = staticmethod(np.log10)
    log1p = staticmethod(np.log1p)
    power = staticmethod(np.power)

    @staticmethod
    def sigmoid(x: np.ndarray) -> np.ndarray:
        # NumPy has no sigmoid; this is the composition NumPy users write (4 passes)
        return 1.0 / (1.0 + np.exp(-x))

    @staticmethod
    def erf(x: np.ndarray) -> np.ndarray:
        import scipy.special  # NumPy has no erf; SciPy's ufunc is what NumPy users call

        return scipy.special.erf(x)


class Adapter(ArrayAdapter):
    name = "numpy"
    eager = "numpy"
    compiled = None
    F = _F

    NOTES = {"sigmoid": "1/(1+exp(-x)), NumPy has no sigmoid", "erf": "scipy.special.erf"}

    def load(self) -> str:
        return np.__version__

    def asarray(self, a: np.ndarray) -> Any:
        return a

    def elementwise(self, op: str, xs: list[np.ndarray], variant: str) -> Thunk:
        if op == "erf" and importlib.util.find_spec("scipy") is None:
            raise NotApplicable("erf needs SciPy, which is not installed")
        return super().elementwise(op, xs, variant)

    def train(self, variant: str, case: str = "mlp_step") -> Any:
        raise NotApplicable("NumPy has no automatic differentiation")
