"""Running the graph behind some arrays: order the nodes they need and run each one with its
backend's implementation, releasing intermediates as their last reader runs. ``eval``
(``evaluate.py``) finds the arrays in trees; an array's host access calls ``evaluate`` here.

    evaluate([a, b])      # a and b computed (and what they need)
"""

from __future__ import annotations

from ..backends.registry import node_runner

try:
    from ._graph import run_nodes, topo_order
except ImportError:  # pragma: no cover - the extension is built by `make install`
    raise ImportError("nuvec's Cython extensions are not built: run `make install`") from None


class TraceEvaluationError(RuntimeError):
    """An array being traced (by nv.compile) has no value yet, so it cannot be evaluated."""


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


def evaluate(arrays: list) -> None:
    """Computes every array in ``arrays`` (a list of Arrays) and what they need."""
    run_nodes(topo_order(arrays), _impls, _lookup, _placeholder_error)
    for a in arrays:
        if a._data is None:
            _placeholder_error()
