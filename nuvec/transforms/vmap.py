"""Vectorizing map: ``nv.vmap(fun, in_axes=0, out_axes=0)``.

The function is traced once on placeholders of the unbatched shapes; the traced graph is then
replayed on the real inputs, each primitive through its ``vmap`` rule, which takes inputs
with their batch axes (an int, or None for an unbatched input) and returns outputs with theirs.

>>> import nuvec as nv
>>> f = nv.vmap(lambda x, y: x * y, in_axes=(0, None))
>>> f(nv.array([1.0, 2.0, 3.0]), nv.array(10.0)).tolist()
[10.0, 20.0, 30.0]
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from .. import ops
from ..core.array import Array, recording_rebinds
from ..ops._common import normalize_axis
from ..tree import all_leaves, broadcast_prefix, flatten, unflatten
from . import rules
from ._trace import active_order, tracing

__all__ = ["vmap"]


def _check_axes(spec: Any, name: str, what: str) -> None:
    for s in reversed(all_leaves(spec)):  # right to left: the error names the last offender
        if s is not None and (not isinstance(s, int) or isinstance(s, bool)):
            raise ValueError(
                f"{name}: {what} must be ints, None, or lists/tuples/dicts of them; "
                f"got {type(s).__name__}"
            )


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0) -> Callable:
    """``fun`` mapped over an axis of its inputs.

    ``in_axes``: the mapped axis of each argument (an int for all, or a list/tuple with one
    entry per argument, each an int, None for an unmapped argument, or a tree matching that
    argument). ``out_axes``: where the mapped axis goes in each output (same forms; None only
    for outputs that do not depend on a mapped input).

    >>> import nuvec as nv
    >>> nv.vmap(lambda x: x * 2, in_axes=1, out_axes=1)(nv.ones((2, 3))).shape
    (2, 3)
    """
    _check_axes(in_axes, "vmap", "in_axes")
    _check_axes(out_axes, "vmap", "out_axes")

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        return _vmap_call(fun, in_axes, out_axes, args, kwargs)

    return wrapped


def _vmap_call(fun, in_axes, out_axes, args, kwargs):
    if isinstance(in_axes, (list, tuple)) and len(in_axes) != len(args):
        raise ValueError(f"vmap: in_axes has {len(in_axes)} entries for {len(args)} arguments")
    leaves, td = flatten(args)
    # one spec that is not a list/tuple (an int, None, a dict) applies to every argument
    spec = tuple(in_axes) if isinstance(in_axes, (list, tuple)) else (in_axes,) * len(args)
    axes = broadcast_prefix(spec, args, "vmap")
    size = None
    for x, ax in zip(leaves, axes):
        if ax is None:
            continue
        ax = normalize_axis(ax, x.ndim, "vmap", what="input axis") if x.ndim else _no_axis(x)
        n = x.shape[ax]
        if size is None:
            size = n
        elif n != size:
            raise ValueError(
                f"vmap: inputs have different sizes along their mapped axes ({size} and {n})"
            )
    if size is None:
        raise ValueError("vmap: at least one input must be mapped (in_axes are all None)")
    holders = []
    bound: dict = {}  # id(placeholder or traced array) -> (batched array, its batch axis)
    keep = []
    for x, ax in zip(leaves, axes):
        if ax is None:
            holders.append(x)
            continue
        ax = ax % x.ndim
        p = Array.placeholder(x.shape[:ax] + x.shape[ax + 1 :], x.dtype, x.stream)
        holders.append(p)
        bound[id(p)] = (x, ax)
        keep.append(p)
    with tracing(), recording_rebinds() as rebound:
        out = fun(*unflatten(td, holders), **kwargs)
    for i, p in enumerate(keep):  # ``x[i] = v`` on an input rebinds it: map its old node
        if id(p) in rebound:
            keep[i] = rebound[id(p)]
            bound[id(keep[i])] = bound.pop(id(p))
    out_leaves, out_td = flatten(out)
    replay(out_leaves, keep, bound)
    if isinstance(out, Array) and isinstance(out_axes, (list, tuple)) and len(out_axes) == 1:
        out_axes = out_axes[0]  # ``out_axes=(1,)`` for a function returning one array (MLX)
    oaxes = broadcast_prefix(out_axes, out, "vmap")
    results = []
    for o, oax in zip(out_leaves, oaxes):
        v, ax = bound.get(id(o), (o, None))
        results.append(_place(v, ax, oax, size))
    return unflatten(out_td, results)


def _no_axis(x):
    raise ValueError("vmap: a 0-d array cannot be mapped over (give it in_axes None)")


def apply_vmap(prim, inputs, axes) -> tuple[list, list]:
    """``prim``'s vmap rule (``rules.VMAP``): (outputs, their batch axes); for a primitive that
    stands for a composite and has no rule of its own, the vmap of that composite
    (``rules.EXPAND``)."""
    rule = rules.find(rules.VMAP, prim)
    if rule is not None:
        return rule(prim, inputs, axes)
    expand = rules.find(rules.EXPAND, prim)
    if expand is None:
        raise NotImplementedError(f"{prim.name}: no vmap rule")
    outs = vmap(lambda *xs: tuple(expand(prim, list(xs))), in_axes=tuple(axes))(*inputs)
    return list(outs), [0] * len(outs)


def replay(outputs, placeholders, bound: dict) -> None:
    """Runs the vmap rules over the graph between ``outputs`` and ``placeholders``, filling
    ``bound`` (id -> (batched value, batch axis)) for every array that depends on them."""
    order, _ = active_order(outputs, placeholders)
    for node in order:
        prim = node._prim
        n = getattr(prim, "transform_inputs", None)
        ins = node._inputs if n is None else node._inputs[:n]
        vals, axes = [], []
        for x in ins:
            v, ax = bound.get(id(x), (x, None))
            vals.append(v)
            axes.append(ax)
        try:
            outs, oaxes = apply_vmap(prim, vals, axes)
        except NotImplementedError as e:
            raise NotImplementedError(
                f"vmap: the {prim.name} primitive has no vmap rule ({e})"
            ) from None
        sibs = node.siblings
        if len(outs) != len(sibs):
            raise ValueError(
                f"vmap: the {prim.name} rule returned {len(outs)} outputs for {len(sibs)}"
            )
        for s, o, oax in zip(sibs, outs, oaxes):
            bound[id(s)] = (o, oax)


def _place(v: Array, ax, oax, size: int) -> Array:
    """``v`` with its batch axis ``ax`` moved to ``oax`` (broadcast along a new axis when it
    is unbatched)."""
    if not isinstance(v, Array):
        if oax is None:
            return v
        raise ValueError(
            f"vmap: the function returned a {type(v).__name__}; outputs must be "
            "arrays (or use out_axes None)"
        )
    if oax is None:
        if ax is not None:
            raise ValueError("vmap: out_axes is None for an output that depends on a mapped input")
        return v
    if ax is None:
        nd = v.ndim + 1
        oax = normalize_axis(oax, nd, "vmap", what="output axis")
        v = ops.expand_dims(v, oax)
        shape = list(v.shape)
        shape[oax] = size
        return ops.broadcast_to(v, tuple(shape))
    oax = normalize_axis(oax, v.ndim, "vmap", what="output axis")
    return v if ax == oax else ops.moveaxis(v, ax, oax)
