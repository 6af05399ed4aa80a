"""How the collectives (``nuvec.primitives.distributed``) run: the group's communicator
moves NumPy data. Outputs come from the buffer cache, so a training loop's reductions reuse
their memory instead of faulting fresh pages in every step.

The GPU implementations (``nuvec.backends.cuda.distributed``) call these for communicators
that move host memory (MPI), staging the data through the host.
"""

from __future__ import annotations

import numpy as np

from ...primitives.distributed import AllGather, AllReduce, Recv, Send, SumScatter
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


@registry.register(SumScatter)
def _sum_scatter(prim, ins, node):
    x = _contiguous(ins[0])
    n = prim.group.size()
    out = _allocator.empty((x.shape[0] // n,) + x.shape[1:], x.dtype)
    prim.group._comm.reduce_scatter(x, out)
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
