"""A compiled function's replay recorded once as a CUDA graph and launched on later calls.

A training step replays tens of steps (matmuls, reductions, fused kernels); launched one by one
from Python each costs host time, and the GPU waits for the host. A CUDA graph records the
whole replay once and launches it with one call. What it needs, and how this module gives it:

* fixed addresses: the graph reads its inputs from buffers of its own (each call copies the
  inputs in, device to device) and writes its outputs into buffers of its own (each call
  copies them out into new arrays, so results handed out earlier are never overwritten);
* memory that stays put: every allocation made while recording goes through an allocator that
  keeps it for the graph's lifetime (CuPy's pool would otherwise hand the blocks to others);
* warm kernels: recording happens on the ``WARM_CALLS``-th call, after the plain replays built
  every kernel and cuBLAS its workspace.

The calls before, any call whose inputs are not contiguous, a call made while another thread
replays the graph, and every call after a failed recording (a step that reads data on the host,
say) run the plain replay instead: the same kernels on the same data, so the same bits.
Shapeless tapes and tapes returning an input or a constant are never recorded. Set
``NUVEC_CUDA_GRAPHS=0`` to turn recording off.

    tape.device_replay = GraphReplay(tape, cuda_stream)   # nuvec.backends.cuda.replay does this
"""

from __future__ import annotations

import os
import threading

import cupy as cp

from ...core.array import Array

WARM_CALLS = 3  # calls 1 and 2 replay plainly; call 3 records
_RELAXED = getattr(cp.cuda.runtime, "streamCaptureModeRelaxed", 2)  # allocations allowed


def enabled() -> bool:
    return os.environ.get("NUVEC_CUDA_GRAPHS", "1") != "0"


def suitable(tape) -> bool:
    """Whether ``tape`` may be recorded: fixed shapes, several steps, every output a new
    array computed by a step."""
    first_step_slot = tape.n_inputs + len(tape.consts)
    return (
        not tape.shapeless
        and len(tape.steps) >= 2
        and all(p == -1 for p in tape.out_plan)
        and all(s >= first_step_slot for s in tape.outputs)
    )


def _wrap(like: Array, data) -> Array:
    """An evaluated array like ``like`` (shape, dtype, stream) over ``data``."""
    a = Array.__new__(Array)
    a._shape, a._dtype, a._stream = like._shape, like._dtype, like._stream
    a._prim, a._inputs, a._siblings, a._pos = None, (), None, 0
    a._data, a._tracer, a._readers = data, False, 0
    return a


class GraphReplay:
    """``device_replay`` hook of a tape on a CUDA stream (see the module docstring)."""

    def __init__(self, tape, stream: cp.cuda.Stream) -> None:
        self.tape = tape
        self.stream = stream
        self.calls = 0
        self.graph = None
        self.failed = False
        self.error: str | None = None  # why recording failed (diagnostics)
        self.lock = threading.Lock()
        self.static_in: list = []
        self.static_out: list = []
        self.outs: list = []  # the recorded outputs: shape, dtype and stream to copy
        self.kept: list = []  # every block allocated while recording

    def __call__(self, inputs: list) -> list:
        if self.failed or not self.lock.acquire(blocking=False):
            return self.tape.replay_data(inputs)
        try:
            if self.graph is None:
                self.calls += 1
                if self.calls < WARM_CALLS:
                    return self.tape.replay_data(inputs)
                if not self._record(inputs):
                    return self.tape.replay_data(inputs)
            return self._launch(inputs)
        finally:
            self.lock.release()

    def _record(self, inputs: list) -> bool:
        if not suitable(self.tape):
            self.failed, self.error = True, "not suitable (shapeless, or an output is an input)"
            return False
        kept = []
        pool = cp.get_default_memory_pool()

        def alloc(size: int):
            mem = pool.malloc(size)
            kept.append(mem)
            return mem

        cs = self.stream
        with cs:
            static = []
            for x in inputs:
                s = cp.empty(x._data.shape, x._data.dtype)
                s[...] = x._data
                static.append(s)
            fake = [_wrap(x, s) for x, s in zip(inputs, static)]
            try:
                with cp.cuda.using_allocator(alloc):
                    cs.begin_capture(mode=_RELAXED)
                    try:
                        outs = self.tape.replay_data(fake)
                    finally:
                        graph = cs.end_capture()
            except Exception as e:  # noqa: BLE001 - a step that cannot be recorded: replay plainly
                self.failed, self.error = True, f"{type(e).__name__}: {e}"
                return False
        self.static_in, self.kept, self.graph = static, kept, graph
        self.outs = outs
        self.static_out = [o._data for o in outs]
        return True

    def _launch(self, inputs: list) -> list:
        for x, s in zip(inputs, self.static_in):
            d = x._data
            if d.shape != s.shape or d.dtype != s.dtype or not d.flags.c_contiguous:
                return self.tape.replay_data(inputs)
        cs = self.stream
        with cs:
            for x, s in zip(inputs, self.static_in):
                if s.nbytes:
                    s.data.copy_from_device_async(x._data.data, s.nbytes, cs)
            self.graph.launch(cs)
            result = []
            for o, so in zip(self.outs, self.static_out):
                r = cp.empty(so.shape, so.dtype)
                if not so.flags.c_contiguous:  # a view the graph wrote: a copy kernel
                    r[...] = so
                elif so.nbytes:
                    r.data.copy_from_device_async(so.data, so.nbytes, cs)
                result.append(_wrap(o, r))
        return result
