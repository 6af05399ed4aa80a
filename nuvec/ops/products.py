"""MLX's structured matrix products, built from take, masks and matmul (so their gradients
and vmap come from those ops): gather_mm, block_masked_mm, segmented_mm; and the
Walsh-Hadamard transform as its butterfly of adds and subtracts.

>>> import nuvec as nv
>>> nv.hadamard_transform(nv.array([1.0, 0.0, 0.0, 0.0]), scale=1.0).tolist()
[1.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

import builtins
import math
import numbers

from ..core import dtypes as dt
from ..core import shapeless
from ..core.array import Array
from ..core.device import stream as _on_stream
from . import elementwise as ew
from ._common import as_array
from .creation import arange, array
from .hadamard_matrices import ORDERS, hadamard_matrix
from .indexing import getitem, take
from .linalg import matmul
from .shape import broadcast_arrays, expand_dims, flatten, repeat, reshape, squeeze, stack

__all__ = ["gather_mm", "block_masked_mm", "segmented_mm", "hadamard_transform"]


def _float_operands(a, b, op: str) -> tuple[Array, Array, bool, bool]:
    a, b = as_array(a, op), as_array(b, op)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"{op}: the inputs must have at least one dimension")
    a1, b1 = a.ndim == 1, b.ndim == 1
    if a1:
        a = expand_dims(a, 0)
    if b1:
        b = expand_dims(b, 1)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(
            f"{op}: the last dimension of a {a.shape} must match the second to last of b {b.shape}"
        )
    out = dt.promote_types(a.dtype, b.dtype)
    if not dt.issubdtype(out, dt.floating):
        raise ValueError(
            f"{op}: only real floating point types are supported, got {a.dtype} and {b.dtype}"
        )
    return ew.astype(a, out), ew.astype(b, out), a1, b1


def stacked(x: Array) -> Array:
    """``x`` as one stack of matrices: its batch axes merged (a new one for a matrix). Holds no
    size, so a shapeless replay merges the replayed batch axes."""
    return flatten(x, 0, -3) if x.ndim > 2 else expand_dims(x, 0)


def _batch_indices(idx, x: Array, op: str, arg: str) -> Array:
    """``idx`` (flat indices into ``x``'s batch axes) or, when None, every batch position."""
    batch = x.shape[:-2]
    if idx is None:
        if shapeless.relative(x) and batch:
            raise ValueError(
                f"{op}: under nv.compile(shapeless=True) the default {arg} would be the "
                "traced batch positions; pass the indices explicitly"
            )
        n = math.prod(batch)
        return reshape(arange(n, dtype=dt.uint32), batch)
    idx = as_array(idx, op)
    if not dt.issubdtype(idx.dtype, dt.integer):
        raise ValueError(f"{op}: {arg} must be integers, got {idx.dtype}")
    return idx


def gather_mm(
    a, b, /, lhs_indices=None, rhs_indices=None, *, sorted_indices: bool = False, stream=None
) -> Array:
    """``a[lhs_indices] @ b[rhs_indices]``, where the indices are flat positions in the batch
    axes (all but the last two) of ``a`` and ``b``; the index arrays broadcast together and
    give the output's batch shape. ``sorted_indices`` is a hint only.

    >>> import nuvec as nv
    >>> w = nv.stack([nv.eye(2), 2 * nv.eye(2)])
    >>> nv.gather_mm(nv.ones((1, 2)), w, None, nv.array([1, 0])).tolist()
    [[[2.0, 2.0]], [[1.0, 1.0]]]
    """
    op = "gather_mm"
    with _on_stream(stream):
        if lhs_indices is None and rhs_indices is None:
            return matmul(a, b)
        a, b, a1, b1 = _float_operands(a, b, op)
        li = _batch_indices(lhs_indices, a, op, "lhs_indices")
        ri = _batch_indices(rhs_indices, b, op, "rhs_indices")
        li, ri = broadcast_arrays(li, ri, name=op)
        ga = take(stacked(a), li, axis=0)
        gb = take(stacked(b), ri, axis=0)
        out = matmul(ga, gb)
        axes = ([out.ndim - 2] if a1 else []) + ([out.ndim - 1] if b1 else [])
        return squeeze(out, axes) if axes else out


def _expand_mask(mask, rows: int, cols: int, block: int, x_dtype, op: str, arg: str) -> Array:
    mask = as_array(mask, op)
    tr, tc = -(-rows // block), -(-cols // block)
    if mask.ndim < 2 or mask.shape[-2:] != (tr, tc):
        raise ValueError(f"{op}: {arg} must end in ({tr}, {tc}) blocks, got {mask.shape}")
    full = repeat(repeat(mask, block, axis=-2), block, axis=-1)
    return getitem(full, (Ellipsis, builtins.slice(0, rows), builtins.slice(0, cols)))


def _apply_mask(x: Array, mask: Array) -> Array:
    if mask.dtype == dt.bool_:
        return ew.where(mask, x, 0.0)
    return ew.multiply(x, ew.astype(mask, x.dtype))


def block_masked_mm(
    a, b, /, block_size: int = 64, mask_out=None, mask_lhs=None, mask_rhs=None, *, stream=None
) -> Array:
    """``a @ b`` with ``block_size x block_size`` blocks masked: boolean masks drop blocks
    (a dropped block adds nothing, whatever it holds), float masks scale them. ``mask_lhs``
    covers ``a``'s (M, K) blocks, ``mask_rhs`` ``b``'s (K, N), ``mask_out`` the output's.

    >>> import nuvec as nv
    >>> m = nv.array([[True, False]])
    >>> nv.block_masked_mm(nv.ones((32, 64)), nv.ones((64, 32)), 32, mask_lhs=m)[0, 0].item()
    32.0
    """
    op = "block_masked_mm"
    with _on_stream(stream):
        if mask_out is None and mask_lhs is None and mask_rhs is None:
            return matmul(a, b)
        if block_size not in (32, 64):
            raise ValueError(f"{op}: block_size must be 32 or 64, got {block_size}")
        a, b, a1, b1 = _float_operands(a, b, op)
        m, k = a.shape[-2:]
        n = b.shape[-1]
        if mask_lhs is not None:
            a = _apply_mask(a, _expand_mask(mask_lhs, m, k, block_size, a.dtype, op, "mask_lhs"))
        if mask_rhs is not None:
            b = _apply_mask(b, _expand_mask(mask_rhs, k, n, block_size, b.dtype, op, "mask_rhs"))
        out = matmul(a, b)
        if mask_out is not None:
            out = _apply_mask(
                out, _expand_mask(mask_out, m, n, block_size, out.dtype, op, "mask_out")
            )
        axes = ([out.ndim - 2] if a1 else []) + ([out.ndim - 1] if b1 else [])
        return squeeze(out, axes) if axes else out


def segmented_mm(a, b, /, segments, *, stream=None) -> Array:
    """For each ``[start, end)`` pair in ``segments`` (shape ``(..., 2)``), the product of
    ``a[:, start:end]`` and ``b[start:end, :]``: output ``(..., M, N)``.

    >>> import nuvec as nv
    >>> a, b = nv.ones((1, 4)), nv.ones((4, 1))
    >>> nv.segmented_mm(a, b, nv.array([[0, 1], [1, 4]])).reshape(-1).tolist()
    [1.0, 3.0]
    """
    op = "segmented_mm"
    with _on_stream(stream):
        a, b = as_array(a, op), as_array(b, op)
        if a.ndim != 2 or b.ndim != 2:
            raise ValueError(f"{op}: a and b must be 2-D, got {a.shape} and {b.shape}")
        a, b, _, _ = _float_operands(a, b, op)
        seg = as_array(segments, op)
        if seg.ndim < 1 or seg.shape[-1] != 2:
            raise ValueError(f"{op}: segments must have shape (..., 2), got {seg.shape}")
        if not dt.issubdtype(seg.dtype, dt.integer):
            raise ValueError(f"{op}: segments must be integers, got {seg.dtype}")
        k = a.shape[1]
        pos = arange(k, dtype=dt.int64)
        start = expand_dims(ew.astype(getitem(seg, (Ellipsis, 0)), dt.int64), -1)
        end = expand_dims(ew.astype(getitem(seg, (Ellipsis, 1)), dt.int64), -1)
        inside = ew.logical_and(ew.greater_equal(pos, start), ew.less(pos, end))  # (..., K)
        masked = ew.where(expand_dims(inside, -2), a, 0.0)  # (..., M, K)
        return matmul(masked, b)


def _hadamard_order(n: int, op: str) -> int:
    """``m`` with ``n = m * 2**k`` and ``m`` in 1, 12, 20, 28."""
    for m in (1,) + ORDERS:
        if n % m == 0 and not (n // m) & (n // m - 1):
            return m
    raise ValueError(
        f"{op}: the last axis must have a size m * 2**k with m in 1, 12, 20 or 28, got {n}"
    )


def hadamard_transform(a, scale: float | None = None, stream=None) -> Array:
    """The Walsh-Hadamard transform along the last axis, ``(H @ x) * scale``; ``scale``
    defaults to ``1/sqrt(n)``. For ``n = 2**k``, ``H`` is Sylvester's matrix (SciPy's
    ``hadamard``); for ``n = m * 2**k`` with ``m`` in 12, 20, 28 it is
    ``kron(H_m, hadamard(2**k))`` with ``H_m`` from Sloane's library (as MLX). Integer inputs
    give float32.

    >>> import nuvec as nv
    >>> nv.hadamard_transform(nv.array([1.0, 1.0])).tolist()
    [1.4142135381698608, 0.0]
    """
    op = "hadamard_transform"
    a = as_array(a, op)
    shapeless.refuse_traced(a, op, "the butterfly of the last axis's size")
    if a.size == 0:
        raise ValueError(f"{op}: empty arrays are not supported")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, numbers.Real)):
        raise TypeError(f"{op}: scale must be a float or None, got {type(scale).__name__}")
    n = a.shape[-1] if a.ndim else 1
    m = _hadamard_order(n, op)
    p = n // m
    s = float(scale) if scale is not None else 1.0 / math.sqrt(n)
    dtype = a.dtype if dt.issubdtype(a.dtype, dt.floating) else dt.float32
    with _on_stream(stream):
        x = ew.astype(a, dtype)
        lead = x.shape[:-1] if x.ndim else ()
        h = 1
        while h < p:  # the butterfly of hadamard(p) on each run of p entries
            y = reshape(x, lead + (n // (2 * h), 2, h))
            lo, hi = (
                getitem(y, (Ellipsis, 0, builtins.slice(None))),
                getitem(y, (Ellipsis, 1, builtins.slice(None))),
            )
            x = reshape(stack([ew.add(lo, hi), ew.subtract(lo, hi)], axis=-2), lead + (n,))
            h *= 2
        if m > 1:  # then H_m across the m runs, accumulated and scaled in float32 (as MLX)
            work = dt.float64 if dtype == dt.float64 else dt.float32
            runs = ew.astype(reshape(x, lead + (m, p)), work)
            y = ew.multiply(matmul(array(hadamard_matrix(m), work), runs), s)
            return ew.astype(reshape(y, lead + (n,)), dtype)
        if a.ndim == 0:
            x = reshape(x, ())
        return x if s == 1.0 else ew.multiply(x, s)
