"""Sorting on the GPU (CuPy's radix / merge sorts through Thrust and CUB).

ArgSort is stable (CuPy's argsort is). Partition and ArgPartition return a full sort along the
axis, which is one valid partition (any element order within the two sides is allowed).
bfloat16 sorts as float32 (exact), bool as uint8.
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from ...primitives.sort import ArgPartition, ArgSort, Partition, Sort
from .runtime import computable, finish, gpu


def _sortable(x, d):
    x = computable(x, d)
    return x.view(cp.uint8) if x.dtype == np.bool_ else x


@gpu(Sort)
def _sort(prim, ins, node):
    d = node._dtype
    r = cp.sort(_sortable(ins[0], d), axis=prim.axis)
    if r.dtype == np.uint8 and d.kind == "b":
        return [r.view(cp.bool_)]
    return [finish(r, d)]


def _argsort(x, d, axis):
    return cp.argsort(_sortable(x, d), axis=axis).astype(np.uint32)


@gpu(ArgSort)
def _argsort_impl(prim, ins, node):
    return [_argsort(ins[0], node._inputs[0]._dtype, prim.axis)]


@gpu(ArgPartition)
def _argpartition(prim, ins, node):
    return [_argsort(ins[0], node._inputs[0]._dtype, prim.axis)]


@gpu(Partition)
def _partition(prim, ins, node):
    idx = cp.argsort(_sortable(ins[0], node._dtype), axis=prim.axis)
    return [cp.take_along_axis(ins[0], idx, axis=prim.axis)]
