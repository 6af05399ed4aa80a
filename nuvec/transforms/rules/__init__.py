"""The primitives' transform rules, in tables keyed by primitive class (JAX's rule tables).

A primitive (``nuvec.primitives``) is its identity, its shape and dtype inference and, through
the backends, its evaluation; what vjp, jvp and vmap do with it is here, one module per family,
written with the public operations (so a rule's result is a graph that can be transformed again).
Each family module gives its rules as ``VJP``, ``JVP``, ``VMAP`` (and, for a primitive that
stands for a composite, ``EXPAND``: the composite as graph nodes); a class without a rule of its
own takes its nearest base class's.

Signatures: ``vjp(prim, primals, cotangents, argnums, outputs) -> list`` (one cotangent per
argnum), ``jvp(prim, primals, tangents, argnums) -> list`` (one tangent per output),
``vmap(prim, inputs, axes) -> (outputs, out_axes)``, ``expand(prim, inputs) -> list``.
"""

from __future__ import annotations

from typing import Callable

from . import (
    bitcast,
    compiled,
    custom_kernel,
    depends,
    distributed,
    elementwise,
    fft,
    indexing,
    linalg,
    misc,
    norm,
    quantized,
    random,
    reduction,
    shape,
    sort,
)

_FAMILIES = (
    bitcast,
    compiled,
    custom_kernel,
    depends,
    distributed,
    elementwise,
    fft,
    indexing,
    linalg,
    misc,
    norm,
    quantized,
    random,
    reduction,
    shape,
    sort,
)


def _table(name: str) -> dict[type, Callable]:
    table: dict[type, Callable] = {}
    for family in _FAMILIES:
        table.update(getattr(family, name, {}))
    return table


VJP = _table("VJP")
JVP = _table("JVP")
VMAP = _table("VMAP")
EXPAND = _table("EXPAND")


def find(table: dict[type, Callable], prim) -> Callable | None:
    """The rule of ``table`` for ``prim``: its class's, else its nearest base class's; None
    where there is none."""
    for cls in type(prim).__mro__:
        rule = table.get(cls)
        if rule is not None:
            return rule
    return None
