"""What every transform shares: the tracing depth, tracer copies of inputs, the graph walk
between outputs and inputs, and the release of tracers once a transform is done.

A transform calls the user's function on *tracer* arrays (``Array._tracer``; every array an
op makes from a tracer is one too). Evaluation keeps a tracer's graph (``core/_graph.pyx``),
so a function may evaluate inside a transform and still be differentiated. When the transform
returns, ``release`` recomputes the flag of everything it made, so those arrays detach on
their next evaluation like any other.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from ..core.array import Array
from ..primitives.misc import Copy

_local = threading.local()


def depth() -> int:
    """How many transforms (or compile traces using ``tracing``) are running in this thread."""
    return getattr(_local, "depth", 0)


@contextmanager
def tracing() -> Iterator[None]:
    """Marks a trace in progress (transforms use it; nv.compile may, so that ``is_tracer``
    reports its placeholders too)."""
    _local.depth = depth() + 1
    try:
        yield
    finally:
        _local.depth -= 1


def is_tracer(a) -> bool:
    """Whether ``a`` is an array being traced by a running transform (vjp, jvp, grad, vmap, or a
    trace that entered ``tracing()``): its value is symbolic for that transform.

    >>> import nuvec as nv
    >>> seen = []
    >>> _ = nv.grad(lambda x: (seen.append(is_tracer(x)), x * x)[1])(nv.array(1.0))
    >>> seen, is_tracer(nv.array(1.0))
    ([True], False)
    """
    return isinstance(a, Array) and a._tracer and depth() > 0


def tracer_copy(x: Array) -> Array:
    """A tracer standing for ``x`` (distinct from ``x``, so that the walk stops at it).

    An evaluated non-tracer becomes a leaf sharing the data; anything else (lazy, or an outer
    transform's tracer) becomes a Copy node, so the outer graph stays connected.
    """
    if x._data is not None and not x._tracer:
        c = Array.constant(x._data, x._stream, x._dtype)
    else:
        c = Array.make(Copy(), [x], x._stream)
        c._data = x._data  # an evaluated input needs no evaluation
    c._tracer = True
    return c


def _transform_inputs(node: Array) -> tuple:
    """The inputs a transform sees (a custom function hides its traced body)."""
    n = getattr(node._prim, "transform_inputs", None)
    ins = node._inputs
    return ins if n is None else ins[:n]


def active_order(roots: Sequence[Array], inputs: Sequence[Array]) -> tuple[list[Array], set]:
    """The nodes between ``roots`` and ``inputs``, inputs first: one array per primitive
    application (siblings appear once), only those that depend on an input. Also returns the
    ids of every array that depends on an input (the inputs included).

    Iterative (deep chains need no recursion); it descends only through tracers, since
    nothing else can depend on a tracer input.
    """
    active = {id(x) for x in inputs}
    seen = set(active)
    order: list[Array] = []
    for r in roots:
        if id(r) in seen or not r._tracer or r._prim is None:
            continue
        _mark(r, seen)
        stack: list[list[Any]] = [[r, _transform_inputs(r), 0]]  # node, inputs, next input
        while stack:
            top = stack[-1]
            ins = top[1]
            i = top[2]
            n = len(ins)
            pushed = False
            while i < n:
                x = ins[i]
                i += 1
                if x._tracer and x._prim is not None and id(x) not in seen:
                    top[2] = i
                    _mark(x, seen)
                    stack.append([x, _transform_inputs(x), 0])
                    pushed = True
                    break
            if pushed:
                continue
            stack.pop()
            node = top[0]
            for x in ins:
                if id(x) in active:
                    for s in node.siblings:
                        active.add(id(s))
                    order.append(node)
                    break
    return order, active


def _mark(a: Array, seen: set) -> None:
    sib = a._siblings
    if sib is None:
        seen.add(id(a))
    else:
        for s in sib:
            seen.add(id(s))


def release(roots: Sequence[Array], copies: Sequence[Array]) -> None:
    """Ends the tracer status that ``copies`` gave to the graph under ``roots``: each tracer's
    flag is recomputed from its inputs (an outer transform's tracers keep theirs), and
    evaluated arrays that are no longer tracers detach from their inputs."""
    mine = {id(c) for c in copies}
    for c in copies:
        if c._prim is None:
            c._tracer = False
    seen: set = set()
    for r in roots:
        if not isinstance(r, Array) or not r._tracer or id(r) in seen:
            continue
        _mark(r, seen)
        stack: list[list[Any]] = [[r, r._inputs, 0]]  # node, inputs, next input
        while stack:
            top = stack[-1]
            ins = top[1]
            i = top[2]
            pushed = False
            while i < len(ins):
                x = ins[i]
                i += 1
                if x._tracer and id(x) not in seen and (x._prim is not None or id(x) in mine):
                    top[2] = i
                    _mark(x, seen)
                    stack.append([x, x._inputs, 0])
                    pushed = True
                    break
            if pushed:
                continue
            stack.pop()
            node = top[0]
            if node._prim is None:
                if id(node) in mine:
                    node._tracer = False
                continue
            if any(x._tracer for x in node._inputs):
                continue
            for s in node.siblings:
                s._tracer = False
            if node._data is not None:
                for s in node.siblings:
                    if s._data is not None:
                        s.detach()
