"""The traced graph after simplification: what the passes (shapeless, fusion) rewrite before
it is frozen into a replayable Tape.

Every value has an integer id: the inputs are ``0 .. n_inputs-1``; constants and step outputs
get the next ids as the builder meets them. A step refers to its arguments and outputs by id,
so passes can replace steps without renumbering anything.

    d = Draft(n_inputs=1)
    c = d.add_const(two, key=None)         # a constant value id
    d.steps.append(DStep(prim, (0, c), (d.new_value(shape, dtype),), stream))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

INPUT, CONST, STEP = 0, 1, 2

from ._tape import DStep  # noqa: E402,F401  (a Cython class: drafts hold thousands)


@dataclass
class Draft:
    n_inputs: int
    kind: list[int] = field(default_factory=list)  # per value: INPUT, CONST or STEP
    shape: list[tuple] = field(default_factory=list)  # per value: traced shape
    dtype: list[Any] = field(default_factory=list)  # per value: dtype
    const_index: dict[int, int] = field(default_factory=dict)  # value id -> index in consts
    consts: list[Any] = field(default_factory=list)  # constant Arrays
    #: value id of a constant -> value id of the constant it is a broadcast of
    broadcast_source: dict[int, int] = field(default_factory=dict)
    #: value id of a one-valued constant -> its raw bytes (all elements equal)
    scalar_bytes: dict[int, bytes] = field(default_factory=dict)
    steps: list[DStep] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    captures_tracer: bool = False

    def new_value(self, kind: int, shape: tuple, dtype: Any) -> int:
        self.kind.append(kind)
        self.shape.append(shape)
        self.dtype.append(dtype)
        return len(self.kind) - 1

    def add_const(self, array: Any) -> int:
        v = self.new_value(CONST, array._shape, array._dtype)
        self.const_index[v] = len(self.consts)
        self.consts.append(array)
        return v

    def producers(self) -> dict[int, int]:
        """Value id -> index of the step (in ``steps``) that makes it."""
        out = {}
        for k, s in enumerate(self.steps):
            for v in s.outs:
                out[v] = k
        return out

    def readers(self) -> dict[int, list[DStep]]:
        """Value id -> the steps that read it, in step order (a step reading it twice is
        listed twice)."""
        out: dict[int, list[DStep]] = {}
        for s in self.steps:
            for a in s.args:
                out.setdefault(a, []).append(s)
        return out

    def drop_unused(self) -> None:
        """Removes the steps no output depends on (effectful steps always stay)."""
        prod = self.producers()
        live = [False] * len(self.steps)
        stack = [prod[v] for v in self.outputs if v in prod]
        stack += [k for k, s in enumerate(self.steps) if getattr(s.prim, "effectful", False)]
        while stack:
            k = stack.pop()
            if live[k]:
                continue
            live[k] = True
            stack.extend(prod[a] for a in self.steps[k].args if a in prod)
        self.steps = [s for k, s in enumerate(self.steps) if live[k]]

    def describe_value(self, v: int) -> str:
        k = self.kind[v]
        if k == INPUT:
            return f"in{v}"
        if k == CONST:
            return f"c{self.const_index[v]}"
        return f"v{v}"
