"""Collectives as graph primitives: ``AllReduce(op)``, ``AllGather``, ``SumScatter``, ``Send``,
``Recv``.

Every collective is ``effectful``: it communicates each time it runs, so ``nv.compile`` never
folds it into a constant (even when its input is a constant), never merges two equal ones
(two ``all_sum(x)`` are two reductions, two ``recv`` are two messages) and never drops one,
and fusion leaves it alone (it is not element-wise). A primitive holds its ``group`` (a
``nuvec.distributed.Group``); the backends ask the group's communicator to move the data.

Gradients follow MLX, where MLX defines them:

- ``all_sum``: vjp is the cotangent itself (each process differentiates its own loss), jvp is
  the ``all_sum`` of the tangents, vmap keeps the batch axis;
- ``all_gather``: vjp is this process's block of the cotangent, jvp the ``all_gather`` of the
  tangents;
- ``all_max`` / ``all_min`` (MLX returns the cotangent unchanged): the cotangent where this
  process holds the extreme value, zero elsewhere -- the same per-process convention as
  ``all_sum``, and the true derivative of the result; jvp: the tangent of the process holding
  the extreme (averaged over ties);
- ``sum_scatter`` (MLX defines none): with the per-process convention of ``all_sum``, vjp is
  the cotangent placed at this process's block (zeros elsewhere), jvp the ``sum_scatter`` of
  the tangents;
- ``send``: vmap only; ``recv`` has no inputs, so nothing to differentiate.
"""

from __future__ import annotations

from ..core import dtypes as dt
from ..core.primitive import Primitive

REDUCE_OPS = ("sum", "max", "min")


class _Collective(Primitive):
    """Base of the communicating primitives (holds the group; always effectful)."""

    __slots__ = ("group",)
    effectful = True

    def __init__(self, group) -> None:
        self.group = group

    @property
    def params(self) -> tuple:
        return (id(self.group),)


class AllReduce(_Collective):
    """The element-wise ``op`` ("sum", "max" or "min") of ``x`` over the group's processes."""

    __slots__ = ("op",)

    def __init__(self, op: str, group) -> None:
        if op not in REDUCE_OPS:
            raise ValueError(f"all_reduce: op must be one of {REDUCE_OPS}, got {op!r}")
        super().__init__(group)
        self.op = op

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"all_{self.op}"

    @property
    def params(self) -> tuple:
        return (self.op, id(self.group))

    def infer(self, inputs):
        (x,) = inputs
        if self.op != "sum" and x._dtype.kind == "c":
            raise ValueError(f"{self.name}: {x._dtype.name} values have no order")
        return [(x._shape, x._dtype)]


class AllGather(_Collective):
    """The processes' ``x`` concatenated along axis 0 in rank order (a 0-d ``x`` gives a
    vector of ``size`` values)."""

    __slots__ = ()
    name = "all_gather"

    def infer(self, inputs):
        (x,) = inputs
        n = self.group.size()
        if not x._shape:
            return [((n,), x._dtype)]
        return [((x._shape[0] * n,) + x._shape[1:], x._dtype)]


class SumScatter(_Collective):
    """The sum of the processes' ``x``, of which this process keeps block ``rank`` of axis 0
    (``x.shape[0]`` divisible by the group's size)."""

    __slots__ = ()
    name = "sum_scatter"

    def infer(self, inputs):
        (x,) = inputs
        n = self.group.size()
        if not x._shape or x._shape[0] % n:
            raise ValueError(
                f"sum_scatter: axis 0 of x (shape {x._shape}) must be divisible by the "
                f"group's size {n}"
            )
        return [((x._shape[0] // n,) + x._shape[1:], x._dtype)]


class Send(_Collective):
    """Sends ``x`` to process ``dst``; the output is ``x`` (evaluate it to send)."""

    __slots__ = ("dst",)
    name = "send"

    def __init__(self, dst: int, group) -> None:
        super().__init__(group)
        self.dst = dst

    @property
    def params(self) -> tuple:
        return (self.dst, id(self.group))

    def infer(self, inputs):
        (x,) = inputs
        return [(x._shape, x._dtype)]


class Recv(_Collective):
    """An array of ``shape`` and ``dtype`` received from process ``src`` (no inputs)."""

    __slots__ = ("shape", "dtype", "src")
    name = "recv"
    fixes_shape = True
    differentiable = False

    def __init__(self, shape: tuple[int, ...], dtype: dt.Dtype, src: int, group) -> None:
        super().__init__(group)
        self.shape = tuple(shape)
        self.dtype = dtype
        self.src = src

    @property
    def params(self) -> tuple:
        return (self.shape, self.dtype.name, self.src, id(self.group))

    def infer(self, inputs):
        return [(self.shape, self.dtype)]
