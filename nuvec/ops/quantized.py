"""Quantization (MLX's ``quantize``, ``dequantize``, ``quantized_matmul``, ``gather_qmm``,
``qqmm``, ``gather_qqmm``):
argument checks and dtypes here, the packed layouts in ``primitives.quant_formats``.

>>> import nuvec as nv
>>> w = nv.random.normal((32, 64))
>>> wq, scales, biases = nv.quantize(w, group_size=64, bits=4)
>>> y = nv.quantized_matmul(nv.ones((2, 64)), wq, scales, biases, group_size=64, bits=4)
>>> y.shape, nv.dequantize(wq, scales, biases, group_size=64, bits=4).shape
((2, 32), (32, 64))
"""

from __future__ import annotations

from typing import Optional

from ..core import shapeless
from ..core import dtypes
from ..core.array import Array
from ..core.device import resolve_stream
from ..primitives import quant_formats as qf
from ..primitives.quantized import Dequantize, QQMatmul, QuantizedMatmul, Quantize
from ..primitives.quantized import check_inner, check_packed
from ._common import as_array
from .creation import arange
from .elementwise import astype
from .indexing import take
from .linalg import matmul
from .shape import broadcast_arrays, expand_dims, flatten, reshape, squeeze, swapaxes, unflatten
from .products import stacked

__all__ = ["quantize", "dequantize", "quantized_matmul", "gather_qmm", "qqmm", "gather_qqmm"]


def _params(op: str, mode: str, group_size, bits) -> tuple[int, int]:
    """(group_size, bits) of ``mode``, with MLX's defaults and checks."""
    if mode not in qf.MODES:
        raise ValueError(
            f"{op}: unknown quantization mode {mode!r}; expected one of "
            f"{', '.join(repr(m) for m in qf.MODES)}"
        )
    dg, db = qf.MODES[mode]
    group_size = dg if group_size is None else int(group_size)
    bits = db if bits is None else int(bits)
    if mode == "affine":
        if group_size not in qf.AFFINE_GROUPS:
            raise ValueError(
                f"{op}: the group size {group_size} is not supported; the "
                "supported group sizes are 32, 64 and 128"
            )
        if bits not in qf.AFFINE_BITS:
            raise ValueError(
                f"{op}: {bits} bits are not supported; the supported bits are 2, 3, 4, 5, 6 and 8"
            )
    else:
        if group_size != dg:
            raise ValueError(
                f"{op}: {mode} quantization requires group size {dg}, got {group_size}"
            )
        if bits != db:
            raise ValueError(f"{op}: {mode} quantization requires {db} bits, got {bits}")
    return group_size, bits


def _global_scale(op: str, mode: str, global_scale) -> list:
    """``[global_scale]`` checked (nvfp4 only; a float32 scalar), or ``[]``."""
    if global_scale is None:
        return []
    if mode != "nvfp4":
        raise ValueError(f"{op}: a global scale is only supported for 'nvfp4' quantization")
    global_scale = as_array(global_scale)
    if global_scale.size != 1:
        raise ValueError(
            f"{op}: the global scale must be a scalar, got shape {tuple(global_scale.shape)}"
        )
    if global_scale.dtype != dtypes.float32:
        raise ValueError(f"{op}: the global scale must be float32, got {global_scale.dtype}")
    return [global_scale]


def quantize(
    w: Array,
    /,
    group_size: Optional[int] = None,
    bits: Optional[int] = None,
    mode: str = "affine",
    *,
    global_scale: Optional[Array] = None,
    stream=None,
) -> tuple:
    """Quantize ``w`` (at least 2-D) along its last axis in groups of ``group_size``.

    Affine (default: groups of 64, 4 bits): returns ``(w_q, scales, biases)`` with
    ``w ~ scales * q + biases`` per group; the float modes (``"mxfp4"``, ``"mxfp8"``,
    ``"nvfp4"``) return ``(w_q, scales)``, scales as uint8. ``w_q`` is uint32,
    ``32 / bits`` codes per word (MLX's packing, bit for bit)."""
    w = as_array(w)
    group_size, bits = _params("quantize", mode, group_size, bits)
    extra = _global_scale("quantize", mode, global_scale)
    if not dtypes.issubdtype(w.dtype, dtypes.floating):
        raise ValueError(f"quantize: only real floating types can be quantized, got {w.dtype}")
    if w.ndim < 2:
        raise ValueError(
            f"quantize: the matrix to quantize must have at least 2 dimensions, "
            f"got shape {tuple(w.shape)}"
        )
    if w.shape[-1] % group_size:
        raise ValueError(
            f"quantize: the last dimension ({w.shape[-1]}) must be divisible by "
            f"the group size {group_size}; got shape {tuple(w.shape)}"
        )
    return tuple(
        Array.make_multi(Quantize(group_size, bits, mode), [w] + extra, resolve_stream(stream))
    )


def _check_packed(op: str, w, scales, biases, group_size: int, bits: int) -> None:
    if w.dtype != dtypes.uint32:
        raise ValueError(f"{op}: the quantized weight must be uint32, got {w.dtype}")
    bs = None if biases is None else biases._shape
    check_packed(op, w._shape, scales._shape, bs, group_size, bits)


def _scales_dtype(op: str, mode: str, scales, biases):
    """The dtype the scales give the result (affine: the scales' and biases' promoted; the
    float modes: None), with MLX's checks."""
    if mode == "affine":
        if biases is None:
            raise ValueError(f"{op}: biases must be given for affine quantization")
        d = dtypes.promote_types(scales.dtype, biases.dtype)
        if not dtypes.issubdtype(d, dtypes.floating):
            raise ValueError(
                f"{op}: scales and biases must be floating, got {scales.dtype} and {biases.dtype}"
            )
        return d
    if scales.dtype != dtypes.uint8:
        raise ValueError(f"{op}: {mode} scales must be uint8, got {scales.dtype}")
    if biases is not None:
        raise ValueError(f"{op}: biases must be None for {mode} quantization")
    return None


def dequantize(
    w: Array,
    /,
    scales: Array,
    biases: Optional[Array] = None,
    group_size: Optional[int] = None,
    bits: Optional[int] = None,
    mode: str = "affine",
    global_scale: Optional[Array] = None,
    dtype=None,
    *,
    stream=None,
) -> Array:
    """The floats a quantized matrix stands for (``scales * q + biases`` per group, or the
    float modes' values times their scales); ``dtype`` defaults to the scales' (affine) or
    bfloat16 (the float modes)."""
    w, scales = as_array(w), as_array(scales)
    biases = None if biases is None else as_array(biases)
    group_size, bits = _params("dequantize", mode, group_size, bits)
    extra = _global_scale("dequantize", mode, global_scale)
    sd = _scales_dtype("dequantize", mode, scales, biases)
    _check_packed("dequantize", w, scales, biases, group_size, bits)
    out = dtype if dtype is not None else (sd if sd is not None else dtypes.bfloat16)
    if not dtypes.issubdtype(out, dtypes.floating):
        raise ValueError(f"dequantize: the output dtype must be floating, got {out}")
    args = [w, scales] + ([biases] if biases is not None else []) + extra
    return Array.make(Dequantize(group_size, bits, mode, out), args, resolve_stream(stream))


def quantized_matmul(
    x: Array,
    w: Array,
    /,
    scales: Array,
    biases: Optional[Array] = None,
    transpose: bool = True,
    group_size: Optional[int] = None,
    bits: Optional[int] = None,
    mode: str = "affine",
    *,
    stream=None,
) -> Array:
    """``x @ dequantize(w).T`` (``transpose``) or ``x @ dequantize(w)``, with the weight
    decoded inside the product (never expanded as a whole). The result has ``x``'s dtype
    promoted with the scales' (affine) or ``x``'s (the float modes)."""
    x, w, scales = as_array(x), as_array(w), as_array(scales)
    biases = None if biases is None else as_array(biases)
    op = "quantized_matmul"
    group_size, bits = _params(op, mode, group_size, bits)
    sd = _scales_dtype(op, mode, scales, biases)
    _check_packed(op, w, scales, biases, group_size, bits)
    xs = x._shape
    check_inner(op, xs, w._shape, group_size, bits, transpose)
    out = dtypes.promote_types(x._dtype, sd) if sd is not None else x._dtype
    if not dtypes.issubdtype(out, dtypes.floating):
        raise ValueError(f"{op}: only real floating types are supported, got x of {x.dtype}")
    vector = len(xs) == 1
    if vector:
        x = expand_dims(x, 0)
    x = astype(x, out)
    args = [x, w]
    if sd is not None:
        args += [astype(scales, out), astype(biases, out)]
    else:
        args += [scales]
    y = Array.make(QuantizedMatmul(group_size, bits, mode, transpose), args, resolve_stream(stream))
    return squeeze(y, 0) if vector else y


def gather_qmm(
    x: Array,
    w: Array,
    /,
    scales: Array,
    biases: Optional[Array] = None,
    lhs_indices: Optional[Array] = None,
    rhs_indices: Optional[Array] = None,
    transpose: bool = True,
    group_size: Optional[int] = None,
    bits: Optional[int] = None,
    mode: str = "affine",
    *,
    sorted_indices: bool = False,
    stream=None,
) -> Array:
    """``quantized_matmul`` of ``x[lhs_indices]`` with the quantized matrices
    ``w[rhs_indices]`` (indices over the batch axes of each, broadcast together; None: all
    in order): a mixture of experts' products. The result has shape
    ``indices.shape + (M, N)``."""
    if lhs_indices is None and rhs_indices is None:
        return quantized_matmul(
            x, w, scales, biases, transpose, group_size, bits, mode, stream=stream
        )
    x, w, scales = as_array(x), as_array(w), as_array(scales)
    biases = None if biases is None else as_array(biases)
    li, ri = _gather_indices("gather_qmm", x, w, lhs_indices, rhs_indices)
    xs = _pick(x, li)
    ws, ss = _pick(w, ri), _pick(scales, ri)
    bs = None if biases is None else _pick(biases, ri)
    y = quantized_matmul(xs, ws, ss, bs, transpose, group_size, bits, mode, stream=stream)
    return _unbatch(y, li)


def _gather_indices(op: str, x: Array, w: Array, lhs_indices, rhs_indices) -> list:
    """The batch indices of ``x`` and ``w`` (None: every batch entry in order), broadcast
    together; both operands need at least 2 dimensions."""
    for name, a in (("x", x), ("w", w)):
        if a.ndim < 2:
            raise ValueError(
                f"{op}: {name} must have at least 2 dimensions, got shape {tuple(a.shape)}"
            )

    def indices(idx, a):
        if idx is None:
            if shapeless.relative(a) and a.ndim > 2:
                raise ValueError(
                    f"{op}: under nv.compile(shapeless=True) the default indices would be "
                    "the traced batch positions; pass them explicitly"
                )
            n = 1
            for s in a.shape[:-2]:
                n *= s
            return reshape(arange(n, dtype=dtypes.uint32), tuple(a.shape[:-2]))
        idx = as_array(idx)
        if not dtypes.issubdtype(idx.dtype, dtypes.integer):
            raise ValueError(f"{op}: indices must be integral, got {idx.dtype}")
        return idx

    return broadcast_arrays(indices(lhs_indices, x), indices(rhs_indices, w))


def _pick(a: Array, idx: Array) -> Array:
    """The matrices ``a[idx]`` of ``a``'s batch axes, stacked on one leading axis."""
    flat = stacked(a)
    return take(flat, flatten(idx) if idx.ndim else reshape(idx, (1,)), axis=0)


def _unbatch(y: Array, li: Array) -> Array:
    """The stacked products ``y`` with the indices' shape as their batch axes."""
    if not shapeless.relative(li):  # the batch axes back (no traced size of y's)
        return unflatten(y, 0, tuple(li.shape)) if li.ndim else squeeze(y, 0)
    return reshape(y, tuple(li.shape) + tuple(y.shape[-2:]))


_QQ_MODES = ("nvfp4", "mxfp8")


def _through_quantization(a, group_size, bits, mode, global_scale, stream):
    """``a`` quantized along its last axis and decoded again, in float32."""
    packed = quantize(a, group_size, bits, mode, global_scale=global_scale, stream=stream)
    return dequantize(
        *packed,
        group_size=group_size,
        bits=bits,
        mode=mode,
        global_scale=global_scale,
        dtype=dtypes.float32,
        stream=stream,
    )


def qqmm(
    x: Array,
    w: Array,
    /,
    scales: Optional[Array] = None,
    group_size: Optional[int] = None,
    bits: Optional[int] = None,
    mode: str = "nvfp4",
    global_scale_x: Optional[Array] = None,
    global_scale_w: Optional[Array] = None,
    *,
    stream=None,
) -> Array:
    """``x @ w.T`` with both operands quantized (MLX's ``qqmm``, modes ``nvfp4`` and
    ``mxfp8``): ``x`` is quantized on the fly along its last axis; ``w`` is either packed
    (with its ``scales``) or a float matrix quantized on the fly. The product of the decoded
    operands is taken in float32 and returned in ``x``'s dtype. Gradients (float ``w``
    only) are MLX's: the cotangent's products with the other operand, quantized the same way.

    >>> import nuvec as nv
    >>> x, w = nv.random.normal((4, 64)), nv.random.normal((8, 64))
    >>> nv.qqmm(x, w, mode="mxfp8").shape
    (4, 8)
    """
    return _qqmm(
        "qqmm", x, w, scales, group_size, bits, mode, global_scale_x, global_scale_w, stream
    )


def _qqmm(op, x, w, scales, group_size, bits, mode, global_scale_x, global_scale_w, stream):
    """``qqmm``, its errors naming ``op``."""
    if mode not in _QQ_MODES:
        raise ValueError(f"{op}: mode must be one of {', '.join(_QQ_MODES)}, got {mode!r}")
    x, w = as_array(x), as_array(w)
    group_size, bits = _params(op, mode, group_size, bits)
    floats = (dtypes.float32, dtypes.float16, dtypes.bfloat16)
    if x.dtype not in floats:
        raise ValueError(f"{op}: x must be float32, float16 or bfloat16, got {x.dtype}")
    if mode != "nvfp4" and (global_scale_x is not None or global_scale_w is not None):
        raise ValueError(f"{op}: global scales are only used by nvfp4, not {mode}")
    if scales is not None:  # w packed: no gradient for it
        w_hat = dequantize(
            w,
            as_array(scales),
            None,
            group_size,
            bits,
            mode,
            global_scale_w,
            dtypes.float32,
            stream=stream,
        )
        if x.shape[-1] != w_hat.shape[-1]:
            raise ValueError(
                f"{op}: the last dimension of x {tuple(x.shape)} does not match the decoded "
                f"weight {tuple(w_hat.shape)}"
            )
        x_hat = _through_quantization(x, group_size, bits, mode, global_scale_x, stream)
        y = matmul(x_hat, swapaxes(w_hat, -1, -2), stream=stream)
        return astype(y, x.dtype, stream=stream)
    if w.dtype not in floats:
        raise ValueError(
            f"{op}: an unquantized w must be float32, float16 or bfloat16 (a packed one needs "
            f"its scales), got {w.dtype}"
        )
    if x.shape[-1] != w.shape[-1]:
        raise ValueError(
            f"{op}: the last dimensions of x {tuple(x.shape)} and w {tuple(w.shape)} differ"
        )
    return _qqmm_float(x, w, group_size, bits, mode, global_scale_x, global_scale_w, stream)


def _qqmm_float(x, w, group_size, bits, mode, gsx, gsw, stream):
    x_hat = _through_quantization(x, group_size, bits, mode, gsx, stream)
    w_hat = _through_quantization(w, group_size, bits, mode, gsw, stream)
    y = astype(matmul(x_hat, swapaxes(w_hat, -1, -2), stream=stream), x.dtype, stream=stream)
    operands = [a for a in (x, w, gsx, gsw) if a is not None]
    if not any(a._tracer for a in operands):
        return y
    # under a transform: the product carries its own rules (a gradient through the rounding)
    prim = QQMatmul(group_size, bits, mode, gsx is not None, gsw is not None)
    return Array.make(prim, operands + [y], resolve_stream(stream))


def gather_qqmm(
    x: Array,
    w: Array,
    /,
    scales: Optional[Array] = None,
    lhs_indices: Optional[Array] = None,
    rhs_indices: Optional[Array] = None,
    group_size: Optional[int] = None,
    bits: Optional[int] = None,
    mode: str = "nvfp4",
    global_scale_x: Optional[Array] = None,
    global_scale_w: Optional[Array] = None,
    *,
    sorted_indices: bool = False,
    stream=None,
) -> Array:
    """``qqmm`` of the matrices ``x[lhs_indices]`` with ``w[rhs_indices]`` (indices over the
    batch axes of each, broadcast together; None: all in order), both operands quantized
    (modes ``nvfp4`` and ``mxfp8``; ``w`` packed with its ``scales``, or float). The result
    has shape ``indices.shape + (M, N)``; ``sorted_indices`` is a hint MLX's kernels use,
    the values do not depend on it.

    >>> import nuvec as nv
    >>> x, w = nv.random.normal((2, 3, 64)), nv.random.normal((4, 8, 64))
    >>> nv.gather_qqmm(x, w, rhs_indices=nv.array([3, 1]), mode="mxfp8").shape
    (2, 3, 8)
    """
    op = "gather_qqmm"
    if mode not in _QQ_MODES:
        raise ValueError(f"{op}: mode must be one of {', '.join(_QQ_MODES)}, got {mode!r}")
    x, w = as_array(x), as_array(w)
    li, ri = _gather_indices(op, x, w, lhs_indices, rhs_indices)
    ss = None if scales is None else _pick(as_array(scales), ri)
    y = _qqmm(
        op,
        _pick(x, li),
        _pick(w, ri),
        ss,
        group_size,
        bits,
        mode,
        global_scale_x,
        global_scale_w,
        stream,
    )
    return _unbatch(y, li)
