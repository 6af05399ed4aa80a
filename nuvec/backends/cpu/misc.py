"""CPU implementations of the transform primitives (nuvec.primitives.misc): identities."""

from __future__ import annotations

from ...primitives.misc import Copy, CustomFunction
from ..registry import register


@register(Copy)
def _copy(prim, ins, node):
    return [ins[0]]  # arrays are immutable: the copy shares the data


@register(CustomFunction)
def _custom_function(prim, ins, node):
    return list(ins[prim.n_in :])  # the traced function's outputs, computed by its own graph
