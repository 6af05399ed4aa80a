"""``Upsample``: resizing the spatial axes of channels-last inputs ``(N, *spatial, C)`` by
nearest neighbour, linear (bi-, tri-linear ...) or cubic interpolation, as PyTorch's
``F.interpolate`` with MLX's index conventions.

Interpolation is separable: each spatial axis is resampled in turn as a weighted sum of a
few gathered slices. The taps (source indices and weights per output position) depend only
on the sizes, so they are computed once in NumPy (float64) and enter the graph as constants.

>>> import nuvec as nv
>>> x = nv.arange(1, 5).reshape((1, 2, 2, 1))
>>> Upsample(2, mode="linear")(x)[0, 0, :, 0].tolist()
[1.0, 1.25, 1.75, 2.0]
"""

from __future__ import annotations

import math
from typing import Sequence, Union

import numpy as np

import nuvec as nv

from .base import Module

_MODES = ("nearest", "linear", "cubic")


def _source_coords(n: int, scale: float, align_corners: bool) -> np.ndarray:
    """Where each of the ``int(scale * n)`` outputs samples the input (in input indices)."""
    m = int(scale * n)
    i = np.arange(m, dtype=np.float64)
    if align_corners:
        return i * ((n - 1) / max(m - 1, 1))
    step = 1.0 / scale
    return i * step - ((m - 1) * step - n + 1) / 2


def _nearest_taps(n: int, scale: float) -> tuple:
    m = int(scale * n)
    i = np.arange(m, dtype=np.float64)
    idx = np.round((i + 0.5) * (n / m) - 0.5) if m > n else np.floor(i * (n / m))
    return idx[:, None].astype(np.int64), np.ones((m, 1))


def _linear_taps(n: int, scale: float, align_corners: bool) -> tuple:
    c = np.clip(_source_coords(n, scale, align_corners), 0, n - 1)
    lo, hi = np.floor(c), np.ceil(c)
    w = c - lo
    return np.stack([lo, hi], 1).astype(np.int64), np.stack([1 - w, w], 1)


def _keys_cubic(x: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel with parameter ``a`` at distances ``x >= 0``."""
    inner = ((a + 2) * x - (a + 3)) * x * x + 1
    outer = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x <= 1, inner, np.where(x <= 2, outer, 0.0))


def _cubic_taps(n: int, scale: float, align_corners: bool) -> tuple:
    """Four taps around each coordinate (a = -0.75), the border repeated outside."""
    c = _source_coords(n, scale, align_corners)
    base = np.floor(c)
    idx = np.stack([base - 1, base, base + 1, base + 2], 1)
    w = _keys_cubic(np.abs(c[:, None] - idx), -0.75)
    return np.clip(idx, 0, n - 1).astype(np.int64), w


def _antialiased_taps(n: int, scale: float, align_corners: bool, mode: str) -> tuple:
    """A filter widened by ``1/scale`` when downsampling (triangle for linear, Keys with
    a = -0.5 for cubic); taps outside the input are dropped and the weights renormalised."""
    c = _source_coords(n, scale, align_corners)
    radius = 1.0 if mode == "linear" else 2.0
    widen = 1.0 / scale if scale < 1 else 1.0
    reach = math.ceil(radius * widen) + 1
    idx = np.floor(c)[:, None] + np.arange(-reach + 1, reach)[None, :]
    dist = np.abs(c[:, None] - idx) / widen
    w = np.maximum(1 - dist, 0.0) if mode == "linear" else _keys_cubic(dist, -0.5)
    w = np.where((idx >= 0) & (idx < n), w, 0.0)
    total = w.sum(1, keepdims=True)
    w = w / np.where(total > 0, total, 1.0)
    return np.clip(idx, 0, n - 1).astype(np.int64), w


def _resample_axis(x, axis: int, idx: np.ndarray, w: np.ndarray, dtype):
    """``sum_t x[..., idx[:, t], ...] * w[:, t]`` along ``axis``."""
    shape = [1] * x.ndim
    shape[axis] = -1
    out = None
    for t in range(idx.shape[1]):
        part = nv.take(x, nv.array(idx[:, t].astype(np.int32)), axis=axis)
        if w is not None:
            part = part * nv.array(w[:, t].reshape(shape), dtype=dtype)
        out = part if out is None else out + part
    return out


def _repeat_nearest(x, scales: Sequence[int]):
    """Nearest upsampling by integer factors: broadcast each spatial axis ``s`` times."""
    n, *spatial, ch = x.shape
    expanded = [n]
    for d in spatial:
        expanded += [d, 1]
    y = nv.reshape(x, expanded + [ch])
    target = [n]
    for d, s in zip(spatial, scales):
        target += [d, s]
    y = nv.broadcast_to(y, target + [ch])
    return nv.reshape(y, [n] + [d * s for d, s in zip(spatial, scales)] + [ch])


class Upsample(Module):
    """Resizes the spatial axes (1 to ``ndim - 2``) of ``(N, *spatial, C)`` inputs by
    ``scale_factor`` (one number, or one per spatial axis); an axis of size ``n`` becomes
    ``int(scale * n)``.

    ``mode``: ``"nearest"``, ``"linear"`` or ``"cubic"`` (Keys, a = -0.75, border repeated).
    ``align_corners`` (linear, cubic) maps the first and last outputs onto the first and last
    inputs. ``antialias`` (linear, cubic; not with ``align_corners``) low-pass filters when
    downsampling, as PyTorch's ``antialias=True`` (the cubic kernel then has a = -0.5).
    Floating inputs keep their dtype; others interpolate to float32 (nearest keeps any).
    """

    def __init__(
        self,
        scale_factor: Union[float, Sequence[float]],
        mode: str = "nearest",
        align_corners: bool = False,
        antialias: bool = False,
    ) -> None:
        super().__init__()
        if mode not in _MODES:
            raise ValueError(f"Upsample: mode must be one of {_MODES}, got {mode!r}")
        if antialias and mode == "nearest":
            raise ValueError("Upsample: antialias is not supported for nearest upsampling")
        if antialias and align_corners:
            raise ValueError(
                "Upsample: antialias=True with align_corners=True is not "
                "supported; use align_corners=False"
            )
        scale: float | tuple[float, ...]
        if isinstance(scale_factor, (list, tuple)):
            scale = tuple(float(s) for s in scale_factor)
            bad = [s for s in scale if not s > 0]
        else:
            scale = float(scale_factor)  # type: ignore[arg-type]  # a number here
            bad = [] if scale > 0 else [scale]
        if bad:
            raise ValueError(f"Upsample: scale factors must be positive, got {scale_factor}")
        self.scale_factor = scale
        self.mode = mode
        self.align_corners = align_corners
        self.antialias = antialias

    def _extra_repr(self) -> str:
        r = (
            f"scale_factor={self.scale_factor}, mode={self.mode!r}, "
            f"align_corners={self.align_corners}"
        )
        return r + (", antialias=True" if self.antialias else "")

    def __call__(self, x):
        dims = x.ndim - 2
        if dims <= 0:
            raise ValueError(
                f"Upsample: the input needs at least one spatial axis (N, ..., C), "
                f"got a {x.ndim}-d input"
            )
        scales = self.scale_factor
        if isinstance(scales, tuple):
            if len(scales) != dims:
                raise ValueError(
                    f"Upsample: one scale per spatial axis is needed, got "
                    f"scale_factor={scales} for {dims} spatial axes"
                )
        else:
            scales = (scales,) * dims
        if self.mode == "nearest":
            if all(s == int(s) for s in scales):
                return _repeat_nearest(x, [int(s) for s in scales])
            for axis, (n, s) in enumerate(zip(x.shape[1:-1], scales), start=1):
                x = _resample_axis(x, axis, _nearest_taps(n, s)[0], None, None)
            return x
        dtype = x.dtype if nv.issubdtype(x.dtype, nv.floating) else nv.float32
        x = nv.astype(x, dtype)
        for axis, (n, s) in enumerate(zip(x.shape[1:-1], scales), start=1):
            if self.antialias:
                idx, w = _antialiased_taps(n, s, self.align_corners, self.mode)
            elif self.mode == "linear":
                idx, w = _linear_taps(n, s, self.align_corners)
            else:
                idx, w = _cubic_taps(n, s, self.align_corners)
            x = _resample_axis(x, axis, idx, w, dtype)
        return x
