"""Reverse and forward mode differentiation: vjp, jvp, grad, value_and_grad.

The function runs on tracer copies of its inputs; the graph between its outputs and those
copies is then walked (``_trace.active_order``), calling each primitive's ``vjp`` (outputs to
inputs) or ``jvp`` (inputs to outputs) rule. The rules build their results with ordinary ops,
so the results are graphs too: they can be differentiated again, batched, or compiled.

>>> import nuvec as nv
>>> nv.grad(lambda x: x * x)(nv.array(3.0)).item()
6.0
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterable, Sequence

from .. import ops
from ..core import dtypes as dt
from ..core.array import Array, original, recording_rebinds
from ..primitives.misc import StopGradient
from ..tree import all_leaves, flatten, unflatten
from . import rules
from ._trace import active_order, release, tracer_copy, tracing

__all__ = ["vjp", "jvp", "grad", "value_and_grad"]


def _inexact(a: Array) -> bool:
    return a._dtype.kind in "fc"


def _zeros_like(a: Array) -> Array:
    return ops.zeros_like(a)


def _numeric(a: Array) -> bool:
    return a._dtype.kind in "fciu"


def _accumulate(table: dict, keep: dict, a: Array, g: Array | None, where: str) -> None:
    if g is None or not _numeric(a):
        return  # booleans carry no gradient; integers do, in their dtype (as MLX)
    if g._shape != a._shape:
        raise ValueError(
            f"{where}: a cotangent of shape {g._shape} was produced for an array of "
            f"shape {a._shape} (a vjp rule is wrong)"
        )
    if g._dtype != a._dtype:
        g = ops.astype(g, a._dtype)
    k = id(a)
    prev = table.get(k)
    if prev is None:
        table[k] = g
        keep[k] = a
    else:
        table[k] = prev + g


def apply_vjp(prim, primals, cotangents, argnums, outputs) -> list:
    """``prim``'s vjp (``rules.VJP``); for a primitive that stands for a composite and has no
    rule of its own, the vjp of that composite (``rules.EXPAND``)."""
    rule = rules.find(rules.VJP, prim)
    if rule is not None:
        return rule(prim, primals, cotangents, argnums, outputs)
    expand = rules.find(rules.EXPAND, prim)
    if expand is None:
        raise NotImplementedError(f"{prim.name}: no vjp rule")
    _, grads = vjp(lambda *xs: expand(prim, list(xs)), list(primals), list(cotangents))
    return [grads[i] for i in argnums]


def apply_jvp(prim, primals, tangents, argnums) -> list:
    """``prim``'s jvp (``rules.JVP``); for a primitive that stands for a composite and has no
    rule of its own, the jvp of that composite (``rules.EXPAND``)."""
    rule = rules.find(rules.JVP, prim)
    if rule is not None:
        return rule(prim, primals, tangents, argnums)
    expand = rules.find(rules.EXPAND, prim)
    if expand is None:
        raise NotImplementedError(f"{prim.name}: no jvp rule")
    ts = [ops.zeros_like(p) for p in primals]
    for i, t in zip(argnums, tangents):
        ts[i] = t
    _, outs = jvp(lambda *xs: expand(prim, list(xs)), list(primals), ts)
    return list(outs)


def _differentiated(order: list, inputs: Sequence[Array]) -> set:
    """The ids of the arrays that depend on ``inputs`` other than through ``stop_gradient``
    (whatever their dtype: integers computed from an input, an argsort, count)."""
    live = {id(x) for x in inputs}
    for node in order:
        if isinstance(node._prim, StopGradient):
            continue
        n = getattr(node._prim, "transform_inputs", None)
        ins = node._inputs if n is None else node._inputs[:n]
        if any(id(x) in live for x in ins):
            live.update(id(s) for s in node.siblings)
    return live


def _check_indices(prim, ins: list, live: set) -> None:
    """MLX's rule: a gather's or scatter's indices have no gradient, so indices that depend
    on a differentiated input must be cut with ``stop_gradient`` (else the vjp is refused)."""
    for i in prim.index_inputs(len(ins)):
        if id(ins[i]) in live:
            raise ValueError(
                f"vjp of {prim.name}: cannot differentiate with respect to the indices "
                f"(input {i} depends on a differentiated input); use stop_gradient on the "
                "indices to take no gradient through them"
            )


def backward(
    outputs: Sequence[Array], cotangents: Sequence[Array | None], inputs: Sequence[Array]
) -> list[Array | None]:
    """The cotangents of ``inputs`` (None where no gradient reaches one) given those of
    ``outputs``: the reverse walk. The caller made ``inputs`` tracers."""
    order, active = active_order(outputs, inputs)
    live = _differentiated(order, inputs)
    ct: dict = {}
    keep: dict = {}  # id -> array, so that ids stay valid while they key ``ct``
    for o, c in zip(outputs, cotangents):
        if c is not None and id(o) in active:
            _accumulate(ct, keep, o, c, "vjp")
    for node in reversed(order):
        sibs = node.siblings
        cts = [ct.pop(id(s), None) for s in sibs]
        if all(c is None for c in cts):
            continue
        prim = node._prim
        if not prim.differentiable:
            continue
        n = getattr(prim, "transform_inputs", None)
        ins = list(node._inputs)
        seen_ins = ins if n is None else ins[:n]
        refuse = getattr(prim, "refuse_gradient", None)
        if refuse is not None:  # an input it has no gradient for, of any dtype (MLX raises)
            for i, x in enumerate(seen_ins):
                if id(x) in live:
                    refuse(i)
        if getattr(prim, "index_inputs", None) is not None:
            _check_indices(prim, ins, live)
        argnums = [i for i, x in enumerate(seen_ins) if id(x) in live and _numeric(x)]
        if not argnums:
            continue
        cts = [c if c is not None else _zeros_like(s) for c, s in zip(cts, sibs)]
        grads = apply_vjp(prim, ins, cts, argnums, list(sibs))
        if len(grads) != len(argnums):
            raise ValueError(
                f"vjp: the {prim.name} rule returned {len(grads)} cotangents for "
                f"{len(argnums)} inputs"
            )
        for i, g in zip(argnums, grads):
            _accumulate(ct, keep, ins[i], g, prim.name)
    return [ct.get(id(x)) for x in inputs]


def forward(
    outputs: Sequence[Array], inputs: Sequence[Array], tangents: Sequence[Array | None]
) -> list[Array | None]:
    """The tangents of ``outputs`` (None where none reaches one) given those of ``inputs``:
    the forward walk. Integer primals carry their (integer) tangents through integer
    arithmetic, as MLX (``jvp(sum, [ints], [ints])``); booleans carry none."""
    order, _ = active_order(outputs, inputs)
    tan: dict = {}
    keep: dict = {}
    for x, t in zip(inputs, tangents):
        if t is not None and _numeric(x):
            if t._shape != x._shape:
                raise ValueError(
                    f"jvp: a tangent of shape {t._shape} was given for a primal of shape {x._shape}"
                )
            tan[id(x)] = t if t._dtype == x._dtype else ops.astype(t, x._dtype)
            keep[id(x)] = x
    for node in order:
        prim = node._prim
        n = getattr(prim, "transform_inputs", None)
        ins = list(node._inputs)
        seen_ins = ins if n is None else ins[:n]
        argnums = [i for i, x in enumerate(seen_ins) if id(x) in tan]
        if not argnums or not prim.differentiable:
            continue
        sibs = node.siblings
        if not any(_numeric(s) for s in sibs):
            continue
        outs = apply_jvp(prim, ins, [tan[id(ins[i])] for i in argnums], argnums)
        for s, t in zip(sibs, outs):
            if t is not None and _numeric(s):
                tan[id(s)] = t if t._dtype == s._dtype else _astype(t, s._dtype)
                keep[id(s)] = s
    return [tan.get(id(o)) for o in outputs]


def _astype(t: Array, d) -> Array:
    return ops.astype(t, d)


def _as_list(x: Any, name: str, what: str) -> list:
    if isinstance(x, Array):
        return [x]
    if isinstance(x, (list, tuple)):
        return list(x)
    raise TypeError(
        f"{name}: {what} must be a list or tuple of arrays (or trees of arrays), got "
        f"{type(x).__name__}"
    )


def _trace(fun: Callable, args: list, kwargs: dict | None = None):
    """Runs ``fun`` on tracer copies of the arrays in ``args``: (copies, their TreeDef, the
    output, its leaves, its TreeDef)."""
    leaves, td = flatten(args)
    copies = [tracer_copy(x) for x in leaves]
    with tracing(), recording_rebinds() as rebound:
        out = fun(*unflatten(td, copies), **(kwargs or {}))
    copies = [original(c, rebound) for c in copies]  # ``x[i] = v`` on an input rebinds it
    out_leaves, out_td = flatten(out)
    return copies, td, out, out_leaves, out_td


def vjp(fun: Callable, primals: Sequence[Any], cotangents: Sequence[Any]) -> tuple[list, list]:
    """The outputs of ``fun(*primals)`` and the vector-Jacobian products of ``cotangents``
    (one per output) with respect to each primal.

    ``primals`` is a list of arguments (arrays or trees of arrays); ``fun`` returns an array or
    a list/tuple of arrays (or trees). The products come back in the structure of ``primals``.

    >>> import nuvec as nv
    >>> outs, vjps = nv.vjp(lambda x, y: x * y, [nv.array(4.0), nv.array(2.0)], [nv.array(3.0)])
    >>> [v.item() for v in vjps]
    [6.0, 12.0]
    """
    primals = _as_list(primals, "vjp", "primals")
    cts_in = _as_list(cotangents, "vjp", "cotangents")
    copies, td, out, out_leaves, out_td = _trace(fun, primals)
    grads: list = []
    try:
        ct_leaves, _ = flatten(cts_in)
        if len(ct_leaves) != len(out_leaves):
            raise ValueError(
                f"vjp: {len(ct_leaves)} cotangents given for {len(out_leaves)} outputs"
            )
        for o, c in zip(out_leaves, ct_leaves):
            if not isinstance(o, Array):
                raise TypeError(f"vjp: the function must return arrays, got {type(o).__name__}")
            if c.shape != o.shape:
                raise ValueError(
                    f"vjp: a cotangent of shape {c.shape} was given for an output of "
                    f"shape {o.shape}"
                )
        gs = backward(out_leaves, ct_leaves, copies)
        grads = [g if g is not None else _zeros_like(c) for g, c in zip(gs, copies)]
    finally:
        release(list(out_leaves) + grads, copies)
    outs = _as_list(out, "vjp", "the function's result") if not isinstance(out, Array) else [out]
    return outs, list(unflatten(td, grads))


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list, list]:
    """The outputs of ``fun(*primals)`` and the Jacobian-vector products with ``tangents``
    (one per primal, same shapes), one per output.

    >>> import nuvec as nv
    >>> outs, jvps = nv.jvp(lambda x: 2 * x, [nv.array(1.0)], [nv.array(2.0)])
    >>> jvps[0].item()
    4.0
    """
    primals = _as_list(primals, "jvp", "primals")
    tangents = _as_list(tangents, "jvp", "tangents")
    leaves, _ = flatten(primals)
    t_leaves, _ = flatten(tangents)
    if len(t_leaves) != len(leaves):
        raise ValueError(f"jvp: {len(t_leaves)} tangents given for {len(leaves)} primals")
    for x, t in zip(leaves, t_leaves):
        if not isinstance(t, Array) or t.shape != x.shape:
            raise ValueError(
                f"jvp: a tangent of shape {getattr(t, 'shape', None)} was given for "
                f"a primal of shape {x.shape}"
            )
    copies, td, out, out_leaves, out_td = _trace(fun, primals)
    tans: list = []
    try:
        ts = forward(out_leaves, copies, t_leaves)
        # an output without a tangent has zeros; a bool or integer one (a comparison) has
        # float32 zeros, as MLX
        tans = [
            t
            if t is not None
            else _zeros_like(o)
            if _inexact(o)
            else ops.zeros(o.shape, dt.float32)
            for t, o in zip(ts, out_leaves)
        ]
    finally:
        release(list(out_leaves) + tans, copies)
    outs = [out] if isinstance(out, Array) else _as_list(out, "jvp", "the function's result")
    tan_tree = unflatten(out_td, tans)
    return outs, ([tan_tree] if isinstance(out, Array) else list(tan_tree))


def _normalize_args(argnums, argnames, name: str) -> tuple[list[int], list[str]]:
    if isinstance(argnames, str):
        argnames = [argnames]
    argnames = list(argnames or ())
    if argnums is None:
        argnums = [] if argnames else 0
    nums = [argnums] if isinstance(argnums, int) else list(argnums)
    for n in nums:
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"{name}: argnums must be ints, got {n!r}")
    if len(set(nums)) != len(nums):
        raise ValueError(f"{name}: repeated argnums {nums}")
    if not nums and not argnames:
        raise ValueError(f"{name}: no argument to differentiate (argnums and argnames are empty)")
    return nums, argnames


def value_and_grad(
    fun: Callable, argnums: int | Sequence[int] | None = None, argnames: str | Sequence[str] = ()
) -> Callable:
    """A function returning ``(fun(*args, **kwargs), gradient)``.

    ``fun`` returns a scalar array, or a tuple/list whose first item is the scalar loss (the rest
    is returned untouched). The gradient is taken with respect to the positional arguments
    ``argnums`` (default 0; one gradient, or a tuple for several) and the keyword arguments
    ``argnames``; with argnames it is ``(positional, {name: gradient})``. Arguments may be
    trees of arrays; gradients have their structure.

    >>> import nuvec as nv
    >>> loss, g = nv.value_and_grad(lambda w, x: w * x)(nv.array(2.0), nv.array(5.0))
    >>> loss.item(), g.item()
    (10.0, 5.0)
    """
    nums, names = _normalize_args(argnums, argnames, "value_and_grad")

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        return _value_and_grad(fun, nums, names, args, kwargs, "value_and_grad")

    return wrapped


def grad(
    fun: Callable, argnums: int | Sequence[int] | None = None, argnames: str | Sequence[str] = ()
) -> Callable:
    """A function returning the gradient of scalar-valued ``fun`` (see ``value_and_grad``).

    >>> import nuvec as nv
    >>> nv.grad(lambda x: x * x * x)(nv.array(2.0)).item()
    12.0
    """
    nums, names = _normalize_args(argnums, argnames, "grad")

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        return _value_and_grad(fun, nums, names, args, kwargs, "grad")[1]

    return wrapped


def _value_and_grad(fun, nums, names, args, kwargs, name):
    for n in nums:
        if not -len(args) <= n < len(args):
            raise ValueError(
                f"{name}: argnums {n} is out of range for {len(args)} positional arguments"
            )
    nums = [n % len(args) for n in nums]
    for k in names:
        if k not in kwargs:
            raise ValueError(
                f"{name}: argname {k!r} is not among the keyword arguments {sorted(kwargs)}"
            )
    diff = [args[n] for n in nums] + [kwargs[k] for k in names]
    leaves, td = flatten(diff)
    _check_static(diff, name, nums, names)
    copies = [tracer_copy(x) for x in leaves]
    diff_t = unflatten(td, copies)
    # A dict subclass that unflatten cannot rebuild (an nn.Module) is passed itself, its
    # arrays swapped for the tracers for the call (as MLX): the function may use its methods.
    in_place = _swap_in_place(diff, diff_t, copies)
    containers = _containers(diff, diff_t, [])
    call_args = list(args)
    for j, n in enumerate(nums):
        call_args[n] = diff_t[j]
    call_kwargs = dict(kwargs)
    for j, k in enumerate(names):
        call_kwargs[k] = diff_t[len(nums) + j]
    out_leaves: list = []
    grads: list = []
    try:
        with tracing(), recording_rebinds() as rebound:
            out = fun(*call_args, **call_kwargs)
        copies = [original(c, rebound) for c in copies]  # ``x[i] = v`` rebinds an input
        if name == "grad" and not isinstance(out, Array):
            raise ValueError(
                f"grad: the function must return a scalar array, got "
                f"{type(out).__name__} (value_and_grad accepts a tuple whose first "
                "item is the loss)"
            )
        loss = out[0] if isinstance(out, (tuple, list)) and out else out
        if not isinstance(loss, Array) or loss.ndim != 0:
            what = (
                f"an array of shape {loss.shape}"
                if isinstance(loss, Array)
                else type(loss).__name__
            )
            raise ValueError(
                f"{name}: the function must return a scalar array (or a tuple whose "
                f"first item is one), got {what}"
            )
        out_leaves, _ = flatten(out)
        gs = backward([loss], [ops.ones_like(loss)], copies)
        grads = [g if g is not None else _zeros_like(c) for g, c in zip(gs, copies)]
    finally:
        for container, key, old in reversed(in_place):
            _set_item(container, key, old)
        assigned = _write_back(containers)
        release(list(out_leaves) + grads + assigned, copies)
    gtree = unflatten(td, grads)
    pos = gtree[: len(nums)]
    if not nums:
        positional = None  # only keyword gradients (as MLX)
    else:
        positional = pos[0] if len(nums) == 1 else tuple(pos)
    if not names:
        return out, positional
    return out, (positional, {k: gtree[len(nums) + j] for j, k in enumerate(names)})


def _containers(orig: Any, traced: Any, found: list) -> list:
    """``(caller's list or dict, the copy the function gets, that copy's items)`` for every
    list and dict in the differentiated arguments, so that ``_write_back`` can see what the
    function assigned into them."""
    if traced is orig:
        return found  # passed itself (``_swap_in_place``)
    pairs: Iterable[tuple[Any, Any]]
    if isinstance(orig, list) and isinstance(traced, list) and len(orig) == len(traced):
        found.append((orig, traced, list(traced)))
        pairs = zip(orig, traced)
    elif isinstance(orig, dict) and isinstance(traced, dict) and orig.keys() == traced.keys():
        found.append((orig, traced, dict(traced)))
        pairs = ((orig[k], traced[k]) for k in orig)
    elif isinstance(orig, tuple) and isinstance(traced, tuple) and len(orig) == len(traced):
        pairs = zip(orig, traced)
    else:
        return found
    for o, t in pairs:
        _containers(o, t, found)
    return found


def _write_back(containers: list) -> list:
    """Stores into the caller's lists and dicts the items the function assigned into their
    copies (``params[1] = new`` stays visible after ``grad``, as MLX); returns the arrays
    stored."""
    stored = []
    for orig, traced, before in containers:
        for k in range(len(before)) if isinstance(before, list) else before:
            now = traced[k] if isinstance(traced, dict) or k < len(traced) else before[k]
            if now is not before[k]:
                _set_item(orig, k, now)
                if isinstance(now, Array):
                    stored.append(now)
    return stored


def _swap_in_place(diff: list, diff_t: list, copies: list) -> list:
    """Puts the tracers into those items of ``diff`` that are dict subclasses without a
    ``_tree_unflatten`` hook, and makes ``diff_t`` hold the objects themselves; returns the
    ``(container, key, original)`` changes, to undo after the call."""
    undo: list = []
    start = 0
    for j, item in enumerate(diff):
        n = len(flatten(item)[0])
        if (
            isinstance(item, dict)
            and type(item) is not dict
            and getattr(type(item), "_tree_unflatten", None) is None
        ):
            _put_leaves(item, iter(copies[start : start + n]), undo)
            diff_t[j] = item
        start += n
    return undo


def _put_leaves(tree: Any, arrays, undo: list) -> Any:
    """``tree`` with its arrays replaced, in ``flatten`` order, by the next of ``arrays``:
    dicts and lists are changed in place (each change recorded in ``undo``), tuples rebuilt."""
    if isinstance(tree, Array):
        return next(arrays)
    if isinstance(tree, (dict, list)):
        for k in list(tree) if isinstance(tree, dict) else range(len(tree)):
            old = tree[k]
            new = _put_leaves(old, arrays, undo)
            if new is not old:
                undo.append((tree, k, old))
                _set_item(tree, k, new)
        return tree
    if isinstance(tree, tuple):
        items = [_put_leaves(v, arrays, undo) for v in tree]
        return type(tree)(*items) if hasattr(type(tree), "_fields") else type(tree)(items)
    return tree


def _set_item(container, key, value) -> None:
    if isinstance(container, dict):
        dict.__setitem__(container, key, value)  # past a Module's own __setitem__ hooks
    else:
        container[key] = value


def _check_static(diff: list, name: str, nums: list, names: list) -> None:
    """Differentiated arguments must hold only arrays (MLX raises the same way)."""
    labels = [f"argument {n}" for n in nums] + [f"keyword argument {k!r}" for k in names]
    for label, sub in zip(labels, diff):
        for t in reversed(all_leaves(sub)):  # right to left: the error names the last offender
            if t is not None and not isinstance(t, Array):
                raise ValueError(
                    f"{name}: {label} holds a {type(t).__name__}; only arrays (in "
                    "lists, tuples and dicts) can be differentiated"
                )
