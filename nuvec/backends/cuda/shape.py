"""Shape primitives on the GPU: CuPy views where possible (broadcast, reshape of a compatible
layout, transpose, slices), new arrays for updates, concatenation and padding."""

from __future__ import annotations

import cupy as cp

from ...primitives.misc import StopGradient, Unbatched
from ...primitives.shape import (
    Broadcast,
    Concatenate,
    ExpandDims,
    Flatten,
    Pad,
    RelativeSlice,
    RelativeSliceUpdate,
    Reshape,
    ReshapeLike,
    SizedBroadcast,
    SizedReshape,
    Slice,
    SliceUpdate,
    Squeeze,
    SumToShape,
    Transpose,
    Unflatten,
)
from .. import registry
from .runtime import gpu


def box(start, stop, strides) -> tuple:
    """The index of a normalised Slice box (a stop of -1 with a negative step: "before 0")."""
    return tuple(slice(b, e if e >= 0 else None, s) for b, e, s in zip(start, stop, strides))


@gpu(Broadcast)
def _broadcast(prim, ins, node):
    return [cp.broadcast_to(ins[0], node._shape)]  # a shapeless form infers it


@gpu(Reshape)
@gpu(ExpandDims)
@gpu(Squeeze)
@gpu(Flatten)
@gpu(Unflatten)
def _reshape(prim, ins, node):
    return [cp.reshape(ins[0], node._shape)]


@gpu(Transpose)
def _transpose(prim, ins, node):
    return [cp.transpose(ins[0], prim.axes)]


@gpu(Slice)
def _slice(prim, ins, node):
    return [ins[0][box(prim.start, prim.stop, prim.strides)]]


@gpu(SliceUpdate)
def _slice_update(prim, ins, node):
    out = ins[0].copy()  # C-contiguous, broadcasts materialised
    out[box(prim.start, prim.stop, prim.strides)] = ins[1]
    return [out]


@gpu(Concatenate)
def _concatenate(prim, ins, node):
    return [cp.concatenate(ins, axis=prim.axis)]


@gpu(Pad)
def _pad(prim, ins, node):
    a, v = ins
    out = cp.empty(node._shape, a.dtype)
    inner = tuple(slice(lo, lo + d) for lo, d in zip(prim.low, a.shape))
    out[inner] = a
    for ax, (lo, hi) in enumerate(zip(prim.low, prim.high)):
        pre = (slice(None),) * ax
        if lo:
            out[pre + (slice(0, lo),)] = v
        if hi:
            out[pre + (slice(out.shape[ax] - hi, None),)] = v
    return [out]


@gpu(StopGradient)
@gpu(Unbatched)
def _stop_gradient(prim, ins, node):
    return [ins[0]]


def _resolved(prim, ins, node):
    """A shape-relative primitive (made under a shapeless trace) run as the node it resolves
    to for its inputs' shapes (its leading inputs), through that primitive's GPU
    implementation (which prepares the inputs on the node's stream)."""
    p, used = prim.resolve(tuple(node._inputs))
    return registry.implementation(type(p), "gpu")(p, ins[: len(used)], node)


for _prim in (
    RelativeSlice,
    RelativeSliceUpdate,
    ReshapeLike,
    SumToShape,
    SizedReshape,
    SizedBroadcast,
):
    registry.register(_prim, "gpu")(_resolved)
