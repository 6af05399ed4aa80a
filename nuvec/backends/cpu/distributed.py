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


@registry.register(AllReduce)
def _all_reduce(prim, ins, node):
    x = _contiguous(ins[0])
    out = _allocator.empty(x.shape, x.dtype)
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
        host = [registry.to_host(d, ins[i]._dtype if i < len(ins) else None)
                for i, d in enumerate(datas)]
        outs = cpu_impl(prim, host, node)
        if type(prim) is Send:
            return [datas[0]]          # the input, still on the device
        if registry.gpu_backend_name() != "cuda":
            raise NotImplementedError(f"{prim.name}: collectives on this GPU backend are not "
                                      "supported yet (use stream=nv.cpu)")
        from ..cuda import runtime
        with runtime.cuda_stream(node._stream):
            return [runtime.upload(o, node._dtype) for o in outs]
    run.__name__ = f"host_staged_{cpu_impl.__name__}"
    return run


for _prim, _impl in ((AllReduce, _all_reduce), (AllGather, _all_gather), (Send, _send),
                     (Recv, _recv)):
    registry.register(_prim, "gpu")(_through_host(_impl))
