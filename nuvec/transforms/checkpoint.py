"""``nv.checkpoint(fun)``: gradients of ``fun`` computed by running ``fun`` again from its
inputs (MLX's gradient checkpointing) instead of from the forward pass's intermediates.

>>> import nuvec as nv
>>> f = nv.checkpoint(lambda x: nv.sin(x) * x)
>>> round(nv.grad(f)(nv.array(1.0)).item(), 5)
1.38177
"""

from __future__ import annotations

from typing import Callable

from ..core.array import Array
from . import vjp
from .custom import custom_function

__all__ = ["checkpoint"]


def checkpoint(fun: Callable) -> Callable:
    """``fun`` whose vjp re-evaluates ``fun`` on the primals and differentiates that."""
    if not callable(fun):
        raise TypeError(f"checkpoint: expected a callable, got {type(fun).__name__}")
    wrapped = custom_function(fun)

    def recompute_vjp(args, cotangents, outputs):

        cts = [cotangents] if isinstance(cotangents, Array) else list(cotangents)

        def again(*a):
            out = fun(*a)
            return [out] if isinstance(out, Array) else list(out)

        _, grads = vjp(again, list(args), cts)
        return list(grads)

    wrapped._vjp = recompute_vjp  # takes the arguments as a tuple, as custom_function stores it
    return wrapped
