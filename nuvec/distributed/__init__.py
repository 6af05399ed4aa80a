"""Distributed communication (MLX's ``mlx.core.distributed``): process groups and collectives
that are nodes of the graph, over MPI.

>>> import nuvec as nv
>>> world = nv.distributed.init()
>>> x = nv.distributed.all_sum(nv.ones((3,)) * (world.rank() + 1))
>>> x.tolist() if world.size() == 1 else None
[1.0, 1.0, 1.0]

Run a script on 4 processes with ``python -m nuvec.launch -n 4 script.py`` (Open MPI or
MPICH, and mpi4py: ``pip install -e .[mpi]``). Not launched, ``init()`` gives a group of one
process and every collective returns its input, so the script runs unchanged.

Collectives are lazy like every operation: evaluating an array runs the communication it
depends on. Every process of a group must evaluate the same collectives in the same order.
Inside ``nv.compile`` they stay collectives: never folded into constants, merged with an
equal one, or fused, so each call of the compiled function communicates.
"""

from ..backends.cpu import distributed as _impl  # noqa: F401  (registers the implementations)
from .average import average_gradients
from .group import Group, init, is_available
from .ops import all_gather, all_max, all_min, all_sum, recv, recv_like, send, sum_scatter

__all__ = [
    "Group",
    "init",
    "is_available",
    "all_sum",
    "all_max",
    "all_min",
    "all_gather",
    "sum_scatter",
    "send",
    "recv",
    "recv_like",
    "average_gradients",
]
