"""Gather and scatter primitives: reading and writing elements at integer index arrays.

``Gather(axes)``: inputs ``[a, i0, ..., ik-1]``; the index arrays share one shape ``S`` and
``ij`` indexes axis ``axes[j]`` of ``a``. Output: ``S + (the other axes of a, in order)``.

``Scatter(axes, mode)``: inputs ``[a, update, i0, ...]`` with ``update`` shaped like the
matching Gather's output; writes (``mode="set"``) or combines (``"add"``, ``"prod"``,
``"max"``, ``"min"``; duplicates all count) ``update`` into a copy of ``a``.

``GatherAxis(axis)`` / ``ScatterAxis(axis, mode)``: ``take_along_axis`` / ``put_along_axis``
(index and update shaped like ``a`` except on ``axis``).

Negative indices count from the end; an index out of range is an error when the graph runs.
Index inputs have no gradient: ``index_inputs`` lists them, and a vjp that would have to
flow into one (indices that depend on a differentiated input and are not under
``stop_gradient``) is an error, as MLX.
"""

from __future__ import annotations

from ..core.array import Array
from ..core.primitive import Primitive
from ._common import batch_front as _batch_front, batch_size as _batch_size
from ._common import batched_axes, ops as _ops, zeros as _zeros

SCATTER_MODES = ("set", "add", "prod", "max", "min")


class IndexOutOfBounds(IndexError, ValueError):
    """An index beyond an axis (both an IndexError, as Python's, and a ValueError)."""


def _iota(size: int, shape: tuple) -> Array:
    """``arange(size)`` along a new first axis, broadcast to ``(size,) + shape``."""
    ops = _ops()
    r = ops.reshape(ops.arange(size), (size,) + (1,) * len(shape))
    return ops.broadcast_to(r, (size,) + tuple(shape))


def _index_zeros(primals, argnums, first_index: int):
    return {i: _ops().zeros_like(primals[i]) for i in argnums if i >= first_index}


class Gather(Primitive):
    __slots__ = ("axes",)
    name = "gather"

    def index_inputs(self, n: int) -> range:
        return range(1, n)

    def __init__(self, axes: tuple[int, ...]) -> None:
        self.axes = tuple(axes)

    @property
    def params(self) -> tuple:
        return (self.axes,)

    def infer(self, inputs):
        a, idx = inputs[0], inputs[1:]
        if len(idx) != len(self.axes):
            raise ValueError(f"gather: {len(idx)} index arrays for {len(self.axes)} axes")
        s = idx[0]._shape
        for i in idx:
            if i._shape != s:
                raise ValueError(
                    "gather: index arrays of different shapes "
                    f"{s} and {i._shape} (the ops broadcast them first)"
                )
            if i._dtype.kind not in "ui":
                raise TypeError(f"gather: indices must be integers, not {i._dtype.name}")
        taken = set(self.axes)
        rest = tuple(d for i, d in enumerate(a._shape) if i not in taken)
        return [(s + rest, a._dtype)]

    def vjp(self, primals, cotangents, argnums, outputs):
        a, idx = primals[0], list(primals[1:])
        g = cotangents[0]
        res = _index_zeros(primals, argnums, 1)
        if 0 in argnums:
            res[0] = Array.make(Scatter(self.axes, "add"), [_zeros(a.shape, g.dtype), g] + idx)
        return [res[i] for i in argnums]

    def jvp(self, primals, tangents, argnums):
        t = dict(zip(argnums, tangents))
        if 0 not in t:
            ((shape, _),) = self.infer(primals)
            return [_zeros(shape, tangents[0].dtype)]
        return [Array.make(self, [t[0]] + list(primals[1:]))]

    def vmap(self, inputs, axes):
        a, idx = inputs[0], list(inputs[1:])
        ax_a, ax_i = axes[0], axes[1:]
        if all(x is None for x in ax_i):
            # only the source is batched: its batch axis is one more untouched axis
            new_axes = batched_axes(self.axes, ax_a)
            taken = set(new_axes)
            before = sum(1 for d in range(ax_a) if d not in taken)
            out = Array.make(Gather(new_axes), [a] + idx)
            return [out], [idx[0].ndim + before]
        b = _batch_size(inputs[1:], ax_i)
        idx = [_batch_front(i, ax, b) for i, ax in zip(idx, ax_i)]
        if ax_a is None:
            return [Array.make(self, [a] + idx)], [0]
        a = _batch_front(a, ax_a, b)
        iota = _iota(b, idx[0].shape[1:]).astype(idx[0].dtype)
        prim = Gather((0,) + tuple(d + 1 for d in self.axes))
        return [Array.make(prim, [a, iota] + idx)], [0]


class Scatter(Primitive):
    __slots__ = ("axes", "mode")
    name = "scatter"

    def index_inputs(self, n: int) -> range:
        return range(2, n)

    def __init__(self, axes: tuple[int, ...], mode: str = "set") -> None:
        if mode not in SCATTER_MODES:
            raise ValueError(f"scatter: unknown mode {mode!r}")
        self.axes = tuple(axes)
        self.mode = mode

    @property
    def params(self) -> tuple:
        return (self.axes, self.mode)

    def infer(self, inputs):
        a, u, idx = inputs[0], inputs[1], inputs[2:]
        ((gshape, _),) = Gather(self.axes).infer([a] + list(idx))
        if u._shape != gshape:
            raise ValueError(f"scatter: the update has shape {u._shape}, expected {gshape}")
        if u._dtype != a._dtype:
            raise TypeError(f"scatter: update dtype {u._dtype.name} differs from {a._dtype.name}")
        return [(a._shape, a._dtype)]

    def vjp(self, primals, cotangents, argnums, outputs):
        a, u, idx = primals[0], primals[1], list(primals[2:])
        g, out = cotangents[0], outputs[0]
        ops = _ops()
        gather = Gather(self.axes)
        res = _index_zeros(primals, argnums, 2)
        mode = self.mode
        if 0 in argnums:
            if mode == "set":
                res[0] = Array.make(self, [g, _zeros(u.shape, g.dtype)] + idx)
            elif mode == "add":
                res[0] = g
            elif mode == "prod":
                res[0] = Array.make(self, [g, u] + idx)
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

    def jvp(self, primals, tangents, argnums):
        a, u, idx = primals[0], primals[1], list(primals[2:])
        t = dict(zip(argnums, tangents))
        dtype = tangents[0].dtype
        ta = t[0] if 0 in t else _zeros(a.shape, dtype)
        tu = t[1] if 1 in t else _zeros(u.shape, dtype)
        if self.mode in ("set", "add"):
            return [Array.make(self, [ta, tu] + idx)]
        ops = _ops()
        out = Array.make(self, list(primals))
        add = Scatter(self.axes, "add")
        if self.mode == "prod":
            # d(a * prod u) = da * prod u + out * sum(du / u)
            first = Array.make(self, [ta, u] + idx)
            rel = Array.make(add, [_zeros(a.shape, dtype), ops.divide(tu, u)] + idx)
            return [ops.add(first, ops.multiply(out, rel))]
        zero = ops.zeros((), dtype)
        keep = ops.where(ops.equal(a, out), ta, zero)
        won = ops.equal(u, Array.make(Gather(self.axes), [out] + idx))
        moved = Array.make(add, [_zeros(a.shape, dtype), ops.where(won, tu, zero)] + idx)
        return [ops.add(keep, moved)]

    def vmap(self, inputs, axes):
        b = _batch_size(inputs, axes)
        a, u = _batch_front(inputs[0], axes[0], b), _batch_front(inputs[1], axes[1], b)
        idx = [_batch_front(i, ax, b) for i, ax in zip(inputs[2:], axes[2:])]
        iota = _iota(b, idx[0].shape[1:]).astype(idx[0].dtype)
        prim = Scatter((0,) + tuple(d + 1 for d in self.axes), self.mode)
        return [Array.make(prim, [a, u, iota] + idx)], [0]


class GatherAxis(Primitive):
    """``take_along_axis``: inputs ``[a, indices]`` of one shape except on ``axis``."""

    __slots__ = ("axis",)
    name = "gather_axis"

    def index_inputs(self, n: int) -> range:
        return range(1, 2)

    def __init__(self, axis: int) -> None:
        self.axis = axis

    @property
    def params(self) -> tuple:
        return (self.axis,)

    def infer(self, inputs):
        a, i = inputs
        ax = self.axis
        if (
            a.ndim != i.ndim
            or a._shape[:ax] != i._shape[:ax]
            or a._shape[ax + 1 :] != i._shape[ax + 1 :]
        ):
            raise ValueError(
                f"take_along_axis: index shape {i._shape} does not match "
                f"{a._shape} outside axis {ax}"
            )
        if i._dtype.kind not in "ui":
            raise TypeError(f"take_along_axis: indices must be integers, not {i._dtype.name}")
        return [(i._shape, a._dtype)]

    def vjp(self, primals, cotangents, argnums, outputs):
        a, i = primals
        g = cotangents[0]
        res = _index_zeros(primals, argnums, 1)
        if 0 in argnums:
            res[0] = Array.make(ScatterAxis(self.axis, "add"), [_zeros(a.shape, g.dtype), i, g])
        return [res[k] for k in argnums]

    def jvp(self, primals, tangents, argnums):
        t = dict(zip(argnums, tangents))
        if 0 not in t:
            return [_zeros(primals[1].shape, tangents[0].dtype)]
        return [Array.make(self, [t[0], primals[1]])]

    def vmap(self, inputs, axes):
        b = _batch_size(inputs, axes)
        a, i = (_batch_front(x, ax, b) for x, ax in zip(inputs, axes))
        return [Array.make(GatherAxis(self.axis + 1), [a, i])], [0]


class ScatterAxis(Primitive):
    """``put_along_axis`` (``mode="set"``) and its additive form: inputs ``[a, indices,
    update]``, indices and update of one shape, equal to ``a``'s except on ``axis``."""

    __slots__ = ("axis", "mode")
    name = "scatter_axis"

    def index_inputs(self, n: int) -> range:
        return range(1, 2)

    def __init__(self, axis: int, mode: str = "set") -> None:
        if mode not in ("set", "add"):
            raise ValueError(f"scatter_axis: unknown mode {mode!r}")
        self.axis, self.mode = axis, mode

    @property
    def params(self) -> tuple:
        return (self.axis, self.mode)

    def infer(self, inputs):
        a, i, u = inputs
        GatherAxis(self.axis).infer([a, i])
        if u._shape != i._shape:
            raise ValueError(
                f"put_along_axis: update shape {u._shape} differs from the index shape {i._shape}"
            )
        if u._dtype != a._dtype:
            raise TypeError(
                f"put_along_axis: update dtype {u._dtype.name} differs from {a._dtype.name}"
            )
        return [(a._shape, a._dtype)]

    def vjp(self, primals, cotangents, argnums, outputs):
        a, i, u = primals
        g = cotangents[0]
        res = {k: _ops().zeros_like(i) for k in argnums if k == 1}
        if 0 in argnums:
            res[0] = g if self.mode == "add" else Array.make(self, [g, i, _zeros(u.shape, g.dtype)])
        if 2 in argnums:
            res[2] = Array.make(GatherAxis(self.axis), [g, i])
        return [res[k] for k in argnums]

    def jvp(self, primals, tangents, argnums):
        a, i, u = primals
        t = dict(zip(argnums, tangents))
        dtype = tangents[0].dtype
        ta = t[0] if 0 in t else _zeros(a.shape, dtype)
        tu = t[2] if 2 in t else _zeros(u.shape, dtype)
        return [Array.make(self, [ta, i, tu])]

    def vmap(self, inputs, axes):
        b = _batch_size(inputs, axes)
        xs = [_batch_front(x, ax, b) for x, ax in zip(inputs, axes)]
        return [Array.make(ScatterAxis(self.axis + 1, self.mode), xs)], [0]
