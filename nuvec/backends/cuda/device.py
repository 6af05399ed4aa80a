"""Whether CUDA is usable here: CuPy importable and at least one device. Imports nothing
heavy until asked."""
from __future__ import annotations

import functools


@functools.cache
def _probe() -> tuple[bool, str]:
    try:
        import cupy
    except ImportError:
        return False, "CuPy is not installed (pip install -e .[cuda])"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver, no device
        return False, f"no CUDA device ({e})"
    return (n > 0), ("" if n > 0 else "no CUDA device")


def is_available() -> bool:
    return _probe()[0]


def unavailable_reason() -> str:
    return _probe()[1]
