"""The traced graph after simplification: what the passes (shapeless, fusion) rewrite before
it is frozen into a replayable Tape.

Every value has an integer id: the inputs are ``0 .. n_inputs-1``; constants and step outputs
get the next ids as the builder meets them. A step refers to its arguments and outputs by id,
so passes can replace steps without renumbering anything.

    d = Draft(n_inputs=1)
    c = d.add_const(two)                    # a constant value id
    d.steps = [DStep(prim, (0, c), (d.new_value(STEP, shape, dtype),), stream)]
    d.readers()[0], d.producers()[d.steps[0].outs[0]]   # [0], 0: derived once per steps
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
    outputs: list[int] = field(default_factory=list)
    captures_tracer: bool = False
    _steps: list[DStep] = field(default_factory=list, repr=False)
    _producers: dict[int, int] | None = field(default=None, repr=False, compare=False)
    _readers: dict[int, list[int]] | None = field(default=None, repr=False, compare=False)

    @property
    def steps(self) -> list[DStep]:
        """The steps in run order (each after the steps making its arguments). A pass that
        rewrites them assigns a new list, or calls ``changed()`` after editing in place."""
        return self._steps

    @steps.setter
    def steps(self, steps: list[DStep]) -> None:
        self._steps = steps
        self._producers = self._readers = None

    def changed(self) -> None:
        """Forgets ``producers()`` and ``readers()`` after an in-place edit of the steps."""
        self._producers = self._readers = None

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
        """Value id -> index of the step (in ``steps``) that makes it; derived once per
        version of the steps (do not modify the dict)."""
        if self._producers is None:
            out = {}
            for k, s in enumerate(self._steps):
                for v in s.outs:
                    out[v] = k
            self._producers = out
        return self._producers

    def readers(self) -> dict[int, list[int]]:
        """Value id -> indices of the steps that read it, ascending (a step reading it twice
        is listed twice); derived once per version of the steps (do not modify it)."""
        if self._readers is None:
            out: dict[int, list[int]] = {}
            for k, s in enumerate(self._steps):
                for a in s.args:
                    out.setdefault(a, []).append(k)
            self._readers = out
        return self._readers

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
