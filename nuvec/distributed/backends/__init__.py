"""Distributed backends: communicators that move array data between processes.

- ``singleton``: one process, no library needed (what a script gets when it is not launched);
- ``mpi``: MPI through mpi4py (``python -m nuvec.launch -n 4 script.py``);
- ``nccl``: NCCL between NVIDIA GPUs through CuPy, bootstrapped over MPI.

A new backend subclasses ``base.Communicator`` and is added to ``BACKENDS``; see ``base`` for
the interface.
"""

from .base import Communicator  # noqa: F401
from .singleton import SingletonCommunicator  # noqa: F401

#: the backend names ``nv.distributed.init(backend=...)`` accepts ("any" picks one)
BACKENDS = ("mpi", "nccl")
