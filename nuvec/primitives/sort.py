"""Sorting primitives: Sort, ArgSort (stable), Partition, ArgPartition.

NaNs sort to the end (NumPy's and MLX's order). The arg-versions give uint32 indices and are
not differentiable. Sort and Partition permute their input, so their vjp sends each
cotangent back through the inverse permutation (``take_along_axis`` with the argsort of the
permutation: no scatter needed) and their jvp gathers the tangent with the permutation.
"""

from __future__ import annotations

from ..core import dtypes as dt
from ..core.array import Array
from ..core.primitive import Primitive
from .misc import StopGradient
from ._common import check_axes


class _AlongAxis(Primitive):
    """A primitive that works along one axis and keeps the input's shape."""

    __slots__ = ("axis",)
    out_index = False

    def __init__(self, axis: int) -> None:
        self.axis = int(axis)

    @property
    def params(self) -> tuple:
        return (self.axis,)

    def infer(self, inputs):
        (x,) = inputs
        check_axes(self.name, (self.axis,), x.ndim)
        return [(x._shape, dt.uint32 if self.out_index else x._dtype)]

    def _with_axis(self, axis: int) -> "_AlongAxis":
        return type(self)(axis)

    # permutation rules (Sort, Partition): the index primitive that gives the permutation
    def _perm(self, x: Array) -> Array:
        raise NotImplementedError

    def _fixed_perm(self, x: Array) -> Array:
        """The permutation, cut from the gradient: it is locally constant in ``x``, and a
        gather whose indices depend on a differentiated input has no vjp (so a second
        derivative of these rules needs the cut)."""
        return Array.make(StopGradient(), [self._perm(x)])


class Sort(_AlongAxis):
    __slots__ = ()
    name = "sort"

    def _perm(self, x):
        return Array.make(ArgSort(self.axis), [x])


class ArgSort(_AlongAxis):
    """Indices that sort along ``axis``; stable (equal elements keep their order)."""

    __slots__ = ()
    name = "argsort"
    out_index = True
    differentiable = False


class _Partitioned(_AlongAxis):
    """Element ``kth`` in its sorted place, smaller ones before it, larger ones after."""

    __slots__ = ("kth",)

    def __init__(self, kth: int, axis: int) -> None:
        super().__init__(axis)
        self.kth = int(kth)

    @property
    def params(self) -> tuple:
        return (self.kth, self.axis)

    def infer(self, inputs):
        (x,) = inputs
        check_axes(self.name, (self.axis,), x.ndim)
        n = x._shape[self.axis]
        if not 0 <= self.kth < n:
            raise ValueError(
                f"{self.name}: kth={self.kth} is out of range for axis {self.axis} of size {n}"
            )
        return [(x._shape, dt.uint32 if self.out_index else x._dtype)]

    def _with_axis(self, axis: int):
        return type(self)(self.kth, axis)


class Partition(_Partitioned):
    __slots__ = ()
    name = "partition"

    def _perm(self, x):
        return Array.make(ArgPartition(self.kth, self.axis), [x])


class ArgPartition(_Partitioned):
    __slots__ = ()
    name = "argpartition"
    out_index = True
    differentiable = False
