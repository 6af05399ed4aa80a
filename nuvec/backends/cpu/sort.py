"""Sorting on the CPU (NumPy). ArgSort is stable; Partition is the gather of ArgPartition's
permutation, so that its vjp (which inverts that permutation) matches it exactly."""

from __future__ import annotations

import numpy as np

from ...primitives.sort import ArgPartition, ArgSort, Partition, Sort
from ..registry import register

_U32 = np.dtype(np.uint32)


def _sortable(x: np.ndarray) -> np.ndarray:
    # bfloat16 (an ml_dtypes extension type) has no sort loops in NumPy; float32 is exact
    return x.astype(np.float32) if x.dtype.name == "bfloat16" else x


@register(Sort)
def _sort(prim, ins, node):
    x = ins[0]
    if x.dtype.name == "bfloat16":
        return [np.sort(x.astype(np.float32), axis=prim.axis).astype(x.dtype)]
    return [np.sort(x, axis=prim.axis)]


@register(ArgSort)
def _argsort(prim, ins, node):
    return [np.argsort(_sortable(ins[0]), axis=prim.axis, kind="stable").astype(_U32)]


@register(ArgPartition)
def _argpartition(prim, ins, node):
    return [np.argpartition(_sortable(ins[0]), prim.kth, axis=prim.axis).astype(_U32)]


@register(Partition)
def _partition(prim, ins, node):
    x = ins[0]
    idx = np.argpartition(_sortable(x), prim.kth, axis=prim.axis)
    return [np.take_along_axis(x, idx, axis=prim.axis)]
