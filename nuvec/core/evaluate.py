"""Evaluation: run the graph behind some arrays, release what is no longer needed.

>>> import nuvec as nv
>>> a = nv.arange(4) * 2
>>> nv.eval(a)
>>> a.tolist()
[0, 2, 4, 6]
"""

from __future__ import annotations

from typing import Any, Iterable

from .. import tree_ext as _ext  # type: ignore[attr-defined]  # a Cython module
from ..backends.registry import node_runner
from .array import Array

try:
    from ._graph import run_nodes, topo_order
except ImportError:  # pragma: no cover - the extension is built by `make install`
    raise ImportError("nuvec's Cython extensions are not built: run `make install`") from None


# the tree module's Cython walk, arrays only (nuvec/tree_ext.pyx)
_ext.arrays_setup(Array)
_arrays = _ext.arrays


class TraceEvaluationError(RuntimeError):
    """An array being traced (by nv.compile) has no value yet, so it cannot be evaluated."""


def _leaves(trees: Iterable[Any], out: list) -> None:
    # left to right, depth first: ``eval(a, b)`` runs a's graph before b's (the order matters
    # to collectives: a send and a receive pair up in the order each process evaluates them);
    # the tree module's Cython walk gives that order (a training loop's eval(loss, state)
    # walks every state array on every step)
    _arrays(trees if type(trees) is tuple else tuple(trees), out)


def _placeholder_error() -> None:
    raise TraceEvaluationError(
        "cannot evaluate an array while it is being traced by nv.compile: the function's "
        "inputs are placeholders without values (do not call eval, item, tolist or print on "
        "traced arrays inside a compiled function)"
    )


_impls: dict = {}


def _lookup(node) -> tuple:
    """``(fn, host_fn, kernel_for, base)`` for ``run_nodes``: an implementation on host data
    may name the element-wise kernel it would call for a node (``kernel_for``) and the class
    of the buffers whose memory that kernel may write over (``donation_base``)."""
    fn = node_runner(node)
    host = getattr(fn, "host_impl", None)
    kernel_for = getattr(host, "kernel_for", None)
    return fn, host, kernel_for, getattr(host, "donation_base", None)


def _computed(arrays: list[Array]) -> bool:
    """Whether every array has its value already (then there is no graph to order)."""
    for a in arrays:
        if a._data is None:
            return False
    return True


def evaluate(arrays: list[Array]) -> None:
    """Computes every array in ``arrays`` (and what they need)."""
    run_nodes(topo_order(arrays), _impls, _lookup, _placeholder_error)
    for a in arrays:
        if a._data is None:
            _placeholder_error()


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
