"""The slow path of a compiled call: trace the function on placeholders, run the passes
(``passes.py``) on what it made, and store the result as a cache entry.

    entry = miss(compiled_fn, key, args, kwargs, leaves)
"""

from __future__ import annotations

import gc
import sys
import threading
import time
import warnings
from typing import Any

from ..core.array import Array, original, recording_rebinds
from ..core.device import current_stream
from ..core.shapeless import conditions as shape_conditions
from ..core.shapeless import tracing as shapeless_tracing
from ..transforms._trace import tracing
from ..tree import LEAF, flatten, unflatten
from . import background, passes
from ._entry import OUT_ONE, OUT_TREE, OUT_TUPLE, Entry
from .draft import Draft
from .signature import Signature, miss_reason


def random_state() -> list | None:
    """``nv.random.state`` (a list holding the global key) once the random module is loaded
    (``import nuvec`` loads it; it sits above compile, so it is looked up, not imported)."""
    st = getattr(sys.modules.get("nuvec.random"), "state", None)
    return st if isinstance(st, list) else None


def fun_name(fun: Any) -> str:
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or repr(fun)


def miss(cf, key, args: tuple, kwargs: dict, leaves: list) -> Entry:
    """Traces a call whose key is not cached; stores and returns the entry."""
    with cf.trace_lock:
        entry = cf.lookup(key, leaves)  # another thread may have traced it meanwhile
        if entry is not None:
            return entry
        sig = Signature.of(args, kwargs, leaves, cf.shapeless)
        _check_hashable(cf, key, sig)
        cf.statistics.missed(miss_reason(cf, sig, key, leaves))
        fast = not kwargs and all(type(a) is Array for a in args)
        entry = trace_call(cf, args, kwargs, leaves, fast)
        entry.sig = sig
        store(cf, key, entry)
        return entry


def store(cf, key, entry: Entry) -> None:
    st = cf.statistics
    if entry.tape.captures_tracer:
        st.uncached += 1  # used once: it holds an outer transform's tracer
    else:
        cf.insert(key, entry)
    n = cf.warn_traces
    if n is not None and st.traces > n and not st.warned:
        st.warned = True
        warnings.warn(
            f"nv.compile: {fun_name(cf.fun)} has been traced {st.traces} times "
            f"(more than warn_traces={n}); the last retrace was caused by: "
            f"{st.last_miss}",
            RuntimeWarning,
            stacklevel=4,
        )


def _check_hashable(cf, key, sig: Signature) -> None:
    try:
        hash(key)
    except TypeError:
        path, value = sig.unhashable()
        raise TypeError(
            f"nv.compile({fun_name(cf.fun)}): {path} is a {type(value).__name__}, "
            "which is neither an array, a container of arrays, nor a hashable "
            "constant (convert it with nv.array, or make it hashable)"
        ) from None
    bad = sig.foreign()
    if bad is not None:
        path, value = bad
        raise ValueError(
            f"nv.compile({fun_name(cf.fun)}): {path} is a {type(value).__name__}; a compiled "
            "function's arguments must be trees (lists, tuples, dicts) of arrays and constants "
            "(Python scalars, strings, None); pass the arrays it holds, or capture the object "
            "in the function"
        )


def _check_captured(cf, draft: Draft, leaves: list) -> None:
    """Refuses a trace that reached one of the call's own input arrays other than through its
    argument (a closure holding it, or a graph built on it): its value would be frozen into
    the compiled function as a constant (MLX's "uncaptured inputs")."""
    inputs = {id(a) for a in leaves}
    for c in draft.consts:
        if id(c) in inputs:
            raise ValueError(
                f"nv.compile({fun_name(cf.fun)}): the function reaches one of its input "
                "arrays through its closure (or through an array computed from it) rather "
                "than through its argument, so that value would be frozen into the compiled "
                "function; pass it as an argument or copy it before the call"
            )


def trace_call(
    cf, args: tuple, kwargs: dict, leaves: list, fast: bool, extra_outputs=None
) -> Entry:
    """Runs ``cf.fun`` on placeholders of ``leaves`` and builds the entry."""
    t0 = time.perf_counter()
    stream = current_stream()
    ph = [Array.placeholder(a._shape, a._dtype, stream) for a in leaves]
    if fast:
        targs, tkwargs = tuple(ph), {}
    else:
        _, td = flatten((args, kwargs) if kwargs else args)
        rebuilt = unflatten(td, ph)
        targs, tkwargs = rebuilt if kwargs else (rebuilt, {})
    cf.statistics.traced()
    rs = random_state()
    key0 = rs[0] if rs else None
    try:
        with (
            tracing(),
            recording_rebinds() as rebound,
            shapeless_tracing(cf.shapeless, ph) as origins,
        ):
            out = cf.fun(*targs, **tkwargs)
            ph = [original(p, rebound) for p in ph]  # ``x[i] = v`` inside rebinds an input
            out_leaves, out_def = flatten(out)
            entry = make_entry(cf, ph, out, out_leaves, out_def, stream, t0, origins=origins)
            entry.conditions = shape_conditions()
            _check_captured(cf, entry.info["draft"], leaves)
            return entry
    except BaseException:
        if rs:
            rs[0] = key0  # a failed trace does not advance the global random key
        raise


def make_entry(
    cf, placeholders, out, out_leaves, out_def, stream, t0, n_out=None, origins=None
) -> Entry:
    """The entry of a trace made on ``placeholders`` (begun at ``t0``): the passes' tape and
    how to rebuild ``out`` from the outputs (the first ``n_out`` of ``out_leaves``)."""
    # The build allocates many small objects and frees none: the cyclic collector would
    # only re-walk the traced graph again and again (a 40,000-op trace: 3x slower).
    enabled = gc.isenabled()
    gc.disable()
    try:
        ctx = passes.run(
            passes.Context(
                fun_name(cf.fun),
                cf.shapeless,
                cf.options,
                stream,
                placeholders,
                list(out_leaves),
                origins or {},
            )
        )
    finally:
        if enabled:
            gc.enable()
    e = Entry()
    e.tape = ctx.tape
    e.n_out = len(out_leaves) if n_out is None else n_out
    if out_def.node is LEAF:
        e.out_kind = OUT_ONE
    elif type(out) is tuple and all(c is LEAF for c in out_def.node[1]):
        e.out_kind = OUT_TUPLE
    else:
        e.out_kind = OUT_TREE
    e.out_def = out_def
    e.info = {"draft": ctx.draft, "fused": [] if ctx.deferred else ctx.fused}
    cf.statistics.timings = ctx.timings(t0)
    e.ready = None
    if ctx.deferred:
        e.ready = threading.Event()
        background.submit(lambda: _install_fused(cf, e, ctx))
    return e


def _install_fused(cf, entry: Entry, ctx: passes.Context) -> None:
    """(worker thread) Builds the fused kernels, then swaps the entry's tape for the one
    that calls them (or, if they cannot be built, for the unfused tape)."""
    try:
        tape, built = passes.build_deferred(ctx)
        if built:
            entry.info["fused"] = ctx.fused
        # One attribute store: a call sees the old tape or the new. A call still replaying
        # the old one owns a reference to it (CompiledFunction.__call__, Tape.run), so
        # dropping the entry's reference here cannot free it mid-call.
        entry.tape = tape
        st = cf.statistics
        timings = dict(st.timings)
        timings["kernel_compile_s"] = timings.get("kernel_compile_s", 0.0) + ctx.kernel_s
        timings.update(steps=len(tape.steps), fused_kernels=len(ctx.fused) if built else 0)
        st.timings = timings
    finally:
        ev = entry.ready
        if ev is not None:
            ev.set()
