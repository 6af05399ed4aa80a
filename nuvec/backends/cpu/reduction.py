"""Reductions, scans, softmax and logsumexp on the CPU: nuvec's row kernels (_rows.pyx, on
the launch threads) where they apply, NumPy otherwise, with NumPy's bits either way.

float16/bfloat16 data is accumulated in float32 and rounded once to the output dtype.
"""

from __future__ import annotations

import math

import numpy as np

from ...codegen.ir import KernelSpec, Node
from ...primitives.reduction import (
    ArgReduce,
    LogSumExp,
    NumberOfElements,
    Reduce,
    ScaledSoftmax,
    Scan,
    Softmax,
    SoftmaxProduct,
)
from ..registry import register
from .kernels import get_kernel, run
from .memory import empty
from ._rows import (
    extreme_rows as _extreme_rows,
    logsumexp_rows as _logsumexp_rows,
    scaled_softmax_rows as _scaled_softmax_rows,
    softmax_product_rows as _softmax_product_rows,
    softmax_rows as _softmax_rows,
    sum_cols as _sum_cols,
    sum_rows as _sum_rows,
)

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def _rows_out(x: np.ndarray, axes: tuple, keepdims: bool) -> np.ndarray | None:
    """The output of a row kernel (nv_rows.c) reducing ``x`` over ``axes``, or None where
    none applies: the innermost axis alone, of a non-empty C-contiguous float32 / float64."""
    if (
        len(axes) == 1
        and axes[0] in (-1, x.ndim - 1)
        and (x.dtype == _F32 or x.dtype == _F64)
        and x.size
        and x.flags.c_contiguous
    ):
        return np.empty(x.shape[:-1] + ((1,) if keepdims else ()), x.dtype)
    return None


def _extreme(x: np.ndarray, axes: tuple, keepdims: bool, want_max: bool) -> np.ndarray:
    """max / min of ``x`` over ``axes``: nuvec's row kernel (NumPy's values, 10x faster on
    short rows) where one applies, NumPy otherwise."""
    out = _rows_out(x, axes, keepdims)
    if out is None:
        return (np.maximum if want_max else np.minimum).reduce(x, axis=axes, keepdims=keepdims)
    _extreme_rows(x, out, want_max)
    return out


def _leading(x: np.ndarray, axes: tuple) -> bool:
    """Whether ``axes`` are x's leading axes (not all of them, at least two elements left) and
    a column kernel sums over them: bias gradients, layer-norm weight gradients."""
    k, nd = len(axes), x.ndim
    if not 0 < k < nd or not (x.dtype == _F32 or x.dtype == _F64) or not x.size:
        return False
    if {a % nd for a in axes} != set(range(k)):
        return False
    return x.size // math.prod(x.shape[:k]) >= 2 and x.flags.c_contiguous


def _sum(x: np.ndarray, axes: tuple, keepdims: bool, dtype: np.dtype) -> np.ndarray:
    """``np.add.reduce`` with NumPy's bits: where ``dtype`` is x's, the row kernel (pairwise,
    as NumPy sums a contiguous axis, without its call per row) or the column kernel (rows in
    order, as NumPy sums leading axes, on every launch thread)."""
    if dtype == x.dtype:
        out = _rows_out(x, axes, keepdims)
        if out is not None:
            _sum_rows(x, out)
            return out
        if _leading(x, axes):
            k = len(axes)
            out = empty((1,) * k * keepdims + x.shape[k:], x.dtype)
            _sum_cols(x, out)
            return out
    return np.add.reduce(x, axis=axes, dtype=dtype, keepdims=keepdims)


def _is_half(d: np.dtype) -> bool:
    return d.kind in "fV" and d.itemsize == 2


def _acc(d: np.dtype) -> np.dtype:
    """The dtype to accumulate a result of dtype ``d`` in."""
    return _F32 if _is_half(d) else d


def _out(r, node) -> np.ndarray:
    return np.asarray(r).astype(node._dtype.np, copy=False)


@register(NumberOfElements)
def _number_of_elements(prim, ins, node):
    return [np.array(prim.count(ins[0].shape), prim.dtype.np)]


@register(Reduce)
def _reduce(prim, ins, node):
    x = ins[0]
    axes, kd = prim.axes, prim.keepdims
    op = prim.op
    if op == "sum":
        r = _sum(x, tuple(axes), kd, _acc(node._dtype.np))
    elif op == "prod":
        if x.dtype == np.bool_ and node._dtype.np == np.bool_:
            r = np.logical_and.reduce(x, axis=axes, keepdims=kd)
        else:
            r = np.multiply.reduce(x, axis=axes, dtype=_acc(node._dtype.np), keepdims=kd)
    elif op in ("max", "min"):
        if not axes:
            r = x
        else:
            r = _extreme(x, tuple(axes), kd, op == "max")
    elif op == "all":
        r = np.all(x, axis=axes, keepdims=kd)
    else:
        r = np.any(x, axis=axes, keepdims=kd)
    return [_out(r, node)]


@register(ArgReduce)
def _argreduce(prim, ins, node):
    x = ins[0]
    if x.dtype.kind == "V":  # bfloat16 (ml_dtypes' kind): exact in float32, which
        x = x.astype(_F32)  # NumPy's argmax loops know
    # the methods, not np.argmax (its dispatch costs several times the 256-logit search)
    f = x.argmax if prim.op == "argmax" else x.argmin
    return [_out(f(axis=prim.axis, keepdims=prim.keepdims), node)]


def _halves_up(x: np.ndarray) -> np.ndarray:
    return x.astype(_F32) if _is_half(x.dtype) else x


def _shifted_exp(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``exp(x - m)`` (``m`` broadcast): one pass of nuvec's own kernel for float32 (several
    times NumPy's exp here), NumPy otherwise."""
    if x.dtype == _F32:
        return run(_SHIFTED_EXP, [x, m], x.shape)[0]
    return np.exp(x - m)


def _specs():
    shifted_exp = KernelSpec(
        inputs=("float32", "float32"),
        constants=(),
        nodes=(
            Node("subtract", (("in", 0), ("in", 1)), "float32"),
            Node("exp", (("node", 0),), "float32"),
        ),
        outputs=(1,),
    )
    return shifted_exp, KernelSpec.single("divide", ("float32", "float32"), "float32")


_SHIFTED_EXP, _DIVIDE = _specs()


def _divide_rows(e: np.ndarray, s: np.ndarray) -> None:
    """``e /= s`` (``s`` broadcast): in place through nuvec's kernel for float32 (its threads,
    where NumPy's broadcast divide runs on one), NumPy otherwise."""
    if e.dtype == _F32:
        run(_DIVIDE, [e, s], e.shape, [e])
    else:
        e /= s


def _row_kernels(x: np.ndarray, axes: tuple) -> bool:
    """Whether softmax / logsumexp over ``axes`` runs as one pass per row (float32, the
    innermost axis, C-contiguous; every row non-empty)."""
    return (
        x.dtype == _F32
        and len(axes) == 1
        and axes[0] % x.ndim == x.ndim - 1
        and x.size
        and x.flags.c_contiguous
    )


_ADDRESSES: dict[int, int] = {}  # id of one of this module's specs -> its kernel's address


def _address(spec) -> int:
    """The address of the kernel of ``_SHIFTED_EXP`` or ``_DIVIDE`` (looked up once: hashing a
    spec costs microseconds, and every softmax asks)."""
    a = _ADDRESSES.get(id(spec))
    if a is None:
        a = _ADDRESSES[id(spec)] = get_kernel(spec).address
    return a


@register(Softmax)
def _softmax(prim, ins, node):
    x = _halves_up(ins[0])
    if x.size == 0:
        return [np.empty(x.shape, node._dtype.np)]
    if _row_kernels(x, tuple(prim.axes)):
        e = empty(x.shape, x.dtype)
        _softmax_rows(x, e, _address(_SHIFTED_EXP), _address(_DIVIDE))
        return [_out(e, node)]
    with np.errstate(invalid="ignore", over="ignore"):
        m = _extreme(x, tuple(prim.axes), True, True)
        e = _shifted_exp(x, m)
        _divide_rows(e, _sum(e, tuple(prim.axes), True, e.dtype))
    return [_out(e, node)]


@register(SoftmaxProduct)
def _softmax_product(prim, ins, node):
    y, g = (np.ascontiguousarray(a) for a in ins)
    out = empty(y.shape, y.dtype)
    if y.size:
        _softmax_product_rows(y, g, out, prim.scale)
    return [out]


@register(ScaledSoftmax)
def _scaled_softmax(prim, ins, node):
    x = np.ascontiguousarray(ins[0])
    mask = None
    if prim.has_mask:
        mask = np.broadcast_to(ins[1].astype(x.dtype, copy=False), x.shape)
        if x.shape[-1] > 1 and mask.strides[-1] != x.itemsize:  # rows of unit stride
            mask = np.ascontiguousarray(mask)
    out = empty(x.shape, x.dtype)
    if x.dtype != _F32:  # the composite's passes (float64)
        t = x * x.dtype.type(prim.scale)
        if mask is not None:
            t += mask
        return _softmax(Softmax((x.ndim - 1,)), [t], node)
    if x.size:
        _scaled_softmax_rows(x, mask, prim.scale, out, _address(_SHIFTED_EXP), _address(_DIVIDE))
    return [out]


@register(LogSumExp)
def _logsumexp(prim, ins, node):
    x = _halves_up(ins[0])
    axes = prim.axes
    if any(x.shape[a] == 0 for a in axes):  # log of an empty sum
        return [np.full(node._shape, -np.inf, node._dtype.np)]
    if x.size == 0:
        return [np.empty(node._shape, node._dtype.np)]
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if _row_kernels(x, tuple(axes)):  # one pass per row: the shift and the sum
            s, m = empty(x.shape[:-1] + (1,), x.dtype), empty(x.shape[:-1] + (1,), x.dtype)
            _logsumexp_rows(x, s, m, _address(_SHIFTED_EXP))
        else:
            m = _extreme(x, tuple(axes), True, True)
            if not np.isfinite(m).all():  # rows of infinities: shift by 0 instead
                m = np.where(np.isfinite(m), m, 0).astype(x.dtype, copy=False)
            s = _sum(_shifted_exp(x, m), tuple(axes), True, x.dtype)
        r = np.log(s, out=s)
        r += m
    if not prim.keepdims:
        r = r.reshape(node._shape)
    return [_out(r, node)]


def _identity(op: str, d: np.dtype):
    """The value an exclusive scan starts from."""
    if op in ("sum",):
        return 0
    if op == "prod":
        return 1
    if op == "logaddexp":
        return -np.inf
    big = op == "min"
    if d == np.bool_:
        return big
    if d.kind in "fV":
        return np.inf if big else -np.inf
    info = np.iinfo(d)
    return info.max if big else info.min


@register(Scan)
def _scan(prim, ins, node):
    x = ins[0]
    ax, op = prim.axis, prim.op
    out_dt = node._dtype.np
    if prim.reverse:
        x = np.flip(x, ax)
    if op == "sum":
        r = np.cumsum(x, axis=ax, dtype=_acc(out_dt))
    elif op == "prod":
        if out_dt == np.bool_:
            r = np.logical_and.accumulate(x, axis=ax)
        else:
            r = np.cumprod(x, axis=ax, dtype=_acc(out_dt))
    elif op == "max":
        r = np.maximum.accumulate(x, axis=ax)
    elif op == "min":
        r = np.minimum.accumulate(x, axis=ax)
    else:
        r = np.logaddexp.accumulate(_halves_up(x), axis=ax)
    r = r.astype(out_dt, copy=False)
    if not prim.inclusive and r.shape[ax] > 0:
        shifted = np.empty_like(r)
        lead = (slice(None),) * ax
        shifted[lead + (0,)] = _identity(op, out_dt)
        shifted[lead + (slice(1, None),)] = r[lead + (slice(0, -1),)]
        r = shifted
    if prim.reverse:
        r = np.flip(r, ax)
    return [r]
