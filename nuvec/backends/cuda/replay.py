"""A compiled function's tape replayed directly on CuPy data (``CudaBackend.executable``).

On the CPU a tape replays over NumPy arrays without making graph nodes; on a CUDA GPU it does
the same over CuPy arrays:

* constants are uploaded once, when the tape is made, not on every call
  (``device_constants``);
* a fused step launches its kernel directly (the launchers ``CudaBackend.prepare`` returns),
  as the CPU's fused steps call their C kernel;
* the whole replay runs with the tape's CUDA stream current (``tape.scope``), after that
  stream has been made to wait for any other GPU stream that produced an input (as
  evaluation does per node);
* a tape of several steps becomes one executable once warm (``executable``): a static memory
  plan and a recorded CUDA graph that a call launches at once instead of step by step.

    tape.const_data = device_constants(consts); tape.executable = Replay(tape, stream)
"""

from __future__ import annotations

import numpy as np

from ...core.device import DeviceType
from . import executable
from .runtime import _streams, cuda_stream, ndarray, upload

__all__ = ["device_constants", "Replay"]


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


class Replay:
    """``tape.executable`` on a CUDA stream: ``replay(inputs) -> outputs`` (evaluated
    arrays); ``graph`` is the tape's ``executable.Executable`` (recorded once warm), or None
    where the tape never becomes one."""

    __slots__ = ("tape", "stream", "scope", "graph")

    def __init__(self, tape, stream) -> None:
        self.tape = tape
        self.stream = stream
        self.scope = tape.scope = cuda_stream(stream)  # where Tape.replay_data queues steps
        ok = executable.why_not(tape) is None
        self.graph = executable.Executable(tape, self.scope) if ok else None

    def __call__(self, inputs: list) -> list:
        cs = self.scope
        for x in inputs:  # the tape's stream waits for the inputs' producers
            s = x._stream
            if s is not self.stream and s.device.type is DeviceType.gpu:
                other = _streams.get(s)
                if other is not None and other is not cs:
                    cs.wait_event(other.record())
        if self.graph is not None:
            return self.graph(inputs)
        return self.tape.replay_data(inputs)

    def stateful(self, n_state: int) -> None:
        """The first ``n_state`` inputs are a stateful step's state leaves (``nv.compile``'s
        state path says so): the executable may update them in place."""
        if self.graph is not None:
            self.graph.stateful(n_state)

    def describe(self) -> dict:
        """What runs the tape (``f.stats()["executable"]``)."""
        if self.graph is not None:
            return self.graph.describe()
        return {"state": "not recorded", "reason": executable.why_not(self.tape)}
