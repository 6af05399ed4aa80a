"""Transform rules of the primitives of ``nuvec.primitives.indexing``."""

from __future__ import annotations

from ... import ops
from ...core.array import Array
from ...primitives._common import batched_axes
from ...primitives.indexing import Gather, GatherAxis, Scatter, ScatterAxis
from ._common import batch_front as _batch_front, batch_size as _batch_size, zeros as _zeros


def _iota(size: int, shape: tuple) -> Array:
    """``arange(size)`` along a new first axis, broadcast to ``(size,) + shape``."""
    r = ops.reshape(ops.arange(size), (size,) + (1,) * len(shape))
    return ops.broadcast_to(r, (size,) + tuple(shape))


def _index_zeros(primals, argnums, first_index: int):
    return {i: ops.zeros_like(primals[i]) for i in argnums if i >= first_index}


def _gather_vjp(prim, primals, cotangents, argnums, outputs):
    a, idx = primals[0], list(primals[1:])
    g = cotangents[0]
    res = _index_zeros(primals, argnums, 1)
    if 0 in argnums:
        res[0] = Array.make(Scatter(prim.axes, "add"), [_zeros(a.shape, g.dtype), g] + idx)
    return [res[i] for i in argnums]


def _gather_jvp(prim, primals, tangents, argnums):
    t = dict(zip(argnums, tangents))
    if 0 not in t:
        ((shape, _),) = prim.infer(primals)
        return [_zeros(shape, tangents[0].dtype)]
    return [Array.make(prim, [t[0]] + list(primals[1:]))]


def _gather_vmap(prim, inputs, axes):
    a, idx = inputs[0], list(inputs[1:])
    ax_a, ax_i = axes[0], axes[1:]
    if all(x is None for x in ax_i):
        # only the source is batched: its batch axis is one more untouched axis
        new_axes = batched_axes(prim.axes, ax_a)
        taken = set(new_axes)
        before = sum(1 for d in range(ax_a) if d not in taken)
        out = Array.make(Gather(new_axes), [a] + idx)
        return [out], [idx[0].ndim + before]
    b = _batch_size(inputs[1:], ax_i)
    idx = [_batch_front(i, ax, b) for i, ax in zip(idx, ax_i)]
    if ax_a is None:
        return [Array.make(prim, [a] + idx)], [0]
    a = _batch_front(a, ax_a, b)
    iota = _iota(b, idx[0].shape[1:]).astype(idx[0].dtype)
    batched = Gather((0,) + tuple(d + 1 for d in prim.axes))
    return [Array.make(batched, [a, iota] + idx)], [0]


def _scatter_vjp(prim, primals, cotangents, argnums, outputs):
    a, u, idx = primals[0], primals[1], list(primals[2:])
    g, out = cotangents[0], outputs[0]
    gather = Gather(prim.axes)
    res = _index_zeros(primals, argnums, 2)
    mode = prim.mode
    if 0 in argnums:
        if mode == "set":
            res[0] = Array.make(prim, [g, _zeros(u.shape, g.dtype)] + idx)
        elif mode == "add":
            res[0] = g
        elif mode == "prod":
            res[0] = Array.make(prim, [g, u] + idx)
        else:
            res[0] = ops.where(ops.equal(a, out), g, ops.zeros((), g.dtype))
    if 1 in argnums:
        gu = Array.make(gather, [g] + idx)
        if mode == "prod":
            gu = ops.divide(Array.make(gather, [ops.multiply(g, out)] + idx), u)
        elif mode in ("max", "min"):
            won = ops.equal(u, Array.make(gather, [out] + idx))
            gu = ops.where(won, gu, ops.zeros((), g.dtype))
        res[1] = gu
    return [res[i] for i in argnums]


def _scatter_jvp(prim, primals, tangents, argnums):
    a, u, idx = primals[0], primals[1], list(primals[2:])
    t = dict(zip(argnums, tangents))
    dtype = tangents[0].dtype
    ta = t[0] if 0 in t else _zeros(a.shape, dtype)
    tu = t[1] if 1 in t else _zeros(u.shape, dtype)
    if prim.mode in ("set", "add"):
        return [Array.make(prim, [ta, tu] + idx)]
    out = Array.make(prim, list(primals))
    add = Scatter(prim.axes, "add")
    if prim.mode == "prod":
        # d(a * prod u) = da * prod u + out * sum(du / u)
        first = Array.make(prim, [ta, u] + idx)
        rel = Array.make(add, [_zeros(a.shape, dtype), ops.divide(tu, u)] + idx)
        return [ops.add(first, ops.multiply(out, rel))]
    zero = ops.zeros((), dtype)
    keep = ops.where(ops.equal(a, out), ta, zero)
    won = ops.equal(u, Array.make(Gather(prim.axes), [out] + idx))
    moved = Array.make(add, [_zeros(a.shape, dtype), ops.where(won, tu, zero)] + idx)
    return [ops.add(keep, moved)]


def _scatter_vmap(prim, inputs, axes):
    b = _batch_size(inputs, axes)
    a, u = _batch_front(inputs[0], axes[0], b), _batch_front(inputs[1], axes[1], b)
    idx = [_batch_front(i, ax, b) for i, ax in zip(inputs[2:], axes[2:])]
    iota = _iota(b, idx[0].shape[1:]).astype(idx[0].dtype)
    batched = Scatter((0,) + tuple(d + 1 for d in prim.axes), prim.mode)
    return [Array.make(batched, [a, u, iota] + idx)], [0]


def _gather_axis_vjp(prim, primals, cotangents, argnums, outputs):
    a, i = primals
    g = cotangents[0]
    res = _index_zeros(primals, argnums, 1)
    if 0 in argnums:
        res[0] = Array.make(ScatterAxis(prim.axis, "add"), [_zeros(a.shape, g.dtype), i, g])
    return [res[k] for k in argnums]


def _gather_axis_jvp(prim, primals, tangents, argnums):
    t = dict(zip(argnums, tangents))
    if 0 not in t:
        return [_zeros(primals[1].shape, tangents[0].dtype)]
    return [Array.make(prim, [t[0], primals[1]])]


def _gather_axis_vmap(prim, inputs, axes):
    b = _batch_size(inputs, axes)
    a, i = (_batch_front(x, ax, b) for x, ax in zip(inputs, axes))
    return [Array.make(GatherAxis(prim.axis + 1), [a, i])], [0]


def _scatter_axis_vjp(prim, primals, cotangents, argnums, outputs):
    a, i, u = primals
    g = cotangents[0]
    res = {k: ops.zeros_like(i) for k in argnums if k == 1}
    if 0 in argnums:
        res[0] = g if prim.mode == "add" else Array.make(prim, [g, i, _zeros(u.shape, g.dtype)])
    if 2 in argnums:
        res[2] = Array.make(GatherAxis(prim.axis), [g, i])
    return [res[k] for k in argnums]


def _scatter_axis_jvp(prim, primals, tangents, argnums):
    a, i, u = primals
    t = dict(zip(argnums, tangents))
    dtype = tangents[0].dtype
    ta = t[0] if 0 in t else _zeros(a.shape, dtype)
    tu = t[2] if 2 in t else _zeros(u.shape, dtype)
    return [Array.make(prim, [ta, i, tu])]


def _scatter_axis_vmap(prim, inputs, axes):
    b = _batch_size(inputs, axes)
    xs = [_batch_front(x, ax, b) for x, ax in zip(inputs, axes)]
    return [Array.make(ScatterAxis(prim.axis + 1, prim.mode), xs)], [0]


VJP = {
    Gather: _gather_vjp,
    Scatter: _scatter_vjp,
    GatherAxis: _gather_axis_vjp,
    ScatterAxis: _scatter_axis_vjp,
}
JVP = {
    Gather: _gather_jvp,
    Scatter: _scatter_jvp,
    GatherAxis: _gather_axis_jvp,
    ScatterAxis: _scatter_axis_jvp,
}
VMAP = {
    Gather: _gather_vmap,
    Scatter: _scatter_vmap,
    GatherAxis: _gather_axis_vmap,
    ScatterAxis: _scatter_axis_vmap,
}
