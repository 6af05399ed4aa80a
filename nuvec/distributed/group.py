"""Process groups and ``init`` (MLX's ``mlx.core.distributed.Group`` / ``init``).

>>> import nuvec as nv
>>> world = nv.distributed.init()       # not launched by mpirun: a group of one process
>>> world.rank(), world.size()
(0, 1)

``init`` is cheap to call again: it returns the same world group. Under a launcher
(``python -m nuvec.launch -n 4 script.py``) it joins the MPI world instead, or NCCL's between
the GPUs (``init(backend="nccl")``).
"""

from __future__ import annotations

import numbers
import os
import threading
import warnings
from typing import Any

from .backends import BACKENDS
from .backends.base import Communicator
from .backends.singleton import SingletonCommunicator


class Group:
    """A group of processes that communicate: ``rank()``, ``size()``, ``split(color, key)``.

    Made by ``init`` (the world) or ``split``; the collectives take one as ``group=``.
    """

    __slots__ = ("_comm", "__weakref__")

    def __init__(self, comm: Communicator) -> None:
        if not isinstance(comm, Communicator):
            raise TypeError(f"Group: expected a Communicator, got {type(comm).__name__}")
        self._comm = comm

    def rank(self) -> int:
        """This process's index in the group, from 0."""
        return self._comm.rank()

    def size(self) -> int:
        """The number of processes in the group."""
        return self._comm.size()

    def split(self, color: int, key: int = -1) -> "Group":
        """Splits the group: processes that pass the same ``color`` form a new group, ranked
        by ``key`` (their rank here when -1). Every process of the group must call it.

        >>> import nuvec as nv
        >>> nv.distributed.init().split(0).size()
        1
        """
        for what, v in (("color", color), ("key", key)):
            if not isinstance(v, numbers.Integral) or isinstance(v, bool):
                raise TypeError(f"Group.split: {what} must be an int, got {type(v).__name__}")
        if color < 0:
            raise ValueError(f"Group.split: color must be >= 0, got {color}")
        if key < -1:
            raise ValueError(f"Group.split: key must be >= 0 (or -1 for this rank), got {key}")
        k = self.rank() if key == -1 else int(key)
        return Group(self._comm.split(int(color), k))

    @property
    def backend(self) -> str:
        """The backend's name ("mpi", "nccl", "singleton")."""
        return self._comm.name

    def __repr__(self) -> str:
        return f"Group(rank={self.rank()}, size={self.size()}, backend={self.backend!r})"


_lock = threading.Lock()
_world: dict[str, Group] = {}


def _mpi_group(strict: bool, launched: int | None) -> Group | None:
    from .backends import mpi

    try:
        return Group(mpi.MPICommunicator())
    except ImportError as e:
        msg = (
            f"nv.distributed.init: the MPI backend needs mpi4py ({e}); install it with "
            "`pip install mpi4py` (or `pip install -e .[mpi]`) and an MPI library such as "
            "Open MPI (`apt-get install openmpi-bin libopenmpi-dev`)"
        )
        if strict:
            raise RuntimeError(msg) from None
        if launched is not None:
            warnings.warn(
                f"{msg}. This process was started by an MPI launcher but runs alone "
                "(a group of one)",
                RuntimeWarning,
                stacklevel=4,
            )
        return None


def _nccl_group(strict: bool, launched: int | None) -> Group | None:
    """The NCCL world: over MPI's world when launched, else one rank; None (or a
    RuntimeError when ``strict``) when NCCL cannot be used, with a warning saying why."""
    from .backends import nccl

    reason = nccl.unavailable_reason()
    mpi_world = None
    if reason is None and launched is not None:
        mpi_world = _world.get("mpi") or _mpi_group(strict, launched)
        if mpi_world is None:
            reason = "its bootstrap needs MPI (mpi4py) in a launched run"
        else:
            _world["mpi"] = mpi_world
            reason = nccl.own_gpu_reason(mpi_world.rank())
    if reason is not None:
        msg = f"nv.distributed.init: the NCCL backend cannot be used: {reason}"
        if strict:
            raise RuntimeError(msg)
        warnings.warn(f"{msg}; this process runs alone (a group of one)", RuntimeWarning, 3)
        return None
    mpi: Any = mpi_world._comm if mpi_world else None  # the MPI communicator
    return Group(nccl.NCCLCommunicator(mpi.comm if mpi_world else None))


def _every_rank_has_nccl(mpi_world: Group) -> bool:
    """Whether every process can use NCCL with a GPU of its own (NCCL refuses two ranks on
    one GPU)."""
    from .backends import nccl

    ok = nccl.unavailable_reason() is None and nccl.own_gpu_reason(mpi_world.rank()) is None
    mpi: Any = mpi_world._comm  # the MPI communicator
    return bool(mpi.comm.allreduce(int(ok), op=mpi.MPI.MIN))


def init(strict: bool = False, backend: str = "any") -> Group:
    """The world group: every process of this run.

    ``backend``:

    - "mpi": MPI through mpi4py;
    - "nccl": NCCL between NVIDIA GPUs, one process per GPU (bootstrapped over MPI when
      launched; a process that was not launched gets a group of one GPU);
    - "any": what the launcher asked for (``python -m nuvec.launch --backend nccl`` sets
      ``NUVEC_DISTRIBUTED_BACKEND``), else, when this process was started by an MPI launcher
      (``python -m nuvec.launch``, ``mpirun``), NCCL if every process has a CUDA GPU and MPI
      if not; a process that was not launched gets a group of one process, with no library
      needed.

    When the backend cannot be used, ``strict=False`` gives a group of one process (with a
    warning where the backend was asked for by name or by a launcher) and ``strict=True``
    raises a RuntimeError that says why.

    >>> import nuvec as nv
    >>> nv.distributed.init().size()
    1
    """
    if not isinstance(backend, str) or backend not in ("any",) + BACKENDS:
        raise ValueError(
            f"nv.distributed.init: backend must be 'any' or one of {BACKENDS}, got {backend!r}"
        )
    from .backends.mpi import launched_size

    launched = launched_size()
    if backend == "any":
        asked = os.environ.get("NUVEC_DISTRIBUTED_BACKEND", "any")
        backend = asked if asked in BACKENDS else "any"
    with _lock:
        key = f"{backend}:{bool(strict)}"
        g = _world.get(key)
        if g is not None:
            return g
        g = _world.get("nccl") if backend == "nccl" else None
        if g is None and backend == "nccl":
            g = _nccl_group(strict, launched)
        if g is None and backend != "nccl":
            g = _world.get("mpi")  # MPI initialises once per process: share its world
            if g is None and (backend == "mpi" or launched is not None or strict):
                g = _mpi_group(strict, launched)
            if g is not None:
                _world["mpi"] = g
                if backend == "any" and g.size() > 1 and _every_rank_has_nccl(g):
                    g = _world.get("nccl") or _nccl_group(strict, launched)
        if g is not None and g.backend == "nccl":
            _world["nccl"] = g
        if g is None:
            if strict:
                raise RuntimeError(
                    "nv.distributed.init(strict=True): no distributed backend is available"
                )
            g = _world.setdefault("singleton", Group(SingletonCommunicator()))
        _world[key] = g
        return g


def is_available() -> bool:
    """Whether a communication backend (MPI through mpi4py, or NCCL through CuPy with a CUDA
    GPU) can be used here.

    >>> import nuvec as nv
    >>> isinstance(nv.distributed.is_available(), bool)
    True
    """
    import importlib.util

    if importlib.util.find_spec("mpi4py") is not None:
        return True
    if importlib.util.find_spec("cupy") is None:
        return False
    from .backends import nccl

    return nccl.unavailable_reason() is None


_default: list = [None]  # the world group the collectives use when given none


def resolve_group(group, name: str) -> Group:
    """``group``, or the world group when None (as MLX); a TypeError naming ``name`` else."""
    if group is None:
        g = _default[0]
        if g is None:
            g = _default[0] = init()
        return g
    if not isinstance(group, Group):
        raise TypeError(f"{name}: group must be a nv.distributed.Group, got {type(group).__name__}")
    return group
