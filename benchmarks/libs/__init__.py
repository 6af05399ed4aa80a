"""One adapter per library. ``load(name)`` imports the adapter module lazily (in the worker)."""

from __future__ import annotations

import importlib
from typing import Any

LIBRARIES = ("numpy", "numexpr", "jax", "torch", "mlx", "nuvec")
"""Run order. nuvec runs last so that the peers' figures are on the table before it."""

IMPORT_NAME = {
    "numpy": "numpy",
    "numexpr": "numexpr",
    "jax": "jax",
    "torch": "torch",
    "mlx": "mlx.core",
    "nuvec": "nuvec",
}


def load(name: str, **options: Any) -> Any:
    """Return an adapter instance for library ``name`` (the library itself is imported later)."""
    if name not in LIBRARIES:
        raise ValueError(
            f"benchmarks: unknown library {name!r}; choose from {', '.join(LIBRARIES)}"
        )
    mod = importlib.import_module(f"benchmarks.libs.{name}_lib")
    return mod.Adapter(**options)
