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


def device_count() -> int:
    """The number of CUDA devices nuvec can run on: it runs on CuPy's current device."""
    return 1 if is_available() else 0


def device_info() -> dict[str, str | int]:
    """Name, architecture and memory of CuPy's current device (MLX's keys)."""
    import cupy

    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"]
    free, total = cupy.cuda.runtime.memGetInfo()
    major, minor = int(props["major"]), int(props["minor"])
    return {
        "device_name": name.decode() if isinstance(name, bytes) else str(name),
        "architecture": f"sm_{major}{minor}",
        "compute_capability_major": major,
        "compute_capability_minor": minor,
        "free_memory": int(free),
        "total_memory": int(total),
    }
