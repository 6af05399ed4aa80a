"""numexpr: each workload is one ``numexpr.evaluate`` string (fused, multi-threaded).

Float constants are passed as float32 variables: a literal like ``0.5`` would make numexpr
compute and return float64, which is not the same workload.
"""

from __future__ import annotations

import numpy as np

from .base import Adapter as _Base
from .base import NotApplicable, Thunk

_f = np.float32
_CONST = {
    "c05": _f(0.5),
    "c1": _f(1.0),
    "c15": _f(1.5),
    "c2": _f(2.0),
    "c3": _f(3.0),
    "c025": _f(0.25),
    "k": _f(0.7978845608028654),
    "g": _f(0.044715),
}

_ELEMENTWISE = {
    "add": "a + b",
    "multiply": "a * b",
    "exp": "exp(a)",
    "tanh": "tanh(a)",
    "sigmoid": "c1 / (c1 + exp(-a))",
}
_CHAINS = {
    "gelu_tanh": "c05 * a * (c1 + tanh(k * (a + g * a * a * a)))",
    "swiglu": "a * (c1 / (c1 + exp(-a))) * b",
    "chain10": "((((a * c15 + c05) * a - c2) / c3 + a) * c025 - a) * c05 + c1",
}


class Adapter(_Base):
    name = "numexpr"
    eager = "numexpr"  # eager ops: one evaluate per op
    compiled = None  # numexpr compiles every expression string; the fused variant is "numexpr"

    NOTES = {"sigmoid": "1/(1+exp(-a)) in one expression"}

    def load(self) -> str:
        import numexpr

        self.ne = numexpr
        return numexpr.__version__

    def variants(self, group: str) -> list[str]:
        return {
            "eager": ["numexpr"],
            "fused": ["numexpr"],
            "overhead": ["numexpr"],
            "memory": ["numexpr"],
        }.get(group, [])

    def _evaluate(self, expr: str, xs: list[np.ndarray]) -> Thunk:
        env = dict(_CONST, a=xs[0])
        if len(xs) > 1:
            env["b"] = xs[1]
        evaluate = self.ne.evaluate
        return lambda: evaluate(expr, local_dict=env)

    def elementwise(self, op: str, xs: list[np.ndarray], variant: str) -> Thunk:
        if op not in _ELEMENTWISE:
            raise NotApplicable(f"numexpr has no {op}")
        return self._evaluate(_ELEMENTWISE[op], xs)

    def chain(self, name: str, xs: list[np.ndarray], variant: str) -> Thunk:
        if name not in _CHAINS:
            raise NotApplicable(f"numexpr has no erf, needed by {name}")
        return self._evaluate(_CHAINS[name], xs)
