"""The MPI communicator, through mpi4py (``pip install -e .[mpi]`` with Open MPI or MPICH
from the system's packages). mpi4py is imported only when an MPI group is made.

Reductions run on the arrays' own dtypes: MPI's predefined operations where MPI has the type,
and, for float16 and bfloat16 (which Open MPI lacks), operations of our own over 16-bit
words that add (or compare) in that dtype as NumPy does. A boolean sum is a logical or (as
casting the integer sum to bool), max is or, min is and. Gathers, sends and receives move
bytes. Messages larger than ``CHUNK`` bytes are cut into pieces, as MPI counts are C ints.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .base import Communicator

CHUNK = 1 << 30  # bytes per MPI call (well under the 2**31 - 1 count limit)


def launched_size() -> int | None:
    """The number of processes an MPI launcher (mpirun, mpiexec, srun) started, read from
    the environment it sets; None when this process was not started by one."""
    for var in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"):
        v = os.environ.get(var)
        if v and v.isdigit():
            return int(v)
    if "PMIX_RANK" in os.environ:
        return -1  # a PMIx launch whose size is not in the environment
    return None


def import_mpi():
    """mpi4py's MPI module (initialises MPI on first import); ImportError when missing."""
    from mpi4py import MPI  # noqa: PLC0415  (lazy: only distributed runs need MPI)

    return MPI


# NumPy dtype -> name of MPI's predefined datatype
_NATIVE = {
    np.dtype(t): n
    for t, n in (
        (np.int8, "INT8_T"),
        (np.int16, "INT16_T"),
        (np.int32, "INT32_T"),
        (np.int64, "INT64_T"),
        (np.uint8, "UINT8_T"),
        (np.uint16, "UINT16_T"),
        (np.uint32, "UINT32_T"),
        (np.uint64, "UINT64_T"),
        (np.float32, "FLOAT"),
        (np.float64, "DOUBLE"),
        (np.complex64, "C_FLOAT_COMPLEX"),
        (np.complex128, "C_DOUBLE_COMPLEX"),
    )
}
_custom_ops: dict = {}


def _custom_op(MPI, dtype: np.dtype, op: str):
    """An MPI operation reducing 16-bit words as ``dtype`` values (float16, bfloat16)."""
    key = (dtype.str, dtype.name, op)
    mop = _custom_ops.get(key)
    if mop is None:
        ufunc = {"sum": np.add, "max": np.maximum, "min": np.minimum}[op]

        def reduce(inbuf, inoutbuf, datatype, dtype=dtype, ufunc=ufunc):
            a = np.frombuffer(inbuf, dtype=dtype)
            b = np.frombuffer(inoutbuf, dtype=dtype)
            ufunc(a, b, out=b)

        mop = _custom_ops[key] = MPI.Op.Create(reduce, commute=True)
    return mop


def _bytes(a: np.ndarray) -> np.ndarray:
    """The bytes of a C-contiguous array, as a flat uint8 view."""
    return a.reshape(-1).view(np.uint8)


class MPICommunicator(Communicator):
    name = "mpi"

    def __init__(self, comm: Any = None) -> None:
        super().__init__()
        self.MPI = import_mpi()
        self.comm = comm if comm is not None else self.MPI.COMM_WORLD
        self._rank = self.comm.Get_rank()
        self._size = self.comm.Get_size()
        self._specs: dict = {}

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    def split(self, color: int, key: int) -> "MPICommunicator":
        return MPICommunicator(self.comm.Split(color, key))

    def _reduction(self, dtype: np.dtype, op: str) -> tuple:
        """(MPI op, MPI datatype, NumPy view dtype or None) reducing ``dtype`` arrays."""
        key = (dtype, op)
        spec = self._specs.get(key)
        if spec is None:
            MPI = self.MPI
            if dtype == np.bool_:
                spec = (MPI.LAND if op == "min" else MPI.LOR), MPI.C_BOOL, None
            elif dtype in _NATIVE:
                spec = (
                    {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op],
                    getattr(MPI, _NATIVE[dtype]),
                    None,
                )
            elif dtype.itemsize == 2:  # float16, bfloat16
                spec = _custom_op(MPI, dtype, op), MPI.UINT16_T, np.dtype(np.uint16)
            else:
                raise TypeError(f"all_{op}: the MPI backend cannot reduce {dtype} arrays")
            self._specs[key] = spec
        return spec

    def _all_reduce(self, x: np.ndarray, out: np.ndarray, op: str) -> None:
        mop, mtype, view = self._reduction(x.dtype, op)
        xs, o = x.reshape(-1), out.reshape(-1)
        if view is not None:
            xs, o = xs.view(view), o.view(view)
        n = xs.size
        step = max(1, CHUNK // x.dtype.itemsize)
        if n <= step:
            self.comm.Allreduce([xs, mtype], [o, mtype], op=mop)
            return
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            self.comm.Allreduce([xs[lo:hi], mtype], [o[lo:hi], mtype], op=mop)

    def _reduce_scatter(self, x: np.ndarray, out: np.ndarray) -> None:
        mop, mtype, view = self._reduction(x.dtype, "sum")
        o = out.reshape(-1)
        blocks = x.reshape(self._size, o.size)
        if view is not None:
            o, blocks = o.view(view), blocks.view(view)
        step = max(1, CHUNK // (x.dtype.itemsize * self._size))
        if o.size <= step:
            self.comm.Reduce_scatter_block([blocks.reshape(-1), mtype], [o, mtype], op=mop)
            return
        for lo in range(0, o.size, step):  # the same slice of every block, packed together
            hi = min(o.size, lo + step)
            piece = np.ascontiguousarray(blocks[:, lo:hi])
            self.comm.Reduce_scatter_block([piece.reshape(-1), mtype], [o[lo:hi], mtype], op=mop)

    def _all_gather(self, x: np.ndarray, out: np.ndarray) -> None:
        if x.nbytes > CHUNK:
            raise ValueError(
                f"all_gather: {x.nbytes} bytes per process; the MPI backend "
                f"gathers at most {CHUNK} bytes per process in one call"
            )
        MPI = self.MPI
        self.comm.Allgather([_bytes(x), MPI.BYTE], [_bytes(out), MPI.BYTE])

    def _send(self, x: np.ndarray, dst: int) -> None:
        b = _bytes(x)
        for lo in range(0, max(b.size, 1), CHUNK):
            self.comm.Send([b[lo : lo + CHUNK], self.MPI.BYTE], dest=dst, tag=0)

    def _recv(self, out: np.ndarray, src: int) -> None:
        b = _bytes(out)
        for lo in range(0, max(b.size, 1), CHUNK):
            self.comm.Recv([b[lo : lo + CHUNK], self.MPI.BYTE], source=src, tag=0)
