"""Creating arrays: from data, constants, ranges."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..core import dtypes as dt
from ..core.array import Array
from ..core.device import resolve_stream
from ._common import SCALARS, scalar_dtype


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
    from .shape import broadcast_to
    shape = _shape(shape, "full")
    v = array(vals) if not isinstance(vals, Array) else vals
    if dtype is not None:
        from .elementwise import astype
        v = astype(v, dt.to_dtype(dtype))
    return broadcast_to(v, shape, stream=stream)


def zeros(shape, dtype=dt.float32, *, stream=None) -> Array:
    """An array of zeros (float32 by default)."""
    d = dt.to_dtype(dtype)
    return full(shape, Array.constant(np.zeros((), d.np), resolve_stream(stream), d), stream=stream)


def ones(shape, dtype=dt.float32, *, stream=None) -> Array:
    """An array of ones (float32 by default)."""
    d = dt.to_dtype(dtype)
    return full(shape, Array.constant(np.ones((), d.np), resolve_stream(stream), d), stream=stream)


def zeros_like(a: Array, *, stream=None) -> Array:
    return zeros(a.shape, a.dtype, stream=stream)


def ones_like(a: Array, *, stream=None) -> Array:
    return ones(a.shape, a.dtype, stream=stream)


def full_like(a: Array, vals, dtype=None, *, stream=None) -> Array:
    return full(a.shape, vals, dtype or a.dtype, stream=stream)


def arange(start, stop=None, step=None, dtype=None, *, stream=None) -> Array:
    """Evenly spaced values in ``[start, stop)``: ``nv.arange(5)``, ``nv.arange(0, 1, 0.25)``.

    int32 when start, stop and step are ints, float32 otherwise (as MLX).
    """
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if step == 0:
        raise ValueError("arange: step must not be zero")
    is_int = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                 for v in (start, stop, step))
    d = dt.to_dtype(dtype) if dtype is not None else (dt.int32 if is_int else dt.float32)
    n = max(0, math.ceil((stop - start) / step))
    if d.kind in "fc":
        data = (start + step * np.arange(n, dtype=np.float64)).astype(d.np)
    else:
        data = np.arange(start, start + n * step, step, dtype=np.int64)[:n].astype(d.np)
    return Array.constant(data, resolve_stream(stream), d)

__all__ = ["array", "full", "zeros", "ones", "zeros_like", "ones_like", "full_like", "arange"]
