"""The CUDA GPU's ``Backend``: CuPy data, kernels of the CUDA dialect through NVRTC, tapes
replayed on the device data (as one CUDA graph where they can be), fast math on request, and
layer norm and the softmax's vjp as one primitive each (``norm``, ``reduction``) in place of
their composites.

CuPy is imported only once a CUDA device exists (``device.is_available``)."""

from __future__ import annotations

from typing import Any, Sequence

from ..base import Backend, CompileOptions, FusionPolicy
from ...primitives.norm import LayerNorm, LayerNormVJP
from ...primitives.reduction import SoftmaxProduct
from . import device


def _layer_norm(prim: Any, inputs: Sequence[Any]) -> bool:
    """float32 / float64 rows, the weight and bias of the same dtype (``rows``' kernels)."""
    x = inputs[0]
    return (
        x._dtype.name in ("float32", "float64")
        and len(x._shape) >= 1
        and x.size > 0
        and all(p._dtype == x._dtype for p in inputs[1:])
    )


def _softmax_product(prim: Any, inputs: Sequence[Any]) -> bool:
    y, g = inputs
    return (
        y._dtype.name in ("float32", "float64")
        and len(y._shape) >= 1
        and y.size > 0
        and g._dtype == y._dtype
        and g._shape == y._shape
    )


_LOWERINGS = {
    LayerNorm: _layer_norm,
    LayerNormVJP: lambda prim, inputs: True,
    SoftmaxProduct: _softmax_product,
}


class CudaBackend(Backend):
    name = "cuda"
    device_type = "gpu"
    dialect = "cuda"
    # a member read after its group is another output of the kernel (one launch, not two);
    # the bias add of an addmm fuses with its readers (CuPy's add and the fused kernel's are
    # the same IEEE float32 / float64 addition, so the bits are the same); independent fused
    # steps are gathered into runs that the executable launches as one kernel each
    policy = FusionPolicy(
        fuses=True,
        read_after_outputs=True,
        split_addmm=True,
        fast_math=True,
        gather_kernels=True,
    )
    replays = True
    lowerings = frozenset(_LOWERINGS)

    @property
    def data_type(self) -> type:  # cupy.ndarray
        from .runtime import ndarray

        return ndarray

    def supports(self, prim: Any, inputs: Sequence[Any]) -> bool:
        rule = _LOWERINGS.get(type(prim))
        return rule is not None and rule(prim, inputs)

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
