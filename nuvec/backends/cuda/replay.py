"""What a compiled function's tape needs to replay directly on CuPy data (``Tape.run``).

On the CPU a tape replays over NumPy arrays without making graph nodes; on a CUDA GPU it does
the same over CuPy arrays, with these hooks (``nuvec.compile._finalize`` attaches them):

* constants are uploaded once, when the tape is made, not on every call;
* a fused step launches its kernel directly (``kernels.launcher``), as the CPU's fused steps call
  their C kernel, instead of going through the primitive's registered implementation;
* the whole replay runs with the tape's CUDA stream current, after that stream has been made
  to wait for any other GPU stream that produced an input (as evaluation does per node);
* a tape of several steps becomes one executable once warm (``executable``): a static memory
  plan and a recorded CUDA graph that a call launches at once instead of step by step.

    tape.data_type = ndarray; tape.const_data = device_constants(consts); attach(tape, stream)
"""

from __future__ import annotations

import numpy as np

from ...core.device import DeviceType
from . import executable, kernels
from .runtime import _streams, cuda_stream, ndarray, upload

__all__ = ["ndarray", "device_constants", "fused_kernel", "attach"]


def device_constants(consts: list) -> list:
    """The data of the tape's constants on the device (NumPy data uploaded; None stays None,
    which keeps the tape off the direct path)."""
    out = []
    for c in consts:
        d = c._data
        if d is not None and type(d) is not ndarray and isinstance(d, np.ndarray):
            d = upload(d, c._dtype)
        out.append(d)
    return out


def fused_kernel(prim):
    """``kernel(datas, shape[, outs])`` of a fused (Compiled) step, else None."""
    spec = getattr(prim, "spec", None)
    if spec is None or type(prim).__name__ != "Compiled":
        return None
    return kernels.launcher(spec)


def attach(tape, stream) -> None:
    """Gives ``tape`` its stream scope and the input ordering for a replay on ``stream``."""
    cs = cuda_stream(stream)
    tape.device_scope = cs

    def order_inputs(inputs: list) -> None:
        for x in inputs:
            s = x._stream
            if s is not stream and s.device.type is DeviceType.gpu:
                other = _streams.get(s)
                if other is not None and other is not cs:
                    cs.wait_event(other.record())

    tape.order_inputs = order_inputs
    if executable.why_not(tape) is None:
        tape.device_replay = executable.Executable(tape, cs)  # records itself once warm
