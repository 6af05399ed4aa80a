"""Padding: ``pad`` with a constant (one Pad primitive), the edge values (slices and
broadcasts) or the mirrored ones (``reflect``, ``symmetric``: one gather along each padded
axis, whose rules give the gradient)."""

from __future__ import annotations

import numpy as np

from ..core import dtypes as dt
from ..core import shapeless
from ..core.array import Array
from ..core.device import resolve_stream
from ..primitives.shape import Pad
from ._common import SCALARS, as_array, cast, constant, weak_dtype
from .indexing import take
from .shape import broadcast_to, concatenate, reshape, slice_axes

__all__ = ["pad"]


def _pad_widths(pad_width, ndim: int) -> list[tuple[int, int]]:
    try:
        w = np.asarray(pad_width)
        if w.size == 0:
            w = w.astype(np.int64)
        if w.dtype.kind not in "iu" or w.ndim > 2:
            raise ValueError
        if ndim == 0:
            return []
        w = np.broadcast_to(w, (ndim, 2))
    except ValueError:
        raise ValueError(
            f"pad: pad_width {pad_width!r} is not an int, a (before, after) pair "
            f"or one pair per axis of a {ndim}-dimensional array"
        ) from None
    pairs = [(int(lo), int(hi)) for lo, hi in w]
    if any(lo < 0 or hi < 0 for lo, hi in pairs):
        raise ValueError(f"pad: padding sizes must not be negative, got {pad_width!r}")
    return pairs


def pad(a, pad_width, mode: str = "constant", constant_values=0, *, stream=None) -> Array:
    """``a`` padded on each axis: ``pad_width`` is an int, ``(n,)``, a ``(before, after)``
    pair for every axis, or one pair per axis. ``mode`` is "constant" (``constant_values``,
    a scalar or 0-d array), "edge" (repeats the border values), "reflect" (mirrors about the
    border element) or "symmetric" (mirrors including it), as NumPy's ``np.pad``.

    >>> import nuvec as nv
    >>> nv.pad(nv.array([1, 2]), (1, 2)).tolist()
    [0, 1, 2, 0, 0]
    """
    a = as_array(a, "pad")
    pairs = _pad_widths(pad_width, a.ndim)
    if mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError(
            f"pad: mode must be 'constant', 'edge', 'reflect' or 'symmetric', got {mode!r}"
        )
    if all(lo == 0 and hi == 0 for lo, hi in pairs):
        return a
    if mode != "constant":
        shapeless.refuse_traced(a, "pad", f"the positions that mode={mode!r} copies")
    if mode == "edge":
        return _edge_pad(a, pairs, stream)
    if mode in ("reflect", "symmetric"):
        return _mirror_pad(a, pairs, mode, stream)
    if isinstance(constant_values, SCALARS):  # a Python number keeps the array's precision
        v = constant(constant_values, weak_dtype(constant_values, a._dtype))
    else:
        v = as_array(constant_values, "pad")
    if v.size != 1:
        raise ValueError(f"pad: constant_values must be a scalar, got shape {v.shape}")
    if v.ndim:
        v = reshape(v, (), stream=stream)
    v = cast(v, a._dtype, stream)
    lows = tuple(p[0] for p in pairs)
    highs = tuple(p[1] for p in pairs)
    return Array.make(Pad(lows, highs), [a, v], resolve_stream(stream))


def _mirror_pad(a: Array, pairs, mode: str, stream) -> Array:
    """Reflect or symmetric padding as a gather along each padded axis; the source index of
    every output position is NumPy's own padding of ``arange(n)``."""

    for ax, (lo, hi) in enumerate(pairs):
        if not lo and not hi:
            continue
        n = a._shape[ax]
        if n == 0:
            raise ValueError(f"pad: cannot {mode}-pad the empty axis {ax} of shape {a._shape}")
        index = np.pad(np.arange(n, dtype=np.int32), (lo, hi), mode=mode)  # type: ignore[call-overload]
        a = take(a, Array.constant(index, a._stream, dt.int32), axis=ax, stream=stream)
    return a


def _edge_pad(a: Array, pairs, stream) -> Array:
    for ax, (lo, hi) in enumerate(pairs):
        if not lo and not hi:
            continue
        n = a._shape[ax]
        if n == 0:
            raise ValueError(f"pad: cannot edge-pad axis {ax} of size 0")
        parts = []
        nd = a.ndim
        unit = (1,) * nd
        if lo:
            first = slice_axes(
                a, (0,) * nd, a._shape[:ax] + (1,) + a._shape[ax + 1 :], unit, stream=stream
            )
            parts.append(
                broadcast_to(first, a._shape[:ax] + (lo,) + a._shape[ax + 1 :], stream=stream)
            )
        parts.append(a)
        if hi:
            last = slice_axes(
                a, (0,) * ax + (n - 1,) + (0,) * (nd - ax - 1), a._shape, unit, stream=stream
            )
            parts.append(
                broadcast_to(last, a._shape[:ax] + (hi,) + a._shape[ax + 1 :], stream=stream)
            )
        a = concatenate(parts, ax, stream=stream)
    return a
