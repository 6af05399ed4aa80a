"""The fused element-wise kernel that ``nv.compile`` makes from a chain of element-wise steps.

``Compiled(spec, members)`` runs one generated kernel (``spec``, a ``codegen.ir.KernelSpec``)
over its inputs, which broadcast to one shape (the result's). ``members`` describes the
original operations (primitive and arguments), so that a transform meeting a fused node
(grad, jvp, vmap of a graph that holds one) re-expands it into those operations and applies
their rules.

    prim = Compiled(spec, members)
    out, = Array.make_multi(prim, [x, y])     # or Array.make for one output

A member argument is ``("in", i)`` (kernel input i), ``("node", j)`` (member j's value) or
``("const", k)`` (the literal ``spec.constants[k]``).
"""

from __future__ import annotations

import numpy as np

from ..core import dtypes as dt
from ..core.array import Array
from ._common import Expanding
from .shape import broadcast_shape


def literal_array(dtype_name: str, bits: int) -> Array:
    """The 0-d array holding the literal ``bits`` of ``dtype_name``."""
    d = dt.from_name(dtype_name)
    raw = int(bits).to_bytes(d.size, "little")
    return Array.constant(np.frombuffer(raw, dtype=d.np).reshape(()).copy(), None, d)


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

    # -- re-expansion: the original operations, for transforms --------------------------------
    def expand(self, inputs) -> list[Array]:
        """The outputs computed by the original operations (graph nodes, as uncompiled)."""
        from .. import ops

        vals: list[Array] = []
        lits: dict[int, Array] = {}
        for prim, args in self.members:
            xs = []
            for kind, i in args:
                if kind == "in":
                    xs.append(inputs[i])
                elif kind == "node":
                    xs.append(vals[i])
                else:
                    if i not in lits:
                        lits[i] = literal_array(*self.spec.constants[i])
                    xs.append(lits[i])
            if len({x._shape for x in xs}) > 1:  # operands the kernel broadcasts
                shape = broadcast_shape([x._shape for x in xs], prim.name)
                xs = [ops.broadcast_to(x, shape) for x in xs]
            vals.append(Array.make(prim, xs))
        shape = broadcast_shape([x._shape for x in inputs], "compiled")
        outs = []
        for o in self.spec.outputs:
            v = vals[o]
            outs.append(v if v._shape == shape else ops.broadcast_to(v, shape))
        return outs

    def vjp(self, primals, cotangents, argnums, outputs):
        n = len(primals)
        return super().vjp(primals, cotangents, [i for i in argnums if i < n], outputs)
