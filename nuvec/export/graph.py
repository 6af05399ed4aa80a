"""A function as a portable graph: traced once on placeholders, simplified as ``nv.compile``
simplifies it, and replayed on arrays without the Python function.

Values are numbered: the inputs first (positional, then keyword in sorted key order), then
the constants, then each step's outputs in order; a step reads only values numbered before
its own outputs.

    t = trace(fun, [x], {"z": z}, shapeless=False, name="fun")
    outs = replay(t, [x, z])            # a tuple of arrays, the graph the function makes
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..compile._builder import build
from ..compile.draft import CONST
from ..compile.shapeless import make_shapeless
from ..compile.trace import random_state
from ..core import shapeless as shapeless_mode
from ..core.array import Array, original, recording_rebinds
from ..core.device import current_stream
from ..primitives.misc import Forwarding
from ..ops.shape import broadcast_arrays
from ..transforms._trace import tracing


@dataclass
class Step:
    prim: Any
    args: tuple[int, ...]
    outs: tuple[tuple[tuple[int, ...], Any], ...]  # per output: (shape, dtype) as traced


@dataclass
class Trace:
    """One input signature of a function and the graph traced for it."""

    kwarg_keys: tuple[str, ...]  # sorted
    inputs: list[tuple[tuple[int, ...], Any]]  # per input: (shape, dtype)
    constants: list[Array] = field(default_factory=list)  # evaluated arrays
    steps: list[Step] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    #: shapeless: the comparisons of the inputs' sizes the trace's branches took (see
    #: core.shapeless), which a call's shapes must give again
    conditions: tuple = ()

    @property
    def n_positional(self) -> int:
        return len(self.inputs) - len(self.kwarg_keys)

    def matches(self, args: list, kwargs: dict, shapeless: bool) -> bool:
        """Whether arrays ``args`` / ``kwargs`` have this trace's signature: the same keyword
        names, and per input the same dtype and rank (and shape unless ``shapeless``)."""
        if len(args) != self.n_positional or set(kwargs) != set(self.kwarg_keys):
            return False
        leaves = list(args) + [kwargs[k] for k in self.kwarg_keys]
        for a, (shape, dtype) in zip(leaves, self.inputs):
            if a.dtype != dtype or len(a.shape) != len(shape):
                return False
            if not shapeless and tuple(a.shape) != tuple(shape):
                return False
        return not self.conditions or shapeless_mode.hold(
            self.conditions, [tuple(a.shape) for a in leaves]
        )


def outputs_of(out: Any, what: str) -> list[Array]:
    """A function's result as a list of arrays: one array, or a list or tuple of arrays."""
    if isinstance(out, Array):
        return [out]
    if isinstance(out, (list, tuple)) and all(isinstance(o, Array) for o in out):
        return list(out)
    raise ValueError(
        f"{what}: outputs can be either a single array, a tuple, or a list of arrays "
        f"(the function returned {type(out).__name__})"
    )


def trace(fun: Callable, args: list, kwargs: dict, shapeless: bool, name: str, what: str) -> Trace:
    """Runs ``fun`` on placeholders of ``args`` / ``kwargs`` and returns its simplified graph.
    The global random key is read as a constant (and advanced), as a draw outside would."""
    keys = tuple(sorted(kwargs))
    leaves = list(args) + [kwargs[k] for k in keys]
    stream = current_stream()
    ph = [Array.placeholder(a.shape, a.dtype, stream) for a in leaves]
    rs = random_state()
    key0 = rs[0] if rs else None
    try:
        with (
            tracing(),
            recording_rebinds() as rebound,
            shapeless_mode.tracing(shapeless, ph) as origins,
        ):
            out = fun(*ph[: len(args)], **dict(zip(keys, ph[len(args) :])))
            conditions = shapeless_mode.conditions() or ()
            ph = [original(p, rebound) for p in ph]  # ``x += y`` inside rebinds an input
            draft = build(ph, outputs_of(out, what), shapeless)
            if shapeless:
                try:
                    make_shapeless(draft, name, origins)
                except ValueError as e:  # compile's shapeless mode cannot replay this graph
                    raise ValueError(f"{what}: {e}") from None
    except BaseException:
        if rs:
            rs[0] = key0  # a failed trace does not advance the global random key
        raise
    if draft.captures_tracer:
        raise ValueError(
            f"{what}: {name} uses an array that an outer transform traces; export a function "
            "of its own inputs (outside grad, vmap or compile)"
        )
    t = _from_draft(draft, keys, [(a.shape, a.dtype) for a in leaves])
    t.conditions = conditions
    return t


def _from_draft(draft, keys: tuple, inputs: list) -> Trace:
    t = Trace(keys, inputs)
    alias: dict[int, int] = {}  # a forwarding primitive's outputs are its trailing inputs
    for s in draft.steps:
        if isinstance(s.prim, Forwarding):
            for k, v in enumerate(s.outs):
                alias[v] = s.args[s.prim.n_in + k]

    def source(v: int) -> int:
        while v in alias:
            v = alias[v]
        return v

    kept = [s for s in draft.steps if not isinstance(s.prim, Forwarding)]
    number = {v: v for v in range(draft.n_inputs)}
    for v in [v for s in kept for v in s.args] + list(draft.outputs):
        v = source(v)
        if draft.kind[v] == CONST and v not in number:  # constants before step outputs
            number[v] = len(inputs) + len(t.constants)
            t.constants.append(draft.consts[draft.const_index[v]])
    n = len(inputs) + len(t.constants)
    for s in kept:
        args = tuple(number[source(v)] for v in s.args)
        for v in s.outs:
            number[v] = n
            n += 1
        t.steps.append(Step(s.prim, args, tuple((draft.shape[v], draft.dtype[v]) for v in s.outs)))
    t.outputs = [number[source(v)] for v in draft.outputs]
    return t


def replay(t: Trace, inputs: list) -> tuple:
    """The outputs of ``t`` on ``inputs`` (arrays, placeholders or tracers): the graph of
    operations the traced function made, built from the recorded primitives."""
    values = list(inputs) + list(t.constants)
    for st in t.steps:
        values.extend(apply(st.prim, [values[i] for i in st.args], len(st.outs)))
    return tuple(values[i] for i in t.outputs)


def apply(prim, ins: Sequence[Array], n_out: int) -> list[Array]:
    """The ``n_out`` outputs of ``prim`` on ``ins``. Element-wise operands of different shapes
    (what a shapeless export leaves) are broadcast as the operations broadcast them (under a
    shapeless compile trace, as they record it); a shape-relative node is resolved for these
    shapes, except under a shapeless compile trace."""
    if prim.elementwise and len({x.shape for x in ins}) > 1:
        ins = broadcast_arrays(*ins, name=prim.name)
    ins = tuple(ins)
    if prim.relative and not any(shapeless_mode.relative(x) for x in ins):
        prim, ins = prim.resolve(ins)
    return Array.make_multi(prim, ins) if n_out > 1 else [Array.make(prim, ins)]
