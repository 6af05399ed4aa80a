"""The slow path of a compiled call: trace the function on placeholders, simplify, fuse, and
freeze the result into a Tape (and a cache entry).

    entry = miss(compiled_fn, key, args, kwargs, leaves)
"""

from __future__ import annotations

import dataclasses
import gc
import time
import warnings
from typing import Any

from ..backends import registry
from ..backends.base import CompileOptions, KernelCompileError
from ..core.array import Array, original, recording_rebinds
from ..core.shapeless import tracing as shapeless_tracing
from ..core.device import current_stream
from ..transforms._trace import tracing
from ..tree import LEAF, flatten, unflatten
from . import _runtime
from ._builder import build
from ._finalize import finalize
from ._runtime import OUT_ONE, OUT_TREE, OUT_TUPLE, Entry
from .schedule import hoist_reductions
from ._tape import Tape
from .draft import Draft
from .fuse import fuse
from .rewrites import rewrite
from .signature import Signature, miss_reason

#: fuse element-wise chains (tests switch it off to compare)
FUSE = [True]
_warned_compiler = [False]


def fun_name(fun: Any) -> str:
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or repr(fun)


def miss(cf, key, args: tuple, kwargs: dict, leaves: list) -> Entry:
    """Traces a call whose key is not cached; stores and returns the entry."""
    with cf.trace_lock:
        entry = cf.lookup(key)  # another thread may have traced it meanwhile
        if entry is not None:
            return entry
        sig = Signature.of(args, kwargs, leaves, cf.shapeless)
        _check_hashable(cf, key, sig)
        cf.misses += 1
        cf.last_miss = miss_reason(cf, sig, key)
        fast = not kwargs and all(type(a) is Array for a in args)
        entry = trace_call(cf, args, kwargs, leaves, fast)
        entry.sig = sig
        store(cf, key, entry)
        return entry


def store(cf, key, entry: Entry) -> None:
    if entry.tape.captures_tracer:
        cf.uncached += 1  # used once: it holds an outer transform's tracer
    else:
        cf.insert(key, entry)
    n = cf.warn_traces
    if n is not None and cf.traces > n and not cf.warned:
        cf.warned = True
        warnings.warn(
            f"nv.compile: {fun_name(cf.fun)} has been traced {cf.traces} times "
            f"(more than warn_traces={n}); the last retrace was caused by: "
            f"{cf.last_miss}",
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
    _runtime._count_trace()
    cf.traces += 1
    from .state import random_state

    rs = random_state()
    key0 = rs[0] if rs else None
    try:
        with tracing(), recording_rebinds() as rebound, shapeless_tracing(cf.shapeless) as origins:
            out = cf.fun(*targs, **tkwargs)
            ph = [original(p, rebound) for p in ph]  # ``x[i] = v`` inside rebinds an input
            out_leaves, out_def = flatten(out)
            entry = make_entry(cf, ph, out, out_leaves, out_def, stream, t0, origins=origins)
            _check_captured(cf, entry.info["draft"], leaves)
            return entry
    except BaseException:
        if rs:
            rs[0] = key0  # a failed trace does not advance the global random key
        raise


def make_entry(
    cf, placeholders, out, out_leaves, out_def, stream, t0, n_out=None, origins=None
) -> Entry:
    # The build allocates many small objects and frees none: the cyclic collector would
    # only re-walk the traced graph again and again (a 40,000-op trace: 3x slower).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _make_entry(cf, placeholders, out, out_leaves, out_def, stream, t0, n_out, origins)
    finally:
        if enabled:
            gc.enable()


def _make_entry(
    cf, placeholders, out, out_leaves, out_def, stream, t0, n_out, origins=None
) -> Entry:
    t1 = time.perf_counter()
    c1 = time.thread_time()
    draft = build(placeholders, list(out_leaves), cf.shapeless)
    t2 = time.perf_counter()
    c2 = time.thread_time()
    name = fun_name(cf.fun)
    if cf.shapeless:
        from .shapeless import make_shapeless

        make_shapeless(draft, name, origins or {})
    plan = _out_plan(list(out_leaves), placeholders)
    fused, sources_s, deferred = _fuse(draft, cf.shapeless, stream, _options(cf))
    if registry.backend_of(stream).policy.hoist_reductions:  # a cache-locality order
        hoist_reductions(draft)
    t3 = time.perf_counter()
    unfused_steps = deferred[0] if deferred else None
    c3 = time.thread_time()
    tape = make_tape(draft, stream, cf.shapeless, plan, unfused_steps)
    t4 = time.perf_counter()
    c4 = time.thread_time()
    e = Entry()
    e.tape = tape
    e.n_out = len(out_leaves) if n_out is None else n_out
    if out_def.node is LEAF:
        e.out_kind = OUT_ONE
    elif type(out) is tuple and all(c is LEAF for c in out_def.node[1]):
        e.out_kind = OUT_TUPLE
    else:
        e.out_kind = OUT_TREE
    e.out_def = out_def
    e.info = {"draft": draft, "fused": [] if deferred else fused}
    cf.last_timings = {
        "trace_s": t1 - t0,
        "simplify_s": t2 - t1,
        "fuse_s": t3 - t2 - sources_s,
        "kernel_compile_s": sources_s,
        "finalize_s": t4 - t3,
        "simplify_cpu_s": c2 - c1,
        "finalize_cpu_s": c4 - c3,
        "first_call_s_before_compiler": (t4 - t0) - sources_s,
        "steps": len(tape.steps),
        "fused_kernels": len(e.info["fused"]),
        "kernels_in_background": bool(deferred),
    }
    e.ready = None
    if deferred:
        import threading
        from . import background

        e.ready = threading.Event()
        background.submit(lambda: _install_fused(cf, e, draft, stream, plan, fused))
    return e


def make_tape(draft: Draft, stream, shapeless: bool, plan: tuple, steps=None) -> Tape:
    tape = finalize(draft, stream, shapeless, steps)
    tape.out_plan = plan
    st = tape.steps[0] if len(tape.steps) == 1 else None
    tape.single = bool(
        st is not None
        and st.kernel is not None
        and st.donate is None
        and tape.outputs == tuple(range(st.out, st.out + st.nout))
        and all(p == -1 for p in tape.out_plan)
    )
    return tape


def _install_fused(cf, entry: Entry, draft: Draft, stream, plan: tuple, fused: list) -> None:
    """(worker thread) Builds the fused kernels, then swaps the entry to the fused tape."""
    try:
        _build_fused(cf, entry, draft, stream, plan, fused)
    finally:
        ev = entry.ready
        if ev is not None:
            ev.set()


def _build_fused(cf, entry: Entry, draft: Draft, stream, plan: tuple, fused: list) -> None:
    t = time.perf_counter()
    try:
        launchers = registry.backend_of(stream).prepare([f.prim.spec for f in fused], _options(cf))
    except KernelCompileError as e:
        _warn_compiler(e, stacklevel=3)
        return
    for f in fused:
        f.kernel = launchers.get(f.prim.spec)
    tape = make_tape(draft, stream, cf.shapeless, plan)
    entry.info["fused"] = fused
    # One attribute store: a call sees the old tape or the new. A call still replaying the
    # old one owns a reference to it (CompiledFunction.__call__, Tape.run), so dropping
    # the entry's reference here cannot free it mid-call.
    entry.tape = tape
    timings = dict(cf.last_timings)
    timings["kernel_compile_s"] = timings.get("kernel_compile_s", 0.0) + time.perf_counter() - t
    timings.update(steps=len(tape.steps), fused_kernels=len(fused))
    cf.last_timings = timings


def _options(cf) -> CompileOptions:
    return CompileOptions(fast_math=cf.fast_math)


def _warn_compiler(e, stacklevel: int) -> None:
    if not _warned_compiler[0]:
        _warned_compiler[0] = True
        warnings.warn(
            "nv.compile: fused kernels cannot be built, so compiled functions run "
            f"their operations unfused (same results). The cause:\n{e.message}",
            RuntimeWarning,
            stacklevel=stacklevel,
        )


def _out_plan(out_leaves: list, placeholders: list) -> tuple:
    """Per output: the earlier output it is the same object as, -2 if it is the argument
    itself, -1 for a new array (see Tape._outputs)."""
    first: dict[int, int] = {}
    inputs = {id(p) for p in placeholders}
    plan = []
    for j, a in enumerate(out_leaves):
        if id(a) in first:
            plan.append(first[id(a)])
            continue
        first[id(a)] = j
        plan.append(-2 if id(a) in inputs else -1)
    return tuple(plan)


def _fuse(
    draft: Draft, shapeless: bool, stream, options: CompileOptions
) -> tuple[list, float, tuple | None]:
    """Fuses (where the stream's backend fuses, not when the trace holds an outer tracer) and
    builds the kernels: now, or (a backend that builds in the background, kernels neither
    loaded nor on disk, background mode) on the worker thread; then it returns ``deferred =
    (unfused steps,)`` and the draft's steps are the fused ones, whose kernels are not built
    yet."""
    backend = registry.backend_of(stream)
    policy = backend.policy
    if not FUSE[0] or draft.captures_tracer or not policy.fuses:
        return [], 0.0, None
    from . import background

    saved = list(draft.steps)
    if not shapeless:
        rewrite(draft, policy)
    fused = fuse(draft, shapeless, policy)
    if not fused:
        return [], 0.0, None
    if options.fast_math and policy.fast_math:  # the kernels' specs ask for the fast variant
        for f in fused:
            f.prim.spec = dataclasses.replace(f.prim.spec, fast=True)
    specs = [f.prim.spec for f in fused]
    if policy.background_kernels and background.background_kernels() and not backend.ready(specs):
        return fused, 0.0, (saved,)
    t = time.perf_counter()
    try:
        launchers = backend.prepare(specs, options)
    except KernelCompileError as e:
        draft.steps = saved
        _warn_compiler(e, stacklevel=6)
        return [], time.perf_counter() - t, None
    for f in fused:
        f.kernel = launchers.get(f.prim.spec)
    return fused, time.perf_counter() - t, None
