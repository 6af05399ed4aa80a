"""``nv.custom_function``: a function with its own vjp, jvp or vmap (as MLX).

>>> import nuvec as nv
>>> @nv.custom_function
... def f(x):
...     return nv.exp(x)
>>> @f.vjp
... def f_vjp(primals, cotangent, output):
...     return cotangent * 10.0       # a made-up gradient
>>> nv.grad(f)(nv.array(0.0)).item()
10.0

Outside any transform the function is simply called. When an argument is being traced, the
outputs are wrapped in a ``CustomFunction`` primitive whose inputs are the arguments and the
function's traced outputs: evaluation runs the function's graph, while transforms see only the
arguments and ask this object for the rules. A rule without an override transforms the
function itself.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from .. import ops
from ..core.array import Array
from ..ops import zeros_like
from ..primitives.misc import CustomFunction
from ..tree import all_leaves, broadcast_prefix, flatten, unflatten
from .autodiff import backward, forward
from .vmap import vmap

__all__ = ["custom_function"]


class custom_function:
    """Wraps ``fun``; ``.vjp``, ``.jvp`` and ``.vmap`` (used as decorators) set its rules:

    - ``vjp(primals, cotangents, outputs)`` -> one cotangent per positional argument (a tuple,
      or the cotangent alone when there is one argument); ``cotangents`` and ``outputs`` have
      the structure of the function's result;
    - ``jvp(primals, tangents)`` -> the tangents of the outputs (their structure);
    - ``vmap(inputs, axes)`` -> ``(outputs, out_axes)``; ``axes`` has one entry per argument.
    """

    __name__: str  # the wrapped function's (functools.update_wrapper)

    def __init__(self, fun: Callable) -> None:
        if not callable(fun):
            raise TypeError(f"custom_function: expected a callable, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self._vjp: Callable | None = None
        self._jvp: Callable | None = None
        self._vmap: Callable | None = None

    # The rules are stored taking the arguments as a tuple; as in MLX, the user's rule gets
    # the argument itself (not a 1-tuple) when the function has one argument.
    def vjp(self, f: Callable) -> "custom_function":
        self._vjp = lambda primals, cotangents, outputs: f(_single(primals), cotangents, outputs)
        return self

    def jvp(self, f: Callable) -> "custom_function":
        self._jvp = lambda primals, tangents: f(_single(primals), _single(tangents))
        return self

    def vmap(self, f: Callable) -> "custom_function":
        self._vmap = lambda inputs, axes: f(_single(inputs), _single(axes))
        return self

    def __get__(self, obj, objtype=None):  # usable as a method
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        leaves, td = flatten(args)
        for x in leaves:
            if x._tracer:
                break
        else:
            return self.fun(*args, **kwargs)
        out = self.fun(*args, **kwargs)
        out_leaves, out_td = flatten(out)
        if not out_leaves:
            return out
        prim = CustomFunction(self, (td, out_td, kwargs), len(leaves))
        outs = Array.make_multi(prim, list(leaves) + list(out_leaves))
        return unflatten(out_td, outs)

    # -- rules, called by the CustomFunction primitive --------------------------------------
    def _rule_vjp(self, prim, primals, cotangents, argnums, outputs):
        td, out_td, kwargs = prim.call
        n = prim.n_in
        ins = primals[:n]
        if self._vjp is None:
            res = backward(primals[n:], cotangents, ins)
        else:
            args = unflatten(td, ins)
            cts = unflatten(out_td, cotangents)
            outs = unflatten(out_td, outputs)
            r = self._vjp(args, cts, outs)
            if len(args) == 1 and not (
                isinstance(r, (tuple, list))
                and len(r) == 1
                and not isinstance(args[0], (tuple, list))
            ):
                r = (r,)
            res, _ = _flatten_with_none(r)
            if len(res) != n:
                raise ValueError(
                    f"custom_function: the vjp of {self.__name__} returned "
                    f"{len(res)} cotangents for {n} input arrays"
                )
        return [res[i] for i in argnums]

    def _rule_jvp(self, prim, primals, tangents, argnums):
        td, out_td, kwargs = prim.call
        n = prim.n_in
        ins = primals[:n]
        full: list = [None] * n
        for i, t in zip(argnums, tangents):
            full[i] = t
        if self._jvp is None:
            return forward(primals[n:], ins, full)

        full = [t if t is not None else zeros_like(x) for t, x in zip(full, ins)]
        r = self._jvp(unflatten(td, ins), unflatten(td, full))
        res, _ = flatten(r)
        if len(res) != len(primals) - n:
            raise ValueError(
                f"custom_function: the jvp of {self.__name__} returned {len(res)} "
                f"tangents for {len(primals) - n} outputs"
            )
        return res

    def _rule_vmap(self, prim, inputs, axes):
        td, out_td, kwargs = prim.call
        args = unflatten(td, list(inputs))
        ax_tree = unflatten(td, list(axes))
        if self._vmap is not None:
            outs, oaxes = self._vmap(args, ax_tree)
            out_leaves, _ = flatten(outs)
            return out_leaves, broadcast_prefix(oaxes, outs, "custom_function vmap")
        outs = self._batched(tuple(ax_tree), kwargs)(*args)
        out_leaves, _ = flatten(outs)
        return out_leaves, [0] * len(out_leaves)

    def _batched(self, in_axes: tuple, kwargs: dict) -> "custom_function":
        """The function vmapped over ``in_axes`` (outputs batched on axis 0), as a custom
        function whose overrides are the vmapped overrides: a transform of the batched call
        (grad of vmap) still uses the user's rules."""

        fun = functools.partial(self.fun, **kwargs)
        batched = custom_function(lambda *a: vmap(fun, in_axes=in_axes)(*a))
        batched.__name__ = f"vmap({self.__name__})"
        if self._vjp is not None:
            user_vjp = self._vjp

            def bvjp(primals, cotangents, outputs):
                per = vmap(lambda p, c, o: _per_arg(user_vjp(p, c, o), p), in_axes=(in_axes, 0, 0))(
                    primals, cotangents, outputs
                )
                return tuple(_unbatch(g, ax, x) for g, ax, x in zip(per, in_axes, primals))

            batched._vjp = bvjp
        if self._jvp is not None:
            user_jvp = self._jvp
            batched._jvp = lambda primals, tangents: vmap(user_jvp, in_axes=(in_axes, in_axes))(
                primals, tangents
            )
        return batched


def _single(args: Any) -> Any:
    """A one-argument tuple's argument; other tuples unchanged."""
    return args[0] if isinstance(args, tuple) and len(args) == 1 else args


def _per_arg(r: Any, primals: tuple) -> tuple:
    """A vjp override's result as one cotangent tree per argument, with zeros for None."""

    if len(primals) == 1 and not (
        isinstance(r, (tuple, list)) and len(r) == 1 and not isinstance(primals[0], (tuple, list))
    ):
        r = (r,)
    out = []
    for g, p in zip(r, primals):
        if g is None:
            leaves, td = flatten(p)
            g = unflatten(td, [zeros_like(x) for x in leaves])
        out.append(g)
    return tuple(out)


def _unbatch(g: Any, ax: Any, primal: Any) -> Any:
    """A per-example cotangent tree (batch on axis 0) laid out like its batched primal: the
    batch axis moved to the primal's, or summed where the primal is not batched."""
    leaves, td = flatten(g)
    axes = broadcast_prefix(ax, primal, "custom_function vmap")
    out = []
    for x, a in zip(leaves, axes):
        if a is None:
            out.append(ops.sum(x, axis=0))
        else:
            out.append(x if a % x.ndim == 0 else ops.moveaxis(x, 0, a))
    return unflatten(td, out)


def _flatten_with_none(tree: Any) -> tuple[list, Any]:
    """Like ``flatten``, but a None leaf (no cotangent for that input) counts as a leaf."""
    out = all_leaves(tree)
    for t in out:
        if t is not None and not isinstance(t, Array):
            raise TypeError(
                f"custom_function: a vjp returned a {type(t).__name__} where an "
                "array (or None) was expected"
            )
    return out, None
