"""``average_gradients``: the mean of a gradient tree over the processes (MLX's
``mlx.nn.average_gradients``), with small arrays packed into few large reductions.

>>> import nuvec as nv
>>> g = {"w": nv.ones((2, 2)), "b": nv.zeros((2,))}
>>> nv.distributed.average_gradients(g)["w"].tolist()     # one process: unchanged
[[1.0, 1.0], [1.0, 1.0]]
"""

from __future__ import annotations

import numbers
from typing import Any

from .. import ops
from ..core import dtypes as dt
from ..tree import flatten, unflatten
from .group import Group, resolve_group
from .ops import all_sum


def _mean(x, n: int, group: Group, ctype, stream):
    d = x.dtype
    if ctype is not None and ctype != d:
        return all_sum(x.astype(ctype), group=group, stream=stream).astype(d) / n
    return all_sum(x, group=group, stream=stream) / n


def _buckets(sizes: list[int], itemsize: int, limit: int) -> list[list[int]]:
    """Consecutive indices, each bucket closed once it holds ``limit`` bytes or more."""
    out, cur, nbytes = [], [], 0
    for i, s in enumerate(sizes):
        cur.append(i)
        nbytes += s * itemsize
        if nbytes >= limit:
            out.append(cur)
            cur, nbytes = [], 0
    if cur:
        out.append(cur)
    return out


def average_gradients(
    gradients: Any,
    group: Group | None = None,
    all_reduce_size: int = 32 * 1024**2,
    communication_type: dt.Dtype | None = None,
    communication_stream=None,
) -> Any:
    """The tree ``gradients`` averaged over the processes of ``group`` (the world when None).

    Arrays of one dtype are flattened and concatenated into reductions of about
    ``all_reduce_size`` bytes (one reduction per array when it is <= 0); with
    ``communication_type`` each is cast to that dtype for the reduction (a smaller float
    halves the traffic) and back. Every process must pass a tree of the same structure,
    shapes and dtypes. On one process the tree is returned as it is.

    >>> import nuvec as nv
    >>> nv.distributed.average_gradients([nv.array([2.0])])[0].tolist()
    [2.0]
    """
    g = resolve_group(group, "average_gradients")
    if not isinstance(all_reduce_size, numbers.Integral) or isinstance(all_reduce_size, bool):
        raise TypeError(
            "average_gradients: all_reduce_size must be an int, got "
            f"{type(all_reduce_size).__name__}"
        )
    ctype = None
    if communication_type is not None:
        try:
            ctype = dt.to_dtype(communication_type)
        except TypeError:
            raise TypeError(
                "average_gradients: communication_type must be a nuvec dtype, "
                f"got {communication_type!r}"
            ) from None
    n = g.size()
    if n == 1:
        return gradients
    leaves, td = flatten(gradients)
    if not leaves:
        return gradients
    s = communication_stream
    dtypes = {x.dtype for x in leaves}
    if all_reduce_size <= 0 or len(dtypes) > 1:
        return unflatten(td, [_mean(x, n, g, ctype, s) for x in leaves])
    itemsize = (ctype or leaves[0].dtype).size
    sizes = [x.size for x in leaves]
    out = [None] * len(leaves)
    for bucket in _buckets(sizes, itemsize, int(all_reduce_size)):
        if len(bucket) == 1:
            i = bucket[0]
            out[i] = _mean(leaves[i], n, g, ctype, s)
            continue
        flat = ops.concatenate([ops.reshape(leaves[i], (-1,)) for i in bucket])
        avg = _mean(flat, n, g, ctype, s)
        bounds, acc = [], 0
        for i in bucket[:-1]:
            acc += sizes[i]
            bounds.append(acc)
        for i, part in zip(bucket, ops.split(avg, bounds)):
            out[i] = ops.reshape(part, leaves[i].shape)
    return unflatten(td, out)
