"""MLX operations defined through other operations, built the same way here (their gradients
and vmap come from the parts): logical_xor, trunc, positive, flip, unstack, diff, kron, trace,
median, count_nonzero, vecdot, searchsorted, asarray,
from_dlpack, contiguous, einsum_path, depends, as_strided.

>>> import nuvec as nv
>>> nv.diff(nv.array([1, 4, 9, 16])).tolist()
[3, 5, 7]
"""

from __future__ import annotations

import builtins
import numbers
from typing import Sequence

import numpy as np

from ..core import dtypes as dt
from ..core import shapeless
from ..core.array import Array
from ..core.device import resolve_stream
from ..primitives.depends import Depends
from ..primitives.misc import Copy, Unbatched
from . import elementwise as ew
from ._common import as_array, normalize_axis
from .creation import array, host_from_dlpack
from .indexing import diagonal, getitem, take
from .reduction import any as _any
from .reduction import mean, sum
from .shape import flatten, reshape, split, squeeze, transpose
from .sort import sort

__all__ = [
    "logical_xor",
    "trunc",
    "positive",
    "flip",
    "unstack",
    "diff",
    "kron",
    "trace",
    "median",
    "count_nonzero",
    "vecdot",
    "searchsorted",
    "asarray",
    "from_dlpack",
    "contiguous",
    "einsum_path",
    "depends",
    "as_strided",
]


def _int(v, name: str, arg: str) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name}: {arg} must be an int, got {type(v).__name__}")
    return int(v)


def _axes(axis, ndim: int, name: str) -> list[int]:
    """``axis`` (None, an int or a sequence) as sorted, distinct, non-negative axes."""
    if axis is None:
        return list(range(ndim))
    if not isinstance(axis, (numbers.Integral, list, tuple)) or isinstance(axis, bool):
        raise TypeError(
            f"{name}: axis must be an int, a sequence of ints or None, got {type(axis).__name__}"
        )
    seq = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    out = [normalize_axis(a, ndim, name, scalar=True) for a in seq]
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {tuple(seq)}")
    return sorted(out)


def logical_xor(a, b, /, *, stream=None) -> Array:
    """Element-wise exclusive or of the truth values of ``a`` and ``b`` (bool result).

    >>> import nuvec as nv
    >>> nv.logical_xor(nv.array([True, False]), True).tolist()
    [False, True]
    """
    a = ew.astype(as_array(a, "logical_xor"), dt.bool_, stream=stream)
    b = ew.astype(as_array(b, "logical_xor"), dt.bool_, stream=stream)
    return ew.not_equal(a, b, stream=stream)


def trunc(a, /, *, stream=None) -> Array:
    """Rounds towards zero; integers are returned unchanged.

    >>> import nuvec as nv
    >>> nv.trunc(nv.array([-1.7, 2.5])).tolist()
    [-1.0, 2.0]
    """
    a = as_array(a, "trunc")
    if a.dtype == dt.complex64:
        raise ValueError("trunc: complex64 is not supported")
    if not dt.issubdtype(a.dtype, dt.inexact):
        return a
    return ew.where(
        ew.less(a, 0, stream=stream),
        ew.ceil(a, stream=stream),
        ew.floor(a, stream=stream),
        stream=stream,
    )


def positive(a, /, *, stream=None) -> Array:
    """Element-wise unary plus: a copy of ``a``."""

    return Array.make(Copy(), [as_array(a, "positive")], resolve_stream(stream))


def flip(a, /, axis: int | Sequence[int] | None = None, *, stream=None) -> Array:
    """Reverses the order of the elements along ``axis`` (every axis when None).

    >>> import nuvec as nv
    >>> nv.flip(nv.array([[1, 2], [3, 4]]), axis=1).tolist()
    [[2, 1], [4, 3]]
    """
    a = as_array(a, "flip")
    axes = set(_axes(axis, a.ndim, "flip"))
    if not axes:
        return a
    index = tuple(
        builtins.slice(None, None, -1) if i in axes else builtins.slice(None) for i in range(a.ndim)
    )
    return getitem(a, index, stream=stream)


def unstack(x, /, *, axis: int = 0, stream=None) -> list[Array]:
    """The arrays along ``axis``, each without that axis (the inverse of ``stack``).

    >>> import nuvec as nv
    >>> [t.tolist() for t in nv.unstack(nv.array([[1, 2], [3, 4]]), axis=1)]
    [[1, 3], [2, 4]]
    """
    x = as_array(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack: the array must have at least one dimension")
    ax = normalize_axis(axis, x.ndim, "unstack", scalar=True)
    n = x.shape[ax]
    if n == 0:
        return []
    return [squeeze(p, ax, stream=stream) for p in split(x, n, axis=ax, stream=stream)]


def diff(a, /, n: int = 1, axis: int = -1, *, stream=None) -> Array:
    """The ``n``-th discrete difference along ``axis`` (``a[1:] - a[:-1]``, ``n`` times).

    >>> import nuvec as nv
    >>> nv.diff(nv.array([1.0, 4.0, 9.0, 16.0]), n=2).tolist()
    [2.0, 2.0]
    """
    a = as_array(a, "diff")
    n = _int(n, "diff", "n")
    if n < 0:
        raise ValueError(f"diff: the order n must be non-negative, got {n}")
    if a.ndim == 0:
        raise ValueError("diff: the array must have at least one dimension")
    ax = normalize_axis(axis, a.ndim, "diff", scalar=True)
    # bounds that hold no size, so that a shapeless replay takes them from its own shape
    hi = tuple(builtins.slice(1, None) if i == ax else builtins.slice(None) for i in range(a.ndim))
    lo = tuple(builtins.slice(None, -1) if i == ax else builtins.slice(None) for i in range(a.ndim))
    for _ in range(n):
        a = ew.subtract(getitem(a, hi, stream=stream), getitem(a, lo, stream=stream), stream=stream)
    return a


def kron(a, b, *, stream=None) -> Array:
    """The Kronecker product of ``a`` and ``b`` (NumPy's ``kron``).

    >>> import nuvec as nv
    >>> nv.kron(nv.array([1, 2]), nv.array([1, 10])).tolist()
    [1, 10, 2, 20]
    """
    a, b = as_array(a, "kron"), as_array(b, "kron")
    if a.size == 0 or b.size == 0:
        raise ValueError("kron: the input arrays must not be empty")
    nd = builtins.max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + a.shape
    sb = (1,) * (nd - b.ndim) + b.shape
    ea = [d for s in sa for d in (s, 1)]
    eb = [d for s in sb for d in (1, s)]
    out = tuple(x * y for x, y in zip(sa, sb))
    prod = ew.multiply(reshape(a, ea, stream=stream), reshape(b, eb, stream=stream), stream=stream)
    return reshape(prod, out, stream=stream)


def trace(
    a, /, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, *, stream=None
) -> Array:
    """The sum along diagonal ``offset`` of the planes on ``axis1``/``axis2``, as ``dtype``
    (the input's when None).

    >>> import nuvec as nv
    >>> nv.trace(nv.reshape(nv.arange(9), (3, 3))).item()
    12
    """
    a = as_array(a, "trace")
    if a.ndim < 2:
        raise ValueError(f"trace: the array must have at least two dimensions, got {a.ndim}")
    d = diagonal(a, offset, axis1, axis2, stream=stream)
    if dtype is not None:
        d = ew.astype(d, dtype, stream=stream)
    return sum(d, axis=-1, stream=stream)


def median(
    a, /, axis: int | Sequence[int] | None = None, keepdims: bool = False, *, stream=None
) -> Array:
    """The median over ``axis`` (all axes when None): the middle of the sorted values, the
    mean of the two middle ones for an even count; integers give float32.

    >>> import nuvec as nv
    >>> nv.median(nv.array([[1, 3, 2, 4]]), axis=1).tolist()
    [2.5]
    """
    a = as_array(a, "median")
    axes = _axes(axis, a.ndim, "median")
    keep = [i for i in range(a.ndim) if i not in axes]
    out_dtype = a.dtype if dt.issubdtype(a.dtype, dt.inexact) else dt.float32
    x = transpose(a, keep + axes, stream=stream) if axes else a
    if axes:
        x = flatten(x, len(keep), a.ndim - 1, stream=stream)
    else:
        x = reshape(x, x.shape + (1,), stream=stream)
    n = x.shape[-1]
    if n == 0:
        raise ValueError("median: cannot take the median along an empty axis")
    shapeless.refuse_traced(x, "median", "the middle positions")
    s = sort(x, -1, stream=stream)
    mid = ew.astype(getitem(s, (Ellipsis, n // 2), stream=stream), out_dtype, stream=stream)
    if n % 2 == 0:
        low = ew.astype(getitem(s, (Ellipsis, n // 2 - 1), stream=stream), out_dtype, stream=stream)
        mid = ew.multiply(ew.add(mid, low, stream=stream), 0.5, stream=stream)
    if dt.issubdtype(a.dtype, dt.inexact):  # sorting puts NaNs last; any NaN gives NaN
        mid = ew.where(
            _any(ew.isnan(x, stream=stream), axis=-1, stream=stream),
            float("nan"),
            mid,
            stream=stream,
        )
    if keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape))
        mid = reshape(mid, shape, stream=stream)
    return mid


def count_nonzero(
    a, /, *, axis: int | Sequence[int] | None = None, keepdims: bool = False, stream=None
) -> Array:
    """The number of non-zero elements over ``axis`` (all when None), as int32.

    >>> import nuvec as nv
    >>> nv.count_nonzero(nv.array([[0, 1], [2, 3]]), axis=0).tolist()
    [1, 2]
    """
    a = as_array(a, "count_nonzero")
    axes = _axes(axis, a.ndim, "count_nonzero")
    nz = ew.astype(ew.not_equal(a, 0, stream=stream), dt.int32, stream=stream)
    return sum(nz, axis=axes, keepdims=keepdims, stream=stream)


def vecdot(a, b, /, *, axis: int = -1, stream=None) -> Array:
    """The dot product of ``conj(a)`` and ``b`` along ``axis`` (the others broadcast).

    >>> import nuvec as nv
    >>> nv.vecdot(nv.array([[1.0, 2.0]]), nv.array([3.0, 4.0])).tolist()
    [11.0]
    """
    a, b = as_array(a, "vecdot"), as_array(b, "vecdot")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("vecdot: the inputs must be at least 1-D")
    _int(axis, "vecdot", "axis")
    if not (-a.ndim <= axis < a.ndim and -b.ndim <= axis < b.ndim) or (
        axis >= 0 and a.ndim != b.ndim
    ):
        raise ValueError(f"vecdot: axis {axis} is out of bounds for shapes {a.shape}, {b.shape}")
    if a.shape[axis] != b.shape[axis]:
        raise ValueError(
            f"vecdot: a and b must have the same size along axis {axis}, got "
            f"{a.shape[axis]} and {b.shape[axis]}"
        )
    if a.dtype == dt.complex64:
        a = ew.conjugate(a, stream=stream)
    return sum(ew.multiply(a, b, stream=stream), axis=axis, stream=stream)


def searchsorted(sorted_sequence, values, /, side: str = "left", *, stream=None) -> Array:
    """For each value, the index where inserting it keeps the 1-D ``sorted_sequence`` sorted
    (uint32): with ``side="left"`` the count of elements less than the value, with "right"
    of those less than or equal, in sort order (NaN after every number).

    >>> import nuvec as nv
    >>> nv.searchsorted(nv.array([1, 2, 2, 5]), nv.array([2, 6]), side="right").tolist()
    [3, 4]
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    seq = as_array(sorted_sequence, "searchsorted")
    v = as_array(values, "searchsorted")
    if seq.ndim != 1:
        raise ValueError(f"searchsorted: the sorted sequence must be 1-D, got shape {seq.shape}")
    # MLX maps only over the values: a batch of sequences is refused under vmap
    seq = Array.make(
        Unbatched("searchsorted", "the sorted sequence"), [seq], resolve_stream(stream)
    )
    common = dt.promote_types(seq.dtype, v.dtype)
    seq = ew.astype(seq, common, stream=stream)
    v = ew.astype(v, common, stream=stream)
    col = reshape(v, v.shape + (1,), stream=stream)
    below = ew.less if side == "left" else ew.less_equal
    hits = below(seq, col, stream=stream)
    if dt.issubdtype(common, dt.inexact):  # sort order: NaN after every number
        v_nan = ew.isnan(col, stream=stream)
        if side == "left":
            v_nan = ew.logical_and(
                v_nan, ew.logical_not(ew.isnan(seq, stream=stream), stream=stream), stream=stream
            )
        hits = ew.logical_or(hits, v_nan, stream=stream)
    return ew.astype(sum(hits, axis=-1, stream=stream), dt.uint32, stream=stream)


def asarray(a, dtype=None, *, copy: bool | None = None) -> Array:
    """``a`` as an array: an array of the right dtype is returned as it is unless ``copy`` is
    True (``copy=False`` with an array raises, as in MLX); a NumPy or DLPack array shares its
    memory when ``copy=False`` (a ValueError where that would need a copy); otherwise as
    ``nv.array``.

    >>> import nuvec as nv
    >>> x = nv.array([1, 2])
    >>> nv.asarray(x) is x
    True
    """
    d = dt.to_dtype(dtype) if dtype is not None else None
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"asarray: copy must be a bool or None, got {type(copy).__name__}")
    if isinstance(a, Array):
        if copy is False:  # as MLX, which never hands out an array's memory this way
            raise ValueError("asarray: copy=False is not supported for an nuvec array input")
        if d is None or d == a.dtype:
            return positive(a) if copy else a
        return ew.astype(a, d)
    if copy is False:
        host = a if isinstance(a, np.ndarray) else None
        if host is None and hasattr(a, "__dlpack__"):
            host = host_from_dlpack(a, "asarray")
        if host is None:
            raise ValueError(f"asarray: copy=False, but a {type(a).__name__} must be copied")
        src = dt.from_numpy(host.dtype)
        if (d is not None and d != src) or not host.flags.c_contiguous:
            raise ValueError(
                "asarray: copy=False, but the input needs a copy "
                "(another dtype or a non-contiguous layout)"
            )
        return Array.constant(host, resolve_stream(None), src)
    return array(a, d)


def from_dlpack(x, /, *, copy: bool | None = None) -> Array:
    """An array from an object with ``__dlpack__`` (a NumPy array, a CuPy or torch tensor on
    the host): shares its memory, in any layout without negative strides, unless ``copy`` is
    True or the dtype is narrowed (float64 to float32, as ``nv.array``); a negative stride or a
    dtype nuvec lacks is a ValueError.

    >>> import numpy as np, nuvec as nv
    >>> nv.from_dlpack(np.arange(3, dtype=np.int32)).tolist()
    [0, 1, 2]
    """
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} does not implement __dlpack__")
    host = host_from_dlpack(x, "from_dlpack")
    if any(s < 0 for s in host.strides):  # MLX's arrays have no negative strides
        raise ValueError(
            f"from_dlpack: the tensor has a negative stride {host.strides}; "
            "copy it to a non-negative layout first"
        )
    if copy is True:
        return array(host)
    if host.dtype in (np.float64, np.complex128):  # narrowed as nv.array does (MLX)
        if copy is False:
            raise ValueError(f"from_dlpack: copy=False, but {host.dtype} data is narrowed (a copy)")
        return array(host)
    # shared with any layout (transposed, stepped or broadcast strides), as MLX
    return Array.constant(host, resolve_stream(None), dt.from_numpy(host.dtype))


def contiguous(a, /, allow_col_major: bool = False, *, stream=None) -> Array:
    """``a`` with the same values in a new array node; nuvec lays results out as it needs
    (host conversions are row-contiguous), so this is a copy that keeps ``a``'s graph."""

    if not isinstance(allow_col_major, bool):
        raise TypeError("contiguous: allow_col_major must be a bool")
    return Array.make(Copy(), [as_array(a, "contiguous")], resolve_stream(stream))


def einsum_path(subscripts: str, *operands) -> tuple[list[tuple[int, ...]], str]:
    """The contraction order for ``einsum(subscripts, *operands)`` and a report on it, as
    NumPy's greedy ``einsum_path`` chooses it from the operands' shapes.

    >>> import nuvec as nv
    >>> nv.einsum_path("ij,jk,kl", nv.zeros((5, 8)), nv.zeros((8, 10)), nv.zeros((10, 7)))[0]
    [(1, 2), (0, 1)]
    """
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum_path: subscripts must be a str, got {type(subscripts).__name__}")
    shapes = [as_array(o, "einsum_path").shape for o in operands]
    stand_ins = [np.broadcast_to(np.zeros((), np.float32), s) for s in shapes]
    try:
        path, report = np.einsum_path(subscripts, *stand_ins, optimize="greedy")
    except ValueError as e:
        raise ValueError(f"einsum_path: {e}") from None
    return [tuple(p) for p in path[1:]], report


def depends(inputs, dependencies):
    """``inputs`` unchanged, but evaluated only after ``dependencies`` (an array or a
    sequence of arrays each); returns a list when ``inputs`` is a sequence.

    >>> import nuvec as nv
    >>> a = nv.array([1.0, 2.0])
    >>> nv.depends(nv.exp(a), nv.log(a)).tolist() == nv.exp(a).tolist()
    True
    """

    single = isinstance(inputs, Array)
    ins = [inputs] if single else [as_array(x, "depends") for x in inputs]
    deps = (
        [dependencies]
        if isinstance(dependencies, Array)
        else [as_array(x, "depends") for x in dependencies]
    )
    if not ins:
        raise ValueError("depends: at least one input is required")
    stream = ins[0]._stream
    outs = Array.make_multi(Depends(len(ins)), ins + deps, stream)
    return outs[0] if single else outs


def as_strided(
    a,
    /,
    shape: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
    offset: int = 0,
    *,
    stream=None,
) -> Array:
    """A ``shape`` array whose element ``i`` is ``a.flatten()[offset + sum(i_k * strides_k)]``
    (strides in elements; row-major ones for ``shape`` by default). Built as a gather, so
    every position must fall inside ``a``.

    >>> import nuvec as nv
    >>> nv.as_strided(nv.arange(5), (3, 2), (1, 1)).tolist()
    [[0, 1], [1, 2], [2, 3]]
    """

    a = as_array(a, "as_strided")
    shapeless.refuse_traced(a, "as_strided", "the element offsets")
    shape = tuple(a.shape if shape is None else shape)
    if any(isinstance(d, bool) or not isinstance(d, numbers.Integral) for d in shape):
        raise TypeError(f"as_strided: shape must be a sequence of ints, got {shape!r}")
    if any(d < 0 for d in shape):
        raise ValueError(f"as_strided: negative dimensions are not allowed, got {shape}")
    if strides is None:
        strides, step = [], 1
        for d in reversed(shape):
            strides.insert(0, step)
            step *= d
    strides = tuple(strides)
    if len(strides) != len(shape):
        raise ValueError(f"as_strided: {len(strides)} strides for {len(shape)} dimensions")
    off = _int(offset, "as_strided", "offset")
    size = a.size
    if all(d > 0 for d in shape):
        lo = off + builtins.sum(s * (d - 1) for s, d in zip(strides, shape) if s < 0)
        hi = off + builtins.sum(s * (d - 1) for s, d in zip(strides, shape) if s > 0)
        if lo < 0 or hi >= size:
            raise ValueError(
                f"as_strided: positions {lo}..{hi} fall outside the array's {size} elements"
            )
    flat = np.full(shape, off, dtype=np.int64)
    for k, (d, s) in enumerate(zip(shape, strides)):
        grid = (np.arange(d, dtype=np.int64) * s).reshape(
            (1,) * k + (d,) + (1,) * (len(shape) - k - 1)
        )
        flat = flat + grid
    index = array(flat.astype(np.int32 if size < 2**31 else np.int64))
    return take(reshape(a, (-1,), stream=stream), index, axis=0, stream=stream)


def layer_norm_composite(x: Array, w: Array | None, b: Array | None, eps: float) -> Array:
    """The layer norm over the last axis from element-wise and reduction ops (``nv.fast``'s
    form where the backend runs no ``LayerNorm`` primitive, and that primitive's composite).

    >>> import nuvec as nv
    >>> layer_norm_composite(nv.array([[1.0, 3.0]]), None, None, 1e-5).tolist()
    [[-0.9999949932098389, 0.9999949932098389]]
    """
    xc = x - mean(x, axis=-1, keepdims=True)
    y = xc * ew.rsqrt(mean(xc * xc, axis=-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y
