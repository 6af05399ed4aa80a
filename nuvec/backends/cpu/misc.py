"""CPU implementations of the transform primitives (nuvec.primitives.misc): identities."""

from __future__ import annotations

from ...primitives.misc import Copy, CustomFunction
from ...primitives.quantized import QQMatmul
from ..registry import register


@register(Copy)
def _copy(prim, ins, node):
    return [ins[0]]  # arrays are immutable: the copy shares the data


def _forwarded(prim, ins, node):
    return list(ins[prim.n_in :])  # a Forwarding primitive's values, computed by their own graph


for _forwarding in (CustomFunction, QQMatmul):
    register(_forwarding)(_forwarded)
