"""The Primitive base class: what makes an array in the graph.

A primitive is a small, immutable object: a name and parameters (``params``, hashable).
Equality and hash are over the type and parameters, which is what common-subexpression
elimination compares. A primitive never imports a backend: backends register how to run it
(``nuvec.backends``), and its transform rules (vjp, jvp, vmap) live in the transforms layer,
in tables keyed by its class (``nuvec.transforms.rules``).

Subclasses implement ``infer(inputs) -> list[(shape, dtype)]``: the outputs' shapes and
dtypes (used eagerly, while tracing and on every shapeless replay).

Flags used by compile: ``elementwise`` (a fusable element-wise op over same-shape operands),
``effectful`` (never folded into a constant nor merged with an equal one: random draws with
explicit state, collectives), ``fixes_shape`` (its parameters hold a traced size, so shapeless
compilation refuses it), ``relative`` (its parameters are relative to the input shapes, see
``resolve``), ``view`` (its output may alias its input's memory).
"""

from __future__ import annotations

from typing import Any, Sequence


class Primitive:
    __slots__ = ()
    name: str = "primitive"
    elementwise: bool = False
    effectful: bool = False
    fixes_shape: bool = False
    differentiable: bool = True
    #: its parameters are relative to its inputs' shapes: a shapeless replay calls
    #: ``resolve(inputs) -> (primitive, inputs)`` for the concrete node to run
    relative: bool = False

    @property
    def params(self) -> tuple:
        return ()

    def __eq__(self, other: Any) -> bool:
        return self is other or (type(other) is type(self) and other.params == self.params)

    def __hash__(self) -> int:
        return hash((type(self), self.params))

    def __repr__(self) -> str:
        p = self.params
        return f"{self.name}{p!r}" if p else self.name

    def infer(self, inputs: Sequence) -> list[tuple[tuple[int, ...], Any]]:
        raise NotImplementedError(self.name)
