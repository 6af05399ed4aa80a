"""The collectives on the GPU. A group whose communicator moves device memory (NCCL) gets
the CuPy buffers themselves, on the evaluating node's CUDA stream; any other (MPI) gets the
data staged through the host: copied down, communicated by the CPU implementation, uploaded.
"""

from __future__ import annotations

from ...primitives.distributed import AllGather, AllReduce, Recv, Send, SumScatter
from ..cpu import distributed as host
from . import runtime
from .runtime import gpu


def _staged(cpu_impl, prim, ins, node) -> list:
    datas = [runtime.to_host(d, node._inputs[i]._dtype) for i, d in enumerate(ins)]
    outs = cpu_impl(prim, datas, node)
    if type(prim) is Send:
        return [ins[0]]  # the input, still on the device
    return [runtime.upload(o, node._dtype) for o in outs]


def _contiguous(x):
    return x if x.flags.c_contiguous else runtime.cp.ascontiguousarray(x)


@gpu(AllReduce)
def _all_reduce(prim, ins, node):
    comm = prim.group._comm
    if not comm.device_memory:
        return _staged(host._all_reduce, prim, ins, node)
    x = _contiguous(ins[0])
    out = runtime.empty(x.shape, node._dtype)
    comm.all_reduce(x, out, prim.op, dtype=node._dtype)
    return [out]


@gpu(SumScatter)
def _sum_scatter(prim, ins, node):
    comm = prim.group._comm
    if not comm.device_memory:
        return _staged(host._sum_scatter, prim, ins, node)
    x = _contiguous(ins[0])
    out = runtime.empty(node._shape, node._dtype)
    comm.reduce_scatter(x, out, dtype=node._dtype)
    return [out]


@gpu(AllGather)
def _all_gather(prim, ins, node):
    comm = prim.group._comm
    if not comm.device_memory:
        return _staged(host._all_gather, prim, ins, node)
    x = _contiguous(ins[0])
    out = runtime.empty(node._shape, node._dtype)
    comm.all_gather(x, out)
    return [out]


@gpu(Send)
def _send(prim, ins, node):
    comm = prim.group._comm
    if not comm.device_memory:
        return _staged(host._send, prim, ins, node)
    comm.send(_contiguous(ins[0]), prim.dst)
    return [ins[0]]


@gpu(Recv)
def _recv(prim, ins, node):
    comm = prim.group._comm
    if not comm.device_memory:
        return _staged(host._recv, prim, ins, node)
    out = runtime.empty(prim.shape, prim.dtype)
    comm.recv(out, prim.src)
    return [out]
