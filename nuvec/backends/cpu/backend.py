"""The CPU's ``Backend``: NumPy data, C kernels, tapes replayed on the data, and the row
primitives it runs in place of their composites (layer norm, the softmax's gradient product,
attention's scaled softmax, a product written in a permuted layout)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...primitives.linalg import PermutedMatmul
from ...primitives.norm import LayerNorm, LayerNormVJP
from ...primitives.reduction import ScaledSoftmax, SoftmaxProduct
from ..base import Backend, CompileOptions, FusionPolicy
from . import compiled, executable
from ._allocator import Buffer

_ROW_DTYPES = ("float32", "float64")


def _rows(x) -> bool:
    """A float32 or float64 array with a last axis (one pass per row of it)."""
    return x._dtype.name in _ROW_DTYPES and len(x._shape) >= 1


def _layer_norm(prim, inputs) -> bool:
    x = inputs[0]
    return _rows(x) and x.size > 0 and all(p._dtype == x._dtype for p in inputs[1:])


def _softmax_product(prim, inputs) -> bool:
    y, g = inputs
    return _rows(y) and g._dtype == y._dtype and g._shape == y._shape


def _scaled_softmax(prim, inputs) -> bool:
    scores = inputs[0]
    if scores._dtype.name != "float32" or len(scores._shape) < 1:
        return False
    if not prim.has_mask:
        return True
    mask = inputs[1]
    if mask._dtype.name != "float32" or mask.ndim < 1 or mask._shape[-1] != scores._shape[-1]:
        return False
    try:
        return np.broadcast_shapes(tuple(mask._shape), scores._shape) == scores._shape
    except ValueError:
        return False


_LOWERINGS = {
    LayerNorm: _layer_norm,
    LayerNormVJP: lambda prim, inputs: True,
    SoftmaxProduct: _softmax_product,
    ScaledSoftmax: _scaled_softmax,
    PermutedMatmul: lambda prim, inputs: True,
}


class CpuBackend(Backend):
    name = "cpu"
    device_type = "cpu"
    dialect = "c"
    data_type = np.ndarray
    policy = FusionPolicy(
        fuses=True,
        read_after_outputs=True,
        split_addmm=True,
        permute_matmuls=True,
        hoist_reductions=True,
        background_kernels=True,
    )
    lowerings = frozenset(_LOWERINGS)
    replays = True
    donation_base = Buffer
    broadcast_scalars = True

    def upload(self, host: Any, dtype: Any = None) -> np.ndarray:
        return np.asarray(host)

    def to_host(self, data: Any, dtype: Any = None) -> np.ndarray:
        return np.asarray(data)

    def prepare(self, specs: Sequence[Any], options: CompileOptions) -> dict:
        return compiled.prepare(specs)

    def ready(self, specs: Sequence[Any]) -> bool:
        return compiled.ready(specs)

    def executable(self, tape: Any) -> Any:
        return executable.build(tape)

    def describe_executable(self, tape: Any) -> dict | None:
        return executable.describe(tape)

    def supports(self, prim: Any, inputs: Sequence[Any]) -> bool:
        rule = _LOWERINGS.get(type(prim))
        return rule is not None and rule(prim, inputs)


BACKEND = CpuBackend()
