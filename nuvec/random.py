"""Random numbers from keys (MLX's ``mlx.core.random``): threefry, counter based.

A key is a uint32 array of shape (2,). Every sampler takes ``key=``; without one it draws from
the global key in ``state[0]`` and advances it (``state`` is a list, as MLX, so that compile
can thread it through a compiled step). The same key gives the same numbers on every run and
machine: the bits come from integer arithmetic only.

>>> import nuvec as nv
>>> k = nv.random.key(0)
>>> a, b = nv.random.split(k)
>>> nv.random.uniform(shape=(2,), key=a).tolist() == nv.random.uniform(shape=(2,), key=a).tolist()
True
>>> nv.random.seed(42); x = nv.random.normal((3,))
>>> nv.random.seed(42); bool(nv.all(x == nv.random.normal((3,))))
True
"""

from __future__ import annotations

import math
import time
from typing import Sequence

import numpy as np

from . import ops
from .core import dtypes as dt
from .core.array import Array
from .core.device import resolve_stream
from .ops._common import as_array, normalize_axis, shape_arg
from .ops.creation import array
from .primitives.random import WIDTH_DTYPES, RandomBits
from .core.evaluate import eval as _eval

__all__ = [
    "key",
    "seed",
    "split",
    "bits",
    "uniform",
    "normal",
    "randint",
    "bernoulli",
    "truncated_normal",
    "categorical",
    "gumbel",
    "permutation",
    "laplace",
    "multivariate_normal",
    "state",
]

_SQRT2 = math.sqrt(2.0)


def key(seed: int) -> Array:
    """A key from an integer seed (its low 64 bits: high word, low word).

    >>> import nuvec as nv
    >>> nv.random.key(1).tolist()
    [0, 1]
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"key: seed must be an int, got {type(seed).__name__}")
    if not -(2**63) <= seed < 2**64:
        raise OverflowError(f"key: seed {seed} does not fit in 64 bits")
    s = int(seed) & 0xFFFFFFFFFFFFFFFF
    return Array.constant(np.array([s >> 32, s & 0xFFFFFFFF], dtype=np.uint32), None, dt.uint32)


#: The global key, as a one-item list: ``state[0]``. Draws without ``key=`` read it and replace
#: it with its successor; compile may swap it for a traced input and write back the result.
state: list = [key(time.time_ns())]


def seed(seed: int) -> None:
    """Resets the global key to ``key(seed)``."""
    state[0] = key(seed)


def _check_key(k, name: str) -> Array:
    if not isinstance(k, Array):
        raise TypeError(
            f"{name}: key must be an array made by nv.random.key or split, got {type(k).__name__}"
        )
    if k.dtype != dt.uint32 or k.shape != (2,):
        raise ValueError(
            f"{name}: a key is a uint32 array of shape (2,), got {k.dtype.name} {k.shape}"
        )
    return k


def _next_key() -> Array:
    """A fresh key from the global one, which advances."""
    k = state[0]
    pair = Array.make(RandomBits((2, 2), 4, stateful=True), [k])
    new, sub = pair[0], pair[1]
    if k._data is not None and not k._tracer:
        _eval(new, sub)  # keeps the global key a value: a loop of draws grows no graph
    state[0] = new
    return sub


def _bits(shape: tuple, width: int, k, name: str, stream) -> Array:
    stateful = k is None
    k = _next_key() if stateful else _check_key(k, name)
    return Array.make(RandomBits(shape, width, stateful), [k], resolve_stream(stream))


def _shape(shape, name: str) -> tuple[int, ...]:
    return () if shape is None else shape_arg(shape, name)


def _float_dtype(dtype, name: str) -> dt.Dtype:
    """``dtype`` checked to be a real floating type; None means float32 (MLX)."""
    d = dt.float32 if dtype is None else dt.to_dtype(dtype)
    if d.kind != "f":
        raise ValueError(f"{name}: dtype must be a real floating-point type, got {d.name}")
    return d


def split(key: Array, num: int = 2, *, stream=None) -> Array:
    """``num`` new keys from ``key``, as an array of shape (num, 2).

    >>> import nuvec as nv
    >>> nv.random.split(nv.random.key(0), 3).shape
    (3, 2)
    """
    k = _check_key(key, "split")
    if not isinstance(num, (int, np.integer)) or num < 1:
        raise ValueError(f"split: num must be a positive int, got {num!r}")
    return Array.make(RandomBits((int(num), 2), 4), [k], resolve_stream(stream))


def bits(
    shape: Sequence[int] = (), width: int = 4, key: Array | None = None, *, stream=None
) -> Array:
    """Random unsigned integers of ``width`` bytes (1, 2 or 4) per element."""
    if width not in WIDTH_DTYPES:
        raise ValueError(f"bits: width must be 1, 2 or 4, got {width}")
    return _bits(_shape(shape, "bits"), width, key, "bits", stream)


def _unit(shape: tuple, d: dt.Dtype, k, name: str, stream) -> Array:
    """Uniform in [0, 1) with every representable step of the computing dtype: 24 bits for
    float32 (float16 and bfloat16 are computed in float32), 53 bits for float64."""
    if d == dt.float64:
        w = _bits(shape + (2,), 4, k, name, stream)
        hi = ops.astype(ops.right_shift(w[..., 0], 5), dt.float64)
        lo = ops.astype(ops.right_shift(w[..., 1], 6), dt.float64)
        return (hi * 67108864.0 + lo) * (1.0 / 9007199254740992.0)
    w = _bits(shape, 4, k, name, stream)
    return ops.astype(ops.right_shift(w, 8), dt.float32) * (1.0 / 16777216.0)


def _compute_dtype(d: dt.Dtype) -> dt.Dtype:
    return dt.float64 if d == dt.float64 else dt.float32


def uniform(
    low=0.0,
    high=1.0,
    shape: Sequence[int] = (),
    dtype=dt.float32,
    key: Array | None = None,
    *,
    stream=None,
) -> Array:
    """Uniform samples in ``[low, high)`` (``low``/``high`` broadcast to ``shape``).

    >>> import nuvec as nv
    >>> u = nv.random.uniform(2.0, 3.0, (1000,), key=nv.random.key(7))
    >>> 2.0 <= nv.min(u).item() and nv.max(u).item() < 3.0
    True
    """
    d = _float_dtype(dtype, "uniform")
    shape = _shape(shape, "uniform")
    lo_shape = getattr(low, "shape", ())
    hi_shape = getattr(high, "shape", ())
    target = ops.broadcast_shapes(shape, lo_shape, hi_shape, name="uniform")
    if target != shape:
        raise ValueError(
            f"uniform: low {lo_shape} and high {hi_shape} do not broadcast to the shape {shape}"
        )
    c = _compute_dtype(d)
    lo_c = ops.astype(as_array(low, "uniform"), c)
    hi_c = ops.astype(as_array(high, "uniform"), c)
    u = _unit(shape, d, key, "uniform", stream)
    out = ops.astype(lo_c + (hi_c - lo_c) * u, d)
    # rounding can land on ``high``: such samples move to ``low`` (a case of measure ~2^-24)
    hi_d = ops.astype(hi_c, d)
    return ops.where(out < hi_d, out, ops.astype(lo_c, d) + ops.zeros_like(out))


def _open_unit_symmetric(shape, d, k, name, stream) -> Array:
    """Uniform in (-1, 1), in the computing dtype."""
    c = _compute_dtype(d)
    u = _unit(shape, d, k, name, stream)
    step = float(np.finfo(c.np).eps) / 2.0  # the spacing of ``u``: 2^-24 or 2^-53
    return (u * 2.0 - 1.0) + step  # in [-1 + step, 1 - step]: symmetric, both ends open


def normal(
    shape: Sequence[int] = (),
    dtype=dt.float32,
    loc=None,
    scale=None,
    key: Array | None = None,
    *,
    stream=None,
) -> Array:
    """Standard normal samples (times ``scale``, plus ``loc`` when given).

    >>> import nuvec as nv
    >>> nv.random.normal((2, 3), key=nv.random.key(0)).shape
    (2, 3)
    """
    if dtype is not None and dt.to_dtype(dtype) == dt.complex64:
        return _complex_normal(_shape(shape, "normal"), loc, scale, key, stream)
    d = _float_dtype(dtype, "normal")
    shape = _shape(shape, "normal")
    u = _open_unit_symmetric(shape, d, key, "normal", stream)
    z = ops.erfinv(u) * _SQRT2
    if scale is not None:
        z = z * scale
    if loc is not None:
        z = z + loc
    return ops.astype(z, d)


def _complex_normal(shape: tuple, loc, scale, key, stream) -> Array:
    """Standard complex normal samples: real and imaginary parts independent, each of
    variance 1/2 (MLX's convention), then times ``scale`` plus ``loc``."""
    u = _open_unit_symmetric(shape + (2,), dt.float32, key, "normal", stream)
    parts = ops.astype(ops.erfinv(u), dt.complex64)
    z = parts[..., 0] + parts[..., 1] * 1j
    if scale is not None:
        z = z * scale
    if loc is not None:
        z = z + loc
    return ops.astype(z, dt.complex64)


def randint(
    low, high, shape: Sequence[int] = (), dtype=dt.int32, key: Array | None = None, *, stream=None
) -> Array:
    """Integers uniform in ``[low, high)``.

    >>> import nuvec as nv
    >>> r = nv.random.randint(3, 7, (100,), key=nv.random.key(1))
    >>> 3 <= nv.min(r).item() and nv.max(r).item() <= 6
    True
    """
    d = dt.int32 if dtype is None else dt.to_dtype(dtype)
    if d.kind not in "uib":
        raise ValueError(f"randint: dtype must be an integer type or bool, got {d.name}")
    shape = _shape(shape, "randint")
    for k, v in (("low", low), ("high", high)):
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"randint: {k} must be finite, got {v}")
    lo = ops.astype(as_array(low, "randint"), dt.int64)
    hi = ops.astype(as_array(high, "randint"), dt.int64)
    if ops.broadcast_shapes(shape, lo.shape, hi.shape, name="randint") != shape:
        raise ValueError(
            f"randint: low {lo.shape} and high {hi.shape} do not broadcast to the shape {shape}"
        )
    span = ops.astype(ops.maximum(hi - lo, 0), dt.uint64)
    w = ops.astype(_bits(shape, 4, key, "randint", stream), dt.uint64)
    # multiply-high: floor(w * span / 2^32), uniform up to a bias below span / 2^32
    off = ops.astype(ops.right_shift(w * span, array(32, dtype=dt.uint64)), dt.int64)
    return ops.astype(lo + off, d)


def bernoulli(
    p=0.5, shape: Sequence[int] | None = None, key: Array | None = None, *, stream=None
) -> Array:
    """Booleans that are True with probability ``p`` (shape: ``shape``, or ``p``'s)."""
    p = as_array(p, "bernoulli")
    if p.dtype.kind != "f":
        raise ValueError(
            f"bernoulli: p must be a floating-point array or float, got {p.dtype.name}"
        )
    shape = p.shape if shape is None else _shape(shape, "bernoulli")
    if ops.broadcast_shapes(shape, p.shape, name="bernoulli") != shape:
        raise ValueError(f"bernoulli: p of shape {p.shape} does not broadcast to {shape}")
    return ops.less(
        uniform(
            shape=shape,
            dtype=p.dtype if p.dtype == dt.float64 else dt.float32,
            key=key,
            stream=stream,
        ),
        p,
    )


def truncated_normal(
    lower,
    upper,
    shape: Sequence[int] | None = None,
    dtype=dt.float32,
    key: Array | None = None,
    *,
    stream=None,
) -> Array:
    """Normal samples restricted to ``[lower, upper]`` (by inverting the normal CDF)."""
    d = _float_dtype(dtype, "truncated_normal")
    c = _compute_dtype(d)
    lo = ops.astype(as_array(lower, "truncated_normal"), c)
    hi = ops.astype(as_array(upper, "truncated_normal"), c)
    bshape = ops.broadcast_shapes(lo.shape, hi.shape, name="truncated_normal")
    shape = bshape if shape is None else _shape(shape, "truncated_normal")
    if ops.broadcast_shapes(shape, bshape, name="truncated_normal") != shape:
        raise ValueError(f"truncated_normal: bounds of shape {bshape} do not broadcast to {shape}")
    a = ops.erf(lo * (1.0 / _SQRT2))
    b = ops.erf(hi * (1.0 / _SQRT2))
    u = _unit(shape, d, key, "truncated_normal", stream)
    z = ops.erfinv(a + (b - a) * u) * _SQRT2
    # upper first, then lower: with lower > upper every sample is lower (as MLX)
    return ops.astype(ops.maximum(ops.minimum(z, hi), lo), d)


def gumbel(
    shape: Sequence[int] = (), dtype=dt.float32, key: Array | None = None, *, stream=None
) -> Array:
    """Samples of the standard Gumbel distribution: ``-log(-log(u))``."""
    d = _float_dtype(dtype, "gumbel")
    shape = _shape(shape, "gumbel")
    c = _compute_dtype(d)
    u = _unit(shape, d, key, "gumbel", stream)
    tiny = float(np.finfo(c.np).tiny)
    u = ops.maximum(u, tiny)  # u in (0, 1): both logs finite
    return ops.astype(-ops.log(-ops.log(u)), d)


def laplace(
    shape: Sequence[int] = (),
    dtype=dt.float32,
    loc: float = 0.0,
    scale: float = 1.0,
    key: Array | None = None,
    *,
    stream=None,
) -> Array:
    """Samples of the Laplace distribution (inverse CDF of a uniform in (-1, 1))."""
    d = _float_dtype(dtype, "laplace")
    shape = _shape(shape, "laplace")
    u = _open_unit_symmetric(shape, d, key, "laplace", stream)
    z = -ops.sign(u) * ops.log1p(-ops.abs(u))
    return ops.astype(z, d) * scale + loc  # scaled in the sample dtype, as MLX


def categorical(
    logits,
    axis: int = -1,
    shape: Sequence[int] | None = None,
    num_samples: int | None = None,
    key: Array | None = None,
    *,
    stream=None,
) -> Array:
    """Indices drawn from the categorical distribution of ``logits`` along ``axis`` (Gumbel
    maximum). The result has ``logits``' shape without ``axis``, or ``shape``, or that
    shape plus ``(num_samples,)``.

    >>> import nuvec as nv
    >>> nv.random.categorical(nv.array([[0.0, 100.0]]), key=nv.random.key(0)).tolist()
    [1]
    """
    logits = as_array(logits, "categorical")
    if shape is not None and num_samples is not None:
        raise ValueError("categorical: give at most one of shape and num_samples")
    nd = logits.ndim
    if nd == 0:
        raise ValueError("categorical: logits must have at least one dimension")
    lg = ops.moveaxis(logits, normalize_axis(axis, nd, "categorical"), -1)
    batch, k = lg.shape[:-1], lg.shape[-1]
    if lg.dtype.kind != "f":
        lg = ops.astype(lg, dt.float32)
    if num_samples is not None:
        if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
            raise TypeError(
                f"categorical: num_samples must be an int, got {type(num_samples).__name__}"
            )
        if num_samples < 0:
            raise ValueError(f"categorical: num_samples must not be negative, got {num_samples}")
        g = gumbel(batch + (int(num_samples), k), lg.dtype, key=key, stream=stream)
        return ops.argmax(ops.expand_dims(lg, -2) + g, axis=-1)
    out_shape = batch if shape is None else _shape(shape, "categorical")
    if ops.broadcast_shapes(out_shape, batch, name="categorical") != out_shape:
        raise ValueError(
            f"categorical: shape {out_shape} does not broadcast with the logits' "
            f"batch shape {batch}"
        )
    g = gumbel(out_shape + (k,), lg.dtype, key=key, stream=stream)
    return ops.argmax(lg + g, axis=-1)


def permutation(x, axis: int = 0, key: Array | None = None, *, stream=None) -> Array:
    """A random permutation of ``arange(x)`` (an int), or of ``x``'s slices along ``axis``.

    >>> import nuvec as nv
    >>> sorted(nv.random.permutation(5, key=nv.random.key(3)).tolist())
    [0, 1, 2, 3, 4]
    """
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        x = ops.arange(int(x))
    x = as_array(x, "permutation")
    if x.ndim == 0:
        raise ValueError("permutation: x must be an int or an array with at least one dimension")
    n = x.shape[normalize_axis(axis, x.ndim, "permutation")]
    order = ops.argsort(_bits((n,), 4, key, "permutation", stream), axis=0)
    return ops.take(x, order, axis=axis)


def multivariate_normal(
    mean, cov, shape: Sequence[int] = (), dtype=dt.float32, key: Array | None = None, *, stream=None
) -> Array:
    """Samples of the normal distribution with ``mean`` (..., n) and covariance ``cov``
    (..., n, n), positive semi-definite; the result has shape ``shape + (n,)`` (an empty
    ``shape`` means the broadcast batch shape of mean and cov).

    The covariance is factored as ``U sqrt(S)`` from its SVD (it may be singular).
    """
    d = _float_dtype(dtype, "multivariate_normal")
    if d not in (dt.float32, dt.float64):  # MLX: float32 only (nuvec adds float64)
        raise ValueError(f"multivariate_normal: dtype must be float32 or float64, got {d.name}")
    mean = ops.astype(as_array(mean, "multivariate_normal"), d)
    cov = ops.astype(as_array(cov, "multivariate_normal"), d)
    if (
        mean.ndim < 1
        or cov.ndim < 2
        or cov.shape[-1] != cov.shape[-2]
        or cov.shape[-1] != mean.shape[-1]
    ):
        raise ValueError(
            f"multivariate_normal: mean (..., n) and cov (..., n, n) are needed, got "
            f"{mean.shape} and {cov.shape}"
        )
    n = mean.shape[-1]
    shape = _shape(shape, "multivariate_normal")
    batch = ops.broadcast_shapes(shape, mean.shape[:-1], cov.shape[:-2], name="multivariate_normal")
    if not shape:  # as MLX: an empty shape means the batch shape of mean and cov
        shape = batch
    if batch != shape:
        raise ValueError(
            f"multivariate_normal: shape {shape} does not broadcast with the batch "
            f"shapes of mean {mean.shape[:-1]} and cov {cov.shape[:-2]}"
        )
    factor = _psd_factor(cov)
    z = normal(shape + (n,), d, key=key, stream=stream)
    return mean + ops.squeeze(ops.matmul(factor, ops.expand_dims(z, -1)), -1)


def _psd_factor(cov: Array) -> Array:
    """``F`` with ``F @ F.T == cov`` for a symmetric positive semi-definite ``cov``."""
    linalg = getattr(__import__("nuvec"), "linalg", None)
    svd = getattr(linalg, "svd", None)
    if svd is not None:
        u, s, _ = svd(cov)
        return u * ops.expand_dims(ops.sqrt(ops.maximum(s, 0.0)), -2)
    # no traced SVD in this build: factor on the host (the factor has no gradient)
    c = np.asarray(cov).astype(np.float64)
    u, s, _ = np.linalg.svd(c)
    f = u * np.sqrt(np.maximum(s, 0.0))[..., None, :]
    return array(f.astype(cov.dtype.np))
