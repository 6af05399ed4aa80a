"""The transform primitives on the GPU (identities), and Copy as the transfer between devices.

A ``Copy`` node on a GPU stream whose input was evaluated on the CPU is the explicit
host-to-device transfer: the registration wrapper uploads its input on the node's stream
(``runtime.gpu``). A ``Copy`` node on the CPU stream over GPU data is the device-to-host
transfer (the CPU runner reads device data back through ``registry.to_host``).

    y = nuvec.backends.cuda.misc.transfer(x, nv.gpu)     # a graph node; nothing moves yet
"""

from __future__ import annotations

from ...core.array import Array
from ...core.device import resolve_stream
from ...primitives.misc import Copy, CustomFunction
from ...primitives.quantized import QQMatmul
from .runtime import gpu


def transfer(x: Array, device_or_stream) -> Array:
    """``x`` on another device or stream: a ``Copy`` node there (evaluated lazily)."""
    return Array.make(Copy(), [x], resolve_stream(device_or_stream))


@gpu(Copy)
def _copy(prim, ins, node):
    return [ins[0]]  # arrays are immutable: the copy shares the (now device) data


def _forwarded(prim, ins, node):
    return list(ins[prim.n_in :])  # a Forwarding primitive's values, computed by their own graph


for _forwarding in (CustomFunction, QQMatmul):
    gpu(_forwarding)(_forwarded)
