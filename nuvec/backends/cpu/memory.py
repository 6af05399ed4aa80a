"""MLX's memory API for the CPU buffer cache (re-exported by the lead as ``nv.*``).

    from nuvec.backends.cpu import memory
    memory.get_active_memory()        # bytes held by live arrays from the cache
    prev = memory.set_cache_limit(0)  # disable caching; returns the previous limit
    memory.clear_cache()

``empty(shape, dtype)`` gives a C-contiguous array from the cache (what kernels return).
"""

from __future__ import annotations

from ._allocator import (
    cache_stats,
    clear_cache,
    empty,
    get_active_memory,
    get_cache_memory,
    get_memory_limit,
    get_peak_memory,
    is_cached_array,
    reset_peak_memory,
    set_cache_limit,
    set_memory_limit,
)

__all__ = [
    "get_active_memory",
    "get_peak_memory",
    "reset_peak_memory",
    "get_cache_memory",
    "set_memory_limit",
    "get_memory_limit",
    "set_cache_limit",
    "clear_cache",
    "empty",
    "is_cached_array",
    "cache_stats",
]


def set_wired_limit(limit: int) -> int:
    """MLX's wired (kept-resident) memory limit; returns the previous one. It matters only to
    Metal on macOS 15+; elsewhere, as MLX without a Metal GPU, nothing is wired and it
    returns 0."""
    import numbers

    if isinstance(limit, bool) or not isinstance(limit, numbers.Integral):
        raise TypeError(f"set_wired_limit: limit must be an int, got {type(limit).__name__}")
    if limit < 0:
        raise ValueError(f"set_wired_limit: the limit must be >= 0, got {limit}")
    return 0
