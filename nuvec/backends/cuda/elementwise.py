"""Element-wise primitives on the GPU: the generator's CUDA kernels (a fused group of one).

The same per-element code as the CPU's C kernels (shared math library, each value rounded to
its dtype, no contraction), so float16 / bfloat16 / float32 / integer / bool results equal the
CPU's bit for bit, and so do float64's transcendental functions (nuvec's own, nv_math64.h).
An op the engine does not cover for a dtype (none of those the ops make today) falls back to
its CuPy stand-in in the op table.
"""

from __future__ import annotations

from typing import Callable

import cupy as cp

from ...codegen.ir import KernelSpec
from ...codegen.optable import OPS
from ...codegen.ops import supports
from ...primitives.compiled import Compiled
from ...primitives.elementwise import AsType, Binary, Select, Unary
from . import kernels
from .runtime import computable, finish, gpu

_SPECS: dict[tuple, KernelSpec | None] = {}


def _spec(op: str, node) -> KernelSpec | None:
    key = (op, tuple(x._dtype.name for x in node._inputs), node._dtype.name)
    spec = _SPECS.get(key, False)
    if spec is False:
        value = key[1][1] if op == "select" else key[1][0]
        spec = KernelSpec.single(op, key[1], key[2]) if supports(op, value, "cuda") else None
        _SPECS[key] = spec
    return spec


def _engine(op: str, ins: list, node):
    spec = _spec(op, node)
    if spec is None:
        return _cupy(op, ins, node)
    return kernels.run(spec, ins, node._shape)[0]


def _special():
    import cupyx.scipy.special

    return cupyx.scipy.special


_STAND_INS: dict[str, Callable] = {}


def _cupy(op: str, ins: list, node):
    """The op table's CuPy stand-in for an op the engine lacks for this dtype."""
    xs = [computable(x, a._dtype) for x, a in zip(ins, node._inputs)]
    f = _STAND_INS.get(op)
    if f is None:
        f = _STAND_INS[op] = OPS[op].stand_in(cp, _special, cupy=True)
    return finish(f(*xs), node._dtype)


@gpu(Unary)
def _unary(prim, ins, node):
    return [_engine(prim.op, ins, node)]


@gpu(Binary)
def _binary(prim, ins, node):
    return [_engine(prim.op, ins, node)]


@gpu(Select)
def _select(prim, ins, node):
    return [_engine("select", ins, node)]


@gpu(AsType)
def _astype(prim, ins, node):
    return [_engine("astype", ins, node)]


@gpu(Compiled)
def _compiled(prim, ins, node):
    return kernels.run(prim.spec, ins, node._shape)
