"""Element-wise primitives on the CPU: one generated kernel per op (a fused group of one)."""

from __future__ import annotations

import numpy as np

from ...primitives.elementwise import AsType, Binary, Select, Unary
from ..registry import register, register_specialized

try:
    from ...codegen.ir import KernelSpec
    from . import kernels as _kernels
    from ...codegen.ops import supports as _supports
except ImportError:  # the engine is not built yet: NumPy ufuncs stand in
    _kernels = None


_SPECS: dict[tuple, object] = {}  # (op, input dtypes, output dtype) -> KernelSpec, or None


def _spec(op: str, node):
    """The single-op KernelSpec of ``node``'s call, or None where the engine lacks it."""
    if _kernels is None:
        return None
    key = (op, tuple(x._dtype.name for x in node._inputs), node._dtype.name)
    spec = _SPECS.get(key, False)
    if spec is False:
        spec = KernelSpec.single(op, key[1], key[2]) if _supports(op, key[1][-1]) else None
        _SPECS[key] = spec
    return spec


def _engine(op: str, ins: list[np.ndarray], node) -> np.ndarray | None:
    """The op through the generated kernel, or None where the engine does not cover it."""
    spec = _spec(op, node)
    if spec is None:
        return None
    return _kernels.run(spec, ins, node._shape)[0]


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

        return run

    return make


register_specialized(Unary)(_specialize())
register_specialized(Binary)(_specialize())
register_specialized(Select)(_specialize("select"))
register_specialized(AsType)(_specialize("astype"))


@register(Unary)
def _unary(prim, ins, node):
    x = ins[0]
    out = _engine(prim.op, ins, node)
    if out is None:
        out = _numpy_unary(prim.op, x, node)
    return [out]


@register(Binary)
def _binary(prim, ins, node):
    out = _engine(prim.op, ins, node)
    if out is None:
        out = _numpy_binary(prim.op, ins[0], ins[1], node)
    return [out]


@register(Select)
def _select(prim, ins, node):
    out = _engine("select", ins, node)
    if out is None:
        out = np.where(ins[0], ins[1], ins[2])
    return [out]


@register(AsType)
def _astype(prim, ins, node):
    out = _engine("astype", ins, node)
    if out is None:
        out = ins[0].astype(node._dtype.np)
    return [out]


# -- NumPy stand-ins (used only where the engine does not cover an op) ---------------------
_UNARY = {
    "abs": np.abs,
    "negative": np.negative,
    "sign": np.sign,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "square": np.square,
    "reciprocal": lambda x: 1 / x,
    "exp": np.exp,
    "expm1": np.expm1,
    "log": np.log,
    "log1p": np.log1p,
    "log2": np.log2,
    "log10": np.log10,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "arcsin": np.arcsin,
    "arccos": np.arccos,
    "arctan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "arcsinh": np.arcsinh,
    "arccosh": np.arccosh,
    "arctanh": np.arctanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "logical_not": np.logical_not,
    "bitwise_invert": np.invert,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isposinf": np.isposinf,
    "isneginf": np.isneginf,
    "isfinite": np.isfinite,
    "real": np.real,
    "imag": np.imag,
    "conjugate": np.conjugate,
    "copy": np.copy,
}
_BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "floor_divide": np.floor_divide,
    "remainder": np.remainder,
    "power": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logaddexp": np.logaddexp,
    "arctan2": np.arctan2,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift,
    "right_shift": np.right_shift,
}


def _compute_dtype(x: np.ndarray):
    return (
        np.float32
        if x.dtype.itemsize == 2 and x.dtype.kind in "fV" or x.dtype.name == "bfloat16"
        else None
    )


def _numpy_unary(op, x, node):
    wide = _compute_dtype(x)
    if op == "erf" or op == "erfinv":
        import scipy.special as sp  # only in this stand-in path

        f = sp.erf if op == "erf" else sp.erfinv
    else:
        f = _UNARY[op]
    with np.errstate(all="ignore"):
        r = f(x.astype(wide) if wide else x)
    return np.asarray(r).astype(node._dtype.np, copy=False)


def _numpy_binary(op, a, b, node):
    wide = _compute_dtype(a)
    if wide:
        a, b = a.astype(wide), b.astype(wide)
    with np.errstate(all="ignore"):
        r = _BINARY[op](a, b)
    return np.asarray(r).astype(node._dtype.np, copy=False)
