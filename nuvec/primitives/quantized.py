"""Quantization primitives: ``Quantize`` (weights to packed codes, scales and biases),
``Dequantize`` (back to floats) and ``QuantizedMatmul`` (a product with a packed weight that
the backend decodes inside the product). The layouts are ``quant_formats``'.

    wq, scales, biases = Array.make_multi(Quantize(64, 4, "affine"), [w])
    y = Array.make(QuantizedMatmul(64, 4, "affine", True), [x, wq, scales, biases])

``QQMatmul`` marks ``qqmm``'s product of two float operands under a transform: the product
is computed by its composite (both operands quantized and decoded again, then a matmul), and
the primitive carries MLX's rules for it (a straight-through gradient whose cotangent is
quantized too).

Gradients are MLX's: ``QuantizedMatmul`` has them for ``x`` (a product with the same weight,
the other way round) and, in the affine mode, for the scales and the biases; none for the
codes. Quantize and Dequantize have none.
"""

from __future__ import annotations

from ..core import dtypes
from ..core.primitive import Primitive
from .misc import Forwarding


def check_packed(op: str, ws: tuple, ss: tuple, bs, group_size: int, bits: int) -> None:
    """Raises unless the shapes of a packed weight ``ws``, its scales ``ss`` and biases ``bs``
    (None: none) fit ``group_size`` and ``bits``; ``op`` names the operation. The operations
    check their arguments with it, and the primitives' ``infer`` again, so that a shapeless
    replay on other shapes raises as the uncompiled call does."""
    if len(ws) < 2:
        raise ValueError(
            f"{op}: the quantized weight must have at least 2 dimensions, got shape {ws}"
        )
    if bs is not None and ss != bs:
        raise ValueError(f"{op}: scales and biases must have the same shape, got {ss} and {bs}")
    if len(ss) != len(ws) or ss[:-1] != ws[:-1]:
        raise ValueError(
            f"{op}: the shape of the scales {ss} does not match the quantized weight {ws}"
        )
    if ws[-1] * 32 // bits != ss[-1] * group_size:
        raise ValueError(
            f"{op}: the quantized weight {ws} and the scales {ss} do not match with "
            f"group_size={group_size} and bits={bits}"
        )


def check_inner(op: str, xs: tuple, ws: tuple, group_size: int, bits: int, transpose: bool):
    """Raises unless ``x`` of shape ``xs`` fits the product with the packed weight ``ws``."""
    inner = ws[-1] * 32 // bits if transpose else ws[-2]
    outer = ws[-2] if transpose else ws[-1] * 32 // bits
    if not xs or xs[-1] != inner:
        raise ValueError(
            f"{op}: the last dimension of x {xs} does not match the expanded quantized matrix "
            f"({inner}, {outer}) of shape {ws} with group_size={group_size}, bits={bits} and "
            f"transpose={transpose}"
        )


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
        if k % self.group_size:
            raise ValueError(
                f"quantize: the last dimension ({k}) must be divisible by the group size "
                f"{self.group_size}; got shape {tuple(w.shape)}"
            )
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
        w, s = inputs[0], inputs[1]
        b = inputs[2]._shape if self.affine else None
        check_packed(self.name, w._shape, s._shape, b, self.group_size, self.bits)
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
        b = inputs[3]._shape if self.affine else None
        check_packed(self.name, w._shape, inputs[2]._shape, b, self.group_size, self.bits)
        check_inner(self.name, x._shape, w._shape, self.group_size, self.bits, self.transpose)
        lead = (
            np.broadcast_shapes(tuple(x.shape[:-2]), tuple(w.shape[:-2]))
            if w.ndim > 2
            else tuple(x.shape[:-2])
        )
        return [(tuple(lead) + (x.shape[-2], self.out_features(w)), x.dtype)]

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


class QQMatmul(_Quant, Forwarding):
    """``qqmm(x, w)`` of float operands while one of them is traced: inputs ``x``, ``w``, the
    global scales that are given (``x``'s, then ``w``'s; nvfp4), then the product that the
    composite computed; output that product unchanged. The rules
    (``transforms.rules.quantized``) see ``x``, ``w`` and the scales."""

    __slots__ = ("scale_x", "scale_w", "n_in")
    name = "qqmm"

    def __init__(self, group_size: int, bits: int, mode: str, scale_x: bool, scale_w: bool):
        super().__init__(group_size, bits, mode)
        self.scale_x = bool(scale_x)
        self.scale_w = bool(scale_w)
        self.n_in = 2 + self.scale_x + self.scale_w

    @property
    def params(self) -> tuple:
        return (self.group_size, self.bits, self.mode, self.scale_x, self.scale_w)

    def infer(self, inputs):
        return self.forwarded(inputs)

    def global_scales(self, inputs) -> tuple:
        """``(global_scale_x, global_scale_w)`` among ``inputs`` (None where not given)."""
        gx = inputs[2] if self.scale_x else None
        gw = inputs[2 + self.scale_x] if self.scale_w else None
        return gx, gw
