"""``nv.metal.is_available()``: whether an Apple GPU can run nuvec here (through the Swift
shim). On Linux it is False, and ``unavailable_reason()`` says why."""

from __future__ import annotations


def is_available() -> bool:
    try:
        from .backends.metal import shim
    except ImportError:
        return False
    return shim.is_available()


def unavailable_reason() -> str:
    try:
        from .backends.metal import shim
    except ImportError as e:
        return f"the Metal binding cannot be imported ({e})"
    return shim.unavailable_reason()
