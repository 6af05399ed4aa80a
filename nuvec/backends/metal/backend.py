"""The Apple GPU's ``Backend``: shared-memory buffers, kernels of the Metal dialect through
the Swift shim; compiled tapes replay as graph nodes (the shim's queues order them)."""

from __future__ import annotations

from typing import Any, Sequence

from ..base import Backend, CompileOptions, FusionPolicy
from . import compiled, runtime, shim
from .memory import MetalArray


class MetalBackend(Backend):
    name = "metal"
    device_type = "gpu"
    dialect = "metal"
    data_type = MetalArray
    policy = FusionPolicy(fuses=True)

    def is_available(self) -> bool:
        return shim.is_available()

    def unavailable_reason(self) -> str:
        return shim.unavailable_reason()

    def to_host(self, data: Any, dtype: Any = None) -> Any:
        return data.get()

    def synchronize(self, stream: Any = None) -> None:
        runtime.synchronize(stream)

    def describe_executable(self, tape: Any) -> dict | None:
        return {"state": "not recorded", "reason": "this GPU backend records no executable"}

    def prepare(self, specs: Sequence[Any], options: CompileOptions) -> dict:
        compiled.prepare(specs)  # one Metal library; Compiled steps run through their impl
        return {}


BACKEND = MetalBackend()
