"""Whether a shapeless compile trace is running in this thread, and where its nodes came from.

Under a shapeless trace (``nv.compile(f, shapeless=True)``) the operations record nodes that
re-infer their shapes from their inputs at every replay (a reshape keeps its -1, a slice its
Python bounds, ``zeros_like`` its argument, ``mean`` its element count as a node), and they
never skip a node because it is an identity at the traced shape. They do so only for arrays
that depend on the trace's inputs (tracers); constants keep the eager forms.

    with shapeless.tracing():
        out = fun(*placeholders)
    if shapeless.relative(x): ...          # record a shape-relative node for x
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

_local = threading.local()
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def active() -> bool:
    """Whether this thread runs a shapeless trace."""
    return getattr(_local, "on", False)


def relative(x) -> bool:
    """Whether an operation on ``x`` must record a shape-relative node: a shapeless trace
    runs and ``x`` depends on its inputs."""
    return x._tracer and getattr(_local, "on", False)


@contextmanager
def tracing(on: bool = True) -> Iterator[dict]:
    """Marks a shapeless trace (``on``) in this thread; yields the origins of the nodes made
    with a traced size (``{id(array): "file:line"}``, see ``note``)."""
    saved = getattr(_local, "on", False), getattr(_local, "origins", None)
    _local.on, _local.origins = on, {}
    try:
        yield _local.origins
    finally:
        _local.on, _local.origins = saved


def note(a) -> None:
    """Records the user's line that made ``a`` (a node whose parameters hold a traced size),
    so that the shapeless refusal can name it."""
    if not getattr(_local, "on", False):
        return
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
        f = f.f_back
    if f is not None:
        _local.origins[id(a)] = f"{f.f_code.co_filename}:{f.f_lineno}"
