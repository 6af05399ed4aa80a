"""``nv.fft``: discrete Fourier transforms with MLX's API (``mlx.core.fft``).

Transforms run in single precision as MLX's do: real input as float32, complex input (and
everything an inverse or complex transform takes) as complex64; results are complex64, or
float32 for ``irfft``/``irfft2``/``irfftn``. ``n`` / ``s`` crop or zero-pad the transformed
axes first; ``norm`` is ``"backward"`` (the inverse divides by the number of points),
``"ortho"`` or ``"forward"``. On the CPU the transforms are NumPy's pocketfft, on CUDA cuFFT
through CuPy. ``stft``/``istft`` (``torch.stft``'s arguments, MLX's ``norm``) frame a signal with
one gather and call these transforms, so they share their gradients.

>>> import nuvec as nv
>>> nv.fft.fft(nv.array([1.0, 0.0, 0.0, 0.0])).tolist()
[(1+0j), (1+0j), (1+0j), (1+0j)]
>>> nv.fft.irfft(nv.fft.rfft(nv.array([1.0, 2.0, 3.0]))).shape
(2,)
"""

from __future__ import annotations

import contextlib
import math
import numbers
from typing import Sequence

import numpy as np

from .core import dtypes as dt
from .core.array import Array
from .core.device import resolve_stream, stream as _stream_ctx
from .primitives.fft import FFT
from . import ops
from .ops._common import as_array, normalize_axes, normalize_axis
from .ops.creation import array

_NORMS = ("backward", "ortho", "forward")


def _on(stream):
    """The enclosed ops on ``stream`` (the ``stream=`` keyword), or where they would be."""
    return contextlib.nullcontext() if stream is None else _stream_ctx(resolve_stream(stream))


def _array(a, name: str) -> Array:

    return as_array(a, name)


def _int_list(v, name: str, what: str) -> list[int]:
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return [int(v)]
    try:
        items = list(v)
    except TypeError:
        raise TypeError(
            f"{name}: {what} must be an int or a sequence of ints, got {type(v).__name__}"
        ) from None
    for x in items:
        if not isinstance(x, numbers.Integral) or isinstance(x, bool):
            raise TypeError(f"{name}: {what} must hold ints, got {type(x).__name__}")
    return [int(x) for x in items]


def _scale(n: Sequence[int], norm: str, inverse: bool) -> float:
    """The factor the result gets beyond the primitive's own (1 forward, 1/n inverse)."""
    total = float(math.prod(n))
    if norm == "backward" or total == 0:
        return 1.0
    if norm == "ortho":
        return math.sqrt(total) if inverse else 1.0 / math.sqrt(total)
    return total if inverse else 1.0 / total


def _transform(a, n, axes, real: bool, inverse: bool, norm: str, stream, name: str) -> Array:
    """The shared body of every transform: check, crop / zero-pad, cast, transform, scale.

    ``n`` (None for the input's sizes) gives the signal's length on each axis of ``axes``: for
    an inverse real transform the output's, whose last axis reads ``n[-1] // 2 + 1`` inputs."""

    a = _array(a, name)
    if not isinstance(norm, str) or norm not in _NORMS:
        raise ValueError(
            f"{name}: invalid norm {norm!r}; expected one of 'backward', 'ortho', 'forward'"
        )
    if a.ndim < 1:
        raise ValueError(f"{name}: the input must have at least one dimension, got a 0-d array")
    axes = list(axes)
    if n is not None and len(n) != len(axes):
        raise ValueError(f"{name}: {len(n)} sizes for {len(axes)} axes")
    if not axes:
        return a
    axes = list(normalize_axes(axes, a.ndim, name))
    if n is None:
        n = [a.shape[ax] for ax in axes]
        if real and inverse:
            n[-1] = 2 * (n[-1] - 1)
    n = list(n)
    if any(k <= 0 for k in n):
        raise ValueError(f"{name}: invalid transform size {tuple(n)} (sizes must be positive)")
    want = list(a.shape)
    for ax, k in zip(axes, n):
        want[ax] = k
    if real and inverse:
        want[axes[-1]] = n[-1] // 2 + 1
    with _on(stream):
        x = a
        if any(w < s for w, s in zip(want, x.shape)):
            x = x[tuple(slice(0, min(w, s)) for w, s in zip(want, x.shape))]
        if any(w > s for w, s in zip(want, x.shape)):
            x = ops.pad(x, [(0, w - s) for w, s in zip(want, x.shape)])
        x = ops.astype(x, dt.float32 if real and not inverse else dt.complex64)
        prim = FFT(axes, inverse, real, odd=bool(real and inverse and n[-1] % 2))
        out = Array.make(prim, [x], resolve_stream(stream))
        factor = _scale(n, norm, inverse)
        if factor != 1.0:
            out = ops.multiply(out, array(factor, out.dtype))
    return out


def _one_axis(n, axis, name: str):
    if n is not None and (not isinstance(n, numbers.Integral) or isinstance(n, bool)):
        raise TypeError(f"{name}: n must be an int or None, got {type(n).__name__}")
    if not isinstance(axis, numbers.Integral) or isinstance(axis, bool):
        raise TypeError(f"{name}: axis must be an int, got {type(axis).__name__}")
    return (None if n is None else [int(n)]), [int(axis)]


def _many_axes(a, s, axes, name: str, default_axes):
    """(sizes or None, axes) of an n-dimensional transform, by MLX's rules: axes None means
    ``default_axes`` (None: every axis), and sizes without axes are refused."""
    if axes is None:
        if s is not None:
            raise ValueError(f"{name}: axes must be given when s is given")
        nd = _array(a, name).ndim
        axes = list(range(nd)) if default_axes is None else list(default_axes)
        return None, axes
    axes = _int_list(axes, name, "axes")
    return (None if s is None else _int_list(s, name, "s")), axes


# -- one dimension -----------------------------------------------------------------------


def fft(a, n: int | None = None, axis: int = -1, norm: str = "backward", *, stream=None) -> Array:
    """The discrete Fourier transform along ``axis`` (``n`` crops or zero-pads it first).

    >>> import nuvec as nv
    >>> nv.fft.fft(nv.array([0.0, 1.0])).tolist()
    [(1+0j), (-1+0j)]
    """
    n, axes = _one_axis(n, axis, "fft")
    return _transform(a, n, axes, False, False, norm, stream, "fft")


def ifft(a, n: int | None = None, axis: int = -1, norm: str = "backward", *, stream=None) -> Array:
    """The inverse of ``fft`` along ``axis``.

    >>> import nuvec as nv
    >>> nv.fft.ifft(nv.array([1.0, 1.0])).tolist()
    [(1+0j), 0j]
    """
    n, axes = _one_axis(n, axis, "ifft")
    return _transform(a, n, axes, False, True, norm, stream, "ifft")


def rfft(a, n: int | None = None, axis: int = -1, norm: str = "backward", *, stream=None) -> Array:
    """The transform of a real signal: the ``n // 2 + 1`` non-negative frequencies.

    >>> import nuvec as nv
    >>> nv.fft.rfft(nv.array([1.0, 2.0, 3.0, 4.0])).shape
    (3,)
    """
    n, axes = _one_axis(n, axis, "rfft")
    return _transform(a, n, axes, True, False, norm, stream, "rfft")


def irfft(a, n: int | None = None, axis: int = -1, norm: str = "backward", *, stream=None) -> Array:
    """The inverse of ``rfft``: a real signal of length ``n`` (default ``2 * (m - 1)`` for
    ``m`` frequencies).

    >>> import nuvec as nv
    >>> nv.fft.irfft(nv.array([4.0, 0.0, 0.0]), n=5).shape
    (5,)
    """
    n, axes = _one_axis(n, axis, "irfft")
    return _transform(a, n, axes, True, True, norm, stream, "irfft")


# -- two and n dimensions ----------------------------------------------------------------


def fft2(
    a,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = (-2, -1),
    norm: str = "backward",
    *,
    stream=None,
) -> Array:
    """Two-dimensional ``fft`` (over the last two axes by default)."""
    s, axes = _many_axes(a, s, axes, "fft2", None)
    return _transform(a, s, axes, False, False, norm, stream, "fft2")


def ifft2(
    a,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = (-2, -1),
    norm: str = "backward",
    *,
    stream=None,
) -> Array:
    """Two-dimensional ``ifft``."""
    s, axes = _many_axes(a, s, axes, "ifft2", None)
    return _transform(a, s, axes, False, True, norm, stream, "ifft2")


def rfft2(
    a,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = (-2, -1),
    norm: str = "backward",
    *,
    stream=None,
) -> Array:
    """Two-dimensional ``rfft`` (the last of ``axes`` is the halved one)."""
    s, axes = _many_axes(a, s, axes, "rfft2", None)
    return _transform(a, s, axes, True, False, norm, stream, "rfft2")


def irfft2(
    a,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = (-2, -1),
    norm: str = "backward",
    *,
    stream=None,
) -> Array:
    """Two-dimensional ``irfft``."""
    s, axes = _many_axes(a, s, axes, "irfft2", None)
    return _transform(a, s, axes, True, True, norm, stream, "irfft2")


def fftn(
    a,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str = "backward",
    *,
    stream=None,
) -> Array:
    """n-dimensional ``fft`` over ``axes`` (every axis by default).

    >>> import nuvec as nv
    >>> nv.fft.fftn(nv.ones((2, 2))).tolist()
    [[(4+0j), 0j], [0j, 0j]]
    """
    s, axes = _many_axes(a, s, axes, "fftn", None)
    return _transform(a, s, axes, False, False, norm, stream, "fftn")


def ifftn(
    a,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str = "backward",
    *,
    stream=None,
) -> Array:
    """n-dimensional ``ifft``."""
    s, axes = _many_axes(a, s, axes, "ifftn", None)
    return _transform(a, s, axes, False, True, norm, stream, "ifftn")


def rfftn(
    a,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str = "backward",
    *,
    stream=None,
) -> Array:
    """n-dimensional ``rfft``."""
    s, axes = _many_axes(a, s, axes, "rfftn", None)
    return _transform(a, s, axes, True, False, norm, stream, "rfftn")


def irfftn(
    a,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str = "backward",
    *,
    stream=None,
) -> Array:
    """n-dimensional ``irfft``."""
    s, axes = _many_axes(a, s, axes, "irfftn", None)
    return _transform(a, s, axes, True, True, norm, stream, "irfftn")


# -- frequencies and shifts --------------------------------------------------------------


def _check_freq_args(n, d, name: str) -> None:
    if not isinstance(n, numbers.Integral) or isinstance(n, bool):
        raise TypeError(f"{name}: n must be an int, got {type(n).__name__}")
    if not isinstance(d, numbers.Real) or isinstance(d, bool):
        raise TypeError(f"{name}: d must be a number, got {type(d).__name__}")
    if n <= 0:
        raise ValueError(f"{name}: n must be greater than 0, got {n}")
    if d == 0:
        raise ValueError(f"{name}: d must be non-zero")


def fftfreq(n: int, d: float = 1.0, *, stream=None) -> Array:
    """The sample frequencies of an ``n``-point ``fft`` with sample spacing ``d`` (float32).

    >>> import nuvec as nv
    >>> nv.fft.fftfreq(4).tolist()
    [0.0, 0.25, -0.5, -0.25]
    """

    _check_freq_args(n, d, "fftfreq")
    n = int(n)
    with _on(stream):
        k = ops.concatenate(
            [
                ops.arange(0, (n + 1) // 2, dtype=dt.float32),
                ops.arange(-(n // 2), 0, dtype=dt.float32),
            ]
        )
        return ops.multiply(k, array(1.0 / (n * float(d)), dt.float32))


def rfftfreq(n: int, d: float = 1.0, *, stream=None) -> Array:
    """The sample frequencies of an ``n``-point ``rfft`` (float32).

    >>> import nuvec as nv
    >>> nv.fft.rfftfreq(4).tolist()
    [0.0, 0.25, 0.5]
    """

    _check_freq_args(n, d, "rfftfreq")
    n = int(n)
    with _on(stream):
        return ops.multiply(
            ops.arange(0, n // 2 + 1, dtype=dt.float32), array(1.0 / (n * float(d)), dt.float32)
        )


def _shift(a, axes, inverse: bool, stream, name: str) -> Array:

    a = _array(a, name)
    if axes is None:
        if a.ndim == 0:
            return a
        axes = list(range(a.ndim))
    axes = _int_list(axes, name, "axes")
    if not axes:
        return a
    axes = [normalize_axis(ax, a.ndim, name) for ax in axes]
    shifts = [-(a.shape[ax] // 2) if inverse else a.shape[ax] // 2 for ax in axes]
    return ops.roll(a, shifts, axes, stream=stream)


def fftshift(a, axes: int | Sequence[int] | None = None, *, stream=None) -> Array:
    """The zero frequency moved to the centre of ``axes`` (every axis by default).

    >>> import nuvec as nv
    >>> nv.fft.fftshift(nv.arange(5)).tolist()
    [3, 4, 0, 1, 2]
    """
    return _shift(a, axes, False, stream, "fftshift")


def ifftshift(a, axes: int | Sequence[int] | None = None, *, stream=None) -> Array:
    """The inverse of ``fftshift`` (they differ on odd lengths).

    >>> import nuvec as nv
    >>> nv.fft.ifftshift(nv.arange(5)).tolist()
    [2, 3, 4, 0, 1]
    """
    return _shift(a, axes, True, stream, "ifftshift")


# -- short-time transforms ---------------------------------------------------------------

_PAD_MODES = ("reflect", "constant", "edge")


def _positive_int(v, name: str, what: str) -> int:
    if not isinstance(v, numbers.Integral) or isinstance(v, bool):
        raise TypeError(f"{name}: {what} must be an int, got {type(v).__name__}")
    if v <= 0:
        raise ValueError(f"{name}: {what} must be positive, got {v}")
    return int(v)


def _frame_window(window, n_fft: int, win_length: int | None, name: str, dtype) -> Array:
    """The window (ones when None) of ``win_length`` samples, zero-padded on both sides to
    ``n_fft`` (centred, as torch.stft does)."""

    win_length = n_fft if win_length is None else _positive_int(win_length, name, "win_length")
    if win_length > n_fft:
        raise ValueError(f"{name}: win_length ({win_length}) must not exceed n_fft ({n_fft})")
    if window is None:
        w = ops.ones((win_length,), dtype)
    else:
        w = _array(window, name)
        if w.shape != (win_length,):
            raise ValueError(f"{name}: window must have shape ({win_length},), got {w.shape}")
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        w = ops.pad(w, [(left, n_fft - win_length - left)])
    return ops.astype(w, dtype)


def _padded_index(length: int, pad: int, mode: str, name: str):
    """For each position of the signal padded by ``pad`` on both sides, the sample it reads
    (reflect: mirrored without repeating the edge; edge: the edge repeated)."""

    i = np.arange(-pad, length + pad)
    if mode == "reflect":
        if pad >= length:
            raise ValueError(
                f"{name}: reflect padding of {pad} needs a signal longer than "
                f"{pad} samples, got {length}"
            )
        i = np.abs(i)
        i = np.where(i >= length, 2 * (length - 1) - i, i)
    else:
        i = np.clip(i, 0, length - 1)
    return i


def stft(
    x,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window=None,
    center: bool = True,
    pad_mode: str = "reflect",
    norm: str = "backward",
    onesided: bool = True,
    *,
    stream=None,
) -> Array:
    """The short-time Fourier transform of the signals on the last axis of ``x``:
    ``(..., n_freq, n_frames)`` complex64, ``n_freq = n_fft // 2 + 1`` (``n_fft`` when not
    ``onesided``). Frames of ``n_fft`` samples every ``hop_length`` (default ``n_fft // 4``),
    each multiplied by ``window`` (``win_length`` samples, default ``n_fft``, centred in the
    frame; ones when None); with ``center`` the signal is first padded by ``n_fft // 2`` on
    both sides (``pad_mode`` "reflect", "constant" or "edge"). ``norm`` as in ``fft``. The
    arguments follow ``torch.stft``.

    >>> import nuvec as nv
    >>> nv.fft.stft(nv.zeros((100,)), n_fft=16).shape
    (9, 26)
    """

    name = "stft"
    x = _array(x, name)
    n_fft = _positive_int(n_fft, name, "n_fft")
    hop = n_fft // 4 if hop_length is None else _positive_int(hop_length, name, "hop_length")
    hop = max(hop, 1)
    if pad_mode not in _PAD_MODES:
        raise ValueError(
            f"{name}: pad_mode must be one of {', '.join(_PAD_MODES)}, got {pad_mode!r}"
        )
    if x.ndim < 1:
        raise ValueError(f"{name}: the input must have at least one dimension")
    if onesided and x.dtype.kind == "c":
        raise ValueError(f"{name}: a complex signal needs onesided=False")
    with _on(stream):
        real = x.dtype.kind != "c"
        x = ops.astype(x, dt.float32 if real else dt.complex64)
        w = _frame_window(window, n_fft, win_length, name, x.dtype)
        length = x.shape[-1]
        pad = n_fft // 2 if center else 0
        if pad and pad_mode == "constant":
            x = ops.pad(x, [(0, 0)] * (x.ndim - 1) + [(pad, pad)])
            source = np.arange(length + 2 * pad)
        else:
            source = _padded_index(length, pad, pad_mode, name)
        if source.size < n_fft:
            raise ValueError(
                f"{name}: the (padded) signal of {source.size} samples is shorter "
                f"than n_fft={n_fft}"
            )
        count = 1 + (source.size - n_fft) // hop
        # every frame's samples as indices into x: one gather frames the padded signal
        idx = source[np.arange(count)[:, None] * hop + np.arange(n_fft)[None, :]]
        frames = ops.take(x, array(idx.astype(np.int32)), axis=-1)
        frames = ops.multiply(frames, w)
        spec = (rfft if onesided else fft)(frames, axis=-1, norm=norm)
        return ops.swapaxes(spec, -1, -2)


def _overlap_add(frames: Array, hop: int) -> Array:
    """Frames (..., count, n) summed into one signal, frame t starting at ``t * hop``
    (length ``n + hop * (count - 1)``): each frame cut into hop-long chunks; chunk j of
    frame t lands in block t + j, so the signal is a sum of shifted chunk rows."""

    count, n = frames.shape[-2:]
    chunks = -(-n // hop)
    lead = [(0, 0)] * (frames.ndim - 2)
    if chunks * hop != n:
        frames = ops.pad(frames, lead + [(0, 0), (0, chunks * hop - n)])
    parts = ops.reshape(frames, frames.shape[:-1] + (chunks, hop))

    def shifted(j: int) -> Array:
        return ops.pad(parts[..., j, :], lead + [(j, chunks - 1 - j), (0, 0)])

    total = shifted(0)
    for j in range(1, chunks):
        total = ops.add(total, shifted(j))
    signal = ops.reshape(total, total.shape[:-2] + ((count + chunks - 1) * hop,))
    return signal[..., : n + hop * (count - 1)]


def istft(
    stft_matrix,
    n_fft: int | None = None,
    hop_length: int | None = None,
    win_length: int | None = None,
    window=None,
    center: bool = True,
    norm: str = "backward",
    onesided: bool = True,
    length: int | None = None,
    *,
    stream=None,
) -> Array:
    """The inverse of ``stft``: the signal whose ``stft`` (same arguments) is
    ``stft_matrix`` (..., n_freq, n_frames), by windowed overlap-add divided by the summed
    squared window. ``n_fft`` defaults to ``2 * (n_freq - 1)`` (``n_freq`` when not
    ``onesided``); ``length`` crops or zero-pads the result. float32 for a onesided spectrum,
    complex64 otherwise. The arguments follow ``torch.istft``.

    >>> import nuvec as nv
    >>> x = nv.random.normal((64,))
    >>> y = nv.fft.istft(nv.fft.stft(x, 16, window=nv.ones((16,))), 16, window=nv.ones((16,)),
    ...                  length=64)
    >>> nv.allclose(x, y, atol=1e-5).item()
    True
    """

    name = "istft"
    spec = _array(stft_matrix, name)
    if spec.ndim < 2:
        raise ValueError(
            f"{name}: the input must have at least two dimensions "
            f"(..., n_freq, n_frames), got {spec.ndim}"
        )
    n_freq, count = spec.shape[-2:]
    if n_fft is None:
        n_fft = 2 * (n_freq - 1) if onesided else n_freq
    n_fft = _positive_int(n_fft, name, "n_fft")
    want = n_fft // 2 + 1 if onesided else n_fft
    if n_freq != want:
        raise ValueError(
            f"{name}: {n_freq} frequencies do not match n_fft={n_fft} ({want} expected)"
        )
    hop = n_fft // 4 if hop_length is None else _positive_int(hop_length, name, "hop_length")
    hop = max(hop, 1)
    if hop > n_fft:
        raise ValueError(f"{name}: hop_length ({hop}) must not exceed n_fft ({n_fft})")
    if length is not None:
        length = _positive_int(length, name, "length")
    with _on(stream):
        frames = ops.swapaxes(ops.astype(spec, dt.complex64), -1, -2)
        frames = (
            irfft(frames, n=n_fft, axis=-1, norm=norm)
            if onesided
            else ifft(frames, axis=-1, norm=norm)
        )
        w = _frame_window(window, n_fft, win_length, name, frames.dtype)
        signal = _overlap_add(ops.multiply(frames, w), hop)
        env = _overlap_add(ops.broadcast_to(ops.square(ops.abs(w)), (count, n_fft)), hop)
        # samples no frame's window covers stay zero (and keep a finite gradient)
        covered = ops.greater(env, 1e-11)
        signal = ops.where(covered, signal / ops.where(covered, env, 1.0), 0.0)
        start = n_fft // 2 if center else 0
        end = signal.shape[-1] - (n_fft // 2 if center else 0)
        if length is not None:
            end = start + length
        out = signal[..., start : min(end, signal.shape[-1])]
        if out.shape[-1] < end - start:
            out = ops.pad(out, [(0, 0)] * (out.ndim - 1) + [(0, end - start - out.shape[-1])])
        return out


__all__ = [
    "fft",
    "ifft",
    "rfft",
    "irfft",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
    "fftn",
    "ifftn",
    "rfftn",
    "irfftn",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
    "stft",
    "istft",
]
