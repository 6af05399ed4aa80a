"""Data types, their categories, promotion rules and numeric limits (as MLX's).

>>> import nuvec as nv
>>> nv.promote_types(nv.int8, nv.uint8)
nuvec.int16
>>> nv.issubdtype(nv.float16, nv.floating)
True
"""

from __future__ import annotations

import ml_dtypes
import numpy as np


class DtypeCategory:
    """A node of the dtype hierarchy (``nv.floating``, ``nv.integer``, ...)."""

    __slots__ = ("name", "parent")

    def __init__(self, name: str, parent: "DtypeCategory | None") -> None:
        self.name = name
        self.parent = parent

    def __repr__(self) -> str:
        return f"nuvec.{self.name}"

    def is_within(self, other: "DtypeCategory") -> bool:
        node: DtypeCategory | None = self
        while node is not None:
            if node is other:
                return True
            node = node.parent
        return False


generic = DtypeCategory("generic", None)
number = DtypeCategory("number", generic)
integer = DtypeCategory("integer", number)
signedinteger = DtypeCategory("signedinteger", integer)
unsignedinteger = DtypeCategory("unsignedinteger", integer)
inexact = DtypeCategory("inexact", number)
floating = DtypeCategory("floating", inexact)
complexfloating = DtypeCategory("complexfloating", inexact)
bool_category = DtypeCategory("bool_", generic)


class Dtype:
    """An array element type. Compare with ``==``; ``size`` is in bytes."""

    __slots__ = ("name", "size", "np", "category", "kind", "_order")

    def __init__(self, name: str, np_dtype, category: DtypeCategory, kind: str, order: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.size = self.np.itemsize
        self.category = category
        self.kind = kind  # 'b' bool, 'u' unsigned, 'i' signed, 'f' float, 'c' complex
        self._order = order

    def __repr__(self) -> str:
        return f"nuvec.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other) -> bool:
        return self is other or (isinstance(other, Dtype) and other.name == self.name)

    @property
    def is_floating(self) -> bool:
        return self.kind == "f"

    @property
    def is_inexact(self) -> bool:
        return self.kind in "fc"


bool_ = Dtype("bool", np.bool_, bool_category, "b", 0)
uint8 = Dtype("uint8", np.uint8, unsignedinteger, "u", 1)
uint16 = Dtype("uint16", np.uint16, unsignedinteger, "u", 2)
uint32 = Dtype("uint32", np.uint32, unsignedinteger, "u", 3)
uint64 = Dtype("uint64", np.uint64, unsignedinteger, "u", 4)
int8 = Dtype("int8", np.int8, signedinteger, "i", 1)
int16 = Dtype("int16", np.int16, signedinteger, "i", 2)
int32 = Dtype("int32", np.int32, signedinteger, "i", 3)
int64 = Dtype("int64", np.int64, signedinteger, "i", 4)
float16 = Dtype("float16", np.float16, floating, "f", 1)
bfloat16 = Dtype("bfloat16", ml_dtypes.bfloat16, floating, "f", 1)
float32 = Dtype("float32", np.float32, floating, "f", 2)
float64 = Dtype("float64", np.float64, floating, "f", 3)
complex64 = Dtype("complex64", np.complex64, complexfloating, "c", 4)

ALL = (
    bool_,
    uint8,
    uint16,
    uint32,
    uint64,
    int8,
    int16,
    int32,
    int64,
    float16,
    bfloat16,
    float32,
    float64,
    complex64,
)
_BY_NAME = {d.name: d for d in ALL}
_BY_NP = {d.np: d for d in ALL}


def from_name(name: str) -> Dtype:
    """The dtype called ``name`` ("float32", "bool", ...)."""
    return _BY_NAME[name]


def from_numpy(np_dtype) -> Dtype:
    """The nuvec dtype of a NumPy dtype; float64/int64 are kept (MLX narrows them only for
    Python scalars and lists, see ``nuvec.array``)."""
    dt = np.dtype(np_dtype)
    if dt in _BY_NP:
        return _BY_NP[dt]
    if dt == np.complex128:
        return complex64
    raise TypeError(f"nuvec does not support the NumPy dtype {dt}")


def to_dtype(d) -> Dtype:
    """Accepts a nuvec Dtype, a NumPy dtype or type, or a name."""
    if isinstance(d, Dtype):
        return d
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    if d is bool:
        return bool_
    if d is int:
        return int32
    if d is float:
        return float32
    if d is complex:
        return complex64
    try:
        return from_numpy(d)
    except TypeError:
        raise TypeError(f"not a dtype: {d!r}") from None


def _promote(a: Dtype, b: Dtype) -> Dtype:
    if a == b:
        return a
    ka, kb = a.kind, b.kind
    if ka == "b":
        return b
    if kb == "b":
        return a
    if "c" in (ka, kb):
        return complex64
    if ka == "f" and kb == "f":
        if {a.name, b.name} == {"float16", "bfloat16"}:
            return float32
        return a if a._order > b._order else b
    if ka == "f":
        return a
    if kb == "f":
        return b
    if ka == kb:  # both signed or both unsigned
        return a if a._order > b._order else b
    u, s = (a, b) if ka == "u" else (b, a)
    if s._order > u._order:
        return s
    if u._order == 4:  # uint64 with any signed integer: no integer holds both
        return float32
    return (int16, int32, int64)[u._order - 1]


_PROMOTION = {(a, b): _promote(a, b) for a in ALL for b in ALL}


def promote_types(a, b) -> Dtype:
    """The dtype that two array dtypes combine to (MLX's table).

    >>> promote_types(uint64, int8)
    nuvec.float32
    """
    return _PROMOTION[(to_dtype(a), to_dtype(b))]


def issubdtype(a, b) -> bool:
    """``nv.issubdtype(nv.int8, nv.integer)``; either side may be a dtype or a category."""
    for name, x in (("arg1", a), ("arg2", b)):
        if not isinstance(x, (Dtype, DtypeCategory)):
            raise TypeError(
                f"issubdtype: {name} must be a dtype or a dtype category, got "
                f"{type(x).__name__} {x!r}"
            )
    ca = a.category if isinstance(a, Dtype) else a
    if isinstance(b, Dtype):
        return isinstance(a, Dtype) and a == b
    return ca.is_within(b)


class finfo:
    """Machine limits of a floating dtype: ``nv.finfo(nv.float16).max``."""

    def __init__(self, dtype) -> None:
        d = to_dtype(dtype)
        if d.kind not in "fc":
            raise ValueError(f"finfo: {d.name} is not an inexact dtype")
        base = float32 if d == complex64 else d
        info = ml_dtypes.finfo(base.np) if base == bfloat16 else np.finfo(base.np)
        self.dtype = base  # a complex dtype reports its real component (array API)
        self.min = float(info.min)
        self.max = float(info.max)
        self.eps = float(info.eps)
        self.tiny = float(info.tiny)
        self.smallest_normal = self.tiny
        self.resolution = float(info.resolution)
        self.bits = base.size * 8

    def __repr__(self) -> str:
        return f"finfo(min={self.min}, max={self.max}, dtype={self.dtype.name})"


class iinfo:
    """Limits of an integer dtype: ``nv.iinfo(nv.int8).min == -128``."""

    def __init__(self, dtype) -> None:
        d = to_dtype(dtype)
        if d.kind not in "ui":
            raise ValueError(f"iinfo: {d.name} is not an integer dtype")
        info = np.iinfo(d.np)
        self.dtype = d
        self.min = int(info.min)
        self.max = int(info.max)
        self.bits = d.size * 8

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype.name})"
