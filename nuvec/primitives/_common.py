"""Helpers the primitive families share in their transform rules."""

from __future__ import annotations

from ..backends.registry import backend_of
from ..core.device import current_stream
from ..core.primitive import Primitive


def ops():
    """The public ops module (imported late: the ops import the primitives)."""
    from .. import ops as module

    return module


def conj(x):
    """``x`` conjugated when it is a complex array, else ``x`` (MLX's vjps of complex maps
    multiply by conjugated derivatives: the gradient of a real loss is dL/dRe + i dL/dIm)."""
    if getattr(x, "_dtype", None) is not None and x._dtype.kind == "c":
        return ops().conjugate(x)
    return x


def zeros(shape, dtype):
    return ops().zeros(shape, dtype)


# -- axes -----------------------------------------------------------------------------------


def check_axes(name: str, axes, ndim: int) -> None:
    """A primitive's stored axes (already normalised by the op that made it) against its
    input's ``ndim``: a ValueError naming ``name`` for one outside ``[0, ndim)``."""
    for ax in axes:
        if not 0 <= ax < ndim:
            raise ValueError(f"{name}: axis {ax} is out of bounds for an array of dimension {ndim}")


def batched_axis(axis: int, b: int) -> int:
    """An unbatched input's ``axis`` as an axis of the input with a batch axis inserted at
    ``b`` (a vmap rule's parameter)."""
    return axis + 1 if axis >= b else axis


def batched_axes(axes, b: int) -> tuple:
    """``batched_axis`` of each of ``axes``."""
    return tuple(a + 1 if a >= b else a for a in axes)


def inverse_permutation(perm) -> tuple:
    """The permutation that undoes the transpose by ``perm``."""
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def arange_along(n: int, axis: int, ndim: int):
    """``arange(n)`` (int32) laid along ``axis`` of an ``ndim``-dimensional shape of ones."""
    shape = [1] * ndim
    shape[axis] = n
    return ops().reshape(ops().arange(n), shape)


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


def lowers(prim, inputs) -> bool:
    """Whether the backend of the default stream runs the composite primitive ``prim`` on
    ``inputs`` as one primitive (MLX's ``use_fallback`` negated); otherwise the graph keeps
    the composite (``prim.expand``)."""
    b = backend_of(current_stream())
    return b is not None and type(prim) in b.lowerings and b.supports(prim, inputs)


class Expanding(Primitive):
    """A primitive that stands for a composite of other operations (``expand``, as graph
    nodes): its transform rules are the composite's."""

    __slots__ = ()

    def expand(self, inputs) -> list:
        raise NotImplementedError(self.name)

    def vjp(self, primals, cotangents, argnums, outputs):
        from ..transforms import vjp

        _, grads = vjp(lambda *xs: self.expand(list(xs)), list(primals), list(cotangents))
        return [grads[i] for i in argnums]

    def jvp(self, primals, tangents, argnums):
        from ..transforms import jvp

        ts = [ops().zeros_like(p) for p in primals]
        for i, t in zip(argnums, tangents):
            ts[i] = t
        _, outs = jvp(lambda *xs: self.expand(list(xs)), list(primals), ts)
        return list(outs)

    def vmap(self, inputs, axes):
        from ..transforms import vmap

        outs = vmap(lambda *xs: tuple(self.expand(list(xs))), in_axes=tuple(axes))(*inputs)
        return list(outs), [0] * len(outs)
