"""Print options for arrays (MLX's ``set_printoptions``/``get_printoptions``/``printoptions``):
a precision of ``p >= 0`` prints floats with ``p`` decimals; -1 is the default format.

>>> import nuvec as nv
>>> with nv.printoptions(precision=2):
...     print(nv.array([1.23456]))
array([1.23], dtype=float32)
"""

from __future__ import annotations

import contextlib
import numbers
from typing import Iterator


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


def array2string_options() -> dict:
    """Keyword arguments for ``np.array2string`` under the current options."""
    p = _current.precision
    return {} if p < 0 else {"precision": p, "floatmode": "fixed"}
