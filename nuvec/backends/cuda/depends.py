"""Depends on the GPU: the first n inputs, queued after the others on the node's stream."""

from ...primitives.depends import Depends
from .runtime import gpu


@gpu(Depends)
def _depends(prim, ins, node):
    return list(ins[: prim.n])
