"""Element-wise primitives: Unary, Binary, Select and AsType.

All run through the element-wise engine (``nuvec.codegen``): eagerly as a group of one op,
and fused by ``nv.compile``. Operands have one shape (the ops broadcast them first) and one
dtype (the ops insert AsType first), except Select's condition, which is bool. The ops'
names are the engine's op names, and their records in ``codegen.optable.OPS`` give the
result dtype and whether a derivative rule exists.
"""

from __future__ import annotations

from ..codegen.optable import OPS
from ..core import dtypes as dt
from ..core.primitive import Primitive

#: Ops whose result is bool.
PREDICATES = frozenset(o.name for o in OPS.values() if o.result == "bool")
#: Ops that map complex64 to float32.
COMPLEX_TO_REAL = frozenset(o.name for o in OPS.values() if o.result == "real")
#: Ops with derivative rules (the others have zero derivatives almost everywhere or
#: bool / integer results: transforms skip them).
DIFFERENTIABLE = frozenset(o.name for o in OPS.values() if o.differentiable)


class _ElementwiseOp(Primitive):
    """An element-wise primitive identified by its engine op name (its only parameter)."""

    __slots__ = ("op",)
    elementwise = True

    def __init__(self, op: str) -> None:
        self.op = op

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.op

    @property
    def params(self) -> tuple:
        return (self.op,)


class Unary(_ElementwiseOp):
    __slots__ = ()

    @property
    def differentiable(self) -> bool:  # type: ignore[override]
        return self.op in DIFFERENTIABLE

    def infer(self, inputs):
        (x,) = inputs
        if self.op in PREDICATES:
            return [(x._shape, dt.bool_)]
        if self.op in COMPLEX_TO_REAL and x._dtype == dt.complex64:
            return [(x._shape, dt.float32)]
        return [(x._shape, x._dtype)]


class Binary(_ElementwiseOp):
    __slots__ = ()

    @property
    def differentiable(self) -> bool:  # type: ignore[override]
        return self.op in DIFFERENTIABLE

    def infer(self, inputs):
        a, b = inputs
        if a._shape != b._shape:
            raise ValueError(
                f"{self.op}: operand shapes {a._shape} and {b._shape} differ "
                "(the ops broadcast them first)"
            )
        if a._dtype is not b._dtype and a._dtype != b._dtype:
            raise TypeError(f"{self.op}: operand dtypes {a._dtype.name} and {b._dtype.name} differ")
        return [(a._shape, dt.bool_ if self.op in PREDICATES else a._dtype)]


class Select(Primitive):
    """``where(cond, a, b)``: cond is bool, a and b share a dtype; all one shape."""

    __slots__ = ()
    name = "select"
    elementwise = True

    def infer(self, inputs):
        c, a, b = inputs
        if not (c._shape == a._shape == b._shape):
            raise ValueError(f"select: operand shapes {c._shape}, {a._shape}, {b._shape} differ")
        return [(a._shape, a._dtype)]


class AsType(Primitive):
    __slots__ = ("dtype",)
    name = "astype"
    elementwise = True

    def __init__(self, dtype: dt.Dtype) -> None:
        self.dtype = dtype

    @property
    def params(self) -> tuple:
        return (self.dtype.name,)

    def infer(self, inputs):
        return [(inputs[0]._shape, self.dtype)]
