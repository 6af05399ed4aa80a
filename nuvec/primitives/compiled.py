"""The fused element-wise kernel that ``nv.compile`` makes from a chain of element-wise steps.

``Compiled(spec, members)`` runs one generated kernel (``spec``, a ``codegen.ir.KernelSpec``)
over its inputs, which broadcast to one shape (the result's). ``members`` describes the
original operations (primitive and arguments), so that a transform meeting a fused node
(grad, jvp, vmap of a graph that holds one) re-expands it into those operations and applies
their rules (``nuvec.transforms.rules.compiled``).

    prim = Compiled(spec, members)
    out, = Array.make_multi(prim, [x, y])     # or Array.make for one output

A member argument is ``("in", i)`` (kernel input i), ``("node", j)`` (member j's value) or
``("const", k)`` (the literal ``spec.constants[k]``).
"""

from __future__ import annotations


from ..core import dtypes as dt
from ._common import Expanding
from .shape import broadcast_shape


class Compiled(Expanding):
    """A fused element-wise kernel (see the module docstring)."""

    __slots__ = ("spec", "members")
    name = "compiled"
    elementwise = True

    def __init__(self, spec, members: tuple) -> None:
        self.spec = spec
        self.members = tuple(members)  # ((primitive, (arg, ...)), ...) in node order

    @property
    def params(self) -> tuple:
        return (self.spec,)

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(n.op for n in self.spec.nodes)

    def __repr__(self) -> str:
        return f"compiled[{' '.join(self.ops)}]"

    def infer(self, inputs):
        if len(inputs) != len(self.spec.inputs):
            raise ValueError(
                f"compiled: the kernel takes {len(self.spec.inputs)} inputs, got {len(inputs)}"
            )
        shape = broadcast_shape([x._shape for x in inputs], "compiled")
        return [(shape, dt.from_name(self.spec.nodes[o].dtype)) for o in self.spec.outputs]
