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
from ..core.array import Array
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

    def vjp(self, primals, cotangents, argnums, outputs):
        (g,) = cotangents
        if self.op == "sum":
            return [g]
        from .. import ops

        mask = ops.equal(primals[0], outputs[0])
        return [ops.where(mask, g, ops.zeros_like(g))]

    def jvp(self, primals, tangents, argnums):
        (t,) = tangents
        s = primals[0]._stream
        if self.op == "sum":
            return [Array.make(AllReduce("sum", self.group), [t], s)]
        from .. import ops

        x = primals[0]
        y = Array.make(AllReduce(self.op, self.group), [x], s)
        mask = ops.equal(x, y)
        total = Array.make(AllReduce("sum", self.group), [ops.where(mask, t, ops.zeros_like(t))], s)
        holders = Array.make(AllReduce("sum", self.group), [ops.astype(mask, t._dtype)], s)
        return [total / holders]

    def vmap(self, inputs, axes):
        # element-wise across processes: the batch axis stays where it is
        return [Array.make(AllReduce(self.op, self.group), inputs, inputs[0]._stream)], list(axes)


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

    def vjp(self, primals, cotangents, argnums, outputs):
        from .. import ops

        (g,) = cotangents
        x = primals[0]
        r = self.group.rank()
        if not x._shape:
            return [ops.reshape(g[r : r + 1], ())]
        d = x._shape[0]
        return [g[r * d : (r + 1) * d]]

    def jvp(self, primals, tangents, argnums):
        return [Array.make(AllGather(self.group), [tangents[0]], primals[0]._stream)]

    def vmap(self, inputs, axes):
        from .. import ops

        (x,), (ax,) = inputs, axes
        if ax is None:
            return [Array.make(self, [x], x._stream)], [None]
        # gather concatenates each example's axis 0: put the batch axis behind it
        if x.ndim == 1:
            x = ops.expand_dims(x, 0)  # 0-d examples: one row each
        else:
            x = ops.moveaxis(x, ax, 1)
        return [Array.make(AllGather(self.group), [x], x._stream)], [1]


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

    def vjp(self, primals, cotangents, argnums, outputs):
        from .. import ops

        (g,) = cotangents
        n, r = self.group.size(), self.group.rank()
        pad = [(r * g.shape[0], (n - 1 - r) * g.shape[0])] + [(0, 0)] * (g.ndim - 1)
        return [ops.pad(g, pad)]

    def jvp(self, primals, tangents, argnums):
        return [Array.make(SumScatter(self.group), [tangents[0]], primals[0]._stream)]

    def vmap(self, inputs, axes):
        from .. import ops

        (x,), (ax,) = inputs, axes
        if ax is None:
            return [Array.make(self, [x], x._stream)], [None]
        if x.ndim == 1:
            raise ValueError("sum_scatter: cannot scatter 0-d examples (they have no axis 0)")
        x = ops.moveaxis(x, ax, 1)  # each example's axis 0 first, the batch axis behind it
        return [Array.make(SumScatter(self.group), [x], x._stream)], [1]


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

    def vjp(self, primals, cotangents, argnums, outputs):
        raise NotImplementedError("send: has no gradient (as in MLX)")

    def jvp(self, primals, tangents, argnums):
        raise NotImplementedError("send: has no forward-mode derivative (as in MLX)")

    def vmap(self, inputs, axes):
        return [Array.make(Send(self.dst, self.group), inputs, inputs[0]._stream)], list(axes)


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

    def vjp(self, primals, cotangents, argnums, outputs):
        return []  # no inputs to send a cotangent to

    def jvp(self, primals, tangents, argnums):
        from .. import ops

        return [ops.zeros(self.shape, self.dtype)]  # a received value does not depend on inputs

    def vmap(self, inputs, axes):
        raise NotImplementedError(
            "recv: cannot be vmapped (it has no input to map over; "
            "receive the batched array instead)"
        )
