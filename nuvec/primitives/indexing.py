"""Gather and scatter primitives: reading and writing elements at integer index arrays.

``Gather(axes)``: inputs ``[a, i0, ..., ik-1]``; the index arrays share one shape ``S`` and
``ij`` indexes axis ``axes[j]`` of ``a``. Output: ``S + (the other axes of a, in order)``.

``Scatter(axes, mode)``: inputs ``[a, update, i0, ...]`` with ``update`` shaped like the
matching Gather's output; writes (``mode="set"``) or combines (``"add"``, ``"prod"``,
``"max"``, ``"min"``; duplicates all count) ``update`` into a copy of ``a``.

``GatherAxis(axis)`` / ``ScatterAxis(axis, mode)``: ``take_along_axis`` / ``put_along_axis``
(index and update shaped like ``a`` except on ``axis``).

Negative indices count from the end; an index out of range is an error when the graph runs.
Index inputs have no gradient: ``index_inputs`` lists them, and a vjp that would have to
flow into one (indices that depend on a differentiated input and are not under
``stop_gradient``) is an error, as MLX.
"""

from __future__ import annotations

from ..core.primitive import Primitive

SCATTER_MODES = ("set", "add", "prod", "max", "min")


class IndexOutOfBounds(IndexError, ValueError):
    """An index beyond an axis (both an IndexError, as Python's, and a ValueError)."""


class Gather(Primitive):
    __slots__ = ("axes",)
    name = "gather"

    def index_inputs(self, n: int) -> range:
        return range(1, n)

    def __init__(self, axes: tuple[int, ...]) -> None:
        self.axes = tuple(axes)

    @property
    def params(self) -> tuple:
        return (self.axes,)

    def infer(self, inputs):
        a, idx = inputs[0], inputs[1:]
        if len(idx) != len(self.axes):
            raise ValueError(f"gather: {len(idx)} index arrays for {len(self.axes)} axes")
        s = idx[0]._shape
        for i in idx:
            if i._shape != s:
                raise ValueError(
                    "gather: index arrays of different shapes "
                    f"{s} and {i._shape} (the ops broadcast them first)"
                )
            if i._dtype.kind not in "ui":
                raise TypeError(f"gather: indices must be integers, not {i._dtype.name}")
        taken = set(self.axes)
        rest = tuple(d for i, d in enumerate(a._shape) if i not in taken)
        return [(s + rest, a._dtype)]


class Scatter(Primitive):
    __slots__ = ("axes", "mode")
    name = "scatter"

    def index_inputs(self, n: int) -> range:
        return range(2, n)

    def __init__(self, axes: tuple[int, ...], mode: str = "set") -> None:
        if mode not in SCATTER_MODES:
            raise ValueError(f"scatter: unknown mode {mode!r}")
        self.axes = tuple(axes)
        self.mode = mode

    @property
    def params(self) -> tuple:
        return (self.axes, self.mode)

    def infer(self, inputs):
        a, u, idx = inputs[0], inputs[1], inputs[2:]
        ((gshape, _),) = Gather(self.axes).infer([a] + list(idx))
        if u._shape != gshape:
            raise ValueError(f"scatter: the update has shape {u._shape}, expected {gshape}")
        if u._dtype != a._dtype:
            raise TypeError(f"scatter: update dtype {u._dtype.name} differs from {a._dtype.name}")
        return [(a._shape, a._dtype)]


class GatherAxis(Primitive):
    """``take_along_axis``: inputs ``[a, indices]`` of one shape except on ``axis``."""

    __slots__ = ("axis",)
    name = "gather_axis"

    def index_inputs(self, n: int) -> range:
        return range(1, 2)

    def __init__(self, axis: int) -> None:
        self.axis = axis

    @property
    def params(self) -> tuple:
        return (self.axis,)

    def infer(self, inputs):
        a, i = inputs
        ax = self.axis
        if (
            a.ndim != i.ndim
            or a._shape[:ax] != i._shape[:ax]
            or a._shape[ax + 1 :] != i._shape[ax + 1 :]
        ):
            raise ValueError(
                f"take_along_axis: index shape {i._shape} does not match "
                f"{a._shape} outside axis {ax}"
            )
        if i._dtype.kind not in "ui":
            raise TypeError(f"take_along_axis: indices must be integers, not {i._dtype.name}")
        return [(i._shape, a._dtype)]


class ScatterAxis(Primitive):
    """``put_along_axis`` (``mode="set"``) and its additive form: inputs ``[a, indices,
    update]``, indices and update of one shape, equal to ``a``'s except on ``axis``."""

    __slots__ = ("axis", "mode")
    name = "scatter_axis"

    def index_inputs(self, n: int) -> range:
        return range(1, 2)

    def __init__(self, axis: int, mode: str = "set") -> None:
        if mode not in ("set", "add"):
            raise ValueError(f"scatter_axis: unknown mode {mode!r}")
        self.axis, self.mode = axis, mode

    @property
    def params(self) -> tuple:
        return (self.axis, self.mode)

    def infer(self, inputs):
        a, i, u = inputs
        GatherAxis(self.axis).infer([a, i])
        if u._shape != i._shape:
            raise ValueError(
                f"put_along_axis: update shape {u._shape} differs from the index shape {i._shape}"
            )
        if u._dtype != a._dtype:
            raise TypeError(
                f"put_along_axis: update dtype {u._dtype.name} differs from {a._dtype.name}"
            )
        return [(a._shape, a._dtype)]
