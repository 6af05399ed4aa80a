"""Creating arrays: from data, constants, ranges."""

from __future__ import annotations

import math

import numpy as np

from ..core import dtypes as dt
from ..core import shapeless
from ..core.array import Array
from ..core.device import resolve_stream
from ._common import as_array, scalar_dtype
from ._common import array, host_from_dlpack, numpy_default_dtype  # noqa: F401 (re-exported)
from .fills import _sizes, full, full_like, ones, ones_like, zeros, zeros_like  # noqa: F401
from .elementwise import add, astype, multiply, where
from .reduction import cumsum
from .shape import (
    broadcast_arrays,
    reshape,
)


def _finite(name: str, **vals) -> None:
    for k, v in vals.items():
        _refuse_size(v, name, k)
        if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool):
            raise TypeError(f"{name}: {k} must be a real number, got {type(v).__name__}")
        if not math.isfinite(v):
            raise ValueError(f"{name}: {k} must be finite, got {v}")


def arange(first=None, /, stop=None, step=None, dtype=None, *, start=None, stream=None) -> Array:
    """Evenly spaced values in ``[start, stop)``: ``nv.arange(5)`` (one positional argument
    is ``stop``), ``nv.arange(0, 1, 0.25)``, ``nv.arange(stop=3)``, ``nv.arange(-3, step=-1)``.

    int32 when start, stop and step are ints (int64 where one does not fit in int32),
    float32 otherwise (as MLX). With an integer ``dtype`` the step is cast first: the values
    are ``int(start) + i * (int(start + step) - int(start))``.

    >>> import nuvec as nv
    >>> nv.arange(1, 7, 2).tolist()
    [1, 3, 5]
    >>> nv.arange(0, 3, 0.5, dtype=nv.int32).tolist()
    [0, 0, 0, 0, 0, 0]
    """
    if first is not None and start is not None:
        raise TypeError("arange: start is given twice (positionally and as a keyword)")
    if stop is None:
        if start is not None or first is None:
            raise TypeError("arange: stop is required")
        start, stop = 0, first
    elif start is None:
        start = 0 if first is None else first
    step = 1 if step is None else step
    if _sizes((start, stop, step)):
        return _sized_arange(start, stop, step, dtype, stream)
    for k, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"arange: {k} must be a real number, got {type(v).__name__}")
    if any(math.isnan(v) for v in (start, stop, step)) or math.isinf(start) or math.isinf(stop):
        raise ValueError(
            "arange: cannot compute the length (start, stop and step must be "
            "finite numbers; step may be infinite)"
        )
    if step == 0:
        raise ValueError("arange: step must not be zero")
    is_int = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
    if dtype is not None:
        d = dt.to_dtype(dtype)
    elif is_int:
        d = max((scalar_dtype(int(v)) for v in (start, stop, step)), key=lambda t: t.size)
    else:
        d = dt.float32
    if d == dt.bool_:
        raise TypeError("arange: cannot make a range of bool")
    if is_int:
        n = max(0, -((start - stop) // step))
    elif math.isinf(step):
        n = 1 if (step > 0) == (start < stop) else 0
    else:
        n = max(0, math.ceil((stop - start) / step))
    if n > 2**31 - 1:
        raise ValueError(f"arange: maximum size exceeded ({n} elements; at most 2**31 - 1)")
    if d.kind in "iu":
        first_v, step_v = int(start), int(start + step) - int(start)  # the step cast first
        data = (first_v + step_v * np.arange(n, dtype=np.int64)).astype(d.np)
    elif is_int:
        data = (int(start) + int(step) * np.arange(n, dtype=np.int64)).astype(d.np)
    else:
        values = start + step * np.arange(n, dtype=np.float64)
        if n:
            values[0] = start  # exactly the start, -0.0 included (as NumPy)
        data = values.astype(d.np)
    return Array.constant(data, resolve_stream(stream), d)


def _sized_arange(start, stop, step, dtype, stream) -> Array:
    """``arange`` with a stop read from ``.shape`` under a shapeless trace (``nv.arange(
    x.shape[0])``): integer start and step, the length a Size, so the range follows the
    replayed shapes (a replay whose range is empty where the trace's was not raises). The
    values are ``start + step * i``, ``i`` counted by an exclusive running sum of ones
    (exact in int32), cast to ``dtype``."""
    for k, v in (("start", start), ("step", step)):
        _refuse_size(v, "arange", k)
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise ValueError(
                f"arange: with a stop read from .shape under nv.compile(shapeless=True), "
                f"{k} must be an int, got {type(v).__name__}{shapeless._user_line()}; "
                "compile without shapeless=True"
            )
    step = int(step)
    if step == 0:
        raise ValueError("arange: step must not be zero")
    # the length, as a Size: ceil((stop - start) / step) in integer arithmetic
    n = (stop - start + (step - 1)) // step if step > 0 else (start - stop + (-step - 1)) // -step
    traced = n.value if isinstance(n, shapeless.Size) else n
    if traced < 0:
        raise ValueError(
            f"arange: the range traced empty (stop before start){shapeless._user_line()}; "
            "a shapeless replay could not follow it: compile without shapeless=True"
        )
    start = int(start)
    last = start + step * max(traced - 1, 0)
    if not (-(2**31) <= start < 2**31 and -(2**31) <= last < 2**31):
        raise ValueError(f"arange: a shapeless range is int32; {last} does not fit")
    d = dt.int32 if dtype is None else dt.to_dtype(dtype)
    if d == dt.bool_:
        raise TypeError("arange: cannot make a range of bool")
    i = cumsum(full((n,), 1, dt.int32, stream=stream), inclusive=False, stream=stream)
    if step != 1:
        i = multiply(i, step, stream=stream)
    if start != 0:
        i = add(i, start, stream=stream)
    return i if d == dt.int32 else astype(i, d, stream=stream)


def linspace(
    start, stop, num: int = 50, endpoint: bool = True, dtype=dt.float32, *, stream=None
) -> Array:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included unless ``endpoint``
    is False, then the step is ``(stop - start) / num``), as NumPy's ``np.linspace``.

    >>> import nuvec as nv
    >>> nv.linspace(0, 1, 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    >>> nv.linspace(0, 1, 4, endpoint=False).tolist()
    [0.0, 0.25, 0.5, 0.75]
    """
    _finite("linspace", start=start, stop=stop)
    num = _count(num, "linspace", "num")
    if not isinstance(endpoint, (bool, np.bool_)):
        raise TypeError(f"linspace: endpoint must be a bool, got {type(endpoint).__name__}")
    d = dt.to_dtype(dtype)
    values = np.linspace(float(start), float(stop), num, endpoint=bool(endpoint), dtype=np.float64)
    return Array.constant(values.astype(d.np), resolve_stream(stream), d)


def _refuse_size(v, name: str, what: str) -> None:
    """A size read from ``.shape`` under a shapeless trace, where the op would bake it."""
    if isinstance(v, shapeless.Size):
        raise ValueError(
            f"{name}: {what} is a size read from .shape (traced as {v.value})"
            f"{shapeless._user_line()}, which nv.compile(shapeless=True) cannot replay here "
            f"(its value would be baked in); compile without shapeless=True"
        )


def _count(v, name: str, what: str) -> int:
    _refuse_size(v, name, what)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name}: {what} must be an int, got {type(v).__name__}")
    if v < 0:
        raise ValueError(f"{name}: {what} must not be negative, got {v}")
    return int(v)


def _diagonal(k, name: str) -> int:
    _refuse_size(k, name, "k")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{name}: k must be an int, got {type(k).__name__}")
    return int(k)


def eye(n: int, m: int | None = None, k: int = 0, dtype=dt.float32, *, stream=None) -> Array:
    """An ``n x m`` array with ones on diagonal ``k`` (0 the main, >0 above, <0 below).

    >>> import nuvec as nv
    >>> nv.eye(2, 3, k=1).tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    n = _count(n, "eye", "n")
    m = n if m is None else _count(m, "eye", "m")
    k = _diagonal(k, "eye")
    d = dt.to_dtype(dtype)
    return Array.constant(np.eye(n, m, k, dtype=d.np), resolve_stream(stream), d)


def identity(n: int, dtype=dt.float32, *, stream=None) -> Array:
    """The ``n x n`` identity matrix."""
    n = _count(n, "identity", "n")
    return eye(n, dtype=dtype, stream=stream)


def tri(n: int, m: int | None = None, k: int = 0, dtype=dt.float32, *, stream=None) -> Array:
    """An ``n x m`` array with ones on and below diagonal ``k``, zeros elsewhere.

    >>> import nuvec as nv
    >>> nv.tri(2, dtype=nv.int32).tolist()
    [[1, 0], [1, 1]]
    """
    n = _count(n, "tri", "n")
    m = n if m is None else _count(m, "tri", "m")
    k = _diagonal(k, "tri")
    d = dt.to_dtype(dtype)
    return Array.constant(np.tri(n, m, k, dtype=d.np), resolve_stream(stream), d)


def _triangle(name: str, x, k: int, lower: bool, stream) -> Array:

    x = as_array(x, name)
    if x.ndim < 2:
        raise ValueError(f"{name}: the array must have at least 2 dimensions, got shape {x.shape}")
    shapeless.refuse_traced(x, name, "the triangle's mask")
    n, m = x.shape[-2:]
    mask = tri(n, m, k if lower else k - 1, dt.bool_, stream=stream)
    if lower:
        return where(mask, x, zeros((), x.dtype, stream=stream), stream=stream)
    return where(mask, zeros((), x.dtype, stream=stream), x, stream=stream)


def tril(x, /, k: int = 0, *, stream=None) -> Array:
    """``x`` with the elements above diagonal ``k`` of its last two axes set to zero."""
    return _triangle("tril", x, _diagonal(k, "tril"), True, stream)


def triu(x, /, k: int = 0, *, stream=None) -> Array:
    """``x`` with the elements below diagonal ``k`` of its last two axes set to zero."""
    return _triangle("triu", x, _diagonal(k, "triu"), False, stream)


def meshgrid(*arrays, sparse: bool = False, indexing: str = "xy", stream=None) -> tuple[Array, ...]:
    """Coordinate grids from 1-D coordinate arrays (``indexing`` "xy": Cartesian, the first
    two outputs' axes swapped; "ij": matrix indexing). ``sparse`` keeps size-1 axes.

    >>> import nuvec as nv
    >>> [g.shape for g in nv.meshgrid(nv.arange(3), nv.arange(2))]
    [(2, 3), (2, 3)]
    """

    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [as_array(a, "meshgrid") for a in arrays]
    nd = len(xs)
    outs = []
    for i, a in enumerate(xs):
        shape = [1] * nd
        pos = i
        if indexing == "xy" and nd > 1 and i < 2:
            pos = 1 - i
        shape[pos] = a.size
        outs.append(reshape(a, shape, stream=stream))
    if not sparse:
        outs = broadcast_arrays(*outs, name="meshgrid", stream=stream)
    return tuple(outs)


# `array` is not exported: nv.array is the Array class, whose constructor calls it
__all__ = [
    "full",
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
    "full_like",
    "arange",
    "linspace",
    "eye",
    "identity",
    "tri",
    "tril",
    "triu",
    "meshgrid",
]
