"""Element-wise operations (MLX semantics: promotion, weak Python scalars, broadcasting).

>>> import nuvec as nv
>>> (nv.array([1, 2], dtype=nv.float16) * 2.0).dtype
nuvec.float16
>>> nv.divide(nv.array([1, 2]), 2).tolist()
[0.5, 1.0]
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..codegen.optable import OPS
from ..core import dtypes as dt
from ..core import shapeless
from ..core._array import binary_node
from ..core.array import Array
from ..core.device import current_stream, resolve_stream
from ..primitives.elementwise import PREDICATES, AsType, Binary, Select, Unary
from ..primitives.misc import StopGradient
from ._common import as_array, operands, scalar_operand
from .fills import full_like, zeros_like
from .shape import broadcast_arrays


def astype(a, dtype, *, stream=None) -> Array:
    """``a`` converted to ``dtype`` (no node when it already has it)."""
    if type(a) is Array and a._dtype is dtype:  # the ops' casts that change nothing
        return a
    a = as_array(a, "astype")
    if dtype is None:
        raise TypeError("astype: dtype must be a dtype, got None")
    try:
        d = dt.to_dtype(dtype)
    except (TypeError, ValueError) as e:
        raise type(e)(f"astype: {e}") from None
    if a._dtype == d:
        return a
    return Array.make(AsType(d), [a], resolve_stream(stream))


_REAL_ONLY = frozenset(o.name for o in OPS.values() if o.real_only)  # MLX refuses complex


def _unary(op: str, a, stream, *, floating: bool = False, kinds: str | None = None) -> Array:
    a = as_array(a, op)
    if kinds is not None and a._dtype.kind not in kinds:
        raise TypeError(f"{op}: not defined for {a._dtype.name} inputs")
    if a._dtype.kind == "c" and op in _REAL_ONLY:
        raise ValueError(f"{op}: complex inputs are not supported")
    if floating and a._dtype.kind not in "fc":
        a = astype(a, dt.float32)
    prim = _UNARY_PRIMS.get(op)
    if prim is None:
        prim = _UNARY_PRIMS[op] = Unary(op)
    return Array.make(prim, (a,), resolve_stream(stream))


_BINARY_PRIMS: dict[str, Binary] = {}
_UNARY_PRIMS: dict[str, Unary] = {}


def binary_primitive(op: str) -> Binary:
    """The one ``Binary`` primitive of ``op`` (shared by every node of that op)."""
    prim = _BINARY_PRIMS.get(op)
    if prim is None:
        prim = _BINARY_PRIMS[op] = Binary(op)
    return prim


def _binary(op: str, a, b, stream, *, result: str = "promote") -> Array:
    """``result``: "promote" (the promoted dtype), "float" (ints become float32),
    "bool" (logical: operands become bool), "integer" (ints and bools only)."""
    prim = _BINARY_PRIMS.get(op)
    if prim is None:
        prim = binary_primitive(op)
    ta, tb = type(a), type(b)
    if ta is Array and (result == "promote" or result == "float"):
        # Fast paths: two arrays of one dtype and shape need no promotion nor broadcast; nor
        # does an array with a Python scalar that takes the array's dtype (weak typing)
        if tb is Array:
            if (
                a._dtype is b._dtype
                and (result == "promote" or a._dtype.kind in "fc")
                and not ((a._tracer or b._tracer) and shapeless.active())
            ):
                out = binary_node(
                    prim,
                    a,
                    b,
                    dt.bool_ if op in PREDICATES else a._dtype,
                    current_stream() if stream is None else resolve_stream(stream),
                )
                if out is not None:
                    return out
        elif tb is float or tb is int:
            c = _weak_operand(b, a)
            if c is not None:
                return Array.make(
                    prim, (a, c), current_stream() if stream is None else resolve_stream(stream)
                )
    elif tb is Array and (ta is float or ta is int) and (result == "promote" or result == "float"):
        c = _weak_operand(a, b)
        if c is not None:
            return Array.make(
                prim, (c, b), current_stream() if stream is None else resolve_stream(stream)
            )
    if result == "bool":
        a, b = as_array(a, op), as_array(b, op)
        a, b = astype(a, dt.bool_), astype(b, dt.bool_)
    else:
        a, b = operands(a, b, op)
        if result == "float" and a._dtype.kind not in "fc":
            a, b = astype(a, dt.float32), astype(b, dt.float32)
        elif result == "integer" and a._dtype.kind not in "uib":
            raise ValueError(
                f"{op}: not defined for {a._dtype.name} inputs (integers or bool only)"
            )
    st = current_stream() if stream is None else resolve_stream(stream)
    if (a._tracer or b._tracer) and shapeless.active():
        # under a shapeless trace always: the operands may differ at a replay, and the
        # gradients must sum over the axes they broadcast there
        a, b = broadcast_arrays(a, b, name=op)
        return Array.make(prim, (a, b), st)
    out = binary_node(prim, a, b, dt.bool_ if op in PREDICATES else a._dtype, st)
    if out is None:  # broadcast_arrays raises the error that names the operation
        a, b = broadcast_arrays(a, b, name=op)
        out = Array.make(prim, (a, b), st)
    return out


def _weak_operand(v, like: Array) -> Array | None:
    """Python float or int ``v`` as an operand of ``like``'s dtype and shape where weak typing
    gives it ``like``'s dtype and nothing needs broadcasting (a floating ``like``), else None
    (the general path decides)."""
    if like._dtype.kind not in "fc" or (like._tracer and shapeless.active()):
        return None
    c = scalar_operand(v, like._dtype, like)
    return c if c._shape == like._shape else None


_FLOAT_UNARY: list[str] = []  # the public unary ops whose integer inputs become float32


def _make_unary(op: str) -> Callable[..., Array]:
    """The public function of a unary op, as its record in the op table describes it."""
    rec = OPS[op]
    floating = rec.inputs == "float"
    if floating:
        _FLOAT_UNARY.append(op)

    def f(a, /, *, stream=None) -> Array:
        return _unary(op, a, stream, floating=floating, kinds=rec.accepts)

    f.__name__ = f.__qualname__ = op
    f.__doc__ = rec.doc
    return f


def _make_binary(op: str) -> Callable[..., Array]:
    """The public function of a binary op, as its record in the op table describes it."""
    rec = OPS[op]
    result = rec.inputs

    def f(a, b, /, *, stream=None) -> Array:
        return _binary(op, a, b, stream, result=result)

    f.__name__ = f.__qualname__ = op
    f.__doc__ = rec.doc
    return f


sqrt = _make_unary("sqrt")
rsqrt = _make_unary("rsqrt")
reciprocal = _make_unary("reciprocal")
exp = _make_unary("exp")
expm1 = _make_unary("expm1")
log = _make_unary("log")
log1p = _make_unary("log1p")
log2 = _make_unary("log2")
log10 = _make_unary("log10")
sin = _make_unary("sin")
cos = _make_unary("cos")
tan = _make_unary("tan")
arcsin = _make_unary("arcsin")
arccos = _make_unary("arccos")
arctan = _make_unary("arctan")
sinh = _make_unary("sinh")
cosh = _make_unary("cosh")
tanh = _make_unary("tanh")
arcsinh = _make_unary("arcsinh")
arccosh = _make_unary("arccosh")
arctanh = _make_unary("arctanh")
sigmoid = _make_unary("sigmoid")
erf = _make_unary("erf")
erfinv = _make_unary("erfinv")

abs = _make_unary("abs")
negative = _make_unary("negative")
sign = _make_unary("sign")
square = _make_unary("square")
conjugate = _make_unary("conjugate")
conj = conjugate
bitwise_invert = _make_unary("bitwise_invert")


def floor(a, /, *, stream=None) -> Array:
    """Largest integer not above each element (integers are returned unchanged)."""
    a = as_array(a, "floor")
    if a._dtype.kind == "c":
        raise ValueError("floor: complex inputs are not supported")
    return a if a._dtype.kind in "uib" else _unary("floor", a, stream)


def ceil(a, /, *, stream=None) -> Array:
    """Smallest integer not below each element (integers are returned unchanged)."""
    a = as_array(a, "ceil")
    if a._dtype.kind == "c":
        raise ValueError("ceil: complex inputs are not supported")
    return a if a._dtype.kind in "uib" else _unary("ceil", a, stream)


def round(a, /, decimals: int = 0, *, stream=None) -> Array:
    """Rounds half to even, to ``decimals`` decimal places."""
    a = as_array(a, "round")
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise TypeError(f"round: decimals must be an int, got {type(decimals).__name__}")
    if a._dtype.kind in "uib":
        if decimals >= 0 or a._dtype.kind == "b":
            return a
        # to a multiple of 10**-decimals, half to even, in float32 as MLX
        s = float(10**-decimals)
        f = astype(a, dt.float32)
        return astype(multiply(_unary("round", divide(f, s), stream), s), a._dtype, stream=stream)
    if decimals == 0:
        return _unary("round", a, stream)
    s = 10.0**decimals
    return divide(_unary("round", multiply(a, s), stream), s)


def logical_not(a, /, *, stream=None) -> Array:
    """Element-wise NOT (inputs become bool)."""
    return _unary("logical_not", astype(as_array(a, "logical_not"), dt.bool_), stream)


def _predicate(op: str, default: bool):
    def f(a, /, *, stream=None) -> Array:
        a = as_array(a, op)
        if a._dtype.kind not in "fc":
            return full_like(a, default, dt.bool_)
        if a._dtype.kind == "c" and op in ("isposinf", "isneginf"):
            # MLX: equality with +inf or -inf (a complex number equals it when its real part
            # does and its imaginary part is zero)
            return equal(a, float("inf") if op == "isposinf" else float("-inf"), stream=stream)
        return Array.make(Unary(op), [a], resolve_stream(stream))

    f.__name__ = f.__qualname__ = op
    f.__doc__ = f"Element-wise {op} (always {default} for integers)."
    return f


isnan = _predicate("isnan", False)
isinf = _predicate("isinf", False)
isposinf = _predicate("isposinf", False)
isneginf = _predicate("isneginf", False)
isfinite = _predicate("isfinite", True)


def real(a, /, *, stream=None) -> Array:
    """Real part (the array itself for real dtypes)."""
    a = as_array(a, "real")
    return _unary("real", a, stream) if a._dtype.kind == "c" else a


def imag(a, /, *, stream=None) -> Array:
    """Imaginary part (zeros for real dtypes)."""
    a = as_array(a, "imag")
    if a._dtype.kind != "c":
        return zeros_like(a)
    return _unary("imag", a, stream)


add = _make_binary("add")
subtract = _make_binary("subtract")
multiply = _make_binary("multiply")
divide = _make_binary("divide")
floor_divide = _make_binary("floor_divide")
_remainder = _make_binary("remainder")


def remainder(a, b, /, *, stream=None) -> Array:
    """Element-wise remainder with the divisor's sign (real inputs only, as MLX)."""
    if any(
        isinstance(x, complex) or (isinstance(x, Array) and x._dtype.kind == "c") for x in (a, b)
    ):
        raise ValueError("remainder: complex inputs are not supported")
    return _remainder(a, b, stream=stream)


_power = _make_binary("power")


def power(a, b, /, *, stream=None) -> Array:
    """Element-wise ``a ** b``; for signed integers a negative exponent gives 0 (MLX).

    >>> import nuvec as nv
    >>> nv.power(nv.array([2, 3]), nv.array([3, -1])).tolist()
    [8, 0]
    """
    out = _power(a, b, stream=stream)
    if out._dtype.kind == "i":
        exponent = b if isinstance(b, Array) else as_array(b, "power")
        if exponent._dtype.kind == "i" or isinstance(b, int):
            out = where(less(exponent, 0), 0, out, stream=stream)
    return out


maximum = _make_binary("maximum")
minimum = _make_binary("minimum")
equal = _make_binary("equal")
not_equal = _make_binary("not_equal")
less = _make_binary("less")
less_equal = _make_binary("less_equal")
greater = _make_binary("greater")
greater_equal = _make_binary("greater_equal")
logical_and = _make_binary("logical_and")
logical_or = _make_binary("logical_or")


def _complex_operand(x) -> bool:
    return isinstance(x, complex) or (isinstance(x, Array) and x._dtype.kind == "c")


def logaddexp(a, b, /, *, stream=None) -> Array:
    """``log(exp(a) + exp(b))``, computed stably (complex inputs too, as MLX:
    ``max + log1p(exp(min - max))`` with NumPy's ordering of complex numbers)."""
    if not (_complex_operand(a) or _complex_operand(b)):
        return _binary("logaddexp", a, b, stream, result="float")
    a, b = operands(a, b, "logaddexp")
    hi, lo = maximum(a, b, stream=stream), minimum(a, b, stream=stream)
    out = hi + _unary("log1p", _unary("exp", lo - hi, stream), stream)
    infinite = logical_or(equal(lo, -math.inf), equal(hi, math.inf), stream=stream)
    return where(infinite, hi, out, stream=stream)


def arctan2(a, b, /, *, stream=None) -> Array:
    """Element-wise arctan(a / b) in the right quadrant (real inputs only, as MLX)."""
    if _complex_operand(a) or _complex_operand(b):
        raise ValueError("arctan2: complex inputs are not supported")
    return _binary("arctan2", a, b, stream, result="float")


bitwise_and = _make_binary("bitwise_and")
bitwise_or = _make_binary("bitwise_or")
bitwise_xor = _make_binary("bitwise_xor")
left_shift = _make_binary("left_shift")
right_shift = _make_binary("right_shift")


def divmod(a, b, /, *, stream=None) -> tuple[Array, Array]:
    """``(floor_divide(a, b), remainder(a, b))``. Both have zero derivatives, as MLX's
    divmod (one primitive whose vjp and jvp are zeros)."""
    a, b = (stop_gradient(x, stream=stream) if isinstance(x, Array) else x for x in (a, b))
    return floor_divide(a, b, stream=stream), remainder(a, b, stream=stream)


def where(condition, x, y, /, *, stream=None) -> Array:
    """Elements of ``x`` where ``condition`` holds, else of ``y`` (all broadcast).

    >>> import nuvec as nv
    >>> nv.where(nv.array([True, False]), 1, 2).tolist()
    [1, 2]
    """
    c = astype(as_array(condition, "where"), dt.bool_)
    x, y = operands(x, y, "where")
    c, x, y = broadcast_arrays(c, x, y, name="where")
    return Array.make(Select(), [c, x, y], resolve_stream(stream))


def clip(a, /, a_min, a_max, *, stream=None) -> Array:
    """Clips ``a`` to ``[a_min, a_max]`` (either may be None)."""
    if a_min is None and a_max is None:
        raise ValueError("clip: a_min and a_max cannot both be None")
    out = as_array(a, "clip")
    for what, bound in (("a_min", a_min), ("a_max", a_max)):
        if bound is not None and not isinstance(bound, (Array, int, float, np.generic, np.ndarray)):
            raise TypeError(
                f"clip: {what} must be an array, a number or None, got {type(bound).__name__}"
            )
    if a_min is not None:
        out = maximum(out, a_min, stream=stream)
    if a_max is not None:
        out = minimum(out, a_max, stream=stream)
    return out


def nan_to_num(
    a, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None, *, stream=None
) -> Array:
    """Replaces NaN and infinities with finite numbers (the dtype's extremes by default)."""
    a = as_array(a, "nan_to_num")
    if a._dtype.kind not in "f":
        return a
    info = dt.finfo(a._dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = where(isnan(a), nan, a)
    out = where(isposinf(a), posinf, out)
    return where(isneginf(a), neginf, out, stream=stream)


def degrees(a, /, *, stream=None) -> Array:
    """Radians to degrees."""
    return multiply(_float(a), 180.0 / 3.141592653589793, stream=stream)


def radians(a, /, *, stream=None) -> Array:
    """Degrees to radians."""
    return multiply(_float(a), 3.141592653589793 / 180.0, stream=stream)


def _float(a) -> Array:
    a = as_array(a)
    return a if a._dtype.kind in "fc" else astype(a, dt.float32)


def stop_gradient(a, /, *, stream=None) -> Array:
    """``a`` with no gradient flowing back through it."""

    return Array.make(StopGradient(), [as_array(a, "stop_gradient")], resolve_stream(stream))


__all__ = [
    "sqrt",
    "rsqrt",
    "reciprocal",
    "exp",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "arcsinh",
    "arccosh",
    "arctanh",
    "sigmoid",
    "erf",
    "erfinv",
    "astype",
    "abs",
    "negative",
    "sign",
    "square",
    "conjugate",
    "conj",
    "bitwise_invert",
    "floor",
    "ceil",
    "round",
    "logical_not",
    "isnan",
    "isinf",
    "isposinf",
    "isneginf",
    "isfinite",
    "real",
    "imag",
    "add",
    "subtract",
    "multiply",
    "divide",
    "floor_divide",
    "remainder",
    "power",
    "maximum",
    "minimum",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "logical_and",
    "logical_or",
    "logaddexp",
    "arctan2",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "left_shift",
    "right_shift",
    "divmod",
    "where",
    "clip",
    "nan_to_num",
    "degrees",
    "radians",
    "stop_gradient",
]
