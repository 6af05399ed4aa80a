"""Quantization primitives: ``Quantize`` (weights to packed codes, scales and biases),
``Dequantize`` (back to floats) and ``QuantizedMatmul`` (a product with a packed weight that
the backend decodes inside the product). The layouts are ``quant_formats``'.

    wq, scales, biases = Array.make_multi(Quantize(64, 4, "affine"), [w])
    y = Array.make(QuantizedMatmul(64, 4, "affine", True), [x, wq, scales, biases])

Gradients are MLX's: ``QuantizedMatmul`` has them for ``x`` (a product with the same weight,
the other way round) and, in the affine mode, for the scales and the biases; none for the
codes. Quantize and Dequantize have none.
"""

from __future__ import annotations

from ..core import dtypes
from ..core.array import Array
from ..core.primitive import Primitive


def _ops():
    from .. import ops

    return ops


class _Quant(Primitive):
    """The parameters the quantization primitives share."""

    __slots__ = ("group_size", "bits", "mode")

    def __init__(self, group_size: int, bits: int, mode: str) -> None:
        self.group_size = int(group_size)
        self.bits = int(bits)
        self.mode = str(mode)

    @property
    def params(self) -> tuple:
        return (self.group_size, self.bits, self.mode)

    @property
    def affine(self) -> bool:
        return self.mode == "affine"


class _RowWise(_Quant):
    """Quantize and Dequantize work on the last axis only: vmap moves the batch axis to the
    front and applies the same operation; neither has a derivative (as in MLX)."""

    __slots__ = ()

    def vjp(self, primals, cotangents, argnums, outputs):
        raise ValueError(f"{self.name}: no gradient (MLX defines none)")

    def jvp(self, primals, tangents, argnums):
        raise ValueError(f"{self.name}: no derivative (MLX defines none)")

    def vmap(self, inputs, axes):
        ops = _ops()
        size = next(x.shape[a] for x, a in zip(inputs, axes) if a is not None)
        moved = []
        for x, a in zip(inputs, axes):
            if x.ndim == 0:  # the global scale: never batched per row
                if a is not None:
                    raise ValueError(f"{self.name}: vmap over the global scale is not supported")
                moved.append(x)
            elif a is None:
                moved.append(ops.broadcast_to(ops.expand_dims(x, 0), (size,) + tuple(x.shape)))
            else:
                moved.append(ops.moveaxis(x, a, 0))
        outs = (
            Array.make_multi(self, moved)
            if isinstance(self, Quantize)
            else [Array.make(self, moved)]
        )
        return list(outs), [0] * len(outs)


class Quantize(_RowWise):
    """``w`` (..., K) to codes (..., K * bits / 32) uint32 and scales (..., K / group_size)
    (and biases, affine)."""

    __slots__ = ()
    name = "quantize"
    differentiable = False

    def infer(self, inputs):
        w = inputs[0]
        lead = tuple(w.shape[:-1])
        k = w.shape[-1]
        out = [(lead + (k * self.bits // 32,), dtypes.uint32)]
        groups = lead + (k // self.group_size,)
        if self.affine:
            return out + [(groups, w.dtype), (groups, w.dtype)]
        return out + [(groups, dtypes.uint8)]


class Dequantize(_RowWise):
    """Codes, scales (and biases) back to floats of ``dtype``."""

    __slots__ = ("dtype",)
    name = "dequantize"
    differentiable = False

    def __init__(self, group_size: int, bits: int, mode: str, dtype) -> None:
        super().__init__(group_size, bits, mode)
        self.dtype = dtype

    @property
    def params(self) -> tuple:
        return (self.group_size, self.bits, self.mode, self.dtype)

    def infer(self, inputs):
        w = inputs[0]
        return [(tuple(w.shape[:-1]) + (w.shape[-1] * 32 // self.bits,), self.dtype)]


class QuantizedMatmul(_Quant):
    """``x @ W.T`` (``transpose``; W (..., N, K)) or ``x @ W`` (W (..., K, N)) with W the
    decoded weight; inputs ``[x, w, scales, biases?]``, x and the scales already of the
    output dtype, batch axes of x and w broadcast."""

    __slots__ = ("transpose",)
    name = "quantized_matmul"

    def __init__(self, group_size: int, bits: int, mode: str, transpose: bool) -> None:
        super().__init__(group_size, bits, mode)
        self.transpose = bool(transpose)

    @property
    def params(self) -> tuple:
        return (self.group_size, self.bits, self.mode, self.transpose)

    def out_features(self, w) -> int:
        return w.shape[-2] if self.transpose else w.shape[-1] * 32 // self.bits

    def infer(self, inputs):
        import numpy as np

        x, w = inputs[0], inputs[1]
        lead = (
            np.broadcast_shapes(tuple(x.shape[:-2]), tuple(w.shape[:-2]))
            if w.ndim > 2
            else tuple(x.shape[:-2])
        )
        return [(tuple(lead) + (x.shape[-2], self.out_features(w)), x.dtype)]

    def _again(self, x, inputs, transpose: bool):
        ops = _ops()
        return ops.quantized_matmul(
            x,
            inputs[1],
            inputs[2],
            inputs[3] if self.affine else None,
            transpose=transpose,
            group_size=self.group_size,
            bits=self.bits,
            mode=self.mode,
        )

    def refuse_gradient(self, i: int) -> None:
        """Raises for an input the product has no gradient for (autodiff asks for every
        input on the differentiated path, integer ones too: the packed weight, the float
        modes' uint8 scales)."""
        if i == 1:
            raise ValueError(
                "quantized_matmul: no gradient with respect to the quantized weights (argument w)"
            )
        if i >= 2 and not self.affine:
            raise ValueError(
                f"quantized_matmul: no gradient with respect to the scales in {self.mode} "
                "quantization"
            )

    def vjp(self, primals, cotangents, argnums, outputs):
        ops = _ops()
        g = cotangents[0]
        out, dsb = [], None
        for i in argnums:
            if i == 0:
                dx = self._again(g, primals, not self.transpose)
                out.append(_sum_to(dx, primals[0].shape))
            elif i == 1:
                raise ValueError(
                    "quantized_matmul: no gradient with respect to the quantized "
                    "weights (argument w)"
                )
            elif not self.affine:
                raise ValueError(
                    f"quantized_matmul: no gradient with respect to the scales "
                    f"in {self.mode} quantization"
                )
            else:
                if dsb is None:  # dL/dW, grouped along the packed axis
                    x = primals[0]
                    nd = primals[1].ndim
                    fc = _flatten_lead(g, nd)
                    fx = _flatten_lead(x, nd)
                    dw = (
                        ops.matmul(ops.swapaxes(fc, -1, -2), fx)
                        if self.transpose
                        else ops.matmul(ops.swapaxes(fx, -1, -2), fc)
                    )
                    dsb = ops.reshape(
                        dw, (*dw.shape[:-1], dw.shape[-1] // self.group_size, self.group_size)
                    )
                if i == 3:
                    out.append(ops.sum(dsb, axis=-1))
                else:
                    codes = ops.dequantize(
                        primals[1],
                        ops.ones_like(primals[2]),
                        ops.zeros_like(primals[3]),
                        self.group_size,
                        self.bits,
                        dtype=primals[2].dtype,
                    )
                    codes = ops.reshape(codes, dsb.shape)
                    out.append(ops.sum(dsb * codes, axis=-1))
        return out

    def jvp(self, primals, tangents, argnums):
        if tuple(argnums) != (0,):
            raise ValueError("quantized_matmul: forward-mode derivatives only with respect to x")
        return [self._again(tangents[0], primals, self.transpose)]

    def vmap(self, inputs, axes):
        ops = _ops()
        if any(a is not None for a in axes[1:]):
            raise ValueError("quantized_matmul: vmap over the quantized weights is not supported")
        x = ops.moveaxis(inputs[0], axes[0], 0)
        if x.ndim == 2:  # a batch of vectors: rows of one product
            x = ops.expand_dims(x, 1)
            y = self._again(x, inputs, self.transpose)
            return [ops.squeeze(y, 1)], [0]
        return [self._again(x, inputs, self.transpose)], [0]


def _flatten_lead(a, nd: int):
    """``a`` with the axes before its last ``nd`` merged into the first of them."""
    ops = _ops()
    if a.ndim <= nd:
        return a
    return ops.reshape(a, (-1,) + tuple(a.shape[a.ndim - nd + 1 :]))


def _sum_to(a, shape):
    """``a`` summed over the leading axes that broadcasting added to ``shape``."""
    ops = _ops()
    extra = a.ndim - len(shape)
    if extra > 0:
        a = ops.sum(a, axis=tuple(range(extra)))
    axes = tuple(i for i, (s, t) in enumerate(zip(shape, a.shape)) if s == 1 and t != 1)
    return ops.sum(a, axis=axes, keepdims=True) if axes else a
