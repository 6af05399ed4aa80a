"""How arrays print (MLX's format) and the print options (MLX's ``set_printoptions``/
``get_printoptions``/``printoptions``): floats print as C's ``%g`` (six significant digits),
or with ``p`` decimals under a precision ``p >= 0``; an axis longer than six shows its first
and last three entries around ``...``.

>>> import nuvec as nv
>>> print(nv.array([1.0, 1.123456789]))
array([1, 1.12346], dtype=float32)
>>> with nv.printoptions(precision=2):
...     print(nv.array([1.23456]))
array([1.23], dtype=float32)
"""

from __future__ import annotations

import contextlib
import math
import numbers
from typing import Callable, Iterator

import numpy as np


class PrintOptions:
    """The options arrays are printed with: ``precision`` (decimals; -1 for the default)."""

    __slots__ = ("precision",)

    def __init__(self, precision: int = -1) -> None:
        self.precision = _check(precision, "PrintOptions")

    def __repr__(self) -> str:
        return f"PrintOptions(precision={self.precision})"


def _check(precision, name: str) -> int:
    if isinstance(precision, bool) or not isinstance(precision, numbers.Integral):
        raise TypeError(f"{name}: precision must be an int, got {type(precision).__name__}")
    return int(precision)


_current = PrintOptions()


def set_printoptions(precision: int = -1) -> None:
    """Sets the number of decimals floats print with (-1: the default format)."""
    _current.precision = _check(precision, "set_printoptions")


def get_printoptions() -> PrintOptions:
    """The print options in force (a copy)."""
    return PrintOptions(_current.precision)


@contextlib.contextmanager
def printoptions(precision: int = -1) -> Iterator[None]:
    """Prints with ``precision`` inside the block, then restores the previous options."""
    saved = _current.precision
    _current.precision = _check(precision, "printoptions")
    try:
        yield
    finally:
        _current.precision = saved


def format_array(host: np.ndarray, dtype_name: str) -> str:
    """``array(..., dtype=NAME)`` for the values ``host`` under the current options."""
    fmt = _formatter(host.dtype)
    body = fmt(host[()]) if host.ndim == 0 else _nested(host, 0, fmt)
    return f"array({body}, dtype={dtype_name})"


_EDGE = 3  # entries shown at each end of an axis longer than 2 * _EDGE


def _nested(x: np.ndarray, dim: int, fmt: Callable) -> str:
    n = x.shape[0]
    picks = list(range(n)) if n <= 2 * _EDGE else [*range(_EDGE), None, *range(n - _EDGE, n)]
    if x.ndim == 1:
        return "[" + ", ".join("..." if i is None else fmt(x[i]) for i in picks) + "]"
    sep = ",\n" + " " * (len("array(") + 1 + dim)
    return "[" + sep.join("..." if i is None else _nested(x[i], dim + 1, fmt) for i in picks) + "]"


def _formatter(d: np.dtype) -> Callable:
    if d == np.bool_:
        return lambda v: "True" if v else "False"
    if d.kind in "ui":
        return lambda v: str(int(v))
    p = _current.precision
    real = (lambda v: "%g" % float(v)) if p < 0 else (lambda v: f"{float(v):.{p}f}")
    if d.kind != "c":
        return real

    def complex_(v) -> str:
        im = float(v.imag)
        if im >= 0 or math.isnan(im):
            return f"{real(v.real)}+{real(im)}j"
        return f"{real(v.real)}-{real(-im)}j"

    return complex_
