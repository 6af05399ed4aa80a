"""Transform rules of the primitives of ``nuvec.primitives.reduction``."""

from __future__ import annotations

from ... import ops
from ...ops.shape import slice_axes
from ...core import dtypes as dt, shapeless
from ...core.array import Array
from ...primitives._common import batched_axes, batched_axis, inverse_permutation, lowers
from ...primitives.indexing import ScatterAxis
from ...primitives.reduction import (
    ArgReduce,
    LogSumExp,
    NumberOfElements,
    Reduce,
    ScaledSoftmax,
    Scan,
    Softmax,
    SoftmaxProduct,
    kept_shape,
    reduced_shape,
    scan_dtype,
    take_along,
)
from ...primitives.misc import StopGradient
from ...primitives.shape import Broadcast, ExpandDims
from .shape import _broadcast_vjp
from ._common import arange_along, conj, zeros as _zeros


def _keep(y: Array, shape: tuple, axes: tuple, keepdims: bool) -> Array:
    """A reduction's result reshaped to the keepdims shape of an input of ``shape`` (under a
    shapeless trace with its axes inserted instead, which holds no traced size)."""
    if keepdims:
        return y
    if shapeless.relative(y):
        return Array.make(ExpandDims(tuple(sorted(axes))), [y])
    return ops.reshape(y, kept_shape(shape, axes))


def softmax_product_composite(y: Array, g: Array, axes: tuple, scale: float = 1.0) -> Array:
    """``(g * y - y * sum(g * y, axes)) * scale`` from element-wise ops and one sum: the
    composite that ``SoftmaxProduct`` stands for (its bits)."""
    gy = ops.multiply(g, y)
    s = Array.make(Reduce("sum", tuple(axes), True, y._dtype), [gy])
    p = ops.subtract(gy, ops.multiply(y, s))
    return p if scale == 1.0 else ops.multiply(p, scale)


def _log_sum_exp_weights(prim, x: Array, y: Array) -> Array:
    return ops.exp(ops.subtract(x, _keep(y, x._shape, prim.axes, prim.keepdims)))


def _positions(x: Array, axis: int) -> Array:
    """0, 1, ... n-1 along ``axis`` (int32), broadcast to x's shape."""
    return ops.broadcast_to(arange_along(x._shape[axis], axis, x.ndim), x._shape)


def _cumprod_parts(s: Scan, x: Array):
    """The pieces of the zero-safe cumprod derivative: positions before the first zero (in
    scan order), the first zero, x with zeros replaced by 1, and the inclusive cumprod of x
    with its first zero replaced by 1."""
    zero = ops.equal(x, 0)
    count = s._scan(ops.astype(zero, dt.int32), op="sum")
    before = ops.equal(count, 0)
    first = ops.logical_and(zero, ops.equal(count, 1))
    safe = ops.where(zero, 1, x)
    y2 = s._scan(ops.where(first, 1, x), op="prod")
    return before, first, safe, y2


def _reach(x: Array, y: Array) -> Array:
    """Where ``x`` equals the running extreme ``y`` (NaN equal to NaN)."""
    eq = ops.equal(x, y)
    if x._dtype.kind == "f":
        eq = ops.logical_or(eq, ops.logical_and(ops.isnan(x), ops.isnan(y)))
    return eq


def _cumextreme_owner(s: Scan, x, y):
    """For each position, the index along the axis of the element that holds the running
    extreme there (ties go to the latest element in scan order), cut from the gradient: it is
    locally constant in ``x``."""
    ax, n = s.axis, x._shape[s.axis]
    eq = _reach(x, y)
    pos = _positions(x, ax)
    if s.reverse:
        src = s._scan(ops.where(eq, pos, n), op="min")
    else:
        src = s._scan(ops.where(eq, pos, -1), op="max")
    return Array.make(StopGradient(), [ops.clip(src, 0, n - 1)])


def _signed_logsum(s: Scan, w: Array, shift: Array, reverse: bool):
    """log-space running sums of the positive and negative parts of ``w`` (each term is
    ``log|w| + shift``), so that sums of exponentials never overflow."""
    ninf = float("-inf")
    pos = ops.greater(w, 0)
    neg = ops.less(w, 0)
    lp = ops.where(pos, ops.add(ops.log(ops.where(pos, w, 1)), shift), ninf)
    ln = ops.where(neg, ops.add(ops.log(ops.where(neg, ops.negative(w), 1)), shift), ninf)
    return (
        s._scan(lp, op="logaddexp", reverse=reverse),
        s._scan(ln, op="logaddexp", reverse=reverse),
    )


def _expand(y: Array, x: Array, axes: tuple, keepdims: bool) -> Array:
    """A reduction's result broadcast back to the shape of its input ``x`` (under a shapeless
    trace against ``x``, so at each replay's shape)."""
    kept = _keep(y, x._shape, axes, keepdims)
    if shapeless.relative(x) or shapeless.relative(y):
        return ops.broadcast_arrays(kept, x)[0]
    return ops.broadcast_to(kept, x._shape)


def _extreme_mask(x: Array, yk: Array) -> Array:
    """1 where ``x`` equals its (broadcast) extreme ``yk`` (NaN counts as equal to NaN)."""
    m = ops.equal(x, yk)
    if x._dtype.kind == "f":
        m = ops.logical_or(m, ops.logical_and(ops.isnan(x), ops.isnan(yk)))
    return ops.astype(m, x._dtype)


def _prod_partials(x: Array, axes: tuple) -> Array:
    """d prod(x, axes) / dx: the product of the other elements, as the product of an exclusive
    cumulative product from each side (no division, so zeros need no special case)."""
    order = sorted(axes)
    if not order:
        return ops.ones_like(x)
    if len(order) == 1:
        a = order[0]
        return ops.multiply(
            ops.cumprod(x, a, inclusive=False), ops.cumprod(x, a, reverse=True, inclusive=False)
        )
    keep = [i for i in range(x.ndim) if i not in order]
    perm = keep + order
    xt = ops.transpose(x, perm)
    n = 1
    for a in order:
        n *= x._shape[a]
    flat = ops.reshape(xt, xt._shape[: len(keep)] + (n,))
    others = ops.multiply(
        ops.cumprod(flat, -1, inclusive=False), ops.cumprod(flat, -1, reverse=True, inclusive=False)
    )
    return ops.transpose(ops.reshape(others, xt._shape), inverse_permutation(perm))


def softmax_product(y: Array, g: Array, axes: tuple, scale: float = 1.0) -> Array:
    """``(g * y - y * sum(g * y)) * scale`` over ``axes``: the softmax's vjp and jvp (``y``
    its output); one pass per row (``SoftmaxProduct``) along the last axis where the backend
    lowers it, same bits."""
    if tuple(axes) == (y.ndim - 1,):
        prim = SoftmaxProduct(scale)
        if lowers(prim, [y, g]):
            return Array.make(prim, [y, g])
    return softmax_product_composite(y, g, axes, scale)


def _shift(x: Array, axis: int, toward_end: bool) -> Array:
    """``x`` moved one step along ``axis`` (toward the end or the start), zero-filled."""
    n = x._shape[axis]
    if n == 0:
        return x
    pad_shape = x._shape[:axis] + (1,) + x._shape[axis + 1 :]
    z = ops.zeros(pad_shape, x._dtype)
    start, stop = [0] * x.ndim, list(x._shape)
    if toward_end:
        stop[axis] = n - 1
        return ops.concatenate([z, slice_axes(x, start, stop, [1] * x.ndim)], axis=axis)
    start[axis] = 1
    return ops.concatenate([slice_axes(x, start, stop, [1] * x.ndim), z], axis=axis)


def _cumprod_vjp(s: Scan, x, g, y):
    before, first, safe, y2 = _cumprod_parts(s, x)
    back = not s.reverse
    term1 = ops.divide(s._scan(ops.multiply(g, y), op="sum", reverse=back), safe)
    term2 = s._scan(ops.multiply(g, y2), op="sum", reverse=back)
    return ops.where(before, term1, ops.where(first, term2, 0))


def _cumprod_jvp(s: Scan, x, t, y):
    before, first, safe, y2 = _cumprod_parts(s, x)
    term1 = ops.multiply(y, s._scan(ops.divide(t, safe), op="sum"))
    tz = ops.sum(ops.where(first, t, 0), axis=s.axis, keepdims=True)
    return ops.where(before, term1, ops.multiply(tz, y2))


def _cumextreme_vjp(s: Scan, x, g, y):
    """Each output's cotangent is added into the element that holds the running extreme
    there. A scatter-add sums each element's cotangents by themselves (a difference of
    running sums would lose the small ones next to large ones)."""
    if x._shape[s.axis] == 0:
        return g
    owner = _cumextreme_owner(s, x, y)
    return Array.make(ScatterAxis(s.axis, "add"), [_zeros(x._shape, g._dtype), owner, g])


def _cumextreme_jvp(s: Scan, x, t, y):
    if x._shape[s.axis] == 0:
        return t
    return take_along(t, _cumextreme_owner(s, x, y), s.axis)


def _logcumsumexp_vjp(s: Scan, x, g, y):
    lp, ln = _signed_logsum(s, g, ops.negative(y), reverse=not s.reverse)
    return ops.subtract(ops.exp(ops.add(x, lp)), ops.exp(ops.add(x, ln)))


def _logcumsumexp_jvp(s: Scan, x, t, y):
    lp, ln = _signed_logsum(s, t, x, reverse=s.reverse)
    return ops.subtract(ops.exp(ops.subtract(lp, y)), ops.exp(ops.subtract(ln, y)))


def _reduce_vjp(prim, primals, cotangents, argnums, outputs):
    x, g, y = primals[0], cotangents[0], outputs[0]
    if not prim.differentiable or x._dtype.kind not in "fciu":
        return [ops.zeros_like(x)]
    axes, kd, shape = prim.axes, prim.keepdims, x._shape
    g = ops.astype(g, x._dtype)
    if prim.op == "sum":
        return [_expand(g, x, axes, kd)]
    if prim.op == "prod":
        gk = _keep(g, shape, axes, kd)
        return [ops.multiply(gk, _prod_partials(conj(x), axes))]
    # max / min: split equally between the positions that reach the extreme
    mask = _extreme_mask(x, _keep(ops.astype(y, x._dtype), shape, axes, kd))
    cnt = Array.make(Reduce("sum", axes, True, x._dtype), [mask])
    return [ops.divide(ops.multiply(mask, _keep(g, shape, axes, kd)), cnt)]


def _reduce_jvp(prim, primals, tangents, argnums):
    x, t = primals[0], tangents[0]
    if not prim.differentiable:
        return [_zeros(reduced_shape(x._shape, prim.axes, prim.keepdims), prim.dtype)]
    if prim.op == "sum":
        return [prim._same(t)]
    if prim.op == "prod":
        w = ops.multiply(t, _prod_partials(x, prim.axes))
        return [prim._same(w, op="sum")]
    y = Array.make(Reduce(prim.op, prim.axes, True, x._dtype), [x])
    mask = _extreme_mask(x, y)
    s = Array.make(Reduce("sum", prim.axes, prim.keepdims, x._dtype), [ops.multiply(mask, t)])
    cnt = Array.make(Reduce("sum", prim.axes, prim.keepdims, x._dtype), [mask])
    return [ops.astype(ops.divide(s, cnt), prim.dtype)]


def _reduce_vmap(prim, inputs, axes):
    (x,), (b,) = inputs, axes
    if b is None:
        return [Array.make(prim, [x])], [None]
    new = Reduce(prim.op, batched_axes(prim.axes, b), prim.keepdims, prim.dtype)
    out_b = b if prim.keepdims else b - sum(1 for a in prim.axes if a < b)
    return [Array.make(new, [x])], [out_b]


def _number_of_elements_vjp(prim, primals, cotangents, argnums, outputs):
    return [_zeros(p.shape, p.dtype) for p in (primals[i] for i in argnums)]


def _number_of_elements_jvp(prim, primals, tangents, argnums):
    return [_zeros((), prim.dtype)]


def _number_of_elements_vmap(prim, inputs, axes):
    (x,), (ax,) = inputs, axes
    if ax is None:
        return [Array.make(prim, inputs)], [None]
    x = ops.moveaxis(x, ax, 0)
    n = Array.make(NumberOfElements(tuple(a + 1 for a in prim.axes), prim.ddof, prim.dtype), [x])
    return [ops.broadcast_to(n, (x.shape[0],))], [0]


def _arg_reduce_vjp(prim, primals, cotangents, argnums, outputs):
    return [ops.zeros_like(primals[0])]


def _arg_reduce_jvp(prim, primals, tangents, argnums):
    x = primals[0]
    return [_zeros(reduced_shape(x._shape, (prim.axis,), prim.keepdims), dt.uint32)]


def _arg_reduce_vmap(prim, inputs, axes):
    (x,), (b,) = inputs, axes
    if b is None:
        return [Array.make(prim, [x])], [None]
    ax = batched_axis(prim.axis, b)
    out_b = b if prim.keepdims or prim.axis >= b else b - 1
    return [Array.make(ArgReduce(prim.op, ax, prim.keepdims), [x])], [out_b]


def _softmax_vjp(prim, primals, cotangents, argnums, outputs):
    return [softmax_product(outputs[0], cotangents[0], prim.axes)]


def _softmax_jvp(prim, primals, tangents, argnums):
    return [softmax_product(Array.make(prim, primals), tangents[0], prim.axes)]


def _softmax_vmap(prim, inputs, axes):
    (x,), (b,) = inputs, axes
    if b is None:
        return [Array.make(prim, [x])], [None]
    return [Array.make(Softmax(batched_axes(prim.axes, b), prim.precise), [x])], [b]


def _softmax_product_expand(prim, inputs) -> list:
    y, g = inputs
    return [softmax_product_composite(y, g, (y.ndim - 1,), prim.scale)]


def _scaled_softmax_expand(prim, inputs) -> list:
    t = ops.multiply(inputs[0], prim.scale)
    if prim.has_mask:
        t = ops.add(t, inputs[1])
    return [Array.make(Softmax((inputs[0].ndim - 1,)), [t])]


def _scaled_softmax_vjp(prim, primals, cotangents, argnums, outputs):
    y, g = outputs[0], cotangents[0]
    axes = (y.ndim - 1,)
    out = []
    for i in argnums:
        if i == 0:
            out.append(softmax_product(y, g, axes, prim.scale))
        else:  # the mask: its broadcast's rule reduces it
            p = softmax_product(y, g, axes)
            out.append(_broadcast_vjp(Broadcast(y.shape), [primals[1]], [p], [0], [p])[0])
    return out


def _scaled_softmax_jvp(prim, primals, tangents, argnums):
    y = Array.make(prim, primals)
    t = None
    for i, tan in zip(argnums, tangents):
        part = ops.multiply(tan, prim.scale) if i == 0 else ops.broadcast_to(tan, y.shape)
        t = part if t is None else ops.add(t, part)
    return [softmax_product(y, t, (y.ndim - 1,))]


def _log_sum_exp_vjp(prim, primals, cotangents, argnums, outputs):
    x, g, y = primals[0], cotangents[0], outputs[0]
    gk = _keep(g, x._shape, prim.axes, prim.keepdims)
    return [ops.multiply(gk, _log_sum_exp_weights(prim, x, y))]


def _log_sum_exp_jvp(prim, primals, tangents, argnums):
    x = primals[0]
    y = Array.make(prim, [x])
    w = ops.multiply(tangents[0], _log_sum_exp_weights(prim, x, y))
    return [Array.make(Reduce("sum", prim.axes, prim.keepdims, x._dtype), [w])]


def _log_sum_exp_vmap(prim, inputs, axes):
    (x,), (b,) = inputs, axes
    if b is None:
        return [Array.make(prim, [x])], [None]
    out_b = b if prim.keepdims else b - sum(1 for a in prim.axes if a < b)
    return [Array.make(LogSumExp(batched_axes(prim.axes, b), prim.keepdims), [x])], [out_b]


def _scan_vjp(prim, primals, cotangents, argnums, outputs):
    x, g = primals[0], cotangents[0]
    if x._dtype.kind not in "fciu":
        return [ops.zeros_like(x)]
    g = ops.astype(g, x._dtype)
    if prim.op == "sum":
        return [prim._scan(g, reverse=not prim.reverse, inclusive=prim.inclusive)]
    if not prim.inclusive:
        # an exclusive scan is the inclusive one shifted by one step in scan order
        g = _shift(g, prim.axis, toward_end=prim.reverse)
    y = prim._scan(x)
    if prim.op == "prod":
        return [_cumprod_vjp(prim, conj(x), g, conj(y))]
    if prim.op in ("max", "min"):
        return [_cumextreme_vjp(prim, x, g, y)]
    return [_logcumsumexp_vjp(prim, x, g, y)]


def _scan_jvp(prim, primals, tangents, argnums):
    x, t = primals[0], tangents[0]
    if x._dtype.kind not in "fc":
        return [_zeros(x._shape, scan_dtype(prim.op, x._dtype))]
    if prim.op == "sum":
        return [prim._scan(t, inclusive=prim.inclusive)]
    y = prim._scan(x)
    if prim.op == "prod":
        out = _cumprod_jvp(prim, x, t, y)
    elif prim.op in ("max", "min"):
        out = _cumextreme_jvp(prim, x, t, y)
    else:
        out = _logcumsumexp_jvp(prim, x, t, y)
    if not prim.inclusive:
        out = _shift(out, prim.axis, toward_end=not prim.reverse)
    return [out]


def _scan_vmap(prim, inputs, axes):
    (x,), (b,) = inputs, axes
    if b is None:
        return [Array.make(prim, [x])], [None]
    ax = batched_axis(prim.axis, b)
    return [Array.make(Scan(prim.op, ax, prim.reverse, prim.inclusive), [x])], [b]


VJP = {
    Reduce: _reduce_vjp,
    NumberOfElements: _number_of_elements_vjp,
    ArgReduce: _arg_reduce_vjp,
    Softmax: _softmax_vjp,
    ScaledSoftmax: _scaled_softmax_vjp,
    LogSumExp: _log_sum_exp_vjp,
    Scan: _scan_vjp,
}
JVP = {
    Reduce: _reduce_jvp,
    NumberOfElements: _number_of_elements_jvp,
    ArgReduce: _arg_reduce_jvp,
    Softmax: _softmax_jvp,
    ScaledSoftmax: _scaled_softmax_jvp,
    LogSumExp: _log_sum_exp_jvp,
    Scan: _scan_jvp,
}
VMAP = {
    Reduce: _reduce_vmap,
    NumberOfElements: _number_of_elements_vmap,
    ArgReduce: _arg_reduce_vmap,
    Softmax: _softmax_vmap,
    LogSumExp: _log_sum_exp_vmap,
    Scan: _scan_vmap,
}
EXPAND = {
    SoftmaxProduct: _softmax_product_expand,
    ScaledSoftmax: _scaled_softmax_expand,
}
