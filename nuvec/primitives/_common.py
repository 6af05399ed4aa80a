"""What the primitive families share: axis checks and batch-axis arithmetic, and the
composite-standing primitive (``Expanding``) with the backend's say on whether it runs as one."""

from __future__ import annotations

from ..backends.registry import backend_of
from ..core.device import current_stream
from ..core.primitive import Primitive


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


def lowers(prim, inputs) -> bool:
    """Whether the backend of the default stream runs the composite primitive ``prim`` on
    ``inputs`` as one primitive (MLX's ``use_fallback`` negated); otherwise the graph keeps
    the composite."""
    b = backend_of(current_stream())
    return b is not None and type(prim) in b.lowerings and b.supports(prim, inputs)


class Expanding(Primitive):
    """A primitive that stands for a composite of other operations: its expansion into them
    (``nuvec.transforms.rules.EXPAND``) gives the transforms its rules where it has none of
    its own."""

    __slots__ = ()
