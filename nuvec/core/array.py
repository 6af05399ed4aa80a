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

from typing import Any, Sequence

import numpy as np

from . import dtypes as _dt
from .device import Stream, current_stream

# Filled in by nuvec.ops at import (the operators below call the public ops).
_ops: Any = None


class Array:
    __slots__ = ("_shape", "_dtype", "_prim", "_inputs", "_siblings", "_pos", "_data",
                 "_stream", "_tracer", "__weakref__")

    # -- construction -------------------------------------------------------------------
    def __init__(self, obj=None, dtype=None) -> None:
        """``nv.array(obj, dtype)`` (see ``nuvec.ops.creation.array``)."""
        src = _ops.array(obj, dtype)
        self._adopt(src)

    def _adopt(self, src: "Array") -> None:
        """Makes this object the node ``src`` (used by ``__init__`` and ``__setitem__``)."""
        for name in Array.__slots__[:-1]:
            setattr(self, name, getattr(src, name))
        if self._siblings is not None:
            self._siblings = tuple(self if s is src else s for s in self._siblings)

    @staticmethod
    def constant(data, stream: Stream | None = None, dtype: _dt.Dtype | None = None) -> "Array":
        """An evaluated array over backend data (a NumPy array on the CPU)."""
        a = Array.__new__(Array)
        a._shape = tuple(data.shape)
        a._dtype = dtype if dtype is not None else _dt.from_numpy(data.dtype)
        a._prim = None
        a._inputs = ()
        a._siblings = None
        a._pos = 0
        a._data = data
        a._stream = stream if stream is not None else current_stream()
        a._tracer = False
        return a

    @staticmethod
    def placeholder(shape: tuple, dtype: _dt.Dtype, stream: Stream | None = None,
                    tracer: bool = True) -> "Array":
        """A data-less input for tracing (compile, transforms). Evaluating it is an error."""
        a = Array.__new__(Array)
        a._shape = tuple(shape)
        a._dtype = dtype
        a._prim = None
        a._inputs = ()
        a._siblings = None
        a._pos = 0
        a._data = None
        a._stream = stream if stream is not None else current_stream()
        a._tracer = tracer
        return a

    @staticmethod
    def make(prim, inputs: Sequence["Array"], stream: Stream | None = None) -> "Array":
        """The single output of ``prim`` applied to ``inputs``."""
        ((shape, dtype),) = prim.infer(inputs)
        a = Array.__new__(Array)
        a._shape = shape
        a._dtype = dtype
        a._prim = prim
        a._inputs = tuple(inputs)
        a._siblings = None
        a._pos = 0
        a._data = None
        a._stream = stream if stream is not None else current_stream()
        tracer = False
        for x in a._inputs:
            if x._tracer:
                tracer = True
                break
        a._tracer = tracer
        return a

    @staticmethod
    def make_multi(prim, inputs: Sequence["Array"], stream: Stream | None = None) -> list["Array"]:
        """The outputs of a multi-output ``prim`` (siblings, evaluated together)."""
        specs = prim.infer(inputs)
        stream = stream if stream is not None else current_stream()
        inputs = tuple(inputs)
        tracer = any(x._tracer for x in inputs)
        outs = []
        for i, (shape, dtype) in enumerate(specs):
            a = Array.__new__(Array)
            a._shape, a._dtype, a._prim, a._inputs = shape, dtype, prim, inputs
            a._pos, a._data, a._stream, a._tracer = i, None, stream, tracer
            outs.append(a)
        sib = tuple(outs)
        for a in outs:
            a._siblings = sib
        return outs

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
        """Drops the inputs (the data, if any, stays). Tracers keep their graph."""
        self._inputs = ()
        self._prim = None
        self._siblings = None

    # -- metadata -----------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> _dt.Dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
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
        from .evaluate import evaluate
        if self._data is None:
            evaluate([self])
        from ..backends import registry
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
        h = np.ascontiguousarray(self._host())
        return h.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU; a GPU backend's arrays convert through their own library

    def __repr__(self) -> str:
        h = self._host()
        if self._dtype == _dt.bfloat16:
            h = h.astype(np.float32)
        body = np.array2string(h, separator=", ", prefix="array(")
        return f"array({body}, dtype={self._dtype.name})"

    __str__ = __repr__

    # -- Python protocol ----------------------------------------------------------------
    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d array")
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

    def __index__(self) -> int:
        if self._dtype.kind not in "uib":
            raise TypeError(f"only integer arrays can be used as an index, not {self._dtype.name}")
        return int(self.item())

    __hash__ = object.__hash__

    def __getitem__(self, index) -> "Array":
        return _ops.getitem(self, index)

    def __setitem__(self, index, value) -> None:
        # This object becomes the updated node. The update, and a value computed from this
        # array (``a[i] += 1``, ``a[:2] = a[2:]``), must read the old node: they get it
        # through a fresh object (else the graph would read itself).
        old = Array.__new__(Array)
        old._adopt(self)
        for s in old.siblings:
            s._siblings = old._siblings
        if value is self:
            value = old
        elif isinstance(value, Array):
            _retarget(value, self, old)
        self._adopt(_ops.setitem(old, index, value))

    # -- operators ----------------------------------------------------------------------
    def __add__(self, o): return _ops.add(self, o)
    def __radd__(self, o): return _ops.add(o, self)
    def __sub__(self, o): return _ops.subtract(self, o)
    def __rsub__(self, o): return _ops.subtract(o, self)
    def __mul__(self, o): return _ops.multiply(self, o)
    def __rmul__(self, o): return _ops.multiply(o, self)
    def __truediv__(self, o): return _ops.divide(self, o)
    def __rtruediv__(self, o): return _ops.divide(o, self)
    def __floordiv__(self, o): return _ops.floor_divide(self, o)
    def __rfloordiv__(self, o): return _ops.floor_divide(o, self)
    def __mod__(self, o): return _ops.remainder(self, o)
    def __rmod__(self, o): return _ops.remainder(o, self)
    def __divmod__(self, o): return _ops.divmod(self, o)
    def __rdivmod__(self, o): return _ops.divmod(o, self)
    def __pow__(self, o): return _ops.power(self, o)
    def __rpow__(self, o): return _ops.power(o, self)
    def __matmul__(self, o): return _ops.matmul(self, o)
    def __rmatmul__(self, o): return _ops.matmul(o, self)
    def __and__(self, o): return _ops.bitwise_and(self, o)
    def __rand__(self, o): return _ops.bitwise_and(o, self)
    def __or__(self, o): return _ops.bitwise_or(self, o)
    def __ror__(self, o): return _ops.bitwise_or(o, self)
    def __xor__(self, o): return _ops.bitwise_xor(self, o)
    def __rxor__(self, o): return _ops.bitwise_xor(o, self)
    def __lshift__(self, o): return _ops.left_shift(self, o)
    def __rlshift__(self, o): return _ops.left_shift(o, self)
    def __rshift__(self, o): return _ops.right_shift(self, o)
    def __rrshift__(self, o): return _ops.right_shift(o, self)
    def __neg__(self): return _ops.negative(self)
    def __pos__(self): return self
    def __abs__(self): return _ops.abs(self)
    def __invert__(self): return _ops.bitwise_invert(self)
    def __eq__(self, o): return _ops.equal(self, o)  # type: ignore[override]
    def __ne__(self, o): return _ops.not_equal(self, o)  # type: ignore[override]
    def __lt__(self, o): return _ops.less(self, o)
    def __le__(self, o): return _ops.less_equal(self, o)
    def __gt__(self, o): return _ops.greater(self, o)
    def __ge__(self, o): return _ops.greater_equal(self, o)
    def __iadd__(self, o): return _ops.add(self, o)
    def __isub__(self, o): return _ops.subtract(self, o)
    def __imul__(self, o): return _ops.multiply(self, o)
    def __itruediv__(self, o): return _ops.divide(self, o)

    def astype(self, dtype, stream=None) -> "Array":
        return _ops.astype(self, dtype, stream=stream)


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
            ins = tuple(dst if x is src else x for x in ins)
            for s in node.siblings:
                s._inputs = ins
        stack.extend(ins)
