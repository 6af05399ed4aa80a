"""The compile pipeline: the passes between a trace and its tape, declared as one list over
one ``Context`` (the compile options, the stream's backend and its fusion policy, the draft).

    ctx = Context(name, shapeless, options, stream, placeholders, out_leaves, origins)
    run(ctx)                 # each pass of PASSES in order; then ctx.tape, ctx.fused
    ctx.timings(t0)          # seconds, for f.stats()

Each pass rewrites ``ctx.draft`` and asks ``ctx.policy`` what the backend takes; none names
a device. In order:

- ``build``: the traced graph becomes a Draft (identities removed, input-independent
  sub-graphs folded, equal scalars merged, CSE; ``_builder.pyx``);
- ``shapeless`` (``shapeless=True``): steps read their broadcasts' sources, so the draft
  replays on other shapes (``shapeless.py``);
- ``rewrites`` (where the backend fuses; shaped traces): the rules of ``rewrites.RULES`` the
  policy takes;
- ``fuse``: element-wise chains become generated kernels (``fuse.py``), built now or on the
  worker thread (``background.py``);
- ``schedule`` (where the policy asks): reductions next to their arguments, or independent
  fused steps next to each other (``schedule.py``);
- ``finalize``: the flat Tape (``_finalize.pyx``).

Adding a pass: its function here and its line in ``PASSES``.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

from ..backends import registry
from ..backends.base import Backend, CompileOptions, FusionPolicy, KernelCompileError
from . import background
from ._builder import build
from ._finalize import finalize
from ._tape import Tape
from .draft import Draft
from .fuse import fuse
from .rewrites import rewrite
from .schedule import gather_kernels, hoist_reductions
from .shapeless import make_shapeless

#: fuse element-wise chains (tests switch it off to compare)
FUSE = [True]
_warned_compiler = [False]


@dataclass
class Context:
    """What the passes share: the options, the backend, the draft and what they made."""

    name: str  # the traced function's name, for errors
    shapeless: bool
    options: CompileOptions
    stream: Any
    placeholders: list  # the traced inputs
    out_leaves: list  # the traced outputs (then the state's, for a stateful step)
    origins: dict = field(default_factory=dict)  # shapeless: node id -> where the trace made it
    backend: Backend = field(init=False)
    draft: Draft = field(init=False)
    #: the steps before the rewrites: the tape if fused kernels cannot be built
    unfused: list | None = None
    fused: list = field(default_factory=list)  # the fused steps
    deferred: bool = False  # their kernels are built on the worker thread
    kernel_s: float = 0.0  # seconds spent building kernels in the passes
    plan: tuple = ()  # per output: see _out_plan
    tape: Tape | None = None
    #: pass name -> (wall, thread CPU) seconds
    seconds: dict[str, tuple[float, float]] = field(default_factory=dict)
    _start: float = field(default=0.0, init=False)  # when run() began and ended
    _end: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self.backend = registry.backend_of(self.stream)

    @property
    def policy(self) -> FusionPolicy:
        return self.backend.policy

    @property
    def fuses(self) -> bool:
        """Whether the rewrites and fusion run: the backend fuses and the trace holds no
        outer transform's tracer (its graph must reach that transform as traced)."""
        return FUSE[0] and self.policy.fuses and not self.draft.captures_tracer

    def timings(self, t0: float) -> dict:
        """The trace's timings for ``f.stats()``: seconds traced (from ``t0`` to the
        passes), building the draft, in the passes up to finalize (less kernel builds),
        building kernels, finalizing; CPU seconds of the build and of finalize; the first
        call's time less the kernel builds; each pass's seconds."""
        sec = self.seconds
        start = self._start
        wall = {name: w for name, (w, _) in sec.items()}
        between = sum(wall[n] for n in ("shapeless", "rewrites", "fuse", "schedule"))
        return {
            "trace_s": start - t0,
            "simplify_s": wall["build"],
            "fuse_s": between - self.kernel_s,
            "kernel_compile_s": self.kernel_s,
            "finalize_s": wall["finalize"],
            "simplify_cpu_s": sec["build"][1],
            "finalize_cpu_s": sec["finalize"][1],
            "first_call_s_before_compiler": (self._end - t0) - self.kernel_s,
            "pass_s": wall,
            "steps": len(self.tape.steps) if self.tape is not None else 0,
            "fused_kernels": 0 if self.deferred else len(self.fused),
            "kernels_in_background": self.deferred,
        }


def build_pass(ctx: Context) -> None:
    ctx.draft = build(ctx.placeholders, list(ctx.out_leaves), ctx.shapeless)


def shapeless_pass(ctx: Context) -> None:
    if ctx.shapeless:
        make_shapeless(ctx.draft, ctx.name, ctx.origins)
        ctx.draft.changed()  # it edits steps' arguments in place


def rewrites_pass(ctx: Context) -> None:
    if ctx.fuses:
        ctx.unfused = list(ctx.draft.steps)
        if not ctx.shapeless:
            rewrite(ctx.draft, ctx.policy)


def fuse_pass(ctx: Context) -> None:
    """Fuses and builds the kernels: now, or (a backend that builds in the background,
    kernels neither loaded nor on disk, background mode) on the worker thread, and then the
    draft's steps are the fused ones, whose kernels are not built yet."""
    if not ctx.fuses:
        return
    draft, backend = ctx.draft, ctx.backend
    fused = fuse(draft, ctx.shapeless, ctx.policy)
    if not fused:
        return
    if ctx.options.fast_math and ctx.policy.fast_math:  # the specs ask for the fast variant
        for f in fused:
            f.prim.spec = dataclasses.replace(f.prim.spec, fast=True)
    specs = [f.prim.spec for f in fused]
    ctx.fused = fused
    if (
        ctx.policy.background_kernels
        and background.background_kernels()
        and not backend.ready(specs)
    ):
        ctx.deferred = True
        return
    t = time.perf_counter()
    try:
        launchers = backend.prepare(specs, ctx.options)
    except KernelCompileError as e:
        draft.steps = ctx.unfused
        ctx.fused = []
        warn_compiler(e, stacklevel=7)
        return
    finally:
        ctx.kernel_s += time.perf_counter() - t
    for f in fused:
        f.kernel = launchers.get(f.prim.spec)


def schedule_pass(ctx: Context) -> None:
    if ctx.policy.hoist_reductions:  # a cache-locality order
        hoist_reductions(ctx.draft)
    if ctx.policy.gather_kernels and ctx.fused:  # independent fused steps side by side
        gather_kernels(ctx.draft)


def finalize_pass(ctx: Context) -> None:
    # Deferred kernels: the tape is the fused one all the same. Its fused steps, whose kernels
    # are not built yet, run their operations one by one (the CPU ``Compiled`` node), and a
    # graph it leaves lazy (``Tape.call``) holds the fused nodes, as MLX's compiled calls do.
    ctx.plan = _out_plan(ctx.out_leaves, ctx.placeholders)
    ctx.tape = make_tape(ctx)


#: (name, pass), in the order they run
PASSES: tuple[tuple[str, Callable[[Context], None]], ...] = (
    ("build", build_pass),
    ("shapeless", shapeless_pass),
    ("rewrites", rewrites_pass),
    ("fuse", fuse_pass),
    ("schedule", schedule_pass),
    ("finalize", finalize_pass),
)


def run(ctx: Context) -> Context:
    """Runs every pass of ``PASSES`` on ``ctx``, timing each."""
    ctx._start = time.perf_counter()
    for name, p in PASSES:
        t, c = time.perf_counter(), time.thread_time()
        p(ctx)
        ctx.seconds[name] = (time.perf_counter() - t, time.thread_time() - c)
    ctx._end = time.perf_counter()
    return ctx


def make_tape(ctx: Context, steps: list | None = None) -> Tape:
    """The tape of ``ctx.draft`` (or of ``steps`` in place of its own)."""
    tape = finalize(ctx.draft, ctx.stream, ctx.shapeless, steps)
    tape.out_plan = ctx.plan
    st = tape.steps[0] if len(tape.steps) == 1 else None
    tape.single = bool(
        st is not None
        and st.kernel is not None
        and st.donate is None
        and tape.outputs == tuple(range(st.out, st.out + st.nout))
        and all(p == -1 for p in tape.out_plan)
    )
    return tape


def build_deferred(ctx: Context) -> tuple[Tape, bool]:
    """(worker thread) Builds the kernels of the fused steps the passes deferred; returns
    the fused tape and True, or, when they cannot be built, the unfused tape and False."""
    t = time.perf_counter()
    try:
        launchers = ctx.backend.prepare([f.prim.spec for f in ctx.fused], ctx.options)
    except KernelCompileError as e:
        warn_compiler(e, stacklevel=3)
        return make_tape(ctx, ctx.unfused), False
    finally:
        ctx.kernel_s += time.perf_counter() - t
    for f in ctx.fused:
        f.kernel = launchers.get(f.prim.spec)
    return make_tape(ctx), True


def warn_compiler(e: KernelCompileError, stacklevel: int) -> None:
    """Warns, once per process, that fused kernels cannot be built (and why)."""
    if not _warned_compiler[0]:
        _warned_compiler[0] = True
        warnings.warn(
            "nv.compile: fused kernels cannot be built, so compiled functions run "
            f"their operations unfused (same results). The cause:\n{e.message}",
            RuntimeWarning,
            stacklevel=stacklevel + 1,
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
