"""Sequential: modules (or callables) applied in order.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> nn.Sequential(nn.Linear(2, 3), nn.relu, nn.Linear(3, 1))(nv.ones((5, 2))).shape
(5, 1)
"""

from __future__ import annotations

from typing import Callable

from .base import Module


class Sequential(Module):
    """Calls each of ``modules`` on the previous one's output. Plain functions (e.g.
    ``nn.relu``) are allowed; they have no parameters."""

    def __init__(self, *modules: Callable) -> None:
        super().__init__()
        for i, m in enumerate(modules):
            if not callable(m):
                raise TypeError(f"Sequential: item {i} ({type(m).__name__}) is not callable")
        self.layers = list(modules)

    def __call__(self, x):
        for m in self.layers:
            x = m(x)
        return x
