"""Transform rules of the primitives of ``nuvec.primitives.quantized``."""

from __future__ import annotations

from ... import ops
from ...core.array import Array
from ...core import dtypes
from ...primitives.quantized import QQMatmul, Quantize, QuantizedMatmul, _RowWise


def _quantized_matmul_again(prim, x, inputs, transpose: bool):
    return ops.quantized_matmul(
        x,
        inputs[1],
        inputs[2],
        inputs[3] if prim.affine else None,
        transpose=transpose,
        group_size=prim.group_size,
        bits=prim.bits,
        mode=prim.mode,
    )


def _flatten_lead(a, nd: int):
    """``a`` with the axes before its last ``nd`` merged into the first of them."""
    if a.ndim <= nd:
        return a
    return ops.reshape(a, (-1,) + tuple(a.shape[a.ndim - nd + 1 :]))


def _sum_to(a, shape):
    """``a`` summed over the leading axes that broadcasting added to ``shape``."""
    extra = a.ndim - len(shape)
    if extra > 0:
        a = ops.sum(a, axis=tuple(range(extra)))
    axes = tuple(i for i, (s, t) in enumerate(zip(shape, a.shape)) if s == 1 and t != 1)
    return ops.sum(a, axis=axes, keepdims=True) if axes else a


def _row_wise_vjp(prim, primals, cotangents, argnums, outputs):
    raise ValueError(f"{prim.name}: no gradient (MLX defines none)")


def _row_wise_jvp(prim, primals, tangents, argnums):
    raise ValueError(f"{prim.name}: no derivative (MLX defines none)")


def _row_wise_vmap(prim, inputs, axes):
    size = next(x.shape[a] for x, a in zip(inputs, axes) if a is not None)
    moved = []
    for x, a in zip(inputs, axes):
        if x.ndim == 0:  # the global scale: never batched per row
            if a is not None:
                raise ValueError(f"{prim.name}: vmap over the global scale is not supported")
            moved.append(x)
        elif a is None:
            moved.append(ops.broadcast_to(ops.expand_dims(x, 0), (size,) + tuple(x.shape)))
        else:
            moved.append(ops.moveaxis(x, a, 0))
    outs = (
        Array.make_multi(prim, moved) if isinstance(prim, Quantize) else [Array.make(prim, moved)]
    )
    return list(outs), [0] * len(outs)


def _quantized_matmul_vjp(prim, primals, cotangents, argnums, outputs):
    g = cotangents[0]
    out, dsb = [], None
    for i in argnums:
        if i == 0:
            dx = _quantized_matmul_again(prim, g, primals, not prim.transpose)
            out.append(_sum_to(dx, primals[0].shape))
        elif i == 1:
            raise ValueError(
                "quantized_matmul: no gradient with respect to the quantized weights (argument w)"
            )
        elif not prim.affine:
            raise ValueError(
                f"quantized_matmul: no gradient with respect to the scales "
                f"in {prim.mode} quantization"
            )
        else:
            if dsb is None:  # dL/dW, grouped along the packed axis
                x = primals[0]
                nd = primals[1].ndim
                fc = _flatten_lead(g, nd)
                fx = _flatten_lead(x, nd)
                dw = (
                    ops.matmul(ops.swapaxes(fc, -1, -2), fx)
                    if prim.transpose
                    else ops.matmul(ops.swapaxes(fx, -1, -2), fc)
                )
                dsb = ops.reshape(
                    dw, (*dw.shape[:-1], dw.shape[-1] // prim.group_size, prim.group_size)
                )
            if i == 3:
                out.append(ops.sum(dsb, axis=-1))
            else:
                codes = ops.dequantize(
                    primals[1],
                    ops.ones_like(primals[2]),
                    ops.zeros_like(primals[3]),
                    prim.group_size,
                    prim.bits,
                    dtype=primals[2].dtype,
                )
                codes = ops.reshape(codes, dsb.shape)
                out.append(ops.sum(dsb * codes, axis=-1))
    return out


def _quantized_matmul_jvp(prim, primals, tangents, argnums):
    if tuple(argnums) != (0,):
        raise ValueError("quantized_matmul: forward-mode derivatives only with respect to x")
    return [_quantized_matmul_again(prim, tangents[0], primals, prim.transpose)]


def _quantized_matmul_vmap(prim, inputs, axes):
    if any(a is not None for a in axes[1:]):
        raise ValueError("quantized_matmul: vmap over the quantized weights is not supported")
    x = ops.moveaxis(inputs[0], axes[0], 0)
    if x.ndim == 2:  # a batch of vectors: rows of one product
        x = ops.expand_dims(x, 1)
        y = _quantized_matmul_again(prim, x, inputs, prim.transpose)
        return [ops.squeeze(y, 1)], [0]
    return [_quantized_matmul_again(prim, x, inputs, prim.transpose)], [0]


def _qqmm_again(prim, a, b, scale_a, scale_b):
    """``qqmm(a, b)`` with ``prim``'s quantization."""
    return ops.qqmm(a, b, None, prim.group_size, prim.bits, prim.mode, scale_a, scale_b)


def _amax(a):
    """The global scale of an operand quantized on the fly (nvfp4 with global scales)."""
    return ops.astype(ops.max(ops.abs(a)), dtypes.float32)


def _qqmm_vjp(prim, primals, cotangents, argnums, outputs):
    # MLX's: each gradient is a qqmm of the cotangent (quantized too) with the other operand
    x, w = primals[0], primals[1]
    gx, gw = prim.global_scales(primals)
    g = cotangents[0]
    amax = _amax(g) if prim.scale_x or prim.scale_w else None
    out = []
    for i in argnums:
        if i == 0:
            dx = _qqmm_again(prim, g, ops.swapaxes(w, -1, -2), amax, gw)
            out.append(_sum_to(dx, x.shape))
        elif i == 1:
            gm, xm = g, x
            if w.ndim == 2 and g.ndim > 2:  # one weight for every batch: rows of one product
                gm = ops.reshape(g, (-1, g.shape[-1]))
                xm = ops.reshape(x, (-1, x.shape[-1]))
            dw = _qqmm_again(prim, ops.swapaxes(gm, -1, -2), ops.swapaxes(xm, -1, -2), amax, gx)
            out.append(_sum_to(dw, w.shape))
        else:  # the global scales: none, as MLX
            out.append(ops.zeros_like(primals[i]))
    return out


def _qqmm_jvp(prim, primals, tangents, argnums):
    # the vjp's transpose: each tangent quantized in a product with the other operand
    x, w = primals[0], primals[1]
    gx, gw = prim.global_scales(primals)
    scaled = prim.scale_x or prim.scale_w
    total = None
    for i, t in zip(argnums, tangents):
        if i == 0:
            d = _qqmm_again(prim, t, w, _amax(t) if scaled else None, gw)
        elif i == 1:
            d = _qqmm_again(prim, x, t, gx, _amax(t) if scaled else None)
        else:  # the global scales: none, as in the vjp
            continue
        total = d if total is None else total + d
    return [total if total is not None else ops.zeros_like(primals[prim.n_in])]


def _qqmm_vmap(prim, inputs, axes):
    if any(a is not None for a in axes[2 : prim.n_in]):
        raise ValueError("qqmm: vmap over the global scales is not supported")
    x, w = (ops.moveaxis(v, a, 0) if a is not None else v for v, a in zip(inputs[:2], axes))
    gx, gw = prim.global_scales(inputs)
    return [_qqmm_again(prim, x, w, gx, gw)], [0]


VJP = {
    _RowWise: _row_wise_vjp,
    QuantizedMatmul: _quantized_matmul_vjp,
    QQMatmul: _qqmm_vjp,
}
JVP = {
    _RowWise: _row_wise_jvp,
    QuantizedMatmul: _quantized_matmul_jvp,
    QQMatmul: _qqmm_jvp,
}
VMAP = {
    _RowWise: _row_wise_vmap,
    QuantizedMatmul: _quantized_matmul_vmap,
    QQMatmul: _qqmm_vmap,
}
