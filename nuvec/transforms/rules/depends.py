"""Transform rules of the primitives of ``nuvec.primitives.depends``."""

from __future__ import annotations

from ... import ops
from ...core.array import Array
from ...primitives.depends import Depends


def _depends_vjp(prim, primals, cotangents, argnums, outputs):
    out = []
    for k in argnums:
        c = cotangents[k] if k < prim.n else None
        out.append(c if c is not None else ops.zeros_like(primals[k]))
    return out


def _depends_jvp(prim, primals, tangents, argnums):
    given = dict(zip(argnums, tangents))
    return [given[i] if i in given else ops.zeros_like(primals[i]) for i in range(prim.n)]


def _depends_vmap(prim, inputs, axes):
    return Array.make_multi(prim, inputs), list(axes[: prim.n])


VJP = {
    Depends: _depends_vjp,
}
JVP = {
    Depends: _depends_jvp,
}
VMAP = {
    Depends: _depends_vmap,
}
