"""The communicator interface every distributed backend implements.

A ``Communicator`` moves the data of evaluated arrays between the processes of one group.
The graph side (``nuvec.primitives.distributed``) never sees a backend: the backends'
primitive implementations (``nuvec.backends.cpu.distributed``) call these methods.

Buffers are NumPy arrays: GPU data is staged through the host by the primitive
implementations, except for a backend whose ``device_memory`` is True (NCCL), which takes the
GPU's own (CuPy) buffers and, for reductions, the arrays' nuvec ``dtype`` (the GPU stores
bfloat16 as uint16). Inputs are C-contiguous; outputs are preallocated, C-contiguous and of
the result's shape and dtype.

Subclasses implement the underscored methods; the public ones count the calls
(``calls``: operation name -> how many times it ran here, for tests and diagnostics).

    class MyComm(Communicator):
        name = "mine"
        def rank(self): ...
        def size(self): ...
        def split(self, color, key): ...
        def _all_reduce(self, x, out, op): ...   # op: "sum", "max" or "min"
        def _all_gather(self, x, out): ...
        def _reduce_scatter(self, x, out): ...    # the sum, block ``rank`` of axis 0
        def _send(self, x, dst): ...
        def _recv(self, out, src): ...
"""

from __future__ import annotations

from collections import Counter
from typing import Any


class Communicator:
    name: str = "base"
    device_memory: bool = False  # whether the data-movement methods take GPU buffers

    def __init__(self) -> None:
        self.calls: Counter = Counter()

    # -- topology -------------------------------------------------------------------------
    def rank(self) -> int:
        raise NotImplementedError

    def size(self) -> int:
        raise NotImplementedError

    def split(self, color: int, key: int) -> "Communicator":
        """The communicator of the processes that passed the same ``color``, ranked by
        ``key`` (ties by rank). Every process of the group must call it."""
        raise NotImplementedError

    # -- data movement (counted) ----------------------------------------------------------
    def all_reduce(self, x: Any, out: Any, op: str) -> None:
        self.calls[f"all_{op}"] += 1
        self._all_reduce(x, out, op)

    def all_gather(self, x: Any, out: Any) -> None:
        self.calls["all_gather"] += 1
        self._all_gather(x, out)

    def reduce_scatter(self, x: Any, out: Any) -> None:
        """The sum of every process's ``x``; this process keeps block ``rank`` of axis 0."""
        self.calls["sum_scatter"] += 1
        self._reduce_scatter(x, out)

    def send(self, x: Any, dst: int) -> None:
        self.calls["send"] += 1
        self._send(x, dst)

    def recv(self, out: Any, src: int) -> None:
        self.calls["recv"] += 1
        self._recv(out, src)

    def _all_reduce(self, x, out, op: str) -> None:
        raise NotImplementedError

    def _all_gather(self, x, out) -> None:
        raise NotImplementedError

    def _reduce_scatter(self, x, out) -> None:
        raise NotImplementedError

    def _send(self, x, dst: int) -> None:
        raise NotImplementedError

    def _recv(self, out, src: int) -> None:
        raise NotImplementedError
