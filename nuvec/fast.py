"""``nv.fast``: the composite operations MLX groups under ``mx.fast``, with its signatures.

In nuvec they are built from ordinary operations (so every transform applies to them), and
``nv.compile`` fuses their element-wise parts; the ``nn`` layers call them. On the CPU,
``layer_norm`` of float32 / float64 data is one primitive instead (``primitives.norm``: one
pass over the rows each way, the composite's bits forward).

>>> import nuvec as nv
>>> x = nv.array([[1.0, 2.0, 3.0, 4.0]])
>>> nv.fast.rms_norm(x, nv.ones((4,)), 1e-5).shape
(1, 4)
>>> nv.fast.rope(nv.ones((1, 3, 8)), 8, traditional=False, base=10000.0, scale=1.0, offset=0).shape
(1, 3, 8)
"""

from __future__ import annotations

import functools
import math
import weakref
from typing import Optional, Union

import numpy as np

from . import ops
from .core import dtypes as dt
from .core import shapeless
from .core.array import Array
from .primitives._common import lowers
from .ops.composites import layer_norm_composite
from .ops.shape import slice_axes
from .primitives.shape import broadcast_shape
from .primitives.norm import LayerNorm
from .primitives.reduction import ScaledSoftmax
from .ops.creation import array
from .primitives.custom_kernel import CustomKernel
from ._metal_kernel import MetalKernel
from .core.device import resolve_stream
from .backends.registry import backend_of

__all__ = [
    "rms_norm",
    "layer_norm",
    "rope",
    "scaled_dot_product_attention",
    "cuda_kernel",
    "metal_kernel",
]


def _check_eps(eps: float, op: str) -> None:
    if not eps > 0:
        raise ValueError(f"{op}: eps must be positive, got {eps}")


def _check_weight(x, w, name: str, op: str) -> None:
    if w is not None and (w.ndim != 1 or x.ndim == 0 or w.shape[0] != x.shape[-1]):
        raise ValueError(
            f"{op}: {name} must have shape ({x.shape[-1] if x.ndim else '?'},) to "
            f"match the last axis of the input {tuple(x.shape)}, got "
            f"{tuple(w.shape)}"
        )


def rms_norm(x: Array, weight: Optional[Array], eps: float, *, stream=None) -> Array:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last axis (``weight`` None: 1)."""
    _check_eps(eps, "rms_norm")
    _check_weight(x, weight, "weight", "rms_norm")
    y = x * ops.rsqrt(ops.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if weight is None else weight * y


def layer_norm(
    x: Array, weight: Optional[Array], bias: Optional[Array], eps: float, *, stream=None
) -> Array:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis (biased variance;
    ``weight`` / ``bias`` None: 1 / 0)."""
    _check_eps(eps, "layer_norm")
    _check_weight(x, weight, "weight", "layer_norm")
    _check_weight(x, bias, "bias", "layer_norm")
    args = [x] + [a for a in (weight, bias) if a is not None]
    prim = LayerNorm(eps, weight is not None, bias is not None)
    if lowers(prim, args):  # one pass per row (the CPU)
        return Array.make(prim, args)
    return layer_norm_composite(x, weight, bias, eps)


def _scaled_rows(rows: ScaledSoftmax, q: Array, mask, scores_shape: tuple) -> bool:
    """Whether attention's softmax runs as ``rows`` (the scores scaled inside one pass per
    row), asked of the backend before the scores exist: a stand-in has their shape and the
    queries' dtype."""
    scores = Array.placeholder(scores_shape, q.dtype, tracer=False)
    return lowers(rows, [scores] if mask is None else [scores, mask])


def rope(
    a: Array,
    dims: int,
    *,
    traditional: bool,
    base: Optional[float],
    scale: float,
    offset: Union[int, Array],
    freqs: Optional[Array] = None,
    stream=None,
) -> Array:
    r"""Rotary positional encoding of the first ``dims`` features of ``a`` (``(B, ..., L, D)``,
    positions along axis -2 starting at ``offset``: an int, a scalar array, or an array of
    ``B`` offsets, one per batch entry).

    Feature pair ``i`` at position :math:`p` turns by :math:`p \cdot scale \cdot base^{-2i/dims}`
    (or :math:`p \cdot scale / freqs_i` when ``freqs`` is given and ``base`` is None). The
    pairs are ``(j, j + dims/2)``, or adjacent features ``(2j, 2j + 1)`` when ``traditional``.
    Features past ``dims`` pass through unchanged.

    >>> x = nv.ones((2, 1, 3, 8))
    >>> nv.fast.rope(x, 8, traditional=False, base=1e4, scale=1.0, offset=nv.array([0, 5])).shape
    (2, 1, 3, 8)
    """
    if not isinstance(dims, int) or dims <= 0 or dims % 2:
        raise ValueError(f"rope: dims must be a positive even int, got {dims!r}")
    if a.ndim < 2 or a.shape[-1] < dims:
        raise ValueError(
            f"rope: expects (..., L, D) input with D >= {dims}, got shape {tuple(a.shape)}"
        )
    if not dt.issubdtype(a.dtype, dt.floating):
        raise ValueError(f"rope: the input must be floating, got {a.dtype}")
    if isinstance(offset, Array) and not dt.issubdtype(offset.dtype, dt.integer):
        raise ValueError(f"rope: offset must be an integer, got {offset.dtype}")
    if (freqs is None) == (base is None):
        raise ValueError("rope: give exactly one of base and freqs")
    half = dims // 2
    if freqs is None:
        # base is given here: exactly one of base and freqs is (checked above)
        inv, inv_bytes = _rope_inverse_frequencies(float(base), dims)  # type: ignore[arg-type]
    else:
        if tuple(freqs.shape) != (half,):
            raise ValueError(f"rope: freqs must have shape ({half},), got {tuple(freqs.shape)}")
        inv = np.float32(1) / np.asarray(freqs.astype(dt.float32))
        inv_bytes = inv.astype(np.float32).tobytes()
    shapeless.refuse_traced(a, "rope", "the angles of each position")
    length = a.shape[-2]
    key = (length, float(np.float32(scale)), inv_bytes, a.dtype, a.ndim)
    if isinstance(offset, Array):
        # a model turns q and k of every layer by the same offset: one cos/sin for all of them
        # (the node's own fields: an in-place update of the offset makes it a new node)
        node = (offset._prim, offset._inputs, offset._data, offset._pos)
        last = _rope_last
        if (
            last is not None
            and last[0]() is offset
            and all(x is y for x, y in zip(last[1], node))
            and last[2] == key
        ):
            cos, sin = last[3], last[4]
        else:
            cos, sin = _rope_angles_of_array(a, offset, length, np.float32(scale), inv)
            _rope_last_set(offset, node, key, cos, sin)
    else:
        c, s = _rope_angles_of_int(int(offset), key[:3])
        cos, sin = ops.astype(array(c), a.dtype), ops.astype(array(s), a.dtype)
    d = a.shape[-1]
    rot = a[..., :dims] if d > dims else a
    if traditional:
        pairs = ops.reshape(rot, (*rot.shape[:-1], half, 2))
        x1, x2 = pairs[..., 0], pairs[..., 1]
        out = ops.reshape(ops.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1), rot.shape)
    else:
        nd, lead = rot.ndim, tuple(rot.shape[:-1])
        x1 = slice_axes(rot, (0,) * nd, lead + (half,), (1,) * nd)
        x2 = slice_axes(rot, (0,) * (nd - 1) + (half,), lead + (dims,), (1,) * nd)
        out = ops.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
    if d > dims:
        out = ops.concatenate([out, a[..., dims:]], axis=-1)
    return out


@functools.lru_cache(maxsize=64)
def _rope_inverse_frequencies(base: float, dims: int) -> tuple[np.ndarray, bytes]:
    """``base ** (-2i / dims)`` for the ``dims / 2`` pairs (float32, read-only) and its
    bytes (the angle caches' key), computed once per base and size. As MLX computes them, with
    nuvec's own exp: ``exp(-i * (log(base) / (dims / 2)))``, so that rope has the bits of that
    composite written out."""
    half = dims // 2
    steps = array(np.arange(0, -half, -1, dtype=np.float32))
    inv = np.array(ops.exp(steps * np.float32(math.log(base) / half)))
    inv.flags.writeable = False
    return inv, inv.tobytes()


# (weakref to the offset, its node's fields, key, cos, sin) of the last array-offset call
_rope_last: Optional[tuple] = None


def _rope_last_set(offset: Array, node: tuple, key: tuple, cos: Array, sin: Array) -> None:
    global _rope_last
    _rope_last = (weakref.ref(offset), node, key, cos, sin)


@functools.lru_cache(maxsize=64)
def _rope_angles_of_int(offset: int, key: tuple) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin ``(L, dims/2)`` (float32) of the angles for an int offset, computed once."""
    length, scale, inv_bytes = key
    inv = np.frombuffer(inv_bytes, np.float32)
    pos = np.arange(offset, offset + length, dtype=np.float32) * np.float32(scale)
    theta = array(pos[:, None] * inv[None, :])
    c, s = np.array(ops.cos(theta)), np.array(ops.sin(theta))  # nuvec's bits, as the composite
    c.flags.writeable = s.flags.writeable = False
    return c, s


def _rope_angles_of_array(a, offset, length: int, scale, inv):
    """cos and sin of the angles for an array offset: ``(L, dims/2)`` for a scalar one,
    ``(B, 1, ..., L, dims/2)`` for one offset per batch entry."""
    if offset.ndim > 1 or (
        offset.ndim == 1 and offset.shape[0] != 1 and (a.ndim < 3 or offset.shape[0] != a.shape[0])
    ):
        raise ValueError(
            f"rope: offset must be a scalar or have one entry per batch entry "
            f"({a.shape[0]},), got shape {tuple(offset.shape)}"
        )
    pos = ops.astype(offset, dt.float32)
    steps = array(np.arange(length, dtype=np.float32))
    pos = (ops.expand_dims(pos, -1) + steps) * array(scale)  # (L,) or (B, L)
    theta = ops.expand_dims(pos, -1) * array(inv.astype(np.float32))
    if offset.ndim == 1:
        theta = ops.reshape(theta, (theta.shape[0],) + (1,) * (a.ndim - 3) + theta.shape[1:])
    return ops.astype(ops.cos(theta), a.dtype), ops.astype(ops.sin(theta), a.dtype)


def _attention_inputs(q, k, v, mask, sinks):
    """MLX's checks of attention's arguments; returns the output dtype."""
    op = "scaled_dot_product_attention"
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Array):
            raise TypeError(f"{op}: {name} must be an array, got {type(t).__name__}")
        if t.ndim < 2 or t.ndim > 4:
            raise ValueError(
                f"{op}: {name} with shape {tuple(t.shape)} must have rank 4 "
                "(batch, heads, sequence, head dim)"
            )
    try:
        broadcast_shape([t._shape[:-3] for t in (q, k, v)], op)
    except ValueError:
        raise ValueError(
            f"{op}: mismatching batch dimension: q {tuple(q.shape)}, k "
            f"{tuple(k.shape)}, v {tuple(v.shape)}"
        ) from None
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"{op}: q and k must have the same last dimension, got q "
            f"{tuple(q.shape)} and k {tuple(k.shape)}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"{op}: k and v must have the same sequence length, got k "
            f"{tuple(k.shape)} and v {tuple(v.shape)}"
        )
    heads = [t.shape[-3] if t.ndim > 2 else 1 for t in (q, k, v)]
    if heads[1] != heads[2]:
        raise ValueError(
            f"{op}: k and v must have the same number of kv heads, got {heads[1]} and {heads[2]}"
        )
    if heads[1] == 0 or heads[0] % heads[1]:
        raise ValueError(
            f"{op}: the number of query heads ({heads[0]}) must be a multiple "
            f"of the number of kv heads ({heads[1]})"
        )
    out = dt.promote_types(dt.promote_types(q.dtype, k.dtype), v.dtype)
    if not dt.issubdtype(out, dt.floating):
        raise ValueError(f"{op}: unsupported dtype {out}; q, k and v must be floating")
    if isinstance(mask, str):
        if mask != "causal":
            raise ValueError(f"{op}: invalid mask option {mask!r}; must be 'causal' or an array")
    elif mask is not None:
        if not isinstance(mask, Array):
            raise TypeError(
                f"{op}: mask must be None, 'causal' or an array, got {type(mask).__name__}"
            )
        if mask.ndim > 4:
            raise ValueError(f"{op}: mask with shape {tuple(mask.shape)} must have rank 4 at most")
        if dt.promote_types(mask.dtype, out) != out:
            raise ValueError(
                f"{op}: mask dtype {mask.dtype} must promote to the output dtype {out}"
            )
        want = tuple(q.shape[:-1]) + (k.shape[-2],)
        try:
            if broadcast_shape([mask._shape, want], op)[-len(want) :] != want:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"{op}: mask with shape {tuple(mask.shape)} does not broadcast to "
                f"the scores' shape {want}"
            ) from None
    if sinks is not None:
        if not isinstance(sinks, Array):
            raise TypeError(f"{op}: sinks must be an array, got {type(sinks).__name__}")
        if dt.promote_types(sinks.dtype, out) != out:
            raise ValueError(
                f"{op}: sinks dtype {sinks.dtype} must promote to the output dtype {out}"
            )
        if sinks.ndim != 1 or q.ndim < 3 or sinks.shape[0] != q.shape[-3]:
            raise ValueError(
                f"{op}: sinks must have shape ({heads[0]},) (one per query "
                f"head), got {tuple(sinks.shape)}"
            )
    return out


def scaled_dot_product_attention(
    q: Array,
    k: Array,
    v: Array,
    *,
    scale: float,
    mask: Union[None, str, Array] = None,
    sinks: Optional[Array] = None,
    force_fused: bool = False,
    stream=None,
) -> Array:
    """``softmax(scale * q @ k^T + mask) @ v`` over ``(B, N_q, L, D)`` queries and
    ``(B, N_kv, S, D)`` keys and values, ``N_kv`` dividing ``N_q`` (grouped-query attention:
    query head ``h`` reads kv head ``h // (N_q / N_kv)``; pass k and v untiled).

    ``mask`` is ``None``, ``"causal"`` (lower-right aligned: query ``i`` sees keys up to
    ``i + S - L``), an additive float array, or a bool array (True: attend), broadcastable to
    ``(B, N_q, L, S)``. ``sinks`` (``(N_q,)``) adds one logit per head to each softmax row
    that takes weight but reads no value. The softmax runs in float32 at least. On the
    CPU, float32 attention with no mask or an additive one scales the scores inside one pass
    per row (``ScaledSoftmax``) instead of scaling ``q`` first.

    >>> q = nv.ones((1, 4, 3, 8)); kv = nv.ones((1, 2, 3, 8))
    >>> nv.fast.scaled_dot_product_attention(q, kv, kv, scale=8 ** -0.5, mask="causal").shape
    (1, 4, 3, 8)
    """
    out_dtype = _attention_inputs(q, k, v, mask, sinks)
    q, k, v = (ops.astype(t, out_dtype) for t in (q, k, v))
    q_shape = tuple(q.shape)
    L, S = q.shape[-2], k.shape[-2]
    n_q, n_kv = (q.shape[-3], k.shape[-3]) if q.ndim > 2 and k.ndim > 2 else (1, 1)
    rep = n_q // n_kv
    if rep > 1:  # (B, N_kv, rep, L, D) against (B, N_kv, 1, S, D)
        q = ops.reshape(q, (*q_shape[:-3], n_kv, rep, L, q_shape[-1]))
        k, v = ops.expand_dims(k, -3), ops.expand_dims(v, -3)
    scores_shape = tuple(q.shape[:-1]) + (S,)
    mask_array: Array | None = None if isinstance(mask, str) else mask
    if isinstance(mask, str):  # causal, as a bool mask
        mask_array = ops.expand_dims(ops.arange(S - L, S), 1) >= ops.expand_dims(ops.arange(S), 0)
    elif mask_array is not None:
        if mask_array.dtype != dt.bool_:
            mask_array = ops.astype(mask_array, out_dtype)
        if rep > 1 and mask_array.ndim >= 3:  # split its head axis as the queries'
            if mask_array.shape[-3] == 1:
                mask_array = ops.expand_dims(mask_array, -3)
            else:
                mask_array = ops.reshape(
                    mask_array, (*mask_array.shape[:-3], n_kv, rep, *mask_array.shape[-2:])
                )
    rows = ScaledSoftmax(scale, mask_array is not None)
    if (
        sinks is None
        and (mask_array is None or mask_array.dtype != dt.bool_)
        and _scaled_rows(rows, q, mask_array, scores_shape)
    ):
        scores = ops.matmul(q, ops.swapaxes(k, -1, -2))
        args = [scores] if mask_array is None else [scores, mask_array]
        w = Array.make(rows, args)
        out = ops.matmul(ops.astype(w, v.dtype), v)
    else:
        scores = ops.matmul(q * array(scale, q.dtype), ops.swapaxes(k, -1, -2))
        if mask_array is not None and mask_array.dtype == dt.bool_:
            scores = ops.where(mask_array, scores, array(dt.finfo(scores.dtype).min, scores.dtype))
        elif mask_array is not None:
            scores = scores + mask_array
        if sinks is not None:  # one leading logit per head, dropped after
            sk = ops.astype(sinks, out_dtype)
            sk = ops.reshape(sk, (n_kv, rep, 1, 1) if rep > 1 else (n_q, 1, 1))
            sk = ops.broadcast_to(sk, scores.shape[:-1] + (1,))
            scores = ops.concatenate([sk, scores], axis=-1)
        w = ops.softmax(scores, axis=-1, precise=True)
        if sinks is not None:
            w = w[..., 1:]
        out = ops.matmul(ops.astype(w, v.dtype), v)
    if rep > 1:
        out = ops.reshape(out, (*q_shape[:-1], out.shape[-1]))
    return out


_CUDA_TYPES = {
    "float32": "float",
    "float16": "__half",
    "bfloat16": "__nv_bfloat16",
    "float64": "double",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "bool": "bool",
    "complex64": "cuComplex",
}
_CUDA_HEADER = """#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
typedef signed char int8_t; typedef short int16_t; typedef int int32_t;
typedef long long int64_t; typedef unsigned char uint8_t; typedef unsigned short uint16_t;
typedef unsigned int uint32_t; typedef unsigned long long uint64_t;
"""


def cuda_kernel(
    name: str,
    input_names: list,
    output_names: list,
    source: str,
    header: str = "",
    ensure_row_contiguous: bool = True,
    shared_memory: int = 0,
):
    """A user's CUDA kernel, compiled by NVRTC on first launch (MLX's ``mx.fast.cuda_kernel``).

    ``source`` is the body of the kernel; the signature is generated: each input ``a`` as
    ``const T* a`` (and ``a_shape`` / ``a_strides`` / ``a_ndim`` where the source names
    them: ``const int*``, ``const int64_t*`` in elements, ``int``), then each output as
    ``T* out``; ``template=[("T", nv.float32), ("N", 4)]`` adds ``using``/``constexpr``
    lines. The returned function launches it (``grid`` counts threads, as MLX's) and returns
    the outputs. It runs on a CUDA GPU only.

    >>> k = nv.fast.cuda_kernel("myexp", ["inp"], ["out"],
    ...     "auto i = cg::this_grid().thread_rank(); out[i] = exp(inp[i]);")
    >>> callable(k)
    True
    """

    input_names, output_names = list(input_names), list(output_names)
    if not output_names:
        raise ValueError("cuda_kernel: at least one output is needed")

    def launch(
        *,
        inputs,
        output_shapes,
        output_dtypes,
        grid,
        threadgroup,
        template=None,
        init_value=None,
        verbose: bool = False,
        stream=None,
    ):
        if len(inputs) != len(input_names):
            raise ValueError(
                f"cuda_kernel {name}: {len(input_names)} inputs named, {len(inputs)} given"
            )
        if len(output_shapes) != len(output_names) or len(output_dtypes) != len(output_names):
            raise ValueError(
                f"cuda_kernel {name}: give one shape and one dtype per output ({len(output_names)})"
            )
        if len(grid) != 3 or len(threadgroup) != 3:
            raise ValueError(f"cuda_kernel {name}: grid and threadgroup are 3-tuples")

        st = resolve_stream(stream)
        runner = backend_of(st)
        if runner is None or runner.name != "cuda":
            raise ValueError(
                f"cuda_kernel {name}: runs on a CUDA GPU only (the stream is on {st.device})"
            )
        arrays = [a if isinstance(a, Array) else array(a) for a in inputs]
        params = []
        for n, a in zip(input_names, arrays):
            params.append(f"const {_CUDA_TYPES[a.dtype.name]}* {n}")
            if a.ndim > 0:
                for suffix, decl in (
                    ("_shape", "const int*"),
                    ("_strides", "const int64_t*"),
                    ("_ndim", "const int"),
                ):
                    if n + suffix in source:
                        params.append(f"{decl} {n}{suffix}")
        params += [f"{_CUDA_TYPES[d.name]}* {n}" for n, d in zip(output_names, output_dtypes)]
        consts = []
        for tname, arg in template or []:
            if isinstance(arg, bool):
                consts.append(f"  constexpr bool {tname} = {'true' if arg else 'false'};")
            elif isinstance(arg, int):
                consts.append(f"  constexpr int {tname} = {arg};")
            else:
                consts.append(f"  using {tname} = {_CUDA_TYPES[arg.name]};")
        full = (
            _CUDA_HEADER
            + header
            + f'\nextern "C" __global__ void {name}(\n    '
            + ",\n    ".join(params)
            + ") {\n"
            + "\n".join(consts)
            + "\n"
            + source
            + "\n}\n"
        )
        if verbose:
            print(full)
        specs = tuple((tuple(int(x) for x in s), d) for s, d in zip(output_shapes, output_dtypes))
        prim = CustomKernel(
            name,
            full,
            specs,
            tuple(int(g) for g in grid),
            tuple(int(t) for t in threadgroup),
            init_value,
            shared_memory,
            ensure_row_contiguous,
        )
        return Array.make_multi(prim, arrays, st)

    return launch


def metal_kernel(
    name: str,
    input_names: list,
    output_names: list,
    source: str,
    header: str = "",
    ensure_row_contiguous: bool = True,
    atomic_outputs: bool = False,
    compile_options: Optional[dict] = None,
) -> MetalKernel:
    """A user's Metal Shading Language kernel (MLX's ``mx.fast.metal_kernel``), compiled
    through the Swift shim on first launch.

    ``source`` is the body; the signature is generated per call from the inputs' dtypes and
    the names the body uses (see ``nuvec._metal_kernel``). The returned object launches it:
    ``kernel(inputs=[...], grid=(x, y, z), threadgroup=(x, y, z), output_shapes=[...],
    output_dtypes=[...], template=[("T", nv.float32)], init_value=None, verbose=False)``,
    ``grid`` counting threads, and returns the outputs. Making the kernel works anywhere;
    launching needs a Metal device (``nv.metal.is_available()``) and runs on ``stream`` (the
    GPU's default stream when None, as in MLX). ``compile_options``
    ``{"math_mode": "safe" | "relaxed" | "fast"}`` picks Metal's math mode ("safe": IEEE
    results, the default).

    >>> k = nv.fast.metal_kernel("myexp", ["inp"], ["out"],
    ...     "uint i = thread_position_in_grid.x; out[i] = exp(inp[i]);")
    >>> print(k.source_for([nv.ones((16,))], [nv.float32]))
    [[kernel]] void custom_kernel_myexp_float_float(
      const device float* inp [[buffer(0)]],
      device float* out [[buffer(1)]],
      uint3 thread_position_in_grid [[thread_position_in_grid]]) {
    uint i = thread_position_in_grid.x; out[i] = exp(inp[i]);
    }
    <BLANKLINE>
    """
    return MetalKernel(
        name,
        input_names,
        output_names,
        source,
        header,
        ensure_row_contiguous,
        atomic_outputs,
        compile_options,
    )
