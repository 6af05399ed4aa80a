"""Installs MLX's array methods and properties on ``nuvec.array`` (the Array class).

Each method calls the operation of the same name in ``nuvec.ops`` with the array as its first
argument, looked up when called (so operations defined after this module still bind).
``reshape`` and ``transpose`` also take their shape / axes as separate arguments, as MLX's.

>>> import nuvec as nv
>>> x = nv.array([[1.0, 2.0], [3.0, 4.0]])
>>> x.reshape(4).tolist(), x.transpose(1, 0).tolist()
([1.0, 2.0, 3.0, 4.0], [[1.0, 3.0], [2.0, 4.0]])
>>> x.at[0, 1].add(10.0).tolist()
[[1.0, 12.0], [3.0, 4.0]]
"""

from __future__ import annotations

import sys

from ..core.array import Array
from ..primitives.misc import Copy
from .creation import array
from .indexing import ArrayAt
from .shape import reshape_for_caller

_OPS = sys.modules[__package__]  # nuvec.ops (being imported when this runs)

#: MLX's array methods that forward to the operation of the same name.
FORWARDED = (
    "abs",
    "all",
    "any",
    "argmax",
    "argmin",
    "conj",
    "cos",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "diag",
    "diagonal",
    "exp",
    "flatten",
    "log",
    "log10",
    "log1p",
    "log2",
    "logcumsumexp",
    "logsumexp",
    "max",
    "mean",
    "min",
    "moveaxis",
    "prod",
    "reciprocal",
    "round",
    "rsqrt",
    "sin",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "std",
    "sum",
    "swapaxes",
    "var",
    "view",
)


def _forward(name: str):
    def method(self, *args, **kwargs):
        return getattr(_OPS, name)(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"See :func:`nuvec.{name}`."
    return method


def _reshape(self, *shape, stream=None) -> Array:
    """``a.reshape(2, 3)`` or ``a.reshape((2, 3))``; see :func:`nuvec.reshape`."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return reshape_for_caller(self, shape, stream)


def _transpose(self, *axes, stream=None) -> Array:
    """``a.transpose()``, ``a.transpose(1, 0)`` or ``a.transpose((1, 0))``; see
    :func:`nuvec.transpose`."""
    if not axes:
        return _OPS.transpose(self, stream=stream)
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = axes[0]
    return _OPS.transpose(self, axes, stream=stream)


def _real(self) -> Array:
    """The real part (the array itself for real dtypes)."""
    return _OPS.real(self)


def _imag(self) -> Array:
    """The imaginary part (zeros for real dtypes)."""
    return _OPS.imag(self)


def _at(self) -> ArrayAt:
    """``a.at[index].add(v)`` (also subtract, multiply, divide, maximum, minimum): updates
    in which every index counts, repeated ones included, unlike ``a[index] += v``."""
    return ArrayAt(self)


def _copy(self) -> Array:
    """A new array object with the same value (so that ``__setitem__`` on one leaves the
    other alone)."""

    return Array.make(Copy(), [self], self._stream)


def _deepcopy(self, memo) -> Array:
    return _copy(self)


def _getstate(self):
    import numpy as np

    return np.array(self._host())


def _setstate(self, state) -> None:
    self._adopt(array(state, state.dtype))


def _format(self, spec: str) -> str:
    if self.ndim == 0:
        return format(self.item(), spec)
    if spec:
        raise TypeError("unsupported format string passed to nuvec.array.__format__")
    return repr(self)


def _round_dunder(self, ndigits=None) -> Array:
    return _OPS.round(self, 0 if ndigits is None else ndigits)


def _array_namespace(self, api_version=None):
    if api_version is not None:
        raise ValueError("__array_namespace__: api_version is not supported")
    return sys.modules["nuvec"]


def install(cls=Array) -> None:
    """Puts the methods and properties on ``cls`` (idempotent)."""
    for name in FORWARDED:
        setattr(cls, name, _forward(name))
    cls.reshape = _reshape
    cls.transpose = _transpose
    cls.real = property(_real)
    cls.imag = property(_imag)
    cls.at = property(_at)
    cls.__copy__ = _copy
    cls.__deepcopy__ = _deepcopy
    cls.__getstate__ = _getstate
    cls.__setstate__ = _setstate
    cls.__format__ = _format
    cls.__round__ = _round_dunder
    cls.__array_namespace__ = _array_namespace


install()
