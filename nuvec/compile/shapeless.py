"""Shapeless compilation: a draft traced on one set of shapes, made replayable on any shapes
of the same ranks.

The operations broadcast an element-wise operation's operands to the result's shape with
broadcast nodes whose parameters hold the traced shape. A shapeless replay broadcasts the
operands again from their own shapes, so each element-wise step reads the sources of its
broadcast operands when those broadcast to its traced result shape: a broadcast step, a
constant that nuvec made of a traced shape (``core.shapeless.derive``: a broadcast of another
constant, or one value in every element, which becomes a 0-d constant). A user's constant keeps
its shape. Steps left without a use are dropped. A step that the trace made with a size in
its parameters (which may have come from a traced shape) fails the trace with an error naming
it; one made before the trace (a module's lazy parameters) replays as it is.

    make_shapeless(draft)    # rewrites draft.steps, or raises ValueError
"""

from __future__ import annotations

import numpy as np

from ..core import shapeless as core_shapeless
from ..core.array import Array
from ..primitives.shape import Broadcast, broadcast_shape
from .draft import CONST, Draft


def make_shapeless(draft: Draft, name: str = "function", origins: dict | None = None) -> None:
    prod = draft.producers()
    scalar_const: dict[int, int] = {}

    def source(v: int, operands: set | None) -> int:
        """What ``v`` broadcasts from; ``operands``: the step's operands' sources (None: any
        broadcast is seen through)."""
        while True:
            j = prod.get(v)
            if j is not None and type(draft.steps[j].prim) is Broadcast:
                st = draft.steps[j]
                # a broadcast against other arrays is the operation's own only when they
                # are its operands too; a guarded one (a target from the traced shape) stays
                if st.prim.expect is None and (
                    operands is None or all(source(o, None) in operands for o in st.args[1:])
                ):
                    v = st.args[0]
                    continue
                return v
            if draft.kind[v] == CONST:
                # only a constant nuvec made of a traced shape follows the replayed shapes; a
                # user's (nv.ones((4, 3)), a closure's array) keeps its own
                if not core_shapeless.derived(draft.consts[draft.const_index[v]]):
                    return v
                s = draft.broadcast_source.get(v)
                if s is not None:
                    v = s
                    continue
                if draft.shape[v] != () and v in draft.scalar_bytes:
                    if v not in scalar_const:
                        c = draft.consts[draft.const_index[v]]
                        data = np.frombuffer(draft.scalar_bytes[v], dtype=c._dtype.np)
                        a = Array.constant(data.reshape(()).copy(), c._stream, c._dtype)
                        nv_ = draft.add_const(a)
                        draft.scalar_bytes[nv_] = draft.scalar_bytes[v]
                        scalar_const[v] = nv_
                    return scalar_const[v]
            return v

    for s in draft.steps:
        if s.prim.elementwise:
            plain = {source(a, None) for a in s.args}
            srcs = tuple(source(a, plain) for a in s.args)
            # Only an operation's own broadcast is re-derived: the sources must broadcast to
            # the traced result shape (an explicit broadcast_to to a larger shape stays, and
            # fails below, naming it).
            if (
                broadcast_shape([draft.shape[v] for v in srcs], "compiled")
                == draft.shape[s.outs[0]]
            ):
                s.args = srcs
    draft.drop_unused()
    for s in draft.steps:
        # a node made before the trace (``origins`` lacks it) holds no traced size
        if getattr(s.prim, "fixes_shape", False) and (origins is None or id(s.node) in origins):
            params = s.prim.params
            where = (origins or {}).get(id(s.node))
            raise ValueError(
                f"nv.compile(shapeless=True) of {name}: the operation '{s.prim.name}'"
                + (f" (at {where})" if where else "")
                + f" has a traced size in its parameters {params!r}, so it cannot be replayed "
                "on other shapes; compile this function without shapeless=True (or move the "
                f"'{s.prim.name}' out of it)"
            )
