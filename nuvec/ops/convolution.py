"""MLX's general convolution (padding per side, kernel and input dilation, flipped kernels),
the transposed convolutions built on it as MLX builds them, and 1-D ``convolve``. Channels-last
layout as ``conv1d``/``conv2d``; the products go through ``conv.conv_general`` (im2col and a
matmul), so gradients and vmap come from those ops.

>>> import nuvec as nv
>>> nv.convolve(nv.array([1.0, 2.0, 3.0]), nv.array([0.0, 1.0, 0.5])).tolist()
[0.0, 1.0, 2.5, 4.0, 1.5]
"""

from __future__ import annotations

import builtins
import numbers
from typing import Sequence

from ..core.array import Array
from ..core.device import stream as _on_stream
from . import conv as _conv
from ._common import as_array
from .composites import flip as _flip
from .creation import zeros
from .indexing import getitem
from .padding import pad
from .shape import concatenate, expand_dims, reshape

__all__ = ["conv_general", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolve"]


def _ints(v, nd: int, arg: str, op: str) -> list[int]:
    def is_int(x) -> bool:
        return isinstance(x, numbers.Integral) and not isinstance(x, bool)

    if is_int(v):
        return [int(v)] * nd
    if not isinstance(v, (tuple, list)) or not all(is_int(x) for x in v):
        raise TypeError(f"{op}: {arg} must be an int or a sequence of ints, got {v!r}")
    if len(v) != nd:
        raise ValueError(f"{op}: {arg} must be an int or {nd} ints, got {v!r}")
    return [int(x) for x in v]


def _padding(padding, nd: int, op: str) -> tuple[list[int], list[int]]:
    """``padding`` as (low, high) per spatial axis: an int, one int per axis, or a pair of
    sequences (low, high)."""
    if (
        isinstance(padding, (tuple, list))
        and len(padding) == 2
        and all(isinstance(p, (tuple, list)) for p in padding)
    ):
        return _ints(padding[0], nd, "padding", op), _ints(padding[1], nd, "padding", op)
    p = _ints(padding, nd, "padding", op)
    return p, list(p)


def _dilate_input(x: Array, factors: list[int]) -> Array:
    """Inserts ``f - 1`` zeros between neighbours along each spatial axis."""
    for i, f in enumerate(factors):
        ax = i + 1
        n = x.shape[ax]
        if f == 1 or n == 0:
            continue
        e = expand_dims(x, ax + 1)
        gap = list(e.shape)
        gap[ax + 1] = f - 1
        joined = concatenate([e, zeros(tuple(gap), x.dtype)], axis=ax + 1)
        shape = list(x.shape)
        shape[ax] = n * f
        x = reshape(joined, shape)
        x = getitem(x, (builtins.slice(None),) * ax + (builtins.slice(0, (n - 1) * f + 1),))
    return x


def _pad_or_crop(x: Array, lo: list[int], hi: list[int]) -> Array:
    """Zero padding of the spatial axes; a negative amount crops."""
    if any(p > 0 for p in lo + hi):
        width = [(0, 0)] + [(builtins.max(a, 0), builtins.max(b, 0)) for a, b in zip(lo, hi)]
        x = pad(x, width + [(0, 0)])
    if any(p < 0 for p in lo + hi):
        index = [builtins.slice(None)]
        for i, (a, b) in enumerate(zip(lo, hi)):
            n = x.shape[i + 1]
            index.append(builtins.slice(-a if a < 0 else 0, n + b if b < 0 else n))
        x = getitem(x, tuple(index))
    return x


def conv_general(
    input,
    weight,
    /,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] | tuple[Sequence[int], Sequence[int]] = 0,
    kernel_dilation: int | Sequence[int] = 1,
    input_dilation: int | Sequence[int] = 1,
    groups: int = 1,
    flip: bool = False,
    *,
    stream=None,
) -> Array:
    """An N-d convolution of ``input`` ``(N, *spatial, C_in)`` with ``weight``
    ``(C_out, *kernel, C_in / groups)``: ``padding`` per side as ``(low, high)`` sequences,
    ``input_dilation`` inserts zeros between input elements, ``flip=True`` is a true
    convolution (the kernel reversed) instead of MLX's default cross-correlation.

    >>> import nuvec as nv
    >>> x, w = nv.ones((1, 4, 1)), nv.ones((1, 2, 1))
    >>> nv.conv_general(x, w, padding=([1], [0])).reshape(-1).tolist()
    [1.0, 2.0, 2.0, 2.0]
    """
    op = "conv_general"
    x, w = as_array(input, op), as_array(weight, op)
    nd = w.ndim - 2
    if nd < 1:
        raise ValueError(f"{op}: weight must have at least 3 dimensions, got {w.ndim}")
    if x.ndim != nd + 2:
        raise ValueError(
            f"{op}: input must be {nd + 2}-d (batch, {nd} spatial, channels), got shape {x.shape}"
        )
    strides = _ints(stride, nd, "stride", op)
    kdil = _ints(kernel_dilation, nd, "kernel_dilation", op)
    idil = _ints(input_dilation, nd, "input_dilation", op)
    lo, hi = _padding(padding, nd, op)
    if builtins.min(strides + kdil + idil) < 1:
        raise ValueError(f"{op}: stride and dilations must be positive")
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral):
        raise TypeError(f"{op}: groups must be an int, got {type(groups).__name__}")
    with _on_stream(stream):
        if flip:
            w = _flip(w, list(range(1, nd + 1)))
        x = _pad_or_crop(_dilate_input(x, idil), lo, hi)
        return _conv.conv_general(x, w, strides, 0, kdil, int(groups), op=op)


def _transpose(
    input, weight, nd: int, stride, padding, dilation, output_padding, groups, stream, op: str
) -> Array:
    x, w = as_array(input, op), as_array(weight, op)
    if w.ndim != nd + 2 or x.ndim != nd + 2:
        raise ValueError(
            f"{op}: input and weight must be {nd + 2}-d, got shapes {x.shape} and {w.shape}"
        )
    s = _ints(stride, nd, "stride", op)
    p = _ints(padding, nd, "padding", op)
    d = _ints(dilation, nd, "dilation", op)
    o = _ints(output_padding, nd, "output_padding", op)
    lo = [d[i] * (w.shape[1 + i] - 1) - p[i] for i in range(nd)]
    hi = [lo[i] + o[i] for i in range(nd)]
    return conv_general(x, w, 1, (lo, hi), d, s, groups, True, stream=stream)


def conv_transpose1d(
    input,
    weight,
    /,
    stride: int = 1,
    padding: int = 0,
    dilation: int = 1,
    output_padding: int = 0,
    groups: int = 1,
    *,
    stream=None,
) -> Array:
    """1-D transposed convolution: ``input`` ``(N, L, C_in)``, ``weight``
    ``(C_out, K, C_in)``; the output length is
    ``(L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1``."""
    return _transpose(
        input,
        weight,
        1,
        stride,
        padding,
        dilation,
        output_padding,
        groups,
        stream,
        "conv_transpose1d",
    )


def conv_transpose2d(
    input,
    weight,
    /,
    stride=1,
    padding=0,
    dilation=1,
    output_padding=0,
    groups: int = 1,
    *,
    stream=None,
) -> Array:
    """2-D transposed convolution: ``input`` ``(N, H, W, C_in)``, ``weight``
    ``(C_out, KH, KW, C_in)``; each argument an int or a pair."""
    return _transpose(
        input,
        weight,
        2,
        stride,
        padding,
        dilation,
        output_padding,
        groups,
        stream,
        "conv_transpose2d",
    )


def conv_transpose3d(
    input,
    weight,
    /,
    stride=1,
    padding=0,
    dilation=1,
    output_padding=0,
    groups: int = 1,
    *,
    stream=None,
) -> Array:
    """3-D transposed convolution: ``input`` ``(N, D, H, W, C_in)``, ``weight``
    ``(C_out, KD, KH, KW, C_in)``; each argument an int or a triple."""
    return _transpose(
        input,
        weight,
        3,
        stride,
        padding,
        dilation,
        output_padding,
        groups,
        stream,
        "conv_transpose3d",
    )


def convolve(a, v, /, mode: str = "full", *, stream=None) -> Array:
    """The discrete 1-D convolution of ``a`` and ``v`` (NumPy's ``convolve``), ``mode``
    "full", "same" or "valid"."""
    a, v = as_array(a, "convolve"), as_array(v, "convolve")
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"convolve: the inputs must be 1-D, got shapes {a.shape} and {v.shape}")
    if a.size == 0 or v.size == 0:
        raise ValueError("convolve: the inputs must not be empty")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
    big, small = (v, a) if a.size < v.size else (a, v)
    k = small.size
    if mode == "full":
        lo = hi = k - 1
    elif mode == "valid":
        lo = hi = 0
    else:
        lo, hi = k // 2, (k - 1) // 2
    x = reshape(big, (1, -1, 1))
    w = reshape(small, (1, -1, 1))
    return reshape(conv_general(x, w, 1, ([lo], [hi]), flip=True, stream=stream), (-1,))
