"""nv.compile: trace a function once per signature, simplify, fuse, cache and replay.

>>> import nuvec as nv
>>> f = nv.compile(lambda x, y: nv.exp(x) * y + 1)
>>> f(nv.zeros((2,)), nv.ones((2,))).tolist()
[2.0, 2.0]
>>> f.stats()["traces"]
1

Pipeline (see ARCHITECTURE.md): key (``_runtime.pyx``) -> trace on placeholders
(``trace.py``) -> the passes of ``passes.PASSES`` over one context: build (``_builder.pyx``:
identities, constant folding, scalar merging, CSE), shapeless (``shapeless.py``), rewrites
(``rewrites.py``), fuse (``fuse.py``, kernels from ``nuvec.codegen``, built on a worker
thread: ``background.py``), schedule (``schedule.py``), finalize (``_finalize.pyx``,
``_tape.pyx``: flat replay, eager when the inputs are computed, buffer donation). Stateful
steps: ``state.py``; introspection: ``f.inspect(...)`` (``report.py``), ``f.stats()`` (the
``Statistics`` record; ``signature.py`` explains misses), ``nv.export_to_dot``.
"""

from ._runtime import CompiledFunction, trace_count
from .api import compile, disable_compile, enable_compile
from .background import background_kernels, set_background_kernels, wait_for_kernels

__all__ = [
    "compile",
    "disable_compile",
    "enable_compile",
    "CompiledFunction",
    "trace_count",
    "set_background_kernels",
    "background_kernels",
    "wait_for_kernels",
]
