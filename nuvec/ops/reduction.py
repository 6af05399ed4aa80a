"""Reductions, scans and softmax (MLX semantics and dtypes).

``axis`` is an int, a sequence of ints or None (all axes); ``keepdims`` keeps reduced axes
with size 1. Result dtypes follow MLX: ``sum``/``prod`` of bool, int8 and int16 give int32,
of uint8 and uint16 uint32; ``mean``/``var``/``std``/``logsumexp`` of integers give float32;
``argmax``/``argmin`` give uint32. float16/bfloat16 reductions accumulate in float32 and round
once.

>>> import nuvec as nv
>>> x = nv.array([[1, 2], [3, 4]])
>>> nv.sum(x, axis=0).tolist(), nv.mean(x).item()
([4, 6], 2.5)
>>> nv.cumsum(x, axis=1, reverse=True).tolist()
[[3, 2], [7, 4]]
"""

from __future__ import annotations

import numbers
from typing import Sequence

from ..core import dtypes as dt
from ..core import shapeless
from ..core.array import Array
from ..core.device import resolve_stream
from ..primitives.reduction import (
    ArgReduce,
    LogSumExp,
    NumberOfElements,
    Reduce,
    Scan,
    Softmax,
    sum_dtype,
)
from ._common import as_array, normalize_axes, normalize_axis
from .elementwise import (
    astype,
    conjugate,
    divide,
    exp,
    log,
    multiply,
    not_equal,
    real,
    sqrt,
    stop_gradient,
    subtract,
)
from .shape import reshape

Axis = int | Sequence[int] | None


def reduction_axes(axis: Axis, ndim: int, name: str) -> tuple[int, ...]:
    """Sorted, normalised axes (all of them for None); repeated axes are an error."""
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is int:  # the common case, before the abstract-class check
        if -ndim <= axis < ndim:
            return (axis % ndim,)
        return (normalize_axis(axis, ndim, name),)  # its error
    if isinstance(axis, numbers.Integral) and not isinstance(axis, bool):
        return (normalize_axis(axis, ndim, name),)
    try:
        items = list(axis)  # type: ignore[arg-type]  # a sequence, or the TypeError below
    except TypeError:
        raise TypeError(
            f"{name}: axis must be an int, a sequence of ints or None, got {type(axis).__name__}"
        ) from None
    return tuple(sorted(normalize_axes(items, ndim, name)))


def _float_dtype(d: dt.Dtype) -> dt.Dtype:
    return d if d.kind in "fc" else dt.float32


def _make(prim, x: Array, stream) -> Array:
    return Array.make(prim, [x], resolve_stream(stream))


def _reduce(op: str, a, axis: Axis, keepdims: bool, stream, out_dtype=None) -> Array:
    a = as_array(a, op)
    axes = reduction_axes(axis, a.ndim, op)
    d = (
        out_dtype
        if out_dtype is not None
        else (
            sum_dtype(a._dtype)
            if op in ("sum", "prod")
            else dt.bool_
            if op in ("all", "any")
            else a._dtype
        )
    )
    if not axes:
        if op in ("all", "any") and a._dtype != dt.bool_:
            return not_equal(a, 0, stream=stream)
        return astype(a, d, stream=stream)
    return _make(Reduce(op, axes, keepdims, d), a, stream)


def sum(a, /, axis: Axis = None, keepdims: bool = False, *, stream=None) -> Array:
    """Sum over ``axis``.

    >>> import nuvec as nv
    >>> nv.sum(nv.array([[1, 2], [3, 4]]), axis=1).tolist()
    [3, 7]
    """
    return _reduce("sum", a, axis, keepdims, stream)


def prod(a, /, axis: Axis = None, keepdims: bool = False, *, stream=None) -> Array:
    """Product over ``axis`` (``nv.prod(nv.array([2, 3])).item() == 6``)."""
    return _reduce("prod", a, axis, keepdims, stream)


def max(a, /, axis: Axis = None, keepdims: bool = False, *, stream=None) -> Array:
    """Maximum over ``axis`` (NaN propagates; reducing an empty axis is an error)."""
    return _reduce("max", a, axis, keepdims, stream)


def min(a, /, axis: Axis = None, keepdims: bool = False, *, stream=None) -> Array:
    """Minimum over ``axis`` (NaN propagates; reducing an empty axis is an error)."""
    return _reduce("min", a, axis, keepdims, stream)


def all(a, /, axis: Axis = None, keepdims: bool = False, *, stream=None) -> Array:
    """True where every element over ``axis`` is non-zero (bool result)."""
    return _reduce("all", a, axis, keepdims, stream)


def any(a, /, axis: Axis = None, keepdims: bool = False, *, stream=None) -> Array:
    """True where some element over ``axis`` is non-zero (bool result)."""
    return _reduce("any", a, axis, keepdims, stream)


def _count(a: Array, axes, ddof: int = 0, dtype=dt.float32):
    """The element count of ``a`` along ``axes`` less ``ddof`` (at least 0): a Python int, or
    under a shapeless trace a node that reads it from the shape at each replay."""
    if shapeless.relative(a):
        return Array.make(NumberOfElements(axes, ddof, dtype), [a])
    n = 1
    for ax in axes:
        n *= a._shape[ax]
    n -= int(ddof)
    return n if n > 0 else 0


def mean(a, /, axis: Axis = None, keepdims: bool = False, *, stream=None) -> Array:
    """Mean over ``axis``; integers give float32, float16/bfloat16 are summed in float32.

    >>> import nuvec as nv
    >>> nv.mean(nv.array([1, 2, 4]), axis=0).item()
    2.3333332538604736
    """

    a = as_array(a, "mean")
    axes = reduction_axes(axis, a.ndim, "mean")
    out = _float_dtype(a._dtype)
    acc = dt.float32 if out in (dt.float16, dt.bfloat16) else out
    s = _reduce("sum", a, axes, keepdims, None, out_dtype=acc)
    return astype(divide(s, _count(a, axes, dtype=acc), stream=stream), out, stream=stream)


def var(a, /, axis: Axis = None, keepdims: bool = False, ddof: int = 0, *, stream=None) -> Array:
    """Variance over ``axis`` with ``ddof`` delta degrees of freedom (MLX: ``ddof`` at least
    the count gives inf, or NaN for a zero sum of squares). Complex inputs give float32.

    >>> import nuvec as nv
    >>> nv.var(nv.array([1.0, 2.0, 4.0]), ddof=1).item()  # NumPy's float32 result
    2.3333334922790527
    """
    return _var(a, axis, keepdims, ddof, "var", stream)


def _var(a, axis: Axis, keepdims: bool, ddof: int, name: str, stream) -> Array:

    a = as_array(a, name)
    axes = reduction_axes(axis, a.ndim, name)
    out = a._dtype if a._dtype.kind == "f" else dt.float32
    work = (
        dt.float32
        if a._dtype.kind not in "fc" or a._dtype in (dt.float16, dt.bfloat16)
        else a._dtype
    )
    x = astype(a, work)
    d = subtract(x, mean(x, axes, keepdims=True))
    sq = real(multiply(d, conjugate(d))) if work.kind == "c" else multiply(d, d)
    v = divide(sum(sq, axes, keepdims), _count(a, axes, ddof, sq._dtype))
    return astype(v, out, stream=stream)


def std(a, /, axis: Axis = None, keepdims: bool = False, ddof: int = 0, *, stream=None) -> Array:
    """Standard deviation over ``axis`` (the square root of ``var``)."""

    return sqrt(_var(a, axis, keepdims, ddof, "std", None), stream=stream)


def _float_input(a, name: str) -> Array:

    a = as_array(a, name)
    if a._dtype.kind == "c":
        raise TypeError(f"{name}: complex inputs are not supported")
    return a if a._dtype.kind == "f" else astype(a, dt.float32)


def logsumexp(a, /, axis: Axis = None, keepdims: bool = False, *, stream=None) -> Array:
    """``log(sum(exp(a), axis))`` computed stably (integers give float32).

    >>> import nuvec as nv
    >>> round(nv.logsumexp(nv.array([0.0, 0.0])).item(), 6)
    0.693147
    """
    a = _float_input(a, "logsumexp")
    axes = reduction_axes(axis, a.ndim, "logsumexp")
    if not axes:
        return a
    return _make(LogSumExp(axes, keepdims), a, stream)


def softmax(a, /, axis: Axis = None, *, precise: bool = False, stream=None) -> Array:
    """``exp(a) / sum(exp(a))`` over ``axis`` (all axes when None, as MLX), computed with the
    maximum subtracted. Integers give float32. float16/bfloat16 are always computed in
    float32 and rounded once (``precise`` is accepted for MLX compatibility).

    >>> import nuvec as nv
    >>> nv.softmax(nv.array([0.0, 0.0]), axis=-1).tolist()
    [0.5, 0.5]
    """
    a = _float_input(a, "softmax")
    axes = reduction_axes(axis, a.ndim, "softmax")
    return _make(Softmax(axes, precise), a, stream)


def _argreduce(op: str, a, axis, keepdims: bool, stream) -> Array:

    a = as_array(a, op)
    if axis is None:
        flat = reshape(a, (-1,))
        if flat.shape[0] == 0:
            raise ValueError(f"{op}: cannot reduce an empty array")
        r = _make(ArgReduce(op, 0, False), flat, stream)
        return reshape(r, (1,) * a.ndim) if keepdims else r
    ax = normalize_axis(axis, a.ndim, op)
    return _make(ArgReduce(op, ax, keepdims), a, stream)


def argmax(a, /, axis: int | None = None, keepdims: bool = False, *, stream=None) -> Array:
    """Index (uint32) of the first maximum along ``axis`` (of the flattened array when None)."""
    return _argreduce("argmax", a, axis, keepdims, stream)


def argmin(a, /, axis: int | None = None, keepdims: bool = False, *, stream=None) -> Array:
    """Index (uint32) of the first minimum along ``axis`` (of the flattened array when None)."""
    return _argreduce("argmin", a, axis, keepdims, stream)


def _scan(op: str, name: str, a, axis, reverse: bool, inclusive: bool, stream) -> Array:

    a = as_array(a, name)
    if op == "logaddexp" and a._dtype.kind == "c":
        return _complex_logcumsumexp(a, axis, reverse, inclusive, stream)
    if op == "logaddexp":
        a = _float_input(a, name)
    if axis is None:
        a = reshape(a, (-1,))
        ax = 0
    else:
        ax = normalize_axis(axis, a.ndim, name)
    return _make(Scan(op, ax, reverse, inclusive), a, stream)


def _complex_logcumsumexp(a: Array, axis, reverse: bool, inclusive: bool, stream) -> Array:
    """``log(cumsum(exp(a - m))) + m`` with ``m`` the largest real part along the axis (the
    imaginary parts come back on the principal branch, as MLX's pairwise logaddexp)."""

    if axis is None:
        a, axis = reshape(a, (-1,), stream=stream), 0
    ax = normalize_axis(axis, a.ndim, "logcumsumexp")
    if a._shape[ax] == 0:
        return a
    m = stop_gradient(max(real(a), axis=ax, keepdims=True, stream=stream))
    run = cumsum(exp(a - m), axis=ax, reverse=reverse, inclusive=inclusive, stream=stream)
    return log(run, stream=stream) + m


def cumsum(
    a, /, axis: int | None = None, *, reverse: bool = False, inclusive: bool = True, stream=None
) -> Array:
    """Running sum along ``axis`` (of the flattened array when None); bool gives int32.

    >>> import nuvec as nv
    >>> nv.cumsum(nv.array([1, 2, 3]), inclusive=False).tolist()
    [0, 1, 3]
    """
    return _scan("sum", "cumsum", a, axis, reverse, inclusive, stream)


def cumprod(
    a, /, axis: int | None = None, *, reverse: bool = False, inclusive: bool = True, stream=None
) -> Array:
    """Running product along ``axis`` (of the flattened array when None)."""
    return _scan("prod", "cumprod", a, axis, reverse, inclusive, stream)


def cummax(
    a, /, axis: int | None = None, *, reverse: bool = False, inclusive: bool = True, stream=None
) -> Array:
    """Running maximum along ``axis`` (exclusive scans start at the dtype's lowest value)."""
    return _scan("max", "cummax", a, axis, reverse, inclusive, stream)


def cummin(
    a, /, axis: int | None = None, *, reverse: bool = False, inclusive: bool = True, stream=None
) -> Array:
    """Running minimum along ``axis`` (exclusive scans start at the dtype's highest value)."""
    return _scan("min", "cummin", a, axis, reverse, inclusive, stream)


def logcumsumexp(
    a, /, axis: int | None = None, *, reverse: bool = False, inclusive: bool = True, stream=None
) -> Array:
    """Running ``log(sum(exp(a)))`` along ``axis`` (integers give float32)."""
    return _scan("logaddexp", "logcumsumexp", a, axis, reverse, inclusive, stream)


__all__ = [
    "sum",
    "prod",
    "max",
    "min",
    "all",
    "any",
    "mean",
    "var",
    "std",
    "logsumexp",
    "softmax",
    "argmax",
    "argmin",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "logcumsumexp",
]
