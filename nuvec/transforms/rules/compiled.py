"""Transform rules of the primitives of ``nuvec.primitives.compiled``."""

from __future__ import annotations

from ... import ops
import numpy as np
from ...core import dtypes as dt
from ...core.array import Array
from ...primitives.compiled import Compiled
from ...primitives.shape import broadcast_shape


def literal_array(dtype_name: str, bits: int) -> Array:
    """The 0-d array holding the literal ``bits`` of ``dtype_name``."""
    d = dt.from_name(dtype_name)
    raw = int(bits).to_bytes(d.size, "little")
    return Array.constant(np.frombuffer(raw, dtype=d.np).reshape(()).copy(), None, d)


def _compiled_expand(prim, inputs) -> list[Array]:
    """The outputs computed by the original operations (graph nodes, as uncompiled)."""
    vals: list[Array] = []
    lits: dict[int, Array] = {}
    for member, args in prim.members:
        xs = []
        for kind, i in args:
            if kind == "in":
                xs.append(inputs[i])
            elif kind == "node":
                xs.append(vals[i])
            else:
                if i not in lits:
                    lits[i] = literal_array(*prim.spec.constants[i])
                xs.append(lits[i])
        if len({x._shape for x in xs}) > 1:  # operands the kernel broadcasts
            shape = broadcast_shape([x._shape for x in xs], member.name)
            xs = [ops.broadcast_to(x, shape) for x in xs]
        vals.append(Array.make(member, xs))
    shape = broadcast_shape([x._shape for x in inputs], "compiled")
    outs = []
    for o in prim.spec.outputs:
        v = vals[o]
        outs.append(v if v._shape == shape else ops.broadcast_to(v, shape))
    return outs


EXPAND = {
    Compiled: _compiled_expand,
}
