"""Transform rules of the primitives of ``nuvec.primitives.random``."""

from __future__ import annotations

from ... import ops
from ...core.array import Array
from ...primitives.random import RandomBits


def _random_bits_vjp(prim, primals, cotangents, argnums, outputs):
    return [None for _ in argnums]  # integer output: no gradient


def _random_bits_jvp(prim, primals, tangents, argnums):
    return [None]


def _random_bits_vmap(prim, inputs, axes):
    (key,), (ax,) = inputs, axes
    if ax is None:
        return [Array.make(prim, [key])], [None]
    key = ops.moveaxis(key, ax, 0) if ax != 0 else key
    return [Array.make(prim, [key])], [0]


VJP = {
    RandomBits: _random_bits_vjp,
}
JVP = {
    RandomBits: _random_bits_jvp,
}
VMAP = {
    RandomBits: _random_bits_vmap,
}
