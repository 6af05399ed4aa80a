"""Helpers the primitive families share in their transform rules."""
from __future__ import annotations


def ops():
    """The public ops module (imported late: the ops import the primitives)."""
    from .. import ops as module
    return module


def zeros(shape, dtype):
    return ops().zeros(shape, dtype)


def batch_front(x, ax, size):
    """``x`` with its batch axis first: moved there, or broadcast along a new one (None)."""
    o = ops()
    if ax is None:
        return o.broadcast_to(o.expand_dims(x, 0), (size,) + x.shape)
    return o.moveaxis(x, ax, 0) if ax != 0 else x


def batch_size(inputs, axes) -> int:
    for x, ax in zip(inputs, axes):
        if ax is not None:
            return x.shape[ax]
    raise ValueError("vmap: no input is batched")


def align_batch(inputs, axes):
    """Every operand with its batch axis first (unbatched ones broadcast along it), so that
    the operands of an element-wise primitive share one shape again."""
    size = batch_size(inputs, axes)
    return [batch_front(x, ax, size) for x, ax in zip(inputs, axes)]
