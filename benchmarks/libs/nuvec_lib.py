"""nuvec through its public MLX-style API only: ``nuvec``, ``nuvec.nn``, ``nuvec.optimizers``.

``stand_in="mlx"`` drives MLX's modules through this adapter instead: that tests the harness's
nuvec path before nuvec exists. Such results are labelled as a stand-in and are never figures.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import Any

from .mlx_style import MLXStyleAdapter

STAND_INS = {"mlx": ("mlx.core", "mlx.nn", "mlx.optimizers")}


class Adapter(MLXStyleAdapter):
    name = "nuvec"
    eager = "nuvec"
    compiled = "nv.compile"
    modules = ("nuvec", "nuvec.nn", "nuvec.optimizers")

    def __init__(self, stand_in: str | None = None) -> None:
        self.stand_in = stand_in
        if stand_in:
            if stand_in not in STAND_INS:
                raise ValueError(f"nuvec adapter: unknown stand-in {stand_in!r}")
            self.modules = STAND_INS[stand_in]

    # jax.jit runs with subnormals flushed to zero (XLA's CPU runtime sets the mode); this
    # variant gives nuvec's kernels the same mode (nv.set_flush_denormals), beside the default
    flushed = "nv.compile+flush"

    def variants(self, group: str) -> list[str]:
        v = super().variants(group)
        return v + [self.flushed] if group == "train" and not self.stand_in else v

    def is_compiled(self, variant: str) -> bool:
        return variant in (self.compiled, self.flushed)

    def settle(self) -> None:
        if not self.stand_in:
            importlib.import_module("nuvec.compile").wait_for_kernels(timeout=120.0)

    def train(self, variant: str, case: str = "mlp_step") -> Any:
        if not self.stand_in:  # a process-wide mode: every variant sets its own
            self.core.set_flush_denormals(variant == self.flushed)
        return super().train(variant, case)

    def load(self) -> str:
        version = super().load()
        if version == "unknown":
            try:
                version = importlib.metadata.version("nuvec")
            except importlib.metadata.PackageNotFoundError:
                pass
        return f"stand-in {self.stand_in} {version}" if self.stand_in else version

    def compile_split(self, compiled_fn: Any) -> dict[str, Any] | None:
        """nuvec's own account of a first compile, if it exposes one (else the whole is
        reported)."""
        for name in ("stats", "cache_info", "compile_stats"):
            attr = getattr(compiled_fn, name, None)
            if attr is None:
                continue
            value = attr() if callable(attr) else attr
            if isinstance(value, dict):
                return {k: v for k, v in value.items() if isinstance(v, (int, float, str))}
            if hasattr(value, "_asdict"):
                return dict(value._asdict())
        return None
