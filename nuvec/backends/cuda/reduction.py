"""Reductions, scans, softmax and logsumexp on the GPU (CuPy's reduction kernels).

float16 / bfloat16 inputs are computed in float32 and rounded once (as on the CPU). Float
results equal the CPU's up to the order of the additions (a tree on the GPU, NumPy's pairwise
sums on the CPU); integer, bool, max/min and arg results are identical. A float32 / float64 sum
over the leading or the trailing axes of a C-contiguous array (a bias gradient, a row sum) is a
product with a vector of ones through nuvec's cuBLAS handle: CuPy's reduction kernel reads
such a column sum at a small fraction of the memory bandwidth (about 0.12 ms for 8192 x 512 on
an H200), cuBLAS at nearly all of it, in full float32 arithmetic. cummax / cummin /
logcumsumexp (and cumprod of bool) use a log-step scan (log2(n) passes of the op). logsumexp
and softmax over the trailing axes of a C-contiguous array, and the softmax's vjp over the last
axis (``SoftmaxProduct``), are one kernel each (``rows``).
"""

from __future__ import annotations

import cupy as cp
import numpy as np

from ...core import dtypes as dt
from ...primitives.reduction import (
    ArgReduce,
    LogSumExp,
    NumberOfElements,
    Reduce,
    Scan,
    Softmax,
    SoftmaxProduct,
)
from . import gemm, rows
from .runtime import computable, finish, gpu, is_half


def _acc(d: dt.Dtype):
    """The CuPy dtype a result of nuvec dtype ``d`` is accumulated in."""
    return np.float32 if is_half(d) else d.np


_ONES: dict = {}  # (device id, dtype) -> the longest vector of ones made so far


def _ones(n: int, dtype):
    """``n`` ones of ``dtype`` on the current device: a slice of one vector kept per device and
    dtype, so that a step's sums make no fill kernel each. The kept vector grows only outside a
    graph's recording (there a new vector would live in the recording's arena and its fill
    would only be recorded); while recording, a vector too short is made for that call."""
    key = (cp.cuda.Device().id, np.dtype(dtype))
    kept = _ONES.get(key)
    if kept is not None and kept.size >= n:
        return kept[:n]
    stream = cp.cuda.get_current_stream()
    if stream.is_capturing():
        return cp.ones(n, dtype)
    with cp.cuda.using_allocator(cp.get_default_memory_pool().malloc):  # outlives any arena
        kept = cp.ones(max(n, 2 * (kept.size if kept is not None else 0)), dtype)
    stream.synchronize()  # filled before any other stream reads it
    _ONES[key] = kept
    return kept[:n]


def _sum(x, axes: tuple, acc, keepdims: bool):
    """``cp.sum(x, axes, acc, keepdims)``; over a leading or trailing block of axes of a
    C-contiguous float32 / float64 ``x`` (``acc`` its own dtype), as a product with ones."""
    axes = tuple(sorted(a % x.ndim for a in axes)) if x.ndim else ()
    k = len(axes)
    if (
        0 < k < x.ndim
        and x.dtype == acc
        and x.dtype.type in (np.float32, np.float64)
        and x.flags.c_contiguous
        and x.size > 0
        and (axes == tuple(range(k)) or axes == tuple(range(x.ndim - k, x.ndim)))
    ):
        lead = axes[0] == 0
        kept = [d for i, d in enumerate(x.shape) if i not in axes]
        n = x.size // int(np.prod(kept))
        flat = x.reshape((n, -1) if lead else (-1, n))
        ones = _ones(n, x.dtype)
        ones = ones.reshape((1, n) if lead else (n, 1))
        r = gemm.matmul(ones, flat) if lead else gemm.matmul(flat, ones)
        if r is not None:
            shape = [1 if i in axes else d for i, d in enumerate(x.shape)] if keepdims else kept
            return r.reshape(shape)
    return cp.sum(x, axis=axes, dtype=acc, keepdims=keepdims)


@gpu(NumberOfElements)
def _number_of_elements(prim, ins, node):
    return [cp.asarray(np.array(prim.count(ins[0].shape), prim.dtype.np))]


@gpu(Reduce)
def _reduce(prim, ins, node):
    xd = node._inputs[0]._dtype
    x = computable(ins[0], xd)
    axes, kd, op, out = prim.axes, prim.keepdims, prim.op, node._dtype
    if op == "sum":
        if x.dtype == np.bool_ and out.kind != "b":
            x = x.astype(_acc(out))
        r = _sum(x, axes, np.dtype(_acc(out)), kd)
    elif op == "prod":
        if x.dtype == np.bool_ and out == dt.bool_:
            r = cp.all(x, axis=axes, keepdims=kd)
        else:
            r = cp.prod(x, axis=axes, dtype=_acc(out), keepdims=kd)
    elif op in ("max", "min"):
        if not axes:
            r = x
        elif x.dtype == np.bool_:
            r = (cp.any if op == "max" else cp.all)(x, axis=axes, keepdims=kd)
        else:
            r = (cp.amax if op == "max" else cp.amin)(x, axis=axes, keepdims=kd)
    elif op == "all":
        r = cp.all(x, axis=axes, keepdims=kd)
    else:
        r = cp.any(x, axis=axes, keepdims=kd)
    return [finish(cp.reshape(r, node._shape), out)]


@gpu(ArgReduce)
def _argreduce(prim, ins, node):
    x = computable(ins[0], node._inputs[0]._dtype)
    if x.dtype == np.bool_:
        x = x.view(cp.uint8)
    f = cp.argmax if prim.op == "argmax" else cp.argmin
    r = f(x, axis=prim.axis)
    if prim.keepdims:
        r = cp.expand_dims(r, prim.axis)
    return [r.astype(np.uint32)]


@gpu(Softmax)
def _softmax(prim, ins, node):
    x = computable(ins[0], node._inputs[0]._dtype)
    if x.size == 0:
        return [cp.empty(node._shape, x.dtype if not is_half(node._dtype) else np.uint16)]
    n = rows.applies(x, prim.axes)
    if n:
        return [finish(cp.reshape(rows.softmax_rows(x, n), node._shape), node._dtype)]
    m = cp.amax(x, axis=prim.axes, keepdims=True)
    e = cp.exp(x - m)
    e /= _sum(e, prim.axes, e.dtype, True)
    return [finish(cp.reshape(e, node._shape), node._dtype)]


@gpu(SoftmaxProduct)
def _softmax_product(prim, ins, node):
    y, g = (cp.ascontiguousarray(a) for a in ins)
    return [rows.softmax_product_rows(y, g, prim.scale)]


@gpu(LogSumExp)
def _logsumexp(prim, ins, node):
    x = computable(ins[0], node._inputs[0]._dtype)
    axes = prim.axes
    if any(x.shape[a] == 0 for a in axes):
        return [finish(cp.full(node._shape, -np.inf, _acc(node._dtype)), node._dtype)]
    if x.size == 0:
        return [finish(cp.empty(node._shape, _acc(node._dtype)), node._dtype)]
    n = rows.applies(x, axes)
    if n:
        return [finish(cp.reshape(rows.logsumexp_rows(x, n), node._shape), node._dtype)]
    m = cp.amax(x, axis=axes, keepdims=True)
    m = cp.where(cp.isfinite(m), m, 0).astype(x.dtype, copy=False)
    e = cp.exp(x - m)
    s = _sum(e, axes, e.dtype, True)
    r = cp.log(s) + m
    return [finish(cp.reshape(r, node._shape), node._dtype)]


def _logstep(x, fn, axis: int):
    """Inclusive scan of the associative ``fn`` along ``axis`` in log2(n) passes."""
    r = cp.moveaxis(x, axis, -1).copy()
    n = r.shape[-1]
    k = 1
    while k < n:
        r[..., k:] = fn(r[..., k:], r[..., :-k])  # the right side is read before the write
        k *= 2
    return cp.moveaxis(r, -1, axis)


def _identity(op: str, d: np.dtype):
    if op == "sum":
        return 0
    if op == "prod":
        return 1
    if op == "logaddexp":
        return -np.inf
    big = op == "min"
    if d == np.bool_:
        return big
    if d.kind == "f":
        return np.inf if big else -np.inf
    info = np.iinfo(d)
    return info.max if big else info.min


@gpu(Scan)
def _scan(prim, ins, node):
    out = node._dtype
    x = computable(ins[0], node._inputs[0]._dtype)
    ax, op = prim.axis, prim.op
    if prim.reverse:
        x = cp.flip(x, ax)
    if op == "sum":
        r = cp.cumsum(x, axis=ax, dtype=_acc(out))
    elif op == "prod":
        if out == dt.bool_:
            r = _logstep(x, cp.logical_and, ax)
        else:
            r = cp.cumprod(x, axis=ax, dtype=_acc(out))
    elif op == "max":
        r = _logstep(x, cp.logical_or if x.dtype == np.bool_ else cp.maximum, ax)
    elif op == "min":
        r = _logstep(x, cp.logical_and if x.dtype == np.bool_ else cp.minimum, ax)
    else:
        r = _logstep(x, cp.logaddexp, ax)
    acc = np.dtype(_acc(out))
    r = r.astype(acc, copy=False)
    if not prim.inclusive and r.shape[ax] > 0:
        shifted = cp.empty_like(r)
        lead = (slice(None),) * ax
        shifted[lead + (0,)] = _identity(op, acc)
        shifted[lead + (slice(1, None),)] = r[lead + (slice(0, -1),)]
        r = shifted
    if prim.reverse:
        r = cp.flip(r, ax)
    return [finish(r, out)]
