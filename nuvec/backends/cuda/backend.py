"""The CUDA GPU's ``Backend``: CuPy data, kernels of the CUDA dialect through NVRTC, tapes
replayed on the device data (as one CUDA graph where they can be), fast math on request.

CuPy is imported only once a CUDA device exists (``device.is_available``)."""

from __future__ import annotations

from typing import Any, Sequence

from ..base import Backend, CompileOptions, FusionPolicy
from . import device


class CudaBackend(Backend):
    name = "cuda"
    device_type = "gpu"
    dialect = "cuda"
    # a member read after its group is another output of the kernel (one launch, not two);
    # the bias add of an addmm fuses with its readers (CuPy's add and the fused kernel's are
    # the same IEEE float32 / float64 addition, so the bits are the same)
    policy = FusionPolicy(fuses=True, read_after_outputs=True, split_addmm=True, fast_math=True)
    replays = True

    @property
    def data_type(self) -> type:  # cupy.ndarray
        from .runtime import ndarray

        return ndarray

    def is_available(self) -> bool:
        return device.is_available()

    def unavailable_reason(self) -> str:
        return device.unavailable_reason()

    def upload(self, host: Any, dtype: Any = None) -> Any:
        from .runtime import upload

        return upload(host, dtype)

    def to_host(self, data: Any, dtype: Any = None) -> Any:
        from .runtime import to_host

        return to_host(data, dtype)

    def synchronize(self, stream: Any = None) -> None:
        from .runtime import synchronize

        synchronize(stream)

    def prepare(self, specs: Sequence[Any], options: CompileOptions) -> dict:
        from . import compiled, kernels

        compiled.prepare(specs)  # the contiguous kernels, in one NVRTC module
        return {s: kernels.launcher(s) for s in specs}

    def replay_constants(self, consts: list) -> list:
        from .replay import device_constants

        return device_constants(consts)

    def executable(self, tape: Any) -> Any:
        from .replay import Replay

        return Replay(tape, tape.stream)

    def describe_executable(self, tape: Any) -> dict | None:
        if tape.executable is not None:
            return tape.executable.describe()
        from .executable import why_not

        return {"state": "not recorded", "reason": why_not(tape)}


BACKEND = CudaBackend()
