"""A stand-in for the Metal device with the shim's interface, for tests on machines without
Metal: buffers are the shim's host device (real shared-memory buffers, through the real ABI),
libraries are the MSL compiled as C++ by ``emulate.build``, and dispatches run in the emulation
runner. Like a GPU, work runs late: a committed dispatch executes only when the stream is
synchronized, so a read that forgot to wait sees the buffer's old contents.

    dev = EmulatedDevice(cache_dir)
    with runtime.use_device(dev):
        ...                       # the Metal backend's code paths, dispatches emulated
    dev.dispatches               # [(kernel name, grid, threadgroup, mode), ...]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nuvec.backends.metal import shim

from . import emulate


class EmulatedKernel:
    def __init__(self, module: emulate.Module, name: str) -> None:
        if name not in module.kernels:
            raise shim.ShimError(shim.NV_ERR_NOT_FOUND, "NV_ERR_NOT_FOUND", f"no kernel {name}")
        self.module = module
        self.name = name
        self.info = {
            "max_total_threads_per_threadgroup": 1024,
            "thread_execution_width": 32,
            "static_threadgroup_memory_length": 0,
        }


class EmulatedLibrary:
    def __init__(self, module: emulate.Module) -> None:
        self.module = module

    def kernel(self, name: str) -> EmulatedKernel:
        return EmulatedKernel(self.module, name)


class EmulatedStream:
    def __init__(self, device: "EmulatedDevice") -> None:
        self.device = device
        self.open: list = []  # encoded, not committed
        self.committed: list = []  # committed, not run yet (the "GPU" is slow)
        self.synchronized = 0

    def dispatch(
        self, kernel: EmulatedKernel, args: dict, grid, threadgroup=(0, 0, 0), mode: str = "threads"
    ) -> None:
        params = {p.index: p for p in kernel.module.kernels[kernel.name] if p.attr == "buffer"}
        bound, writes = {}, set()
        for slot, value in args.items():
            if isinstance(value, tuple):
                buf, off = value
                bound[slot] = self.device.whole(buf)[off:]
                if "const" not in params[slot].type.split():
                    writes.add(slot)
            else:
                bound[slot] = bytes(value)
        self.device.dispatches.append((kernel.name, tuple(grid), tuple(threadgroup), mode))
        self.open.append(
            (
                kernel.module,
                emulate.Job(kernel.name, bound, tuple(grid), tuple(threadgroup), mode, writes),
            )
        )

    def commit(self) -> None:
        self.committed += self.open
        self.open = []

    def synchronize(self) -> None:
        self.commit()
        jobs, self.committed = self.committed, []
        # consecutive jobs of one module run in one runner process
        while jobs:
            module = jobs[0][0]
            k = 1
            while k < len(jobs) and jobs[k][0] is module:
                k += 1
            emulate.run(module, [j for _, j in jobs[:k]])
            jobs = jobs[k:]
        self.synchronized += 1


class EmulatedDevice:
    """Buffers from the shim's host device; compile and dispatch emulated (see module doc)."""

    def __init__(self, cache_dir: Path) -> None:
        self.host = shim.Device.host()
        self.cache_dir = Path(cache_dir)
        self.dispatches: list = []
        self.compiled: list[str] = []
        self.limits = dict(self.host.limits)
        self._whole: dict[int, np.ndarray] = {}

    def whole(self, buf: shim.Buffer) -> np.ndarray:
        """The whole buffer as one uint8 array (one owner per buffer for the runner)."""
        a = self._whole.get(buf.handle)
        if a is None:
            a = self._whole[buf.handle] = buf.as_array(np.uint8)
        return a

    def buffer(self, nbytes: int) -> shim.Buffer:
        return self.host.buffer(nbytes)

    def buffer_from(self, data: Any) -> shim.Buffer:
        return self.host.buffer_from(data)

    def compile(self, source: str, *, math_mode: str = "safe", **_: Any) -> EmulatedLibrary:
        if math_mode != "safe":
            raise ValueError("the emulation follows Metal's safe math mode only")
        self.compiled.append(source)
        return EmulatedLibrary(emulate.build(source, self.cache_dir))

    def stream(self) -> EmulatedStream:
        return EmulatedStream(self)
