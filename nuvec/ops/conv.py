"""Convolution and pooling built from differentiable ops (no conv primitive).

Channels are last (``NLC``, ``NHWC``) and weights are ``(C_out, *kernel, C_in / groups)``,
as in MLX. A convolution is an im2col followed by one matmul: the zero-padded input is cut
into one strided slice per kernel offset, the slices are concatenated on the channel axis
(giving, per output position, the receptive field in the weight's ``(*kernel, C_in)`` order),
and the result is multiplied by the flattened weight. Its gradient is the gradients of pad,
slice, concatenate and matmul, so nothing here needs a vjp rule of its own.

Pooling takes the element-wise maximum (or sum) of the same slices, or, for windows that
tile the input exactly, reduces a reshaped view.

>>> import nuvec as nv
>>> x = nv.ones((1, 5, 5, 2)); w = nv.ones((3, 3, 3, 2))
>>> nv.conv2d(x, w, padding=1).shape
(1, 5, 5, 3)
"""

from __future__ import annotations

import functools
import itertools
import operator
from typing import Sequence, Union

from ..core import dtypes as dt
from ..core import shapeless
from ..core.device import stream as on_stream
from . import reduction
from ._common import as_array
from .elementwise import astype, maximum
from .linalg import matmul
from .padding import pad
from .shape import concatenate, reshape, transpose

IntOrTuple = Union[int, Sequence[int]]


def _tuple(v: IntOrTuple, n: int, what: str, op: str, minimum: int) -> tuple[int, ...]:
    t = (v,) * n if isinstance(v, int) else tuple(v)
    if len(t) != n or not all(isinstance(i, int) for i in t):
        raise ValueError(f"{op}: {what} must be an int or a tuple of {n} ints, got {v!r}")
    if any(i < minimum for i in t):
        raise ValueError(f"{op}: {what} must be >= {minimum}, got {v!r}")
    return t


def _out_size(size: int, k: int, s: int, d: int) -> int:
    return (size - d * (k - 1) - 1) // s + 1


def _output_sizes(x, kernel, stride, dilation, op: str) -> tuple:
    """(N, *spatial output sizes) of a window operation on the padded ``x``; under a shapeless
    trace, sizes that follow each replay and check it (core.shapeless.Size)."""
    n, *spatial, _ = shapeless.sizes(x)
    what = f"{op}: the number of output positions"
    return (
        n,
        *(
            shapeless.at_least(_out_size(m, *a), 1, what)
            for m, *a in zip(spatial, kernel, stride, dilation)
        ),
    )


def _window_slices(x, kernel, stride, dilation, op: str):
    """For each kernel offset (row-major), the slice of ``x`` (already padded, shape
    ``(N, *spatial, C)``) that the offset sees at every output position."""
    spatial = x.shape[1:-1]
    out = [_out_size(n, k, s, d) for n, k, s, d in zip(spatial, kernel, stride, dilation)]
    if any(o <= 0 for o in out):
        raise ValueError(
            f"{op}: the (padded) input of spatial shape {tuple(spatial)} is "
            f"smaller than the (dilated) kernel {tuple(kernel)}"
        )
    slices = []
    for offs in itertools.product(*(range(k) for k in kernel)):
        # offset o sees o*d, o*d + s, ... up to (k - 1 - o)*d before the end: bounds that hold
        # no size, so a shapeless replay cuts the same windows from any input
        idx = [slice(None)]
        for o, k, s, d in zip(offs, kernel, stride, dilation):
            idx.append(slice(o * d, -(k - 1 - o) * d or None, s))
        idx.append(slice(None))
        slices.append(x[tuple(idx)])
    return slices, out


def _pad_spatial(x, padding, value=0.0):
    if not any(padding):
        return x
    widths = [(0, 0)] + [(p, p) for p in padding] + [(0, 0)]
    return pad(x, widths, constant_values=value)


def conv_general(
    x,
    weight,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
    *,
    op: str = "conv",
):
    """An N-d convolution (cross-correlation, as in MLX) of channels-last ``x``
    ``(N, *spatial, C_in)`` with ``weight`` ``(C_out, *kernel, C_in / groups)``."""
    nd = weight.ndim - 2
    if nd < 1:
        raise ValueError(f"{op}: weight must have at least 3 dimensions, got {weight.ndim}")
    if x.ndim != nd + 2:
        raise ValueError(
            f"{op}: input must be {nd + 2}-d (batch, {nd} spatial, channels), "
            f"got shape {tuple(x.shape)}"
        )
    kernel = tuple(weight.shape[1:-1])
    stride = _tuple(stride, nd, "stride", op, 1)
    padding = _tuple(padding, nd, "padding", op, 0)
    dilation = _tuple(dilation, nd, "dilation", op, 1)
    c_in, c_out, cg = x.shape[-1], weight.shape[0], weight.shape[-1]
    if groups < 1 or c_in % groups or c_out % groups:
        raise ValueError(
            f"{op}: groups ({groups}) must divide the input channels ({c_in}) "
            f"and the output channels ({c_out})"
        )
    if cg * groups != c_in:
        raise ValueError(
            f"{op}: the weight's last dimension ({cg}) times groups ({groups}) "
            f"must equal the input channels ({c_in})"
        )
    if x.dtype != weight.dtype:
        d = dt.promote_types(x.dtype, weight.dtype)
        x, weight = astype(x, d), astype(weight, d)
    xp = _pad_spatial(x, padding)
    slices, _ = _window_slices(xp, kernel, stride, dilation, op)
    k = len(slices)
    # the windows' batch and spatial axes as the rows of one matrix product; under a shapeless
    # trace they are sizes that follow each replay (core.shapeless.Size)
    lead = _output_sizes(xp, kernel, stride, dilation, op)
    rows = functools.reduce(operator.mul, lead, 1)
    if groups == 1:
        cols = slices[0] if k == 1 else concatenate(slices, axis=-1)
        cols = reshape(cols, (rows, k * c_in))
        w2 = reshape(weight, (c_out, k * c_in))
        y = matmul(cols, transpose(w2))
        return reshape(y, (*lead, c_out))
    og = c_out // groups
    ys = []
    for g in range(groups):
        part = [s[..., g * cg : (g + 1) * cg] for s in slices]
        cols = part[0] if k == 1 else concatenate(part, axis=-1)
        cols = reshape(cols, (rows, k * cg))
        w2 = reshape(weight[g * og : (g + 1) * og], (og, k * cg))
        ys.append(matmul(cols, transpose(w2)))
    y = concatenate(ys, axis=-1)
    return reshape(y, (*lead, c_out))


def _checked(x, weight, groups, nd: int, op: str):
    """``x`` and ``weight`` as arrays, ``weight`` of rank ``nd + 2``, ``groups`` an int."""

    x, weight = as_array(x, op), as_array(weight, op)
    if weight.ndim != nd + 2:
        raise ValueError(f"{op}: weight must be {nd + 2}-d, got shape {tuple(weight.shape)}")
    if isinstance(groups, bool) or not isinstance(groups, int):
        raise TypeError(f"{op}: groups must be an int, got {type(groups).__name__}")
    return x, weight


def _conv(x, weight, stride, padding, dilation, groups, nd: int, op: str, stream):
    x, weight = _checked(x, weight, groups, nd, op)
    with on_stream(stream):
        return conv_general(x, weight, stride, padding, dilation, groups, op=op)


def conv1d(
    x,
    weight,
    stride: int = 1,
    padding: int = 0,
    dilation: int = 1,
    groups: int = 1,
    *,
    stream=None,
):
    """1-d convolution: ``x`` ``(N, L, C_in)``, ``weight`` ``(C_out, K, C_in / groups)``.

    As MLX's, an input and weight of one higher rank are convolved over all their spatial
    axes, the one stride, padding and dilation applying to each.

    >>> import nuvec as nv
    >>> nv.conv1d(nv.ones((1, 4, 1)), nv.ones((1, 2, 1))).reshape(-1).tolist()
    [2.0, 2.0, 2.0]
    """
    nd = 1
    w_ndim, x_ndim = getattr(weight, "ndim", None), getattr(x, "ndim", None)
    if isinstance(w_ndim, int) and w_ndim > 3 and w_ndim == x_ndim:
        nd = w_ndim - 2
    return _conv(x, weight, stride, padding, dilation, groups, nd, "conv1d", stream)


def conv2d(
    x,
    weight,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
    *,
    stream=None,
):
    """2-d convolution: ``x`` ``(N, H, W, C_in)``, ``weight``
    ``(C_out, KH, KW, C_in / groups)``."""
    return _conv(x, weight, stride, padding, dilation, groups, 2, "conv2d", stream)


def conv3d(
    x,
    weight,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
    *,
    stream=None,
):
    """3-d convolution: ``x`` ``(N, D, H, W, C_in)``, ``weight``
    ``(C_out, KD, KH, KW, C_in / groups)``."""
    return _conv(x, weight, stride, padding, dilation, groups, 3, "conv3d", stream)


def pool(
    x, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int], kind: str, op: str
):
    """Max (``kind="max"``) or average pooling of channels-last ``x`` over its spatial axes.
    Max pooling pads with ``-inf``, average pooling with zeros (counted in the average)."""
    nd = len(kernel)
    if x.ndim != nd + 2:
        raise ValueError(
            f"{op}: input must be {nd + 2}-d (batch, {nd} spatial, channels), "
            f"got shape {tuple(x.shape)}"
        )
    if any(p * 2 > k for p, k in zip(padding, kernel)):
        raise ValueError(
            f"{op}: padding {tuple(padding)} must be at most half the kernel size {tuple(kernel)}"
        )
    if any(padding):
        x = _pad_spatial(x, padding, float("-inf") if kind == "max" else 0.0)
    spatial = x.shape[1:-1]
    count = 1
    for k in kernel:
        count *= k
    tiles = tuple(kernel) == tuple(stride) and all(n % k == 0 for n, k in zip(spatial, kernel))
    if kind == "max" and tiles and not shapeless.relative(x):  # (the reshape holds traced sizes)
        # windows tile the input: reshape (N, H/k, k, W/k, k, C) and reduce the k axes. Only
        # for max, which any order gives exactly: an average always adds the window's slices
        # in one order, so that a shapeless trace (which cannot reshape) gives the same bits
        shape = [x.shape[0]]
        for n, k in zip(spatial, kernel):
            shape += [n // k, k]
        shape.append(x.shape[-1])
        return reduction.max(reshape(x, shape), axis=tuple(2 + 2 * i for i in range(nd)))
    slices, _ = _window_slices(x, kernel, stride, (1,) * nd, op)
    acc = slices[0]
    for s in slices[1:]:
        acc = maximum(acc, s) if kind == "max" else acc + s
    if shapeless.relative(acc):  # a reshape to the output sizes checks them at each replay
        lead = _output_sizes(x, kernel, stride, (1,) * nd, op)
        acc = reshape(acc, (*lead, shapeless.sizes(acc)[-1]))
    return acc if kind == "max" else acc / count
