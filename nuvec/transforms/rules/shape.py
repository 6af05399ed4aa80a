"""Transform rules of the primitives of ``nuvec.primitives.shape``."""

from __future__ import annotations

from ... import ops
from ...core import shapeless
from ...core.array import Array
from ...primitives._common import batched_axes, inverse_permutation
from ...primitives.shape import (
    Broadcast,
    Concatenate,
    ExpandDims,
    Flatten,
    Pad,
    RelativeSlice,
    RelativeSliceUpdate,
    Reshape,
    ReshapeLike,
    SizedBroadcast,
    SizedReshape,
    Slice,
    SliceUpdate,
    Squeeze,
    SumToShape,
    Transpose,
    Unflatten,
    _Sized,
    _View,
    _shift,
)
from ._common import batch_front as _batch_front, batch_size as _batch_size, zeros as _zeros


def sum_to_like(g: Array, x: Array) -> Array:
    """``g`` summed to ``x``'s shape over the axes broadcasting added (one sum, as the eager
    rules make it), those axes chosen from each shapeless replay's shapes."""
    lead = g.ndim - x.ndim
    g = Array.make(SumToShape(lead), [g, x])
    if lead:
        g = Array.make(Squeeze(tuple(range(lead))), [g])
    return g


def reshape_like(g: Array, x: Array) -> Array:
    """``g`` reshaped to ``x``'s shape: at each shapeless replay's shape under such a trace."""
    if shapeless.relative(x) or shapeless.relative(g):
        return Array.make(ReshapeLike(), [g, x])
    return ops.reshape(g, x.shape)


def _batched_front(inputs, axes) -> tuple[list, list]:
    """The inputs with their batch axes moved first, and which of them have one."""
    moved = [x if ax is None else ops.moveaxis(x, ax, 0) for x, ax in zip(inputs, axes)]
    return moved, [ax is not None for ax in axes]


def _full_spec(spec, ax: int) -> tuple:
    """``spec`` with a whole axis inserted at ``ax`` (a batch axis)."""
    return spec[:ax] + ((None, None, None),) + spec[ax:]


def _view_jvp(prim, primals, tangents, argnums):
    return [Array.make(prim, tangents)]


def _broadcast_jvp(prim, primals, tangents, argnums):
    # with more inputs, only input 0 is broadcast: the others give its shape only
    t = dict(zip(argnums, tangents))
    if 0 not in t:
        return [ops.full_like(Array.make(prim, primals), 0, dtype=tangents[0].dtype)]
    return [Array.make(prim, [t[0]] + list(primals[1:]))]


def _broadcast_vjp(prim, primals, cotangents, argnums, outputs):
    x, g = primals[0], cotangents[0]
    lead = g.ndim - x.ndim
    if shapeless.relative(x) or shapeless.relative(g):  # the axes follow each replay
        g = sum_to_like(g, x)
        return [g if i == 0 else ops.zeros_like(primals[i]) for i in argnums]
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(x.shape) if d == 1 and g.shape[lead + i] != 1
    )
    if axes:
        g = ops.sum(g, axis=axes, keepdims=True)
    if lead:  # squeezed, not reshaped: the shape follows from x's at a shapeless replay
        g = ops.squeeze(g, tuple(range(lead)))
    return [g if i == 0 else ops.zeros_like(primals[i]) for i in argnums]


def _broadcast_vmap(prim, inputs, axes):
    if len(inputs) > 1:
        if all(ax is None for ax in axes):
            return [Array.make(prim, inputs)], [None]
        # batch axes first, then each batched operand's own axes aligned right
        nd = max(x.ndim - (ax is not None) for x, ax in zip(inputs, axes))
        xs = []
        for x, ax in zip(inputs, axes):
            if ax is not None:
                x = ops.moveaxis(x, ax, 0)
                pad = nd - (x.ndim - 1)
                if pad:
                    x = Array.make(ExpandDims(tuple(range(1, 1 + pad))), [x])
            xs.append(x)
        return [Array.make(prim, xs)], [0]
    (x,), (ax,) = inputs, axes
    if ax is None:
        return [Array.make(prim, inputs)], [None]
    x = ops.moveaxis(x, ax, 0)
    b = x.shape[0]
    # align the batched input's trailing dims to the target shape
    pad = len(prim.shape) - (x.ndim - 1)
    x = ops.reshape(x, (b,) + (1,) * pad + x.shape[1:])
    if prim.fill:
        return [Array.make(Broadcast((b,) + prim.shape, fill=True), [x])], [0]
    return [ops.broadcast_to(x, (b,) + prim.shape)], [0]


def _sum_to_shape_vjp(prim, primals, cotangents, argnums, outputs):
    g, x = primals
    back = ops.broadcast_arrays(cotangents[0], g)[0]
    return [back if i == 0 else ops.zeros_like(x) for i in argnums]


def _sum_to_shape_jvp(prim, primals, tangents, argnums):
    t = dict(zip(argnums, tangents))
    if 0 not in t:
        return [ops.zeros_like(Array.make(prim, primals))]
    return [Array.make(prim, [t[0], primals[1]])]


def _sum_to_shape_vmap(prim, inputs, axes):
    # the batch axis of g placed after its lead axes, where it meets x's (same size)
    b = _batch_size(inputs, axes)
    g, x = (_batch_front(y, ax, b) for y, ax in zip(inputs, axes))
    g = ops.moveaxis(g, 0, prim.lead)
    return [Array.make(prim, [g, x])], [prim.lead]


def _reshape_like_jvp(prim, primals, tangents, argnums):
    t = dict(zip(argnums, tangents))
    if 0 not in t:
        return [ops.zeros_like(Array.make(prim, primals))]
    return [Array.make(prim, [t[0], primals[1]])]


def _reshape_like_vmap(prim, inputs, axes):
    b = _batch_size(inputs, axes)
    g, x = (_batch_front(y, ax, b) for y, ax in zip(inputs, axes))
    return [Array.make(prim, [g, x])], [0]


def _reshape_like_vjp(prim, primals, cotangents, argnums, outputs):
    g, x = primals
    out = []
    for i in argnums:
        c = Array.make(ReshapeLike(), [cotangents[0], g]) if i == 0 else ops.zeros_like(x)
        out.append(c)
    return out


def _reshape_vjp(prim, primals, cotangents, argnums, outputs):
    return [reshape_like(cotangents[0], primals[0])]


def _reshape_vmap(prim, inputs, axes):
    (x,), (ax,) = inputs, axes
    if ax is None:
        return [Array.make(prim, inputs)], [None]
    x = ops.moveaxis(x, ax, 0)
    return [ops.reshape(x, (x.shape[0],) + prim.shape)], [0]


def _sized_jvp(prim, primals, tangents, argnums):
    t = dict(zip(argnums, tangents))
    if 0 not in t:
        return [ops.zeros_like(Array.make(prim, primals))]
    return [Array.make(prim, [t[0]] + list(primals[1:]))]


def _sized_reshape_vjp(prim, primals, cotangents, argnums, outputs):
    g = cotangents[0]
    return [reshape_like(g, primals[0]) if i == 0 else ops.zeros_like(primals[i]) for i in argnums]


def _sized_reshape_vmap(prim, inputs, axes):
    if all(ax is None for ax in axes):
        return [Array.make(prim, inputs)], [None]
    moved, front = _batched_front(inputs, axes)
    spec = tuple(_shift(e, front) for e in prim.spec)
    if axes[0] is None:  # the same reshape for every batch element
        return [Array.make(SizedReshape(spec), moved)], [None]
    return [Array.make(SizedReshape((("dim", 0, 0),) + spec), moved)], [0]


def _sized_broadcast_vjp(prim, primals, cotangents, argnums, outputs):
    g = cotangents[0]
    return [sum_to_like(g, primals[0]) if i == 0 else ops.zeros_like(primals[i]) for i in argnums]


def _sized_broadcast_vmap(prim, inputs, axes):
    if all(ax is None for ax in axes):
        return [Array.make(prim, inputs)], [None]
    moved, front = _batched_front(inputs, axes)
    pad = len(prim.spec) - (moved[0].ndim - front[0])  # the value's axes aligned right
    if front[0] and pad:
        moved[0] = Array.make(ExpandDims(tuple(range(1, 1 + pad))), [moved[0]])
    k = front.index(True)  # the batch size: a batched input's leading axis
    spec = (("dim", k, 0),) + tuple(_shift(e, front) for e in prim.spec)
    return [Array.make(SizedBroadcast(spec), moved)], [0]


def _unflatten_vjp(prim, primals, cotangents, argnums, outputs):
    end = prim.axis + len(prim.shape) - 1
    return [Array.make(Flatten(prim.axis, end), cotangents)]


def _unflatten_vmap(prim, inputs, axes):
    (x,), (ax,) = inputs, axes
    if ax is None:
        return [Array.make(prim, inputs)], [None]
    x = ops.moveaxis(x, ax, 0)
    return [Array.make(Unflatten(prim.axis + 1, prim.shape), [x])], [0]


def _expand_dims_vjp(prim, primals, cotangents, argnums, outputs):
    return [Array.make(Squeeze(prim.axes), cotangents)]


def _expand_dims_vmap(prim, inputs, axes):
    (x,), (ax,) = inputs, axes
    if ax is None:
        return [Array.make(prim, inputs)], [None]
    x = ops.moveaxis(x, ax, 0)
    return [Array.make(ExpandDims(tuple(a + 1 for a in prim.axes)), [x])], [0]


def _squeeze_vjp(prim, primals, cotangents, argnums, outputs):
    return [Array.make(ExpandDims(prim.axes), cotangents)]


def _squeeze_vmap(prim, inputs, axes):
    (x,), (ax,) = inputs, axes
    if ax is None:
        return [Array.make(prim, inputs)], [None]
    x = ops.moveaxis(x, ax, 0)
    return [Array.make(Squeeze(tuple(a + 1 for a in prim.axes)), [x])], [0]


def _flatten_vjp(prim, primals, cotangents, argnums, outputs):
    return [reshape_like(cotangents[0], primals[0])]


def _flatten_vmap(prim, inputs, axes):
    (x,), (ax,) = inputs, axes
    if ax is None:
        return [Array.make(prim, inputs)], [None]
    x = ops.moveaxis(x, ax, 0)
    return [Array.make(Flatten(prim.start + 1, prim.end + 1), [x])], [0]


def _transpose_vjp(prim, primals, cotangents, argnums, outputs):
    return [Array.make(Transpose(inverse_permutation(prim.axes)), cotangents)]


def _transpose_vmap(prim, inputs, axes):
    (x,), (ax,) = inputs, axes
    if ax is None:
        return [Array.make(prim, inputs)], [None]
    perm = (ax,) + batched_axes(prim.axes, ax)
    return [Array.make(Transpose(perm), [x])], [0]


def _slice_vjp(prim, primals, cotangents, argnums, outputs):
    x, g = primals[0], cotangents[0]
    upd = SliceUpdate(prim.start, prim.stop, prim.strides)
    return [Array.make(upd, [_zeros(x.shape, g.dtype), g])]


def _slice_vmap(prim, inputs, axes):
    (x,), (ax,) = inputs, axes
    if ax is None:
        return [Array.make(prim, inputs)], [None]
    b = x.shape[ax]
    batched = Slice(
        prim.start[:ax] + (0,) + prim.start[ax:],
        prim.stop[:ax] + (b,) + prim.stop[ax:],
        prim.strides[:ax] + (1,) + prim.strides[ax:],
    )
    return [Array.make(batched, [x])], [ax]


def _slice_update_vjp(prim, primals, cotangents, argnums, outputs):
    a, u = primals
    g = cotangents[0]
    out = []
    for i in argnums:
        if i == 0:
            out.append(Array.make(prim, [g, _zeros(u.shape, g.dtype)]))
        else:
            out.append(Array.make(Slice(prim.start, prim.stop, prim.strides), [g]))
    return out


def _slice_update_jvp(prim, primals, tangents, argnums):
    t = dict(zip(argnums, tangents))
    a, u = primals
    ta = t.get(0)
    tu = t.get(1)
    dtype = (ta if ta is not None else tu).dtype
    ta = ta if ta is not None else _zeros(a.shape, dtype)
    tu = tu if tu is not None else _zeros(u.shape, dtype)
    return [Array.make(prim, [ta, tu])]


def _slice_update_vmap(prim, inputs, axes):
    b = _batch_size(inputs, axes)
    a, u = (_batch_front(x, ax, b) for x, ax in zip(inputs, axes))
    batched = SliceUpdate((0,) + prim.start, (b,) + prim.stop, (1,) + prim.strides)
    return [Array.make(batched, [a, u])], [0]


def _relative_slice_vjp(prim, primals, cotangents, argnums, outputs):
    x, g = primals[0], cotangents[0]
    zeros = ops.full_like(x, 0, dtype=g.dtype)
    return [Array.make(RelativeSliceUpdate(prim.spec), [zeros, g])]


def _relative_slice_vmap(prim, inputs, axes):
    (x,), (ax,) = inputs, axes
    if ax is None:
        return [Array.make(prim, inputs)], [None]
    return [Array.make(RelativeSlice(_full_spec(prim.spec, ax)), [x])], [ax]


def _relative_slice_update_vjp(prim, primals, cotangents, argnums, outputs):
    a, u = primals
    g = cotangents[0]
    out = []
    for i in argnums:
        if i == 0:
            out.append(Array.make(prim, [g, ops.full_like(u, 0, dtype=g.dtype)]))
        else:
            out.append(Array.make(RelativeSlice(prim.spec), [g]))
    return out


def _relative_slice_update_jvp(prim, primals, tangents, argnums):
    t = dict(zip(argnums, tangents))
    dtype = tangents[0].dtype
    ta, tu = (t[i] if i in t else ops.full_like(x, 0, dtype=dtype) for i, x in enumerate(primals))
    return [Array.make(prim, [ta, tu])]


def _relative_slice_update_vmap(prim, inputs, axes):
    b = _batch_size(inputs, axes)
    a, u = (_batch_front(x, ax, b) for x, ax in zip(inputs, axes))
    return [Array.make(RelativeSliceUpdate(_full_spec(prim.spec, 0)), [a, u])], [0]


def _concatenate_vjp(prim, primals, cotangents, argnums, outputs):
    g = cotangents[0]
    offs = prim._offsets(primals)
    out = []
    for i in argnums:
        start = [0] * g.ndim
        stop = list(g.shape)
        start[prim.axis], stop[prim.axis] = offs[i], offs[i + 1]
        out.append(Array.make(Slice(start, stop, (1,) * g.ndim), [g]))
    return out


def _concatenate_jvp(prim, primals, tangents, argnums):
    t = dict(zip(argnums, tangents))
    dtype = tangents[0].dtype
    parts = [t[i] if i in t else _zeros(x.shape, dtype) for i, x in enumerate(primals)]
    return [Array.make(prim, parts)]


def _concatenate_vmap(prim, inputs, axes):
    b = _batch_size(inputs, axes)
    xs = [_batch_front(x, ax, b) for x, ax in zip(inputs, axes)]
    return [Array.make(Concatenate(prim.axis + 1), xs)], [0]


def _pad_vjp(prim, primals, cotangents, argnums, outputs):
    a = primals[0]
    g = cotangents[0]
    inner = Array.make(prim._inner(a.shape), [g])
    out = []
    for i in argnums:
        if i == 0:
            out.append(inner)
        else:
            out.append(ops.subtract(ops.sum(g), ops.sum(inner)))
    return out


def _pad_jvp(prim, primals, tangents, argnums):
    t = dict(zip(argnums, tangents))
    a, v = primals
    dtype = tangents[0].dtype
    ta = t[0] if 0 in t else _zeros(a.shape, dtype)
    tv = t[1] if 1 in t else _zeros((), dtype)
    return [Array.make(prim, [ta, tv])]


def _pad_vmap(prim, inputs, axes):
    (a, v), (ax, av) = inputs, axes
    if av is not None:  # MLX's rule: one padding value for the whole batch
        raise ValueError(
            "pad: vmap over the padding value (constant_values) is not supported; "
            "map over the array only"
        )
    a = _batch_front(a, ax, _batch_size(inputs, axes))
    low, high = (0,) + prim.low, (0,) + prim.high
    return [Array.make(Pad(low, high), [a, v])], [0]


VJP = {
    Broadcast: _broadcast_vjp,
    SumToShape: _sum_to_shape_vjp,
    ReshapeLike: _reshape_like_vjp,
    Reshape: _reshape_vjp,
    SizedReshape: _sized_reshape_vjp,
    SizedBroadcast: _sized_broadcast_vjp,
    Unflatten: _unflatten_vjp,
    ExpandDims: _expand_dims_vjp,
    Squeeze: _squeeze_vjp,
    Flatten: _flatten_vjp,
    Transpose: _transpose_vjp,
    Slice: _slice_vjp,
    SliceUpdate: _slice_update_vjp,
    RelativeSlice: _relative_slice_vjp,
    RelativeSliceUpdate: _relative_slice_update_vjp,
    Concatenate: _concatenate_vjp,
    Pad: _pad_vjp,
}
JVP = {
    _View: _view_jvp,
    Broadcast: _broadcast_jvp,
    SumToShape: _sum_to_shape_jvp,
    ReshapeLike: _reshape_like_jvp,
    _Sized: _sized_jvp,
    SliceUpdate: _slice_update_jvp,
    RelativeSliceUpdate: _relative_slice_update_jvp,
    Concatenate: _concatenate_jvp,
    Pad: _pad_jvp,
}
VMAP = {
    Broadcast: _broadcast_vmap,
    SumToShape: _sum_to_shape_vmap,
    ReshapeLike: _reshape_like_vmap,
    Reshape: _reshape_vmap,
    SizedReshape: _sized_reshape_vmap,
    SizedBroadcast: _sized_broadcast_vmap,
    Unflatten: _unflatten_vmap,
    ExpandDims: _expand_dims_vmap,
    Squeeze: _squeeze_vmap,
    Flatten: _flatten_vmap,
    Transpose: _transpose_vmap,
    Slice: _slice_vmap,
    SliceUpdate: _slice_update_vmap,
    RelativeSlice: _relative_slice_vmap,
    RelativeSliceUpdate: _relative_slice_update_vmap,
    Concatenate: _concatenate_vmap,
    Pad: _pad_vmap,
}
