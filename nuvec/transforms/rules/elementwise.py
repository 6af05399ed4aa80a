"""Derivative rules of the element-wise primitives (Unary, Binary, Select, AsType).

Unary and Binary ops take their derivatives from their records in ``codegen.optable.OPS``;
this module turns them into vjps and jvps. Each rule is written with public ops, so its
result is a graph that can itself be differentiated (higher-order gradients), batched and
compiled. For complex inputs the rules
follow MLX's convention: ``vjp(g) = g * conj(f'(x))`` for a holomorphic ``f``, so the
gradient of a real loss is ``dL/dRe(z) + i dL/dIm(z)``.

The operands of a Binary primitive share one shape (the ops broadcast first), so no rule here
reduces: the Broadcast primitive's own rule sums the cotangent back.
"""

from __future__ import annotations

from ... import ops
from ...codegen.optable import OPS
from ...core.array import Array
from ...primitives.elementwise import AsType, Binary, Select, Unary
from ._common import align_batch, conj


def unary_vjp(op: str, x, g, out) -> list:
    """``[cotangent of x]`` for ``out = op(x)`` given the output cotangent ``g``."""
    rec = OPS[op]
    if rec.vjp is not None:
        return [rec.vjp(ops, x, g, out)]
    if rec.derivative is None:
        raise NotImplementedError(f"{op}: no derivative rule")
    return [g * conj(rec.derivative(ops, x, out))]


def unary_jvp(op: str, x, t) -> list:
    """``[tangent of op(x)]`` given the input tangent ``t``."""
    rec = OPS[op]
    if rec.jvp is not None:
        return [rec.jvp(ops, x, t)]
    if rec.derivative is None:
        raise NotImplementedError(f"{op}: no derivative rule")
    # rules that use the output recompute it here (the forward walk does not pass it)
    out = getattr(ops, op)(x) if rec.derivative_reads_out else None
    return [t * rec.derivative(ops, x, out)]


def _binary_partials(op: str, a, b, out):
    """(d out/d a, d out/d b) for a differentiable binary op, each None where it is the
    identity (saves a multiply) or a Python float where it is a constant."""
    rule = OPS[op].derivative
    if rule is None:
        raise NotImplementedError(f"{op}: no derivative rule")
    return rule(ops, a, b, out)


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
    out = getattr(ops, op)(a, b) if OPS[op].derivative_reads_out else None
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
    out: list[Array | None] = []
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
    """The cotangent converted back to the input's dtype (real part for complex -> real;
    an integer input takes it in integers, as MLX)."""
    if x._dtype.kind not in "fciu":
        return [None]
    return [ops.astype(g, x._dtype)]


def astype_jvp(dtype, t) -> list:
    if dtype.kind not in "fc":
        return [None]
    return [ops.astype(t, dtype)]


def _unary_vjp(prim, primals, cotangents, argnums, outputs):
    return unary_vjp(prim.op, primals[0], cotangents[0], outputs[0])


def _unary_jvp(prim, primals, tangents, argnums):
    return unary_jvp(prim.op, primals[0], tangents[0])


def _unary_vmap(prim, inputs, axes):
    return [Array.make(prim, inputs)], list(axes)


def _binary_vjp(prim, primals, cotangents, argnums, outputs):
    return binary_vjp(prim.op, primals, cotangents[0], argnums, outputs[0])


def _binary_jvp(prim, primals, tangents, argnums):
    return binary_jvp(prim.op, primals, tangents, argnums)


def _binary_vmap(prim, inputs, axes):
    inputs = align_batch(inputs, axes)
    return [Array.make(prim, inputs)], [0]


def _select_vjp(prim, primals, cotangents, argnums, outputs):
    return select_vjp(primals, cotangents[0], argnums)


def _select_jvp(prim, primals, tangents, argnums):
    return select_jvp(primals, tangents, argnums)


def _select_vmap(prim, inputs, axes):
    inputs = align_batch(inputs, axes)
    return [Array.make(prim, inputs)], [0]


def _as_type_vjp(prim, primals, cotangents, argnums, outputs):
    return astype_vjp(primals[0], cotangents[0])


def _as_type_jvp(prim, primals, tangents, argnums):
    return astype_jvp(prim.dtype, tangents[0])


def _as_type_vmap(prim, inputs, axes):
    return [Array.make(prim, inputs)], list(axes)


VJP = {
    Unary: _unary_vjp,
    Binary: _binary_vjp,
    Select: _select_vjp,
    AsType: _as_type_vjp,
}
JVP = {
    Unary: _unary_jvp,
    Binary: _binary_jvp,
    Select: _select_jvp,
    AsType: _as_type_jvp,
}
VMAP = {
    Unary: _unary_vmap,
    Binary: _binary_vmap,
    Select: _select_vmap,
    AsType: _as_type_vmap,
}
