"""Introspection: what nv.compile made for given arguments.

``f.inspect(*args, **kwargs)`` (tracing if this signature is not cached) returns a
CompileReport: the simplified steps in replay order, the fused groups with each kernel's name
and generated source (in the backend's dialect: C on the CPU), the constants, and the
signature the trace is keyed by.
``print(report)`` shows all but the sources (each embeds the math library: hundreds of lines);
``print(report.format(source=True))`` adds them.

>>> import nuvec as nv
>>> f = nv.compile(lambda x: nv.exp(x) * 2 + 1)
>>> r = f.inspect(nv.ones((4,)))
>>> [s.split(" = ")[1] for s in r.steps]
['compiled[exp multiply add](in0) -> float32(4,)']
>>> "nv_exp_f32" in r.groups[0].source
True
>>> print(r)                                    # doctest: +ELLIPSIS
signature: argument 0: float32 (4,)
steps (1):
  v5 = compiled[exp multiply add](in0) -> float32(4,)
outputs: v5
fused group 0: kernel nv_k_... [exp multiply add] inputs in0 -> v5; literals ...
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..backends import registry
from ..codegen import kernel_name
from ..core.array import Array
from ..primitives.compiled import Compiled
from .background import wait_for_kernels
from .draft import Draft
from .state import entry_for
from .trace import miss


@dataclass
class FusedGroup:
    """One fused kernel: its ops in order, its arrays, its name and generated source."""

    name: str
    ops: tuple[str, ...]
    inputs: list[str]
    outputs: list[str]
    literals: list[str]
    source: str

    def __str__(self) -> str:
        return (
            f"kernel {self.name} [{' '.join(self.ops)}] inputs {', '.join(self.inputs)} -> "
            f"{', '.join(self.outputs)}"
            + (f"; literals {', '.join(self.literals)}" if self.literals else "")
        )


@dataclass
class CompileReport:
    """What compile made for one signature (see the module docstring)."""

    signature: str
    steps: list[str]
    groups: list[FusedGroup]
    constants: list[str]
    outputs: list[str]
    shapeless: bool
    timings: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return self.format()

    def format(self, source: bool = False) -> str:
        """The report as text; ``source=True`` adds each kernel's generated source."""
        lines = [
            f"signature: {self.signature}" + ("  (shapeless)" if self.shapeless else ""),
            f"steps ({len(self.steps)}):",
        ]
        lines += [f"  {s}" for s in self.steps]
        lines.append(f"outputs: {', '.join(self.outputs)}")
        if self.constants:
            lines.append("constants:")
            lines += [f"  {c}" for c in self.constants]
        for i, g in enumerate(self.groups):
            lines.append(f"fused group {i}: {g}")
        if source:
            for i, g in enumerate(self.groups):
                lines.append(f"--- kernel {i} ({g.name}) source ---")
                lines.append(g.source)
        return "\n".join(lines)


def prim_label(p) -> str:
    """A short name for a primitive: its name, and its parameters when they add anything."""
    params = p.params
    if type(p) is Compiled:
        return repr(p)
    if not params or params == (p.name,):
        return p.name
    return f"{p.name}{params!r}"


def _name(draft: Draft, v: int) -> str:
    return draft.describe_value(v)


def describe_entry(entry, shapeless: bool) -> CompileReport:
    draft: Draft = entry.info["draft"]
    steps = []
    groups = []

    tape = entry.tape  # once: the kernel worker may swap in the fused tape meanwhile
    for s in [st.source for st in tape.steps]:
        outs = ", ".join(_name(draft, o) for o in s.outs)
        args = ", ".join(_name(draft, a) for a in s.args)
        shp = "; ".join(f"{draft.dtype[o].name}{draft.shape[o]}" for o in s.outs)
        steps.append(f"{outs} = {prim_label(s.prim)}({args}) -> {shp}")
        if type(s.prim) is Compiled:
            spec = s.prim.spec
            lits = [f"{d}:{bits:#x}" for d, bits in spec.constants]
            groups.append(
                FusedGroup(
                    name=kernel_name(spec),
                    ops=s.prim.ops,
                    inputs=[_name(draft, a) for a in s.args],
                    outputs=[_name(draft, o) for o in s.outs],
                    literals=lits,
                    source=registry.backend_of(tape.stream).source(spec),
                )
            )
    consts = []
    used = {a for st in tape.steps for a in st.source.args} | set(draft.outputs)
    for v, i in draft.const_index.items():
        if v not in used:
            continue
        c: Array = draft.consts[i]
        what = "tracer (captured from an outer transform)" if c._tracer else "constant"
        consts.append(f"c{i}: {c._dtype.name}{c._shape} {what}")
    sig = entry.sig.describe() if entry.sig is not None else ""
    return CompileReport(
        signature=sig,
        steps=steps,
        groups=groups,
        constants=consts,
        outputs=[_name(draft, v) for v in draft.outputs],
        shapeless=shapeless,
    )


def inspect_call(cf, args: tuple, kwargs: dict) -> CompileReport:
    """The report of the entry ``cf`` uses for this call (traced now if not cached)."""
    if cf.stateful:
        entry = entry_for(cf, args, kwargs)  # the state is not changed by inspecting
    else:
        leaves: list = []
        key = cf.key_of(args, kwargs, leaves, 0)
        if key is None:
            raise ValueError(
                "inspect: an argument is being traced by a transform; call "
                "inspect on concrete arrays"
            )
        entry = cf.lookup(key, leaves)
        if entry is None:
            entry = miss(cf, key, args, kwargs, leaves)
    wait_for_kernels()  # report the fused tape, not the one used while kernels build
    rep = describe_entry(entry, cf.shapeless)
    rep.timings = dict(cf.statistics.timings)
    return rep


def executable_stats(tape) -> dict | None:
    """What runs ``tape`` on its device, for ``f.stats()["executable"]``: the backend's
    account (a CUDA executable's ``describe()``, or why the tape has none); None where the
    backend has nothing to say (the CPU)."""
    return registry.backend_of(tape.stream).describe_executable(tape)
