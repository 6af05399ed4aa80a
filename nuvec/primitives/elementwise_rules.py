"""Derivative rules of the element-wise primitives (called by Unary, Binary, Select, AsType).

Each rule is written with public ops, so its result is a graph that can itself be
differentiated (higher-order gradients), batched and compiled. For complex inputs the rules
follow MLX's convention: ``vjp(g) = g * conj(f'(x))`` for a holomorphic ``f``, so the
gradient of a real loss is ``dL/dRe(z) + i dL/dIm(z)``.

The operands of a Binary primitive share one shape (the ops broadcast first), so no rule here
reduces: the Broadcast primitive's own rule sums the cotangent back.
"""

from __future__ import annotations

import math

from .. import ops
from ._common import conj

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0


def _derivative(op: str, x, out):
    """f'(x) for a differentiable unary op, from its input and output."""
    if op == "sqrt":
        return ops.reciprocal(out * 2.0)
    if op == "rsqrt":
        return out * -0.5 / x
    if op == "reciprocal":
        return -ops.square(out)
    if op == "exp":
        return out
    if op == "expm1":
        return out + 1.0
    if op == "log":
        return ops.reciprocal(x)
    if op == "log1p":
        return ops.reciprocal(x + 1.0)
    if op == "log2":
        return ops.reciprocal(x * _LN2)
    if op == "log10":
        return ops.reciprocal(x * _LN10)
    if op == "sin":
        return ops.cos(x)
    if op == "cos":
        return -ops.sin(x)
    if op == "tan":
        return ops.square(out) + 1.0
    if op == "arcsin":
        return ops.rsqrt(1.0 - ops.square(x))
    if op == "arccos":
        return -ops.rsqrt(1.0 - ops.square(x))
    if op == "arctan":
        return ops.reciprocal(ops.square(x) + 1.0)
    if op == "sinh":
        return ops.cosh(x)
    if op == "cosh":
        return ops.sinh(x)
    if op == "tanh":
        return 1.0 - ops.square(out)
    if op == "arcsinh":
        return ops.rsqrt(ops.square(x) + 1.0)
    if op == "arccosh":
        return ops.rsqrt(ops.square(x) - 1.0)
    if op == "arctanh":
        return ops.reciprocal(1.0 - ops.square(x))
    if op == "sigmoid":
        return out * (1.0 - out)
    if op == "erf":
        return ops.exp(-ops.square(x)) * _TWO_OVER_SQRT_PI
    if op == "erfinv":
        return ops.exp(ops.square(out)) * _SQRT_PI_OVER_TWO
    if op == "abs":
        return ops.sign(x)
    if op == "square":
        return x * 2.0
    raise NotImplementedError(f"{op}: no derivative rule")


#: Unary ops whose derivative is zero almost everywhere (their primitives are marked
#: non-differentiable, so transforms skip them; listed for the sweep tests).
ZERO_DERIVATIVE_UNARY = frozenset({"floor", "ceil", "round", "sign"})


def _complex(g):
    from ..core import dtypes as dt

    return ops.astype(g, dt.complex64)


def unary_vjp(op: str, x, g, out) -> list:
    """``[cotangent of x]`` for ``out = op(x)`` given the output cotangent ``g``."""
    if op == "negative":
        return [-g]
    if op == "conjugate":
        return [ops.conjugate(g)]
    if op == "copy":
        return [g]
    if op == "real":  # complex -> float: the cotangent enters the real part
        return [_complex(g)]
    if op == "imag":  # adjoint of dz -> Im(dz)
        return [_complex(g) * complex(0.0, 1.0)]
    if op == "abs" and x._dtype.kind == "c":
        return [_complex(g) * x / _complex(out)]
    return [g * conj(_derivative(op, x, out))]


def unary_jvp(op: str, x, t) -> list:
    """``[tangent of op(x)]`` given the input tangent ``t``."""
    if op == "negative":
        return [-t]
    if op == "conjugate":
        return [ops.conjugate(t)]
    if op == "copy":
        return [t]
    if op == "real":
        return [ops.real(t)]
    if op == "imag":
        return [ops.imag(t)]
    if op == "abs" and x._dtype.kind == "c":
        return [ops.real(ops.conjugate(x) * t) / ops.abs(x)]
    # rules that use the output recompute it here (the forward walk does not pass it)
    needs_out = op in (
        "sqrt",
        "rsqrt",
        "reciprocal",
        "exp",
        "expm1",
        "tan",
        "tanh",
        "sigmoid",
        "erfinv",
    )
    out = getattr(ops, op)(x) if needs_out else None
    return [t * _derivative(op, x, out)]


def _binary_partials(op: str, a, b, out):
    """(d out/d a, d out/d b) for a differentiable binary op, or None where a partial is the
    identity (saves a multiply)."""
    if op == "add":
        return None, None
    if op == "subtract":
        return None, -1.0
    if op == "multiply":
        return b, a
    if op == "divide":
        return ops.reciprocal(b), -out / b
    if op == "power":
        # guards keep 0 ** 0 and 0 ** b (b > 0) finite, as the limits are
        da = ops.where(b == 0, 0.0, b * ops.power(a, b - 1.0))
        db = ops.where(a == 0, 0.0, out * ops.log(ops.where(a == 0, 1.0, a)))
        return da, db
    if op in ("maximum", "minimum"):
        first = (a > b) if op == "maximum" else (a < b)
        tie = a == b
        da = ops.where(first, 1.0, ops.where(tie, 0.5, 0.0))
        return ops.astype(da, a._dtype), 1.0 - ops.astype(da, a._dtype)
    if op == "logaddexp":
        return ops.exp(a - out), ops.exp(b - out)
    if op == "arctan2":
        r = ops.reciprocal(ops.square(a) + ops.square(b))
        return b * r, -a * r
    if op == "remainder":
        return None, -ops.floor(a / b)
    if op == "floor_divide":
        return 0.0, 0.0
    raise NotImplementedError(f"{op}: no derivative rule")


def _scale(g, p):
    if p is None:
        return g
    if isinstance(p, float):
        if p == 0.0:
            return ops.zeros_like(g)
        return -g if p == -1.0 else g * p
    return g * p


def binary_vjp(op: str, primals, g, argnums, out) -> list:
    """Cotangents of the operands in ``argnums`` for ``out = op(a, b)``."""
    a, b = primals
    pa, pb = _binary_partials(op, a, b, out)
    return [_scale(g, conj(pa if i == 0 else pb)) for i in argnums]


def binary_jvp(op: str, primals, tangents, argnums) -> list:
    """``[tangent of op(a, b)]`` given the tangents of the operands in ``argnums``."""
    a, b = primals
    need_out = op in ("divide", "power", "logaddexp")
    out = getattr(ops, op)(a, b) if need_out else None
    pa, pb = _binary_partials(op, a, b, out)
    total = None
    for i, t in zip(argnums, tangents):
        term = _scale(t, pa if i == 0 else pb)
        total = term if total is None else total + term
    return [total]


def select_vjp(primals, g, argnums) -> list:
    """``where(c, a, b)``: the cotangent goes to ``a`` where c holds, to ``b`` elsewhere."""
    c = primals[0]
    zero = ops.zeros_like(g)
    out = []
    for i in argnums:
        if i == 0:
            out.append(None)  # the condition is boolean: no gradient
        elif i == 1:
            out.append(ops.where(c, g, zero))
        else:
            out.append(ops.where(c, zero, g))
    return out


def select_jvp(primals, tangents, argnums) -> list:
    c, a, b = primals
    ta = tb = None
    for i, t in zip(argnums, tangents):
        if i == 1:
            ta = t
        elif i == 2:
            tb = t
    if ta is None and tb is None:
        return [None]
    ta = ta if ta is not None else ops.zeros_like(a)
    tb = tb if tb is not None else ops.zeros_like(b)
    return [ops.where(c, ta, tb)]


def astype_vjp(x, g) -> list:
    """The cotangent converted back to the input's dtype (real part for complex -> real)."""
    if x._dtype.kind not in "fc":
        return [None]
    return [ops.astype(g, x._dtype)]


def astype_jvp(dtype, t) -> list:
    if dtype.kind not in "fc":
        return [None]
    return [ops.astype(t, dtype)]
