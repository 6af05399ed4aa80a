"""The one-process communicator: what ``init()`` gives when no backend is launched, so that
a distributed script runs unchanged on one machine. Reductions and gathers copy the input;
there is no other process to send to or receive from."""

from __future__ import annotations

import numpy as np

from .base import Communicator


class SingletonCommunicator(Communicator):
    name = "singleton"

    def rank(self) -> int:
        return 0

    def size(self) -> int:
        return 1

    def split(self, color: int, key: int) -> "SingletonCommunicator":
        return SingletonCommunicator()

    def _all_reduce(self, x, out, op: str) -> None:
        np.copyto(out, x)

    def _all_gather(self, x, out) -> None:
        np.copyto(out.reshape(x.shape), x)

    def _reduce_scatter(self, x, out) -> None:
        np.copyto(out, x)

    def _send(self, x, dst: int) -> None:
        raise ValueError("send: this group has one process, there is no other process to send to")

    def _recv(self, out, src: int) -> None:
        raise ValueError(
            "recv: this group has one process, there is no other process to receive from"
        )
