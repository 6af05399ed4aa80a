"""The Array: a lazy node of the computation graph, and the user-facing array type.

An array is made by a primitive from input arrays (``Array.make``) or from data
(``Array.constant``). It holds no data until evaluated (``nv.eval``, ``item``, ``tolist``,
conversion, printing); evaluation stores the data and detaches the array from its inputs,
so the graph of a training loop does not grow. A multi-output primitive makes sibling arrays
that are evaluated together.

>>> import nuvec as nv
>>> x = nv.array([1.0, 2.0])
>>> y = x * 2 + 1          # nothing computed yet
>>> y.tolist()
[3.0, 5.0]
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any, Iterator

import numpy as np

from ..backends import registry
from ..printing import format_array
from . import dtypes as _dt
from . import shapeless as _shapeless
from . import _array as _c
from . import device as _device
from .device import Stream, current_stream
from .run import evaluate

# Filled in by nuvec.ops at import (the methods call the public ops)
_ops: Any = None


class _Rebinds(threading.local):
    log: dict | None = None


_rebinds = _Rebinds()


@contextlib.contextmanager
def recording_rebinds() -> Iterator[dict]:
    """Records, while a transform or compile traces a function, the arrays that ``__setitem__``
    rebinds: ``{id(array): the array's node before the first assignment}``. A tracer that
    stands for an input must keep meaning that input after the function assigns into it."""
    saved, _rebinds.log = _rebinds.log, {}
    try:
        yield _rebinds.log
    finally:
        _rebinds.log = saved


def original(a: "Array", log: dict) -> "Array":
    """``a`` as it was before any assignment recorded in ``log``."""
    return log.get(id(a), a)


_OPERAND_TYPES = (bool, int, float, complex, np.ndarray, np.generic)


def _is_operand(o) -> bool:
    """Whether an operator (``a + o``, ``a < o``) takes ``o``: arrays, scalars and objects
    that convert to arrays; lists, tuples and strings are refused, as MLX."""
    return (
        isinstance(o, (Array, _OPERAND_TYPES))
        or hasattr(o, "__array__")
        or hasattr(o, "__mlx_array__")
    )


def _operand(o, op: str):
    t = type(o)
    if t is Array or t is float or t is int or _is_operand(o):
        return o
    raise ValueError(
        f"{op}: an array operator cannot take a {type(o).__name__} (only arrays and scalars; "
        f"convert it with nv.array first)"
    )


class Array(_c.ArrayBase):
    # The fields are C members of ``ArrayBase`` (``_array.pxd``), one constructor path for
    # every node (``_array.new_node``); no instance dictionary
    __slots__ = ()
    _shape: tuple[int, ...]
    _dtype: _dt.Dtype
    _prim: Any  # the Primitive that makes this array; None for data and placeholders
    _inputs: tuple[Array, ...]
    _siblings: tuple[Array, ...] | None  # all outputs of a multi-output primitive
    _pos: int  # this array's index among its siblings
    _data: Any  # the backend's data once evaluated (a NumPy array on the CPU), else None
    _stream: Stream
    _tracer: bool  # depends on a transform's or compile's traced input
    _readers: int  # how many unevaluated arrays take this one as an input

    # -- construction -------------------------------------------------------------------
    def __init__(self, obj=None, dtype=None) -> None:
        """``nv.array(obj, dtype)`` (see ``nuvec.ops.creation.array``)."""
        src = _ops.creation.array(obj, dtype)
        self._adopt(src)

    def _adopt(self, src: "Array") -> None:
        """Makes this object the node ``src`` (used by ``__init__`` and ``__setitem__``)."""
        for name in _c.FIELDS:
            setattr(self, name, getattr(src, name))
        if self._siblings is not None:
            self._siblings = tuple(self if s is src else s for s in self._siblings)

    #: ``Array.constant(data, stream=None, dtype=None)``: an evaluated array over backend
    #: data (a NumPy array on the CPU).
    constant = staticmethod(_c.constant)
    #: ``Array.placeholder(shape, dtype, stream=None, tracer=True)``: a data-less input for
    #: tracing (compile, transforms). Evaluating it is an error.
    placeholder = staticmethod(_c.placeholder)
    #: ``Array.make(prim, inputs, stream=None)``: the single output of ``prim`` applied to
    #: ``inputs`` (its ``infer`` gives the shape and dtype).
    make = staticmethod(_c.make)
    #: ``Array.make_multi(prim, inputs, stream=None)``: the outputs of a multi-output ``prim``
    #: (siblings, evaluated together).
    make_multi = staticmethod(_c.make_multi)

    # -- graph introspection (used by eval, transforms and compile) ---------------------
    @property
    def primitive(self):
        """The primitive that makes this array (None once evaluated, or for data)."""
        return self._prim

    @property
    def inputs(self) -> tuple["Array", ...]:
        return self._inputs

    @property
    def siblings(self) -> tuple["Array", ...]:
        """All outputs of this array's primitive, this one included."""
        return self._siblings if self._siblings is not None else (self,)

    @property
    def is_evaluated(self) -> bool:
        return self._data is not None

    @property
    def stream(self) -> Stream:
        return self._stream

    def detach(self) -> None:
        """Drops the inputs (the data, if any, stays)."""
        for x in self._inputs:
            x._readers -= 1
        self._inputs = ()
        self._prim = None
        self._siblings = None

    # -- metadata -----------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        if self._tracer and _shapeless.active() and _shapeless.from_user(sys._getframe(1)):
            return _shapeless.user_shape(self)  # sizes that record their arithmetic
        return self._shape

    @property
    def dtype(self) -> _dt.Dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        if self._tracer and _shapeless.active() and _shapeless.from_user(sys._getframe(1)):
            n = 1
            for d in _shapeless.user_shape(self):
                n = d * n  # a Size (see core.shapeless)
            return n
        n = 1
        for d in self._shape:
            n *= d
        return n

    @property
    def itemsize(self) -> int:
        return self._dtype.size

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.size

    @property
    def T(self) -> "Array":
        return _ops.transpose(self)

    # -- host access (each evaluates) ---------------------------------------------------
    def _host(self) -> np.ndarray:
        """The data as a NumPy array (evaluates; copies from a device where needed)."""
        if self._data is None:
            evaluate([self])
        return registry.to_host(self._data, self._dtype)

    def item(self):
        """The value of a one-element array as a Python scalar."""
        if self.size != 1:
            raise ValueError(f"item: the array has {self.size} elements, item() needs exactly one")
        v = self._host().reshape(()).item()
        return float(v) if self._dtype == _dt.bfloat16 else v

    def tolist(self):
        """The data as nested Python lists (a scalar for a 0-d array)."""
        h = self._host()
        if self._dtype in (_dt.bfloat16,):
            h = h.astype(np.float32)
        return h.tolist()

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        h = self._host()
        if dtype is not None:
            return h.astype(dtype)
        return h.copy() if copy else h

    def __dlpack__(self, *args, **kwargs):
        h = self._host()
        if not h.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
            h = h.copy()
        return h.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU; a GPU backend's arrays convert through their own library

    def __repr__(self) -> str:
        h = self._host()
        if self._dtype == _dt.bfloat16:
            h = h.astype(np.float32)

        return format_array(h, self._dtype.name)

    __str__ = __repr__

    # -- Python protocol ----------------------------------------------------------------
    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        if self._tracer and _shapeless.active() and _shapeless.from_user(sys._getframe(1)):
            _shapeless.user_shape(self)[0]._refuse()  # len() would bake the traced size
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d array")
        if self._tracer and _shapeless.active() and _shapeless.from_user(sys._getframe(1)):
            _shapeless.user_shape(self)[0]._refuse()  # the loop would bake the traced size
        for i in range(self._shape[0]):
            yield self[i]

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(f"the truth value of an array with {self.size} elements is ambiguous")
        return bool(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if self._dtype.kind not in "uib":
            raise TypeError(f"only integer arrays can be used as an index, not {self._dtype.name}")
        if self.size != 1:  # a TypeError, as NumPy: bytes(a) then falls back to the buffer
            raise TypeError(f"only one-element integer arrays are an index, not {self.size}")
        return int(self.item())

    __hash__ = object.__hash__

    def __getitem__(self, index) -> "Array":
        return _ops.getitem(self, index)

    def __setitem__(self, index, value) -> None:
        self._update(lambda old, v: _ops.setitem(old, index, v), value)

    def _update(self, make, value) -> None:
        """Makes this object ``make(old, value)`` in place (assignment, ``a += b``), so every
        reference to it sees the new value, as MLX. Everything that read the array before
        keeps reading the old value: the array object is the graph node, so the old node moves
        to a fresh object and the nodes that read this array are pointed at it."""
        old = Array.__new__(Array)
        old._adopt(self)
        old._readers = 0  # counted again as readers are pointed at it
        for s in old.siblings:
            s._siblings = old._siblings
        if value is self:
            value = old
        elif isinstance(value, Array):
            _retarget(value, self, old)  # ``a[i] += 1``: the value's own graph, cheaply
        if self._readers > 0:
            _retarget_all(self, old)
        log = _rebinds.log
        if log is not None and id(self) not in log:
            log[id(self)] = old
        self._adopt(make(old, value))
        self._readers = 0

    # -- operators ----------------------------------------------------------------------
    # ``+``, ``-``, ``*`` and ``/`` (and their reflected forms) are ArrayBase's: a fast path in
    # C for arrays of one dtype and shape and for cached weak scalars, else the public ops

    def __floordiv__(self, o):
        return _ops.floor_divide(self, _operand(o, "floor_divide"))

    def __rfloordiv__(self, o):
        return _ops.floor_divide(_operand(o, "floor_divide"), self)

    def __mod__(self, o):
        return _ops.remainder(self, _operand(o, "remainder"))

    def __rmod__(self, o):
        return _ops.remainder(_operand(o, "remainder"), self)

    def __divmod__(self, o):
        return _ops.divmod(self, _operand(o, "divmod"))

    def __rdivmod__(self, o):
        return _ops.divmod(_operand(o, "divmod"), self)

    def __pow__(self, o):
        return _ops.power(self, _operand(o, "power"))

    def __rpow__(self, o):
        return _ops.power(_operand(o, "power"), self)

    def __matmul__(self, o):
        return _ops.matmul(self, _operand(o, "matmul"))

    def __rmatmul__(self, o):
        return _ops.matmul(_operand(o, "matmul"), self)

    def __and__(self, o):
        return _ops.bitwise_and(self, _operand(o, "bitwise_and"))

    def __rand__(self, o):
        return _ops.bitwise_and(_operand(o, "bitwise_and"), self)

    def __or__(self, o):
        return _ops.bitwise_or(self, _operand(o, "bitwise_or"))

    def __ror__(self, o):
        return _ops.bitwise_or(_operand(o, "bitwise_or"), self)

    def __xor__(self, o):
        return _ops.bitwise_xor(self, _operand(o, "bitwise_xor"))

    def __rxor__(self, o):
        return _ops.bitwise_xor(_operand(o, "bitwise_xor"), self)

    def __lshift__(self, o):
        return _ops.left_shift(self, _operand(o, "left_shift"))

    def __rlshift__(self, o):
        return _ops.left_shift(_operand(o, "left_shift"), self)

    def __rshift__(self, o):
        return _ops.right_shift(self, _operand(o, "right_shift"))

    def __rrshift__(self, o):
        return _ops.right_shift(_operand(o, "right_shift"), self)

    def __neg__(self):
        return _ops.negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _ops.abs(self)

    def __invert__(self):
        return _ops.bitwise_invert(self)

    # Against anything but an array or a scalar (a list, a str, None) ``==`` is False and
    # ``!=`` True, as MLX (``mask == "causal"``).
    def __eq__(self, o):
        return _ops.equal(self, o) if _is_operand(o) else False

    def __ne__(self, o):
        return _ops.not_equal(self, o) if _is_operand(o) else True

    def __lt__(self, o):
        return _ops.less(self, _operand(o, "less"))

    def __le__(self, o):
        return _ops.less_equal(self, _operand(o, "less_equal"))

    def __gt__(self, o):
        return _ops.greater(self, _operand(o, "greater"))

    def __ge__(self, o):
        return _ops.greater_equal(self, _operand(o, "greater_equal"))

    def _inplace(self, op: str, o) -> "Array":
        _operand(o, op)

        def make(old, value):
            out = getattr(_ops, op)(old, value)
            if out._dtype != old._dtype:  # as MLX: an in-place update keeps the dtype
                raise ValueError(
                    f"{op}: an in-place update cannot change the dtype from "
                    f"{old._dtype.name} to {out._dtype.name}"
                )
            return out

        self._update(make, o)
        return self

    def __iadd__(self, o):
        return self._inplace("add", o)

    def __isub__(self, o):
        return self._inplace("subtract", o)

    def __imul__(self, o):
        return self._inplace("multiply", o)

    def __itruediv__(self, o):
        return self._inplace("divide", o)

    def __ifloordiv__(self, o):
        return self._inplace("floor_divide", o)

    def __imod__(self, o):
        return self._inplace("remainder", o)

    def __ipow__(self, o):
        return self._inplace("power", o)

    def __imatmul__(self, o):
        return self._inplace("matmul", o)

    def __iand__(self, o):
        return self._inplace("bitwise_and", o)

    def __ior__(self, o):
        return self._inplace("bitwise_or", o)

    def __ixor__(self, o):
        return self._inplace("bitwise_xor", o)

    def __ilshift__(self, o):
        return self._inplace("left_shift", o)

    def __irshift__(self, o):
        return self._inplace("right_shift", o)

    def astype(self, dtype, stream=None) -> "Array":
        return _ops.astype(self, dtype, stream=stream)


_c.setup_core(
    Array,
    _device._state,
    _device._cached_default,
    current_stream,
    _dt.from_numpy,
    _shapeless,
)


def _retarget(root: Array, src: Array, dst: Array) -> None:
    """Replaces ``src`` by ``dst`` among the inputs of the unevaluated graph behind ``root``
    (iterative; stops at data and at ``src``)."""
    stack, seen = [root], {id(src)}
    while stack:
        node = stack.pop()
        if id(node) in seen or node._prim is None:
            continue
        seen.add(id(node))
        ins = node._inputs
        if any(x is src for x in ins):
            _repoint(node, src, dst)
        stack.extend(node._inputs)


def _repoint(node: Array, src: Array, dst: Array) -> None:
    """Makes ``node`` (and its siblings) read ``dst`` where it read ``src``."""
    n = sum(1 for x in node._inputs if x is src)
    ins = tuple(dst if x is src else x for x in node._inputs)
    for s in node.siblings:
        s._inputs = ins
    src._readers -= n
    dst._readers += n


def _retarget_all(src: Array, dst: Array) -> None:
    """Points every unevaluated node that still reads ``src`` at ``dst``. Rare (an array that
    unevaluated nodes read is then assigned into), so the garbage collector's referrer search
    is affordable here; ``_readers`` keeps it off the common path."""
    import gc

    for ref in gc.get_referrers(src):
        if type(ref) is not tuple:
            continue
        for owner in gc.get_referrers(ref):
            if type(owner) is Array and owner._inputs is ref:
                _repoint(owner, src, dst)
