"""Sorting: sort, argsort (stable), partition, argpartition, topk (MLX semantics).

``axis=None`` works on the flattened array. NaNs sort to the end. Index results are uint32.

>>> import nuvec as nv
>>> x = nv.array([3, 1, 2])
>>> nv.sort(x).tolist(), nv.argsort(x).tolist()
([1, 2, 3], [1, 2, 0])
>>> sorted(nv.topk(x, 2).tolist())
[2, 3]
"""

from __future__ import annotations

import numbers

from ..core.array import Array
from ..core.device import resolve_stream
from ..primitives.sort import ArgPartition, ArgSort, Partition, Sort
from ._common import as_array
from ._common import normalize_axis
from .shape import reshape, slice_axes


def _prepare(a, axis, name: str) -> tuple[Array, int]:

    a = as_array(a, name)
    if axis is None:
        return reshape(a, (-1,)), 0
    return a, normalize_axis(axis, a.ndim, name)


def sort(a, /, axis: int | None = -1, *, stream=None) -> Array:
    """``a`` sorted along ``axis`` (the flattened array when None).

    >>> import nuvec as nv
    >>> nv.sort(nv.array([[3, 1], [0, 2]]), axis=0).tolist()
    [[0, 1], [3, 2]]
    """
    a, ax = _prepare(a, axis, "sort")
    return Array.make(Sort(ax), [a], resolve_stream(stream))


def argsort(a, /, axis: int | None = -1, *, stream=None) -> Array:
    """Indices (uint32) that sort ``a`` along ``axis``; stable for equal elements."""
    a, ax = _prepare(a, axis, "argsort")
    return Array.make(ArgSort(ax), [a], resolve_stream(stream))


def _kth(kth, n: int, ax: int, name: str) -> int:
    if not isinstance(kth, numbers.Integral) or isinstance(kth, bool):
        raise TypeError(f"{name}: kth must be an int, got {type(kth).__name__}")
    k = int(kth)
    if not -n <= k < n:
        raise ValueError(f"{name}: kth={kth} is out of range for axis {ax} of size {n}")
    return k % n


def partition(a, /, kth: int, axis: int | None = -1, *, stream=None) -> Array:
    """``a`` rearranged along ``axis`` so that element ``kth`` (negative counts from the end)
    is in its sorted place, no larger elements before it and no smaller ones after.

    >>> import nuvec as nv
    >>> nv.partition(nv.array([3, 1, 4, 1, 5]), 2).tolist()[2]
    3
    """
    a, ax = _prepare(a, axis, "partition")
    k = _kth(kth, a._shape[ax], ax, "partition")
    return Array.make(Partition(k, ax), [a], resolve_stream(stream))


def argpartition(a, /, kth: int, axis: int | None = -1, *, stream=None) -> Array:
    """The indices (uint32) that would partition ``a`` (see ``partition``)."""
    a, ax = _prepare(a, axis, "argpartition")
    k = _kth(kth, a._shape[ax], ax, "argpartition")
    return Array.make(ArgPartition(k, ax), [a], resolve_stream(stream))


def topk(a, /, k: int, axis: int | None = -1, *, stream=None) -> Array:
    """The ``k`` largest elements along ``axis``, in no particular order (as MLX: the last
    ``k`` of a partition at ``n - k``).

    >>> import nuvec as nv
    >>> sorted(nv.topk(nv.array([3, 1, 4, 1, 5, 9]), 3).tolist())
    [4, 5, 9]
    """

    a, ax = _prepare(a, axis, "topk")
    n = a._shape[ax]
    if not isinstance(k, numbers.Integral) or isinstance(k, bool):
        raise TypeError(f"topk: k must be an int, got {type(k).__name__}")
    if not 0 <= k <= n:
        raise ValueError(f"topk: k={k} is out of range for axis {ax} of size {n}")
    start, stop = [0] * a.ndim, list(a._shape)
    start[ax] = n - k
    if 0 < k:
        a = Array.make(Partition(n - k, ax), [a], resolve_stream(stream))
    return slice_axes(a, start, stop, [1] * a.ndim, stream=stream)


__all__ = ["sort", "argsort", "partition", "argpartition", "topk"]
