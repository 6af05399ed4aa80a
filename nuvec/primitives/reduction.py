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
from ..core.array import Array
from ..core.primitive import Primitive
from ._common import (
    Expanding,
    check_axes,
)
from .indexing import GatherAxis

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


# -- Reduce -------------------------------------------------------------------------------


def sum_dtype(d: dt.Dtype) -> dt.Dtype:
    """MLX's result dtype for sum and prod: small integers and bool widen to 32 bits."""
    if d == dt.bool_ or d in (dt.int8, dt.int16):
        return dt.int32
    if d in (dt.uint8, dt.uint16):
        return dt.uint32
    return d


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


def take_along(x: Array, idx: Array, axis: int) -> Array:
    """``take_along_axis`` through its primitive (indices of x's shape)."""
    return Array.make(GatherAxis(axis), [x, idx])
