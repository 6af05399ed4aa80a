"""Element-wise primitives on the CPU: one generated kernel per op (a fused group of one);
the op table's NumPy stand-ins where the engine lacks a dtype."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ...codegen.optable import OPS
from ...primitives.elementwise import AsType, Binary, Select, Unary
from ...core._graph import donatable_input
from ..registry import register, register_specialized
from ._allocator import Buffer

try:
    from ...codegen.ir import KernelSpec
    from . import kernels as _kernels
    from ...codegen.ops import supports as _supports
except ImportError:  # the engine is not built yet: NumPy ufuncs stand in
    _kernels = None


_SPECS: dict[tuple, object] = {}  # (op, output dtype, input dtypes) -> KernelSpec, or None
_KERNELS: dict[tuple, object] = {}  # the same key -> the spec's Kernel, or None


def _key(op: str, node) -> tuple:
    # dtype names: a str caches its hash, a Dtype's hash runs Python code
    ins = node._inputs
    if len(ins) == 2:
        return (op, node._dtype.name, ins[0]._dtype.name, ins[1]._dtype.name)
    if len(ins) == 1:
        return (op, node._dtype.name, ins[0]._dtype.name)
    return (op, node._dtype.name, *[x._dtype.name for x in ins])


def _spec(op: str, node):
    """The single-op KernelSpec of ``node``'s call, or None where the engine lacks it."""
    if _kernels is None:
        return None
    key = _key(op, node)
    spec = _SPECS.get(key, False)
    if spec is False:
        names = tuple(x._dtype.name for x in node._inputs)
        spec = KernelSpec.single(op, names, node._dtype.name) if _supports(op, names[-1]) else None
        _SPECS[key] = spec
    return spec


def _engine(op: str, ins: list[np.ndarray], node) -> np.ndarray | None:
    """The op through the generated kernel, or None where the engine does not cover it."""
    key = _key(op, node)
    kernel = _KERNELS.get(key, False)
    if kernel is False:
        spec = _spec(op, node)
        kernel = None if spec is None else _kernels.get_kernel(spec)
        _KERNELS[key] = kernel
    if kernel is None:
        return None
    # the output over an input's buffer where only this node refers to that input (MLX's
    # donation): a single op reads each element once, before writing it
    d = donatable_input(node, ins, Buffer)
    if d is not None:
        return kernel(ins, node._shape, [d])[0]
    return kernel(ins, node._shape)[0]


def _specialize(op=None):
    """A compiled step's element-wise op: its kernel called directly, the spec looked up
    once (``registry.register_specialized``)."""

    def make(prim, node):
        spec = _spec(op or prim.op, node)
        if spec is None:
            return None
        try:
            kernel = _kernels.get_kernel(spec)
        except Exception:  # no compiler for a JIT-only op: the generic path reports it
            return None
        shape = node._shape

        def run(prim, ins, node):
            return kernel(ins, shape)

        run.kernel = kernel  # type: ignore[attr-defined]  # the CPU executable calls it itself
        return run

    return make


register_specialized(Unary)(_specialize())
register_specialized(Binary)(_specialize())
register_specialized(Select)(_specialize("select"))
register_specialized(AsType)(_specialize("astype"))


@register(Unary)
def _unary(prim, ins, node):
    # the cached kernel's path inline (eager ops pay each Python call per node)
    kernel = _KERNELS.get((prim.op, node._dtype.name, node._inputs[0]._dtype.name))
    if kernel is not None:
        d = donatable_input(node, ins, Buffer)
        return kernel(ins, node._shape, None if d is None else [d])
    out = _engine(prim.op, ins, node)
    if out is None:
        out = _numpy_unary(prim.op, ins[0], node)
    return [out]


@register(Binary)
def _binary(prim, ins, node):
    x, y = node._inputs
    kernel = _KERNELS.get((prim.op, node._dtype.name, x._dtype.name, y._dtype.name))
    x = y = None  # (donatable_input counts the references to the inputs)
    if kernel is not None:
        d = donatable_input(node, ins, Buffer)
        return kernel(ins, node._shape, None if d is None else [d])
    out = _engine(prim.op, ins, node)
    if out is None:
        out = _numpy_binary(prim.op, ins[0], ins[1], node)
    return [out]


@register(Select)
def _select(prim, ins, node):
    out = _engine("select", ins, node)
    if out is None:
        out = _stand_in("select")(ins[0], ins[1], ins[2])
    return [out]


@register(AsType)
def _astype(prim, ins, node):
    out = _engine("astype", ins, node)
    if out is None:
        out = ins[0].astype(node._dtype.np)
    return [out]


def _kernel_for(prim, node):
    """The kernel ``_unary`` / ``_binary`` call for ``node`` on host data (with a donated
    output where ``donatable_input`` gives one): the Kernel, False where they use NumPy, or
    None before the first such node ran (``core._graph.run_nodes`` then calls them, and
    calls the kernel itself afterwards)."""
    k = _KERNELS.get(_key(prim.op, node), False)
    if k is False:
        return None
    return False if k is None else k


for _impl in (_unary, _binary):
    _impl.kernel_for = _kernel_for  # type: ignore[attr-defined]
    _impl.donation_base = Buffer  # type: ignore[attr-defined]


# -- NumPy stand-ins (used only where the engine does not cover an op) ---------------------
def _special():
    import scipy.special  # only in this stand-in path

    return scipy.special


_STAND_INS: dict[str, Callable] = {}


def _stand_in(op: str):
    f = _STAND_INS.get(op)
    if f is None:
        f = _STAND_INS[op] = OPS[op].stand_in(np, _special)
    return f


def _compute_dtype(x: np.ndarray):
    return (
        np.float32
        if x.dtype.itemsize == 2 and x.dtype.kind in "fV" or x.dtype.name == "bfloat16"
        else None
    )


def _numpy_unary(op, x, node):
    wide = _compute_dtype(x)
    f = _stand_in(op)
    with np.errstate(all="ignore"):
        r = f(x.astype(wide) if wide else x)
    return np.asarray(r).astype(node._dtype.np, copy=False)


def _numpy_binary(op, a, b, node):
    wide = _compute_dtype(a)
    if wide:
        a, b = a.astype(wide), b.astype(wide)
    with np.errstate(all="ignore"):
        r = _stand_in(op)(a, b)
    return np.asarray(r).astype(node._dtype.np, copy=False)
