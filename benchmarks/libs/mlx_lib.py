"""MLX on the CPU (``mlx[cpu]`` on Linux): eager ops and ``mx.compile``."""

from __future__ import annotations

from .mlx_style import MLXStyleAdapter


class Adapter(MLXStyleAdapter):
    name = "mlx"
    eager = "mlx"
    compiled = "mx.compile"
    modules = ("mlx.core", "mlx.nn", "mlx.optimizers")
