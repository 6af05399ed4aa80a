"""Helpers the transform rules of the primitive families share."""

from __future__ import annotations

from ... import ops


def conj(x):
    """``x`` conjugated when it is a complex array, else ``x`` (MLX's vjps of complex maps
    multiply by conjugated derivatives: the gradient of a real loss is dL/dRe + i dL/dIm)."""
    if getattr(x, "_dtype", None) is not None and x._dtype.kind == "c":
        return ops.conjugate(x)
    return x


def zeros(shape, dtype):
    return ops.zeros(shape, dtype)


def arange_along(n: int, axis: int, ndim: int):
    """``arange(n)`` (int32) laid along ``axis`` of an ``ndim``-dimensional shape of ones."""
    shape = [1] * ndim
    shape[axis] = n
    return ops.reshape(ops.arange(n), shape)


def batch_front(x, ax, size):
    """``x`` with its batch axis first: moved there, or broadcast along a new one (None)."""
    if ax is None:
        return ops.broadcast_to(ops.expand_dims(x, 0), (size,) + x.shape)
    return ops.moveaxis(x, ax, 0) if ax != 0 else x


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
