"""``nv.fast``: the composite operations MLX groups under ``mx.fast``, with its signatures.

In nuvec they are built from ordinary operations (so every transform applies to them), and
``nv.compile`` fuses their element-wise parts; the ``nn`` layers call them. On the CPU,
``layer_norm`` of float32 / float64 data is one primitive instead (``primitives.norm``: one pass over
the rows each way, the composite's bits forward).

>>> import nuvec as nv
>>> x = nv.array([[1.0, 2.0, 3.0, 4.0]])
>>> nv.fast.rms_norm(x, nv.ones((4,)), 1e-5).shape
(1, 4)
>>> nv.fast.rope(nv.ones((1, 3, 8)), 8, traditional=False, base=10000.0, scale=1.0, offset=0).shape
(1, 3, 8)
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as np

import nuvec as nv

from .core.array import Array
from .core.device import current_stream
from .primitives._common import on_cpu_rows
from .primitives.norm import LayerNorm, composite as composite_layer_norm
from .primitives.reduction import ScaledSoftmax

__all__ = ["rms_norm", "layer_norm", "rope", "scaled_dot_product_attention"]


def _check_eps(eps: float, op: str) -> None:
    if not eps > 0:
        raise ValueError(f"{op}: eps must be positive, got {eps}")


def _check_weight(x, w, name: str, op: str) -> None:
    if w is not None and (w.ndim != 1 or x.ndim == 0 or w.shape[0] != x.shape[-1]):
        raise ValueError(f"{op}: {name} must have shape ({x.shape[-1] if x.ndim else '?'},) to "
                         f"match the last axis of the input {tuple(x.shape)}, got "
                         f"{tuple(w.shape)}")


def rms_norm(x: nv.array, weight: Optional[nv.array], eps: float) -> nv.array:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last axis (``weight`` None: 1)."""
    _check_eps(eps, "rms_norm")
    _check_weight(x, weight, "weight", "rms_norm")
    y = x * nv.rsqrt(nv.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if weight is None else weight * y


def layer_norm(x: nv.array, weight: Optional[nv.array], bias: Optional[nv.array],
               eps: float) -> nv.array:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis (biased variance;
    ``weight`` / ``bias`` None: 1 / 0)."""
    _check_eps(eps, "layer_norm")
    _check_weight(x, weight, "weight", "layer_norm")
    _check_weight(x, bias, "bias", "layer_norm")
    if _one_pass(x, weight, bias):
        args = [x] + [a for a in (weight, bias) if a is not None]
        return Array.make(LayerNorm(eps, weight is not None, bias is not None), args)
    return composite_layer_norm(x, weight, bias, eps)


def _one_pass(x: nv.array, *params) -> bool:
    """Whether layer_norm runs as the row primitive: float32 or float64 data (parameters of
    the same dtype) with a non-empty last axis, on the CPU."""
    return (x.dtype in (nv.float32, nv.float64) and x.ndim >= 1 and x.size > 0
            and all(p is None or p.dtype == x.dtype for p in params)
            and current_stream().device.type.value == "cpu")


def _scaled_rows(q: nv.array, k: nv.array, mask) -> bool:
    """Whether attention's softmax runs as ``ScaledSoftmax``: float32 queries and keys on the
    CPU, and no mask or a float32 additive one whose last axis is the keys' (rows of it)."""
    if q.dtype != nv.float32 or k.dtype != nv.float32 or q.ndim < 2 or k.ndim < 2:
        return False
    if mask is not None and (isinstance(mask, str) or mask.dtype != nv.float32 or mask.ndim < 1
                             or mask.shape[-1] != k.shape[-2]):
        return False
    if mask is not None:
        try:
            np.broadcast_shapes(tuple(mask.shape), q.shape[:-1] + (k.shape[-2],))
        except ValueError:
            return False
    return on_cpu_rows(q, (q.ndim - 1,))


def rope(a: nv.array, dims: int, *, traditional: bool, base: Optional[float], scale: float,
         offset: int, freqs: Optional[nv.array] = None) -> nv.array:
    r"""Rotary positional encoding of the first ``dims`` features of ``a`` (``(..., L, D)``,
    positions along axis -2 starting at ``offset``).

    Feature pair ``i`` at position :math:`p` turns by :math:`p \cdot scale \cdot base^{-2i/dims}`
    (or :math:`p \cdot scale / freqs_i` when ``freqs`` is given and ``base`` is None). The
    pairs are ``(j, j + dims/2)``, or adjacent features ``(2j, 2j + 1)`` when ``traditional``.
    Features past ``dims`` pass through unchanged.
    """
    if not isinstance(dims, int) or dims <= 0 or dims % 2:
        raise ValueError(f"rope: dims must be a positive even int, got {dims!r}")
    if a.ndim < 2 or a.shape[-1] < dims:
        raise ValueError(f"rope: expects (..., L, D) input with D >= {dims}, got shape "
                         f"{tuple(a.shape)}")
    if (freqs is None) == (base is None):
        raise ValueError("rope: give exactly one of base and freqs")
    half = dims // 2
    if freqs is None:
        inv = np.power(np.float32(base), -np.arange(half, dtype=np.float32) * np.float32(2 / dims))
    else:
        if tuple(freqs.shape) != (half,):
            raise ValueError(f"rope: freqs must have shape ({half},), got {tuple(freqs.shape)}")
        inv = np.float32(1) / np.asarray(freqs.astype(nv.float32))
    length = a.shape[-2]
    pos = np.arange(int(offset), int(offset) + length, dtype=np.float32) * np.float32(scale)
    theta = pos[:, None] * inv[None, :].astype(np.float32)
    cos = nv.astype(nv.array(np.cos(theta)), a.dtype)
    sin = nv.astype(nv.array(np.sin(theta)), a.dtype)
    d = a.shape[-1]
    rot = a[..., :dims] if d > dims else a
    if traditional:
        pairs = nv.reshape(rot, (*rot.shape[:-1], half, 2))
        x1, x2 = pairs[..., 0], pairs[..., 1]
        out = nv.reshape(nv.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1),
                         rot.shape)
    else:
        x1, x2 = rot[..., :half], rot[..., half:]
        out = nv.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
    if d > dims:
        out = nv.concatenate([out, a[..., dims:]], axis=-1)
    return out


def scaled_dot_product_attention(q: nv.array, k: nv.array, v: nv.array, *, scale: float,
                                 mask: Union[None, str, nv.array] = None) -> nv.array:
    """``softmax(scale * q @ k^T + mask) @ v`` over ``(B, H, L, D)`` queries and
    ``(B, H, S, D)`` keys and values.

    ``mask`` is ``None``, ``"causal"``, an additive float array, or a bool array (True:
    attend), broadcastable to ``(B, H, L, S)``. The softmax runs in float32 at least. On the
    CPU, float32 attention with no mask or an additive one scales the scores inside one pass
    per row (``ScaledSoftmax``) instead of scaling ``q`` first.
    """
    if _scaled_rows(q, k, mask):
        scores = nv.matmul(q, nv.swapaxes(k, -1, -2))
        args = [scores] if mask is None else [scores, mask]
        w = Array.make(ScaledSoftmax(scale, mask is not None), args)
        return nv.matmul(nv.astype(w, v.dtype), v)
    scores = nv.matmul(q * scale, nv.swapaxes(k, -1, -2))
    if isinstance(mask, str):
        if mask != "causal":
            raise ValueError(f"scaled_dot_product_attention: unknown mask {mask!r}")
        L, S = q.shape[-2], k.shape[-2]
        keep = nv.expand_dims(nv.arange(L) + (S - L), 1) >= nv.expand_dims(nv.arange(S), 0)
        scores = nv.where(keep, scores, float("-inf"))
    elif mask is not None:
        if mask.dtype == nv.bool_:
            scores = nv.where(mask, scores, float("-inf"))
        else:
            scores = scores + nv.astype(mask, scores.dtype)
    if scores.dtype in (nv.float16, nv.bfloat16):
        scores = nv.astype(scores, nv.float32)
    w = nv.astype(nv.softmax(scores, axis=-1), v.dtype)
    return nv.matmul(w, v)
