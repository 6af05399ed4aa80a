"""The NCCL communicator: collectives between NVIDIA GPUs on device memory, through CuPy's
NCCL bindings (``cupy.cuda.nccl``). One process per GPU.

The communicator is bootstrapped over MPI when the process was started by a launcher
(``python -m nuvec.launch -n 4 --backend nccl script.py``): rank 0 makes NCCL's unique id and
MPI broadcasts it; each process takes the GPU of its rank on this host. A process that was not
launched gets a communicator of one rank (no MPI needed).

Buffers are CuPy arrays on the GPU, and the collectives are queued on the CUDA stream current
when they are called (the stream of the array being evaluated). NumPy buffers (collectives of
arrays on the CPU stream) are copied to the GPU and back. NCCL reduces in the arrays' own
dtypes; for those it lacks: booleans reduce as bytes (sum is a logical or, as max), int16 and
uint16 reduce as int32 and wrap back (exact, as integer sums wrap), complex numbers sum as
pairs of reals. Gathers, sends and receives move bytes.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ...core import dtypes as dt
from .base import Communicator

# nuvec dtype name -> NCCL data type name (cupy.cuda.nccl.NCCL_<name>), for reductions
_NATIVE = {
    "int8": "INT8",
    "uint8": "UINT8",
    "int32": "INT32",
    "uint32": "UINT32",
    "int64": "INT64",
    "uint64": "UINT64",
    "float16": "FLOAT16",
    "float32": "FLOAT32",
    "float64": "FLOAT64",
    "bfloat16": "BFLOAT16",
}
NCCL_BFLOAT16 = 9  # ncclBfloat16 in nccl.h (NCCL >= 2.10), which older CuPy does not name


def reduction_plan(dtype: dt.Dtype) -> tuple[str, str | None, int]:
    """How NCCL reduces arrays of ``dtype``: (NCCL type name, the dtype to compute in when it
    differs from the storage's (None: reduce the stored data as it is), elements per value).

    >>> from nuvec.core import dtypes as dt
    >>> reduction_plan(dt.int16), reduction_plan(dt.complex64), reduction_plan(dt.bool_)
    (('INT32', 'int32', 1), ('FLOAT32', None, 2), ('UINT8', None, 1))
    """
    name = dtype.name
    if name in _NATIVE:
        return _NATIVE[name], None, 1
    if name == "bool":
        return "UINT8", None, 1
    if name in ("int16", "uint16"):
        return "INT32", "int32", 1
    if name == "complex64":
        return "FLOAT32", None, 2
    if name == "complex128":
        return "FLOAT64", None, 2
    raise TypeError(f"the NCCL backend cannot reduce {name} arrays")


def unavailable_reason() -> str | None:
    """Why NCCL cannot be used in this process (None when it can)."""
    try:
        import cupy
        from cupy.cuda import nccl
    except Exception as e:  # noqa: BLE001 - CuPy's import can fail in many ways
        return f"CuPy with NCCL is not importable ({type(e).__name__}: {e})"
    if not nccl.available:
        return "CuPy was built without NCCL (install a CuPy wheel, e.g. cupy-cuda13x)"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001
        return f"no CUDA device ({e})"
    if n == 0:
        return "no CUDA device"
    return None


def own_gpu_reason(rank: int) -> str | None:
    """Why process ``rank`` has no GPU of its own on this host (None when it has): NCCL needs
    one GPU per process."""
    import cupy

    local, ndev = _local_rank(rank), cupy.cuda.runtime.getDeviceCount()
    if local >= ndev:
        return (
            f"this host has {ndev} GPU(s) and this is its process {local + 1}: NCCL needs one "
            "GPU per process (start at most that many processes per host)"
        )
    return None


def _local_rank(rank: int) -> int:
    """This process's index among the processes of its host (the launcher says it)."""
    for var in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK"):
        v = os.environ.get(var)
        if v and v.isdigit():
            return int(v)
    return rank


class NCCLCommunicator(Communicator):
    """NCCL between the GPUs of a group; ``mpi_comm`` (an mpi4py communicator) bootstraps it,
    None for a group of one process."""

    name = "nccl"
    device_memory = True  # takes CuPy buffers: the GPU implementations pass device data

    def __init__(self, mpi_comm: Any = None) -> None:
        super().__init__()
        import cupy as cp
        from cupy.cuda import nccl

        self.cp, self.nccl = cp, nccl
        self.mpi_comm = mpi_comm
        if mpi_comm is None:
            self._rank, self._size = 0, 1
            uid = nccl.get_unique_id()
        else:
            self._rank, self._size = mpi_comm.Get_rank(), mpi_comm.Get_size()
            uid = mpi_comm.bcast(nccl.get_unique_id() if self._rank == 0 else None, root=0)
        self.device = _local_rank(self._rank)
        with cp.cuda.Device(self.device):
            self.comm = nccl.NcclCommunicator(self._size, uid, self._rank)
        self._ops = {"sum": nccl.NCCL_SUM, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN}

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    def split(self, color: int, key: int) -> "NCCLCommunicator":
        if self.mpi_comm is None:
            return NCCLCommunicator(None)
        return NCCLCommunicator(self.mpi_comm.Split(color, key))

    # -- helpers ----------------------------------------------------------------------------
    def _type(self, name: str) -> int:
        if name == "BFLOAT16":
            return getattr(self.nccl, "NCCL_BFLOAT16", NCCL_BFLOAT16)
        return getattr(self.nccl, f"NCCL_{name}")

    def _stream(self) -> int:
        return self.cp.cuda.get_current_stream().ptr

    def _on_device(self, fn, x, out) -> None:
        """Runs ``fn(x, out)`` on device buffers; NumPy buffers go up and come back."""
        cp = self.cp
        if isinstance(x, np.ndarray) or isinstance(out, np.ndarray):
            with cp.cuda.Device(self.device):
                dx = cp.asarray(np.ascontiguousarray(x).view(_bits(x.dtype)))
                dout = cp.empty(out.shape, _bits(out.dtype))
                fn(dx, dout)
                out.view(_bits(out.dtype))[...] = dout.get()
            return
        fn(x, out)

    @staticmethod
    def _nv_dtype(x, dtype: dt.Dtype | None) -> dt.Dtype:
        return dtype if dtype is not None else dt.to_dtype(np.dtype(x.dtype))

    # -- data movement -----------------------------------------------------------------------
    def all_reduce(self, x: Any, out: Any, op: str, dtype: dt.Dtype | None = None) -> None:
        """``dtype``: the arrays' nuvec dtype where the buffers' does not say it (bfloat16 is
        stored as uint16 on the GPU)."""
        self.calls[f"all_{op}"] += 1
        d = self._nv_dtype(x, dtype)
        self._on_device(lambda a, b: self._reduce("allReduce", a, b, op, d), x, out)

    def reduce_scatter(self, x: Any, out: Any, dtype: dt.Dtype | None = None) -> None:
        self.calls["sum_scatter"] += 1
        d = self._nv_dtype(x, dtype)
        self._on_device(lambda a, b: self._reduce("reduceScatter", a, b, "sum", d), x, out)

    def _reduce(self, what: str, x, out, op: str, d: dt.Dtype) -> None:
        tname, compute, per = reduction_plan(d)
        if d.name == "bool" and op == "sum":
            op = "max"  # a logical or
        xs, o = x.reshape(-1), out.reshape(-1)
        if compute is not None:  # int16/uint16: in int32, wrapped back
            wide_x, wide_o = xs.astype(compute), self.cp.empty(o.size, compute)
            self._reduce_raw(what, wide_x, wide_o, tname, op, 1)
            o[...] = wide_o.astype(o.dtype)
            return
        self._reduce_raw(what, xs, o, tname, op, per)

    def _reduce_raw(self, what: str, xs, o, tname: str, op: str, per: int) -> None:
        count = o.size * per  # allReduce: elements; reduceScatter: elements received
        fn = getattr(self.comm, what)
        fn(xs.data.ptr, o.data.ptr, count, self._type(tname), self._ops[op], self._stream())

    def _all_gather(self, x, out) -> None:
        def gather(a, b):
            nbytes = a.size * a.dtype.itemsize
            self.comm.allGather(a.data.ptr, b.data.ptr, nbytes, self.nccl.NCCL_INT8, self._stream())

        self._on_device(gather, x, out)

    def _send(self, x, dst: int) -> None:
        if isinstance(x, np.ndarray):
            with self.cp.cuda.Device(self.device):
                x = self.cp.asarray(np.ascontiguousarray(x).view(_bits(x.dtype)))
                self._send_device(x, dst)
                self.cp.cuda.get_current_stream().synchronize()  # x is freed after this
            return
        self._send_device(x, dst)

    def _send_device(self, x, dst: int) -> None:
        nbytes = x.size * x.dtype.itemsize
        self.comm.send(x.data.ptr, nbytes, self.nccl.NCCL_INT8, dst, self._stream())

    def _recv(self, out, src: int) -> None:
        def receive(_, b):
            nbytes = b.size * b.dtype.itemsize
            self.comm.recv(b.data.ptr, nbytes, self.nccl.NCCL_INT8, src, self._stream())

        self._on_device(receive, out, out)


def _bits(d: np.dtype) -> np.dtype:
    """A dtype CuPy holds with the same bytes (ml_dtypes' bfloat16 and fp8 as unsigned ints)."""
    d = np.dtype(d)
    if d.kind == "V" or d.name in ("bfloat16",) or d.type.__module__.startswith("ml_dtypes"):
        return np.dtype(f"u{d.itemsize}")
    return d
