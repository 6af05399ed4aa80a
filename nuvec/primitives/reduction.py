"""Reduction and scan primitives: Reduce(op), ArgReduce(op), Scan(op), Softmax, LogSumExp.

Every primitive here takes one input. Axes are stored normalised (non-negative, sorted), so
two equal reductions hash equal (CSE). The output dtype of ``Reduce`` is a parameter chosen by
the op (``nuvec.ops.reduction``): MLX's rules (``sum`` of int8 is int32, ...), or float32 for
the sum inside ``mean`` of a float16 array, which then rounds once.

Gradients:

- ``sum``: the cotangent broadcast back; ``prod``: zero-safe (one zero along the reduced
  axes gets the product of the others; two or more zeros give a zero gradient);
- ``max``/``min``: the cotangent is split equally between all positions equal to the
  extreme (MLX's rule); NaN extremes go to the NaN positions;
- ``argmax``/``argmin``/``all``/``any``: not differentiable (zero gradient);
- scans: ``cumsum`` is a scan the other way; ``cumprod`` zero-safe; ``cummax``/``cummin`` send
  each output's cotangent to the last position (in scan order) that reached the running
  extreme, as MLX; ``logcumsumexp`` through signed log-space scans (no overflow).
"""

from __future__ import annotations

from ..core import dtypes as dt
from ..core import shapeless
from ..core.array import Array
from ..core.primitive import Primitive
from ._common import (
    Expanding,
    arange_along,
    batched_axes,
    batched_axis,
    check_axes,
    conj,
    inverse_permutation,
    lowers,
    ops as _ops,
    zeros as _zeros,
)
from .indexing import GatherAxis, ScatterAxis
from .misc import StopGradient
from .shape import Broadcast, ExpandDims

REDUCE_OPS = ("sum", "prod", "max", "min", "all", "any")
SCAN_OPS = {
    "sum": "cumsum",
    "prod": "cumprod",
    "max": "cummax",
    "min": "cummin",
    "logaddexp": "logcumsumexp",
}


# -- shared helpers -----------------------------------------------------------------------


def kept_shape(shape: tuple, axes: tuple) -> tuple:
    """``shape`` with the reduced ``axes`` set to 1 (the keepdims shape)."""
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def reduced_shape(shape: tuple, axes: tuple, keepdims: bool) -> tuple:
    if keepdims:
        return kept_shape(shape, axes)
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _keep(y: Array, shape: tuple, axes: tuple, keepdims: bool) -> Array:
    """A reduction's result reshaped to the keepdims shape of an input of ``shape`` (under a
    shapeless trace with its axes inserted instead, which holds no traced size)."""
    if keepdims:
        return y
    if shapeless.relative(y):
        return Array.make(ExpandDims(tuple(sorted(axes))), [y])
    return _ops().reshape(y, kept_shape(shape, axes))


def _expand(y: Array, x: Array, axes: tuple, keepdims: bool) -> Array:
    """A reduction's result broadcast back to the shape of its input ``x`` (under a shapeless
    trace against ``x``, so at each replay's shape)."""
    kept = _keep(y, x._shape, axes, keepdims)
    if shapeless.relative(x) or shapeless.relative(y):
        return _ops().broadcast_arrays(kept, x)[0]
    return _ops().broadcast_to(kept, x._shape)


# -- Reduce -------------------------------------------------------------------------------


class Reduce(Primitive):
    """``op`` in sum, prod, max, min, all, any over ``axes``; the result has ``dtype``
    (float16/bfloat16 sums and products accumulate in float32 and round once)."""

    __slots__ = ("op", "axes", "keepdims", "dtype")

    def __init__(self, op: str, axes: tuple, keepdims: bool, dtype: dt.Dtype) -> None:
        if op not in REDUCE_OPS:
            raise ValueError(f"Reduce: unknown op {op!r}")
        self.op = op
        self.axes = tuple(axes)
        self.keepdims = bool(keepdims)
        self.dtype = dtype

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.op

    @property
    def params(self) -> tuple:
        return (self.op, self.axes, self.keepdims, self.dtype.name)

    @property
    def differentiable(self) -> bool:  # type: ignore[override]
        return self.op not in ("all", "any") and self.dtype.kind in "fciu"

    def infer(self, inputs):
        (x,) = inputs
        check_axes(self.op, self.axes, x.ndim)
        if self.op in ("max", "min"):
            for ax in self.axes:
                if x._shape[ax] == 0:
                    raise ValueError(
                        f"{self.op}: cannot reduce over axis {ax} of size 0 (shape {x._shape})"
                    )
        return [(reduced_shape(x._shape, self.axes, self.keepdims), self.dtype)]

    def _same(self, x: Array, keepdims: bool | None = None, op: str | None = None) -> Array:
        k = self.keepdims if keepdims is None else keepdims
        o = op or self.op
        d = self.dtype if o == self.op else x._dtype
        return Array.make(Reduce(o, self.axes, k, d), [x])

    def vjp(self, primals, cotangents, argnums, outputs):
        ops = _ops()
        x, g, y = primals[0], cotangents[0], outputs[0]
        if not self.differentiable or x._dtype.kind not in "fciu":
            return [ops.zeros_like(x)]
        axes, kd, shape = self.axes, self.keepdims, x._shape
        g = ops.astype(g, x._dtype)
        if self.op == "sum":
            return [_expand(g, x, axes, kd)]
        if self.op == "prod":
            gk = _keep(g, shape, axes, kd)
            return [ops.multiply(gk, _prod_partials(conj(x), axes))]
        # max / min: split equally between the positions that reach the extreme
        mask = _extreme_mask(x, _keep(ops.astype(y, x._dtype), shape, axes, kd))
        cnt = Array.make(Reduce("sum", axes, True, x._dtype), [mask])
        return [ops.divide(ops.multiply(mask, _keep(g, shape, axes, kd)), cnt)]

    def jvp(self, primals, tangents, argnums):
        ops = _ops()
        x, t = primals[0], tangents[0]
        if not self.differentiable:
            return [_zeros(reduced_shape(x._shape, self.axes, self.keepdims), self.dtype)]
        if self.op == "sum":
            return [self._same(t)]
        if self.op == "prod":
            w = ops.multiply(t, _prod_partials(x, self.axes))
            return [self._same(w, op="sum")]
        y = Array.make(Reduce(self.op, self.axes, True, x._dtype), [x])
        mask = _extreme_mask(x, y)
        s = Array.make(Reduce("sum", self.axes, self.keepdims, x._dtype), [ops.multiply(mask, t)])
        cnt = Array.make(Reduce("sum", self.axes, self.keepdims, x._dtype), [mask])
        return [ops.astype(ops.divide(s, cnt), self.dtype)]

    def vmap(self, inputs, axes):
        (x,), (b,) = inputs, axes
        if b is None:
            return [Array.make(self, [x])], [None]
        new = Reduce(self.op, batched_axes(self.axes, b), self.keepdims, self.dtype)
        out_b = b if self.keepdims else b - sum(1 for a in self.axes if a < b)
        return [Array.make(new, [x])], [out_b]


def _extreme_mask(x: Array, yk: Array) -> Array:
    """1 where ``x`` equals its (broadcast) extreme ``yk`` (NaN counts as equal to NaN)."""
    ops = _ops()
    m = ops.equal(x, yk)
    if x._dtype.kind == "f":
        m = ops.logical_or(m, ops.logical_and(ops.isnan(x), ops.isnan(yk)))
    return ops.astype(m, x._dtype)


def _prod_partials(x: Array, axes: tuple) -> Array:
    """d prod(x, axes) / dx: the product of the other elements, as the product of an exclusive
    cumulative product from each side (no division, so zeros need no special case)."""
    ops = _ops()
    axes = sorted(axes)
    if not axes:
        return ops.ones_like(x)
    if len(axes) == 1:
        a = axes[0]
        return ops.multiply(
            ops.cumprod(x, a, inclusive=False), ops.cumprod(x, a, reverse=True, inclusive=False)
        )
    keep = [i for i in range(x.ndim) if i not in axes]
    perm = keep + axes
    xt = ops.transpose(x, perm)
    n = 1
    for a in axes:
        n *= x._shape[a]
    flat = ops.reshape(xt, xt._shape[: len(keep)] + (n,))
    others = ops.multiply(
        ops.cumprod(flat, -1, inclusive=False), ops.cumprod(flat, -1, reverse=True, inclusive=False)
    )
    return ops.transpose(ops.reshape(others, xt._shape), inverse_permutation(perm))


# -- ArgReduce ----------------------------------------------------------------------------


class NumberOfElements(Primitive):
    """How many elements of input 0 lie along ``axes``, less ``ddof`` (at least 0), as a 0-d
    array of ``dtype``: the normaliser of mean, var and std under a shapeless trace, read from
    the input's shape at each call (MLX's NumberOfElements)."""

    __slots__ = ("axes", "ddof", "dtype")
    name = "number_of_elements"
    differentiable = False

    def __init__(self, axes: tuple[int, ...], ddof: int, dtype) -> None:
        self.axes, self.ddof, self.dtype = tuple(axes), int(ddof), dtype

    @property
    def params(self) -> tuple:
        return (self.axes, self.ddof, self.dtype)

    def count(self, shape) -> int:
        n = 1
        for ax in self.axes:
            n *= shape[ax]
        n -= self.ddof
        return n if n > 0 else 0

    def infer(self, inputs):
        check_axes("number_of_elements", self.axes, inputs[0].ndim)
        return [((), self.dtype)]

    def vjp(self, primals, cotangents, argnums, outputs):
        return [_zeros(p.shape, p.dtype) for p in (primals[i] for i in argnums)]

    def jvp(self, primals, tangents, argnums):
        return [_zeros((), self.dtype)]

    def vmap(self, inputs, axes):
        (x,), (ax,) = inputs, axes
        if ax is None:
            return [Array.make(self, inputs)], [None]
        x = _ops().moveaxis(x, ax, 0)
        n = Array.make(
            NumberOfElements(tuple(a + 1 for a in self.axes), self.ddof, self.dtype), [x]
        )
        return [_ops().broadcast_to(n, (x.shape[0],))], [0]


class ArgReduce(Primitive):
    """Index (uint32) of the first maximum/minimum along ``axis``; NaN counts as the extreme."""

    __slots__ = ("op", "axis", "keepdims")
    differentiable = False

    def __init__(self, op: str, axis: int, keepdims: bool) -> None:
        if op not in ("argmax", "argmin"):
            raise ValueError(f"ArgReduce: unknown op {op!r}")
        self.op = op
        self.axis = int(axis)
        self.keepdims = bool(keepdims)

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.op

    @property
    def params(self) -> tuple:
        return (self.op, self.axis, self.keepdims)

    def infer(self, inputs):
        (x,) = inputs
        check_axes(self.op, (self.axis,), x.ndim)
        if x._shape[self.axis] == 0:
            raise ValueError(
                f"{self.op}: cannot reduce over axis {self.axis} of size 0 (shape {x._shape})"
            )
        return [(reduced_shape(x._shape, (self.axis,), self.keepdims), dt.uint32)]

    def vjp(self, primals, cotangents, argnums, outputs):
        return [_ops().zeros_like(primals[0])]

    def jvp(self, primals, tangents, argnums):
        x = primals[0]
        return [_zeros(reduced_shape(x._shape, (self.axis,), self.keepdims), dt.uint32)]

    def vmap(self, inputs, axes):
        (x,), (b,) = inputs, axes
        if b is None:
            return [Array.make(self, [x])], [None]
        ax = batched_axis(self.axis, b)
        out_b = b if self.keepdims or self.axis >= b else b - 1
        return [Array.make(ArgReduce(self.op, ax, self.keepdims), [x])], [out_b]


# -- Softmax and LogSumExp ----------------------------------------------------------------


class Softmax(Primitive):
    """``exp(x - max) / sum(exp(x - max))`` over ``axes`` (float inputs; float16/bfloat16
    computed in float32 and rounded once, whatever ``precise`` says)."""

    __slots__ = ("axes", "precise")
    name = "softmax"

    def __init__(self, axes: tuple, precise: bool = False) -> None:
        self.axes = tuple(axes)
        self.precise = bool(precise)

    @property
    def params(self) -> tuple:
        return (self.axes, self.precise)

    def infer(self, inputs):
        (x,) = inputs
        check_axes("softmax", self.axes, x.ndim)
        if x._dtype.kind != "f":
            raise TypeError(f"softmax: expects a floating-point input, got {x._dtype.name}")
        return [(x._shape, x._dtype)]

    def vjp(self, primals, cotangents, argnums, outputs):
        return [softmax_product(outputs[0], cotangents[0], self.axes)]

    def jvp(self, primals, tangents, argnums):
        return [softmax_product(Array.make(self, primals), tangents[0], self.axes)]

    def vmap(self, inputs, axes):
        (x,), (b,) = inputs, axes
        if b is None:
            return [Array.make(self, [x])], [None]
        return [Array.make(Softmax(batched_axes(self.axes, b), self.precise), [x])], [b]


def softmax_product(y: Array, g: Array, axes: tuple, scale: float = 1.0) -> Array:
    """``(g * y - y * sum(g * y)) * scale`` over ``axes``: the softmax's vjp and jvp (``y``
    its output); one pass per row (``SoftmaxProduct``) along the last axis where the backend
    lowers it, same bits."""
    if tuple(axes) == (y.ndim - 1,):
        prim = SoftmaxProduct(scale)
        if lowers(prim, [y, g]):
            return Array.make(prim, [y, g])
    return SoftmaxProduct.composite(y, g, axes, scale)


class SoftmaxProduct(Expanding):
    """``(g * y - y * sum(g * y, -1)) * scale`` for a softmax output ``y`` (float32 / float64,
    the last axis; no scaling when ``scale`` is 1): the CPU runs it as one pass per row with
    the bits of the composite form."""

    __slots__ = ("scale",)
    name = "softmax_product"

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = float(scale)

    @property
    def params(self) -> tuple:
        return (self.scale,)

    def infer(self, inputs):
        return [(inputs[0]._shape, inputs[0]._dtype)]

    @staticmethod
    def composite(y: Array, g: Array, axes: tuple, scale: float = 1.0) -> Array:
        ops = _ops()
        gy = ops.multiply(g, y)
        s = Array.make(Reduce("sum", tuple(axes), True, y._dtype), [gy])
        p = ops.subtract(gy, ops.multiply(y, s))
        return p if scale == 1.0 else ops.multiply(p, scale)

    def expand(self, inputs) -> list:
        y, g = inputs
        return [self.composite(y, g, (y.ndim - 1,), self.scale)]


class ScaledSoftmax(Expanding):
    """``softmax(x * scale + mask)`` over the last axis (attention's weights; ``mask``, if
    given, additive and broadcast to ``x``, with ``x``'s last dimension): one pass per row on
    the CPU, float32. Its gradients are ``SoftmaxProduct``s, scaled for ``x``."""

    __slots__ = ("scale", "has_mask")
    name = "scaled_softmax"

    def __init__(self, scale: float, has_mask: bool) -> None:
        self.scale = float(scale)
        self.has_mask = bool(has_mask)

    @property
    def params(self) -> tuple:
        return (self.scale, self.has_mask)

    def infer(self, inputs):
        return [(inputs[0]._shape, inputs[0]._dtype)]

    def expand(self, inputs) -> list:
        ops = _ops()
        t = ops.multiply(inputs[0], self.scale)
        if self.has_mask:
            t = ops.add(t, inputs[1])
        return [Array.make(Softmax((inputs[0].ndim - 1,)), [t])]

    def vjp(self, primals, cotangents, argnums, outputs):
        y, g = outputs[0], cotangents[0]
        axes = (y.ndim - 1,)
        out = []
        for i in argnums:
            if i == 0:
                out.append(softmax_product(y, g, axes, self.scale))
            else:  # the mask: its broadcast's rule reduces it
                p = softmax_product(y, g, axes)
                out.append(Broadcast(y.shape).vjp([primals[1]], [p], [0], [p])[0])
        return out

    def jvp(self, primals, tangents, argnums):
        ops = _ops()
        y = Array.make(self, primals)
        t = None
        for i, tan in zip(argnums, tangents):
            part = ops.multiply(tan, self.scale) if i == 0 else ops.broadcast_to(tan, y.shape)
            t = part if t is None else ops.add(t, part)
        return [softmax_product(y, t, (y.ndim - 1,))]


class LogSumExp(Primitive):
    """``log(sum(exp(x)))`` over ``axes``, computed with the maximum taken out (float
    inputs; float16/bfloat16 in float32, rounded once; an empty reduction gives -inf)."""

    __slots__ = ("axes", "keepdims")
    name = "logsumexp"

    def __init__(self, axes: tuple, keepdims: bool = False) -> None:
        self.axes = tuple(axes)
        self.keepdims = bool(keepdims)

    @property
    def params(self) -> tuple:
        return (self.axes, self.keepdims)

    def infer(self, inputs):
        (x,) = inputs
        check_axes("logsumexp", self.axes, x.ndim)
        if x._dtype.kind != "f":
            raise TypeError(f"logsumexp: expects a floating-point input, got {x._dtype.name}")
        return [(reduced_shape(x._shape, self.axes, self.keepdims), x._dtype)]

    def _weights(self, x: Array, y: Array) -> Array:
        ops = _ops()
        return ops.exp(ops.subtract(x, _keep(y, x._shape, self.axes, self.keepdims)))

    def vjp(self, primals, cotangents, argnums, outputs):
        ops = _ops()
        x, g, y = primals[0], cotangents[0], outputs[0]
        gk = _keep(g, x._shape, self.axes, self.keepdims)
        return [ops.multiply(gk, self._weights(x, y))]

    def jvp(self, primals, tangents, argnums):
        ops = _ops()
        x = primals[0]
        y = Array.make(self, [x])
        w = ops.multiply(tangents[0], self._weights(x, y))
        return [Array.make(Reduce("sum", self.axes, self.keepdims, x._dtype), [w])]

    def vmap(self, inputs, axes):
        (x,), (b,) = inputs, axes
        if b is None:
            return [Array.make(self, [x])], [None]
        out_b = b if self.keepdims else b - sum(1 for a in self.axes if a < b)
        return [Array.make(LogSumExp(batched_axes(self.axes, b), self.keepdims), [x])], [out_b]


# -- Scan ---------------------------------------------------------------------------------


def scan_dtype(op: str, d: dt.Dtype) -> dt.Dtype:
    """MLX: cumsum of bool is int32; every other scan keeps the dtype."""
    return dt.int32 if op == "sum" and d == dt.bool_ else d


class Scan(Primitive):
    """Inclusive or exclusive running ``op`` (sum, prod, max, min, logaddexp) along ``axis``,
    from the end when ``reverse``. Exclusive scans start from the op's identity."""

    __slots__ = ("op", "axis", "reverse", "inclusive")

    def __init__(self, op: str, axis: int, reverse: bool = False, inclusive: bool = True) -> None:
        if op not in SCAN_OPS:
            raise ValueError(f"Scan: unknown op {op!r}")
        self.op = op
        self.axis = int(axis)
        self.reverse = bool(reverse)
        self.inclusive = bool(inclusive)

    @property
    def name(self) -> str:  # type: ignore[override]
        return SCAN_OPS[self.op]

    @property
    def params(self) -> tuple:
        return (self.op, self.axis, self.reverse, self.inclusive)

    @property
    def differentiable(self) -> bool:  # type: ignore[override]
        return True

    def infer(self, inputs):
        (x,) = inputs
        check_axes(self.name, (self.axis,), x.ndim)
        if self.op == "logaddexp" and x._dtype.kind != "f":
            raise TypeError(f"logcumsumexp: expects a floating-point input, got {x._dtype.name}")
        return [(x._shape, scan_dtype(self.op, x._dtype))]

    def _scan(
        self, x: Array, op: str | None = None, reverse: bool | None = None, inclusive: bool = True
    ) -> Array:
        return Array.make(
            Scan(op or self.op, self.axis, self.reverse if reverse is None else reverse, inclusive),
            [x],
        )

    def vjp(self, primals, cotangents, argnums, outputs):
        ops = _ops()
        x, g = primals[0], cotangents[0]
        if x._dtype.kind not in "fciu":
            return [ops.zeros_like(x)]
        g = ops.astype(g, x._dtype)
        if self.op == "sum":
            return [self._scan(g, reverse=not self.reverse, inclusive=self.inclusive)]
        if not self.inclusive:
            # an exclusive scan is the inclusive one shifted by one step in scan order
            g = _shift(g, self.axis, toward_end=self.reverse)
        y = self._scan(x)
        if self.op == "prod":
            return [_cumprod_vjp(self, conj(x), g, conj(y))]
        if self.op in ("max", "min"):
            return [_cumextreme_vjp(self, x, g, y)]
        return [_logcumsumexp_vjp(self, x, g, y)]

    def jvp(self, primals, tangents, argnums):
        x, t = primals[0], tangents[0]
        if x._dtype.kind not in "fc":
            return [_zeros(x._shape, scan_dtype(self.op, x._dtype))]
        if self.op == "sum":
            return [self._scan(t, inclusive=self.inclusive)]
        y = self._scan(x)
        if self.op == "prod":
            out = _cumprod_jvp(self, x, t, y)
        elif self.op in ("max", "min"):
            out = _cumextreme_jvp(self, x, t, y)
        else:
            out = _logcumsumexp_jvp(self, x, t, y)
        if not self.inclusive:
            out = _shift(out, self.axis, toward_end=not self.reverse)
        return [out]

    def vmap(self, inputs, axes):
        (x,), (b,) = inputs, axes
        if b is None:
            return [Array.make(self, [x])], [None]
        ax = batched_axis(self.axis, b)
        return [Array.make(Scan(self.op, ax, self.reverse, self.inclusive), [x])], [b]


def _shift(x: Array, axis: int, toward_end: bool) -> Array:
    """``x`` moved one step along ``axis`` (toward the end or the start), zero-filled."""
    ops = _ops()
    from ..ops.shape import slice_axes

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


def take_along(x: Array, idx: Array, axis: int) -> Array:
    """``take_along_axis`` through its primitive (indices of x's shape)."""
    return Array.make(GatherAxis(axis), [x, idx])


def _positions(x: Array, axis: int) -> Array:
    """0, 1, ... n-1 along ``axis`` (int32), broadcast to x's shape."""
    return _ops().broadcast_to(arange_along(x._shape[axis], axis, x.ndim), x._shape)


def _cumprod_parts(s: Scan, x: Array):
    """The pieces of the zero-safe cumprod derivative: positions before the first zero (in
    scan order), the first zero, x with zeros replaced by 1, and the inclusive cumprod of x
    with its first zero replaced by 1."""
    ops = _ops()
    zero = ops.equal(x, 0)
    count = s._scan(ops.astype(zero, dt.int32), op="sum")
    before = ops.equal(count, 0)
    first = ops.logical_and(zero, ops.equal(count, 1))
    safe = ops.where(zero, 1, x)
    y2 = s._scan(ops.where(first, 1, x), op="prod")
    return before, first, safe, y2


def _cumprod_vjp(s: Scan, x, g, y):
    ops = _ops()
    before, first, safe, y2 = _cumprod_parts(s, x)
    back = not s.reverse
    term1 = ops.divide(s._scan(ops.multiply(g, y), op="sum", reverse=back), safe)
    term2 = s._scan(ops.multiply(g, y2), op="sum", reverse=back)
    return ops.where(before, term1, ops.where(first, term2, 0))


def _cumprod_jvp(s: Scan, x, t, y):
    ops = _ops()
    before, first, safe, y2 = _cumprod_parts(s, x)
    term1 = ops.multiply(y, s._scan(ops.divide(t, safe), op="sum"))
    tz = ops.sum(ops.where(first, t, 0), axis=s.axis, keepdims=True)
    return ops.where(before, term1, ops.multiply(tz, y2))


def _reach(x: Array, y: Array) -> Array:
    """Where ``x`` equals the running extreme ``y`` (NaN equal to NaN)."""
    ops = _ops()
    eq = ops.equal(x, y)
    if x._dtype.kind == "f":
        eq = ops.logical_or(eq, ops.logical_and(ops.isnan(x), ops.isnan(y)))
    return eq


def _cumextreme_owner(s: Scan, x, y):
    """For each position, the index along the axis of the element that holds the running
    extreme there (ties go to the latest element in scan order), cut from the gradient: it is
    locally constant in ``x``."""
    ops = _ops()
    ax, n = s.axis, x._shape[s.axis]
    eq = _reach(x, y)
    pos = _positions(x, ax)
    if s.reverse:
        src = s._scan(ops.where(eq, pos, n), op="min")
    else:
        src = s._scan(ops.where(eq, pos, -1), op="max")
    return Array.make(StopGradient(), [ops.clip(src, 0, n - 1)])


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


def _signed_logsum(s: Scan, w: Array, shift: Array, reverse: bool):
    """log-space running sums of the positive and negative parts of ``w`` (each term is
    ``log|w| + shift``), so that sums of exponentials never overflow."""
    ops = _ops()
    ninf = float("-inf")
    pos = ops.greater(w, 0)
    neg = ops.less(w, 0)
    lp = ops.where(pos, ops.add(ops.log(ops.where(pos, w, 1)), shift), ninf)
    ln = ops.where(neg, ops.add(ops.log(ops.where(neg, ops.negative(w), 1)), shift), ninf)
    return (
        s._scan(lp, op="logaddexp", reverse=reverse),
        s._scan(ln, op="logaddexp", reverse=reverse),
    )


def _logcumsumexp_vjp(s: Scan, x, g, y):
    ops = _ops()
    lp, ln = _signed_logsum(s, g, ops.negative(y), reverse=not s.reverse)
    return ops.subtract(ops.exp(ops.add(x, lp)), ops.exp(ops.add(x, ln)))


def _logcumsumexp_jvp(s: Scan, x, t, y):
    ops = _ops()
    lp, ln = _signed_logsum(s, t, x, reverse=s.reverse)
    return ops.subtract(ops.exp(ops.subtract(lp, y)), ops.exp(ops.subtract(ln, y)))
