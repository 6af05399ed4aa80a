"""Creating arrays: from data, constants, ranges."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..core import dtypes as dt
from ..core.array import Array
from ..core.device import resolve_stream
from ._common import SCALARS, as_array, scalar_dtype


def _infer_list_dtype(obj) -> dt.Dtype:
    kinds = set()
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, Array):
            kinds.add(x.dtype)
        elif isinstance(x, SCALARS):
            kinds.add(scalar_dtype(x))
        elif isinstance(x, (np.generic, np.ndarray)):
            kinds.add(dt.from_numpy(x.dtype))
        else:
            raise TypeError(f"array: unsupported element type {type(x).__name__}")
    out = dt.bool_
    for k in kinds:
        out = dt.promote_types(out, k)
    return out


def array(obj, dtype=None) -> Array:
    """An array from a scalar, nested sequence, NumPy array or nuvec array (copied).

    Python scalars and lists get MLX's defaults (int32, float32); NumPy arrays keep their dtype.

    >>> import nuvec as nv
    >>> nv.array([[1, 2], [3, 4]]).dtype
    nuvec.int32
    """
    d = dt.to_dtype(dtype) if dtype is not None else None
    if isinstance(obj, Array):
        from .elementwise import astype
        return astype(obj, d) if d is not None and d != obj.dtype else obj
    if isinstance(obj, (np.ndarray, np.generic)):
        src = dt.from_numpy(obj.dtype)
        data = np.array(obj, dtype=(d or src).np, copy=True, order="C")
        return Array.constant(data, resolve_stream(None), d or src)
    if isinstance(obj, SCALARS) or isinstance(obj, (list, tuple)):
        if isinstance(obj, (list, tuple)) and any(isinstance(x, Array) for x in _flat(obj)):
            obj = _hostify(obj)
        target = d or _infer_list_dtype(obj)
        try:
            data = np.array(obj, dtype=target.np)
        except (ValueError, OverflowError) as e:
            raise ValueError(f"array: cannot build an array from this input ({e})") from None
        return Array.constant(data, resolve_stream(None), target)
    if hasattr(obj, "__dlpack__") or hasattr(obj, "__array__"):
        return array(np.asarray(obj), dtype)
    raise TypeError(f"array: unsupported input type {type(obj).__name__}")


def _flat(obj):
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        else:
            yield x


def _hostify(obj):
    if isinstance(obj, (list, tuple)):
        return [_hostify(x) for x in obj]
    if isinstance(obj, Array):
        return np.asarray(obj)
    return obj


def _shape(shape, name: str) -> tuple[int, ...]:
    if type(shape) is tuple and all(type(s) is int and s >= 0 for s in shape):
        return shape
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be an int or a sequence of ints") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"{name}: negative dimension in shape {shape}")
    return shape


def full(shape, vals, dtype=None, *, stream=None) -> Array:
    """An array of ``shape`` filled with ``vals`` (broadcast).

    >>> import nuvec as nv
    >>> nv.full((2, 2), 7).tolist()
    [[7, 7], [7, 7]]
    """
    shape = _shape(shape, "full")
    v = array(vals) if not isinstance(vals, Array) else vals
    if dtype is not None:
        from .elementwise import astype
        v = astype(v, dt.to_dtype(dtype))
    return _fill(v, shape, "full", stream)


def _fill(v: Array, shape: tuple, name: str, stream) -> Array:
    from .shape import broadcast_shapes, broadcast_to
    if v._shape != shape and (len(shape) < v.ndim or
                              broadcast_shapes(v._shape, shape, name=name) != shape):
        raise ValueError(f"{name}: cannot broadcast values of shape {v._shape} to {shape}")
    return broadcast_to(v, shape, stream=stream)


def zeros(shape, dtype=dt.float32, *, stream=None) -> Array:
    """An array of zeros (float32 by default).

    >>> import nuvec as nv
    >>> nv.zeros((2,), nv.int32).tolist()
    [0, 0]
    """
    return _constant_fill(shape, 0, dtype, "zeros", stream)


def ones(shape, dtype=dt.float32, *, stream=None) -> Array:
    """An array of ones (float32 by default)."""
    return _constant_fill(shape, 1, dtype, "ones", stream)


def _constant_fill(shape, value, dtype, name: str, stream) -> Array:
    d = dt.to_dtype(dtype)
    shape = _shape(shape, name)
    st = resolve_stream(stream)
    scalar = Array.constant(np.array(value, d.np), st, d)
    if not shape:
        return scalar
    from ..primitives.shape import Broadcast
    return Array.make(Broadcast(shape), [scalar], st)


def zeros_like(a, /, *, stream=None) -> Array:
    """Zeros with the shape and dtype of ``a``."""
    a = as_array(a, "zeros_like")
    return zeros(a.shape, a.dtype, stream=stream)


def ones_like(a, /, *, stream=None) -> Array:
    """Ones with the shape and dtype of ``a``."""
    a = as_array(a, "ones_like")
    return ones(a.shape, a.dtype, stream=stream)


def full_like(a, /, vals, dtype=None, *, stream=None) -> Array:
    """``vals`` broadcast to the shape of ``a``, with ``a``'s dtype unless ``dtype`` is given."""
    a = as_array(a, "full_like")
    return full(a.shape, vals, dtype or a.dtype, stream=stream)


def _finite(name: str, **vals) -> None:
    for k, v in vals.items():
        if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool):
            raise TypeError(f"{name}: {k} must be a real number, got {type(v).__name__}")
        if not math.isfinite(v):
            raise ValueError(f"{name}: {k} must be finite, got {v}")


def arange(start, stop=None, step=None, dtype=None, *, stream=None) -> Array:
    """Evenly spaced values in ``[start, stop)``: ``nv.arange(5)``, ``nv.arange(0, 1, 0.25)``.

    int32 when start, stop and step are ints, float32 otherwise (as MLX).

    >>> import nuvec as nv
    >>> nv.arange(1, 7, 2).tolist()
    [1, 3, 5]
    """
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    _finite("arange", start=start, stop=stop, step=step)
    if step == 0:
        raise ValueError("arange: step must not be zero")
    is_int = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
    d = dt.to_dtype(dtype) if dtype is not None else (dt.int32 if is_int else dt.float32)
    if d == dt.bool_:
        raise TypeError("arange: cannot make a range of bool")
    n = max(0, math.ceil((stop - start) / step)) if not is_int else \
        max(0, -((start - stop) // step))
    if is_int:
        data = (int(start) + int(step) * np.arange(n, dtype=np.int64)).astype(d.np)
    else:
        values = start + step * np.arange(n, dtype=np.float64)
        if n:
            values[0] = start  # exactly the start, -0.0 included (as NumPy)
        data = values.astype(d.np)
    return Array.constant(data, resolve_stream(stream), d)


def linspace(start, stop, num: int = 50, dtype=dt.float32, *, stream=None) -> Array:
    """``num`` evenly spaced values from ``start`` to ``stop``, both included.

    >>> import nuvec as nv
    >>> nv.linspace(0, 1, 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    _finite("linspace", start=start, stop=stop)
    num = _count(num, "linspace", "num")
    d = dt.to_dtype(dtype)
    data = np.linspace(float(start), float(stop), num, dtype=np.float64).astype(d.np)
    return Array.constant(data, resolve_stream(stream), d)


def _count(v, name: str, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name}: {what} must be an int, got {type(v).__name__}")
    if v < 0:
        raise ValueError(f"{name}: {what} must not be negative, got {v}")
    return int(v)


def eye(n: int, m: int | None = None, k: int = 0, dtype=dt.float32, *, stream=None) -> Array:
    """An ``n x m`` array with ones on diagonal ``k`` (0 the main, >0 above, <0 below).

    >>> import nuvec as nv
    >>> nv.eye(2, 3, k=1).tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    n = _count(n, "eye", "n")
    m = n if m is None else _count(m, "eye", "m")
    d = dt.to_dtype(dtype)
    return Array.constant(np.eye(n, m, int(k), dtype=d.np), resolve_stream(stream), d)


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
    d = dt.to_dtype(dtype)
    return Array.constant(np.tri(n, m, int(k), dtype=d.np), resolve_stream(stream), d)


def _triangle(name: str, x, k: int, lower: bool, stream) -> Array:
    from .elementwise import where
    x = as_array(x, name)
    if x.ndim < 2:
        raise ValueError(f"{name}: the array must have at least 2 dimensions, got shape {x.shape}")
    n, m = x.shape[-2:]
    mask = tri(n, m, k if lower else k - 1, dt.bool_, stream=stream)
    if lower:
        return where(mask, x, zeros((), x.dtype, stream=stream), stream=stream)
    return where(mask, zeros((), x.dtype, stream=stream), x, stream=stream)


def tril(x, /, k: int = 0, *, stream=None) -> Array:
    """``x`` with the elements above diagonal ``k`` of its last two axes set to zero."""
    return _triangle("tril", x, int(k), True, stream)


def triu(x, /, k: int = 0, *, stream=None) -> Array:
    """``x`` with the elements below diagonal ``k`` of its last two axes set to zero."""
    return _triangle("triu", x, int(k), False, stream)


def meshgrid(*arrays, sparse: bool = False, indexing: str = "xy", stream=None) -> list[Array]:
    """Coordinate grids from 1-D coordinate arrays (``indexing`` "xy": Cartesian, the first
    two outputs' axes swapped; "ij": matrix indexing). ``sparse`` keeps size-1 axes.

    >>> import nuvec as nv
    >>> [g.shape for g in nv.meshgrid(nv.arange(3), nv.arange(2))]
    [(2, 3), (2, 3)]
    """
    from .shape import broadcast_arrays, reshape
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = [as_array(a, "meshgrid") for a in arrays]
    nd = len(arrays)
    outs = []
    for i, a in enumerate(arrays):
        shape = [1] * nd
        pos = i
        if indexing == "xy" and nd > 1 and i < 2:
            pos = 1 - i
        shape[pos] = a.size
        outs.append(reshape(a, shape, stream=stream))
    if not sparse:
        outs = broadcast_arrays(*outs, name="meshgrid", stream=stream)
    return outs

__all__ = ["array", "full", "zeros", "ones", "zeros_like", "ones_like", "full_like", "arange",
           "linspace", "eye", "identity", "tri", "tril", "triu", "meshgrid"]
