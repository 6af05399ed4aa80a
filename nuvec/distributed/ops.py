"""The collectives (MLX's ``mlx.core.distributed`` functions): lazy graph nodes that
communicate when evaluated.

>>> import nuvec as nv
>>> x = nv.array([1.0, 2.0])
>>> nv.distributed.all_sum(x).tolist()       # one process: the sum of one array
[1.0, 2.0]

Every process of the group must evaluate the same collectives in the same order. On a group
of one process ``all_sum``, ``all_max``, ``all_min`` and ``all_gather`` return their input
(``all_gather`` of a 0-d array gives shape ``(1,)``, as it gives ``(size,)`` elsewhere).
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence

from ..core import dtypes as dt
from ..core.array import Array
from ..core.device import resolve_stream
from ..ops._common import as_array
from ..ops.shape import reshape
from ..primitives.distributed import AllGather, AllReduce, Recv, Send, SumScatter
from .group import Group, resolve_group

__all__ = [
    "all_sum",
    "all_max",
    "all_min",
    "all_gather",
    "sum_scatter",
    "send",
    "recv",
    "recv_like",
]


def _all_reduce(op: str, x, group, stream) -> Array:
    name = f"all_{op}"
    x = as_array(x, name)
    g = resolve_group(group, name)
    s = resolve_stream(stream)
    if op != "sum" and x._dtype.kind == "c":
        raise ValueError(f"{name}: {x._dtype.name} values have no order")
    if g.size() == 1:
        return x
    return Array.make(AllReduce(op, g), [x], s)


def all_sum(x, /, *, group: Group | None = None, stream=None) -> Array:
    """The element-wise sum of ``x`` over the processes of ``group`` (the world when None).

    >>> import nuvec as nv
    >>> nv.distributed.all_sum(nv.array([3, 4])).tolist()
    [3, 4]
    """
    return _all_reduce("sum", x, group, stream)


def all_max(x, /, *, group: Group | None = None, stream=None) -> Array:
    """The element-wise maximum of ``x`` over the processes of ``group``.

    >>> import nuvec as nv
    >>> nv.distributed.all_max(nv.array([3, 4])).tolist()
    [3, 4]
    """
    return _all_reduce("max", x, group, stream)


def all_min(x, /, *, group: Group | None = None, stream=None) -> Array:
    """The element-wise minimum of ``x`` over the processes of ``group``.

    >>> import nuvec as nv
    >>> nv.distributed.all_min(nv.array([3, 4])).tolist()
    [3, 4]
    """
    return _all_reduce("min", x, group, stream)


def all_gather(x, /, *, group: Group | None = None, stream=None) -> Array:
    """Every process's ``x`` concatenated along axis 0, in rank order: shape
    ``(size * x.shape[0], ...)`` (``(size,)`` for a 0-d ``x``). Each process must pass the
    same shape and dtype.

    >>> import nuvec as nv
    >>> nv.distributed.all_gather(nv.array([[1, 2]])).shape
    (1, 2)
    """
    x = as_array(x, "all_gather")
    g = resolve_group(group, "all_gather")
    s = resolve_stream(stream)
    if g.size() == 1:
        if x.ndim == 0:
            return reshape(x, (1,), stream=s)
        return x
    return Array.make(AllGather(g), [x], s)


def sum_scatter(x, /, *, group: Group | None = None, stream=None) -> Array:
    """The sum of every process's ``x``, scattered: process ``r`` gets block ``r`` of axis 0,
    shape ``(x.shape[0] // size, ...)`` (axis 0 must be divisible by the group's size). On a
    group of one process it is ``x``.

    >>> import nuvec as nv
    >>> nv.distributed.sum_scatter(nv.array([[1, 2], [3, 4]])).tolist()
    [[1, 2], [3, 4]]
    """
    x = as_array(x, "sum_scatter")
    g = resolve_group(group, "sum_scatter")
    s = resolve_stream(stream)
    if g.size() == 1:
        return x
    if x.ndim == 0 or x.shape[0] % g.size():
        raise ValueError(
            f"sum_scatter: axis 0 of x (shape {x.shape}) must be divisible by the group's "
            f"size {g.size()}"
        )
    return Array.make(SumScatter(g), [x], s)


def _peer(v, g: Group, name: str, what: str) -> int:
    if not isinstance(v, numbers.Integral) or isinstance(v, bool):
        raise TypeError(f"{name}: {what} must be an int, got {type(v).__name__}")
    v = int(v)
    if g.size() == 1:
        raise ValueError(
            f"{name}: the group has one process, there is no other process to "
            f"{'send to' if name == 'send' else 'receive from'}"
        )
    if not 0 <= v < g.size():
        raise ValueError(f"{name}: {what} {v} is not a rank of a group of {g.size()} processes")
    if v == g.rank():
        raise ValueError(f"{name}: {what} {v} is this process's own rank")
    return v


def send(x, /, dst: int, *, group: Group | None = None, stream=None) -> Array:
    """Sends ``x`` to the process of rank ``dst``. Returns ``x`` as a new array that sends
    when it is evaluated (evaluate it; the receiver calls ``recv`` or ``recv_like``).

    >>> import nuvec as nv
    >>> nv.distributed.send(nv.ones((2,)), 1)  # doctest: +SKIP
    """
    x = as_array(x, "send")
    g = resolve_group(group, "send")
    dst = _peer(dst, g, "send", "dst")
    return Array.make(Send(dst, g), [x], resolve_stream(stream))


def recv(
    shape: int | Sequence[int], dtype, src: int, *, group: Group | None = None, stream=None
) -> Array:
    """An array of ``shape`` and ``dtype`` received from the process of rank ``src``
    (which sends one of that shape and dtype).

    >>> import nuvec as nv
    >>> nv.distributed.recv((2, 3), nv.float32, 0)  # doctest: +SKIP
    """
    dims: Any = shape
    if isinstance(dims, numbers.Integral) and not isinstance(dims, bool):
        dims = (dims,)
    try:
        dims = tuple(dims)
    except TypeError:
        raise TypeError(
            f"recv: shape must be a sequence of ints, got {type(dims).__name__}"
        ) from None
    for n in dims:
        if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 0:
            raise ValueError(f"recv: shape must hold ints >= 0, got {dims}")
    try:
        d = dt.to_dtype(dtype)
    except TypeError:
        raise TypeError(f"recv: dtype must be a nuvec dtype, got {dtype!r}") from None
    g = resolve_group(group, "recv")
    src = _peer(src, g, "recv", "src")
    return Array.make(Recv(tuple(int(n) for n in dims), d, src, g), [], resolve_stream(stream))


def recv_like(x, /, src: int, *, group: Group | None = None, stream=None) -> Array:
    """``recv(x.shape, x.dtype, src)``: an array like ``x`` received from ``src``.

    >>> import nuvec as nv
    >>> nv.distributed.recv_like(nv.zeros((4,)), 0)  # doctest: +SKIP
    """
    x = as_array(x, "recv_like")
    return recv(x.shape, x.dtype, src, group=group, stream=stream)
