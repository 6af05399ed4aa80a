"""``nv.eval`` and ``nv.async_eval``: the arrays in trees, computed by ``run.evaluate``.

>>> import nuvec as nv
>>> a = nv.arange(4) * 2
>>> nv.eval(a)
>>> a.tolist()
[0, 2, 4, 6]
"""

from __future__ import annotations

from typing import Any, Iterable

from .. import tree_ext as _ext  # type: ignore[attr-defined]  # a Cython module
from .array import Array
from .run import TraceEvaluationError as TraceEvaluationError  # re-exported
from .run import evaluate

# the tree module's Cython walk, arrays only (nuvec/tree_ext.pyx)
_ext.arrays_setup(Array)
_arrays = _ext.arrays


def _leaves(trees: Iterable[Any], out: list) -> None:
    # left to right, depth first: ``eval(a, b)`` runs a's graph before b's (the order matters
    # to collectives: a send and a receive pair up in the order each process evaluates them);
    # the tree module's Cython walk gives that order (a training loop's eval(loss, state)
    # walks every state array on every step)
    _arrays(trees if type(trees) is tuple else tuple(trees), out)


def _computed(arrays: list[Array]) -> bool:
    """Whether every array has its value already (then there is no graph to order)."""
    for a in arrays:
        if a._data is None:
            return False
    return True


def eval(*trees: Any) -> None:
    """Evaluates the arrays in ``trees`` (arrays, or lists/tuples/dicts of them).

    >>> import nuvec as nv
    >>> x = nv.ones((2, 2)); y = x + 1
    >>> nv.eval(y, {"x": x})
    """
    if len(trees) == 1 and type(trees[0]) is Array:
        if trees[0]._data is None:  # one array: the walk of its tree is the array itself
            evaluate([trees[0]])
        return  # else already computed (a compiled call's outputs are): nothing to walk
    arrays: list[Array] = []
    _leaves(trees, arrays)
    if arrays and not _computed(arrays):
        evaluate(arrays)


def async_eval(*trees: Any) -> None:
    """Starts evaluating ``trees``. On the CPU this evaluates now; a GPU backend returns as
    soon as the work is queued. Arrays that a transform is tracing are refused (as MLX:
    ``eval`` is the way to compute them inside grad or vmap)."""
    arrays: list[Array] = []
    _leaves(trees, arrays)
    if any(a._tracer for a in arrays):
        raise ValueError(
            "async_eval: cannot evaluate arrays that a transform (grad, vjp, jvp, vmap) is "
            "tracing; use nv.eval inside the function"
        )
    if arrays and not _computed(arrays):
        evaluate(arrays)
