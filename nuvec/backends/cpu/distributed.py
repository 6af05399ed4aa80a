"""How the collectives (``nuvec.primitives.distributed``) run: the group's communicator
moves NumPy data. Outputs come from the buffer cache, so a training loop's reductions reuse
their memory instead of faulting fresh pages in every step.

A collective on a GPU stream runs here too, through the host (the array is copied down, sent,
and the result uploaded again); a backend that moves device memory itself (NCCL) would
register its own GPU implementations in place of these.
"""

from __future__ import annotations

import numpy as np

from ...primitives.distributed import AllGather, AllReduce, Recv, Send
from .. import registry
from . import _allocator


def _contiguous(x: np.ndarray) -> np.ndarray:
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


PAGE = 4096
SKEW = 1024  # bytes between the input's and the output's offsets in their pages
SKEW_MIN = 2 << 20  # from this size on the buffer cache aligns buffers to 2 MiB


def _reduction_output(x: np.ndarray) -> np.ndarray:
    """An output for reducing ``x``: from the buffer cache and, for large arrays, placed
    ``SKEW`` bytes off ``x``'s offset within a page. Cached buffers of 2 MiB and more all
    start on a 2 MiB boundary, and a reduction loop whose input and output sit at the same
    page offset stalls on 4K aliasing (measured: MPI's Allreduce of 64 MB 20-40% slower;
    below 2 MiB the skew did not help)."""
    if x.nbytes < SKEW_MIN:
        return _allocator.empty(x.shape, x.dtype)
    raw = _allocator.empty((x.nbytes + PAGE,), np.uint8)
    off = (x.ctypes.data + SKEW - raw.ctypes.data) % PAGE
    off -= off % x.dtype.itemsize
    return raw[off : off + x.nbytes].view(x.dtype).reshape(x.shape)


@registry.register(AllReduce)
def _all_reduce(prim, ins, node):
    x = _contiguous(ins[0])
    out = _reduction_output(x)
    prim.group._comm.all_reduce(x, out, prim.op)
    return [out]


@registry.register(AllGather)
def _all_gather(prim, ins, node):
    x = _contiguous(ins[0])
    n = prim.group.size()
    shape = (n,) if x.ndim == 0 else (x.shape[0] * n,) + x.shape[1:]
    out = _allocator.empty(shape, x.dtype)
    prim.group._comm.all_gather(x, out)
    return [out]


@registry.register(Send)
def _send(prim, ins, node):
    prim.group._comm.send(_contiguous(ins[0]), prim.dst)
    return [ins[0]]


@registry.register(Recv)
def _recv(prim, ins, node):
    out = _allocator.empty(prim.shape, prim.dtype.np)
    prim.group._comm.recv(out, prim.src)
    return [out]


def _through_host(cpu_impl):
    """``cpu_impl`` for GPU data: inputs copied to the host, outputs uploaded back."""

    def run(prim, datas, node):
        ins = node._inputs
        host = [
            registry.to_host(d, ins[i]._dtype if i < len(ins) else None)
            for i, d in enumerate(datas)
        ]
        outs = cpu_impl(prim, host, node)
        if type(prim) is Send:
            return [datas[0]]  # the input, still on the device
        if registry.gpu_backend_name() != "cuda":
            raise NotImplementedError(
                f"{prim.name}: collectives on this GPU backend are not "
                "supported yet (use stream=nv.cpu)"
            )
        from ..cuda import runtime

        with runtime.cuda_stream(node._stream):
            return [runtime.upload(o, node._dtype) for o in outs]

    run.__name__ = f"host_staged_{cpu_impl.__name__}"
    return run


for _prim, _impl in (
    (AllReduce, _all_reduce),
    (AllGather, _all_gather),
    (Send, _send),
    (Recv, _recv),
):
    registry.register(_prim, "gpu")(_through_host(_impl))
