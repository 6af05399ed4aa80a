"""How a kernel is launched on Metal: which entry point, which argument in which
``[[buffer(i)]]`` slot, and the grid. Pure Python over shapes and strides (no Metal call), so
it runs and is tested everywhere, including against the generated kernels compiled as C++
(tests/metal/test_msl_emulation.py feeds these plans to the emulation).

Element-wise kernels (the Metal dialect, ``nuvec/codegen/dialects/metal.py``)::

    plan = elementwise(spec, "nv_k", [x, y], shape)     # x, y: anything with shape/strides/itemsize
    plan.kernel        # "nv_k_contig" / "nv_k_scalar" / "nv_k_strided"
    plan.args          # {0: ArrayRef(0), 1: ArrayRef(1), 2: ArrayRef(2), 3: b"<n as uint32>", ...}
    plan.grid          # (n, 1, 1) threads; threadgroup (0, 0, 0): the shim picks one

``ArrayRef(j)`` is array ``j`` of inputs followed by outputs (outputs are new C-contiguous
arrays of ``shape``): the caller binds the address of its first element. Constant arguments
are little-endian bytes in the types the kernel declares (``uint`` n, ``uint`` s[k], ``uint``
ndim, ``long`` meta[]).

Matrix products (``matmul_source`` kernels ``nv_mm_<dtype>``)::

    plan = matmul(a, b, out_shape, "float32", c=None, alpha=1.0, beta=0.0)

one threadgroup of TILE x TILE threads per TILE x TILE block of the output, grid z = batch.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np

from ...codegen.dialects.metal import MetalDialect
from ...codegen.ir import KernelSpec

__all__ = [
    "ArrayRef",
    "Launch",
    "elementwise",
    "matmul",
    "merge_dims",
    "matmul_source",
    "MM_TILE",
    "MM_DTYPES",
    "ADDMM_DTYPES",
    "MAX_THREADS",
    "PlanError",
]

MAX_THREADS = (1 << 32) - 1  # thread ids and n are 32-bit `uint` in the Metal dialect
MAX_BUFFERS = 31  # Metal's buffer argument table (the shim reports the real limit)
MM_TILE = 16
MM_DTYPES = ("float32", "float16", "bfloat16", "int32")
ADDMM_DTYPES = ("float32", "float16", "bfloat16")


class PlanError(ValueError):
    """The launch cannot be planned on Metal (too many elements or buffers, odd strides); the
    caller runs the primitive on the CPU instead."""


class ArrayRef(NamedTuple):
    """Argument: array ``index`` of (inputs..., outputs...), bound at its first element."""

    index: int


@dataclass(frozen=True)
class Launch:
    """One dispatch: ``args`` maps [[buffer(i)]] to an ArrayRef or constant bytes."""

    kernel: str
    variant: str
    args: dict[int, Any]
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int] = (0, 0, 0)
    mode: str = "threads"

    @property
    def buffer_count(self) -> int:
        return len(self.args)


def _u32(v: int) -> bytes:
    return struct.pack("<I", v)


def _size(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _element_strides(x, shape: tuple[int, ...], what: str) -> list[int]:
    """Strides of ``x`` broadcast to ``shape``, in elements (0 on broadcast axes)."""
    nd, xs = len(shape), tuple(x.shape)
    lead = nd - len(xs)
    if lead < 0:
        raise PlanError(f"{what}: shape {xs} does not broadcast to {shape}")
    out = [0] * lead
    for d, (size, st) in enumerate(zip(xs, x.strides)):
        if size == 1:
            out.append(0)
            continue
        if size != shape[lead + d]:
            raise PlanError(f"{what}: shape {xs} does not broadcast to {shape}")
        if st % x.itemsize:
            raise PlanError(f"{what}: stride {st} is not a whole number of {x.itemsize}-byte items")
        out.append(st // x.itemsize)
    return out


def merge_dims(shape: Sequence[int], strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """Drops size-1 axes and merges neighbours every array steps over contiguously.

    >>> merge_dims((2, 3, 1, 4), [[12, 4, 0, 1], [0, 0, 0, 1]])
    ([6, 4], [[4, 1], [0, 1]])
    """
    dims: list[int] = []
    out: list[list[int]] = [[] for _ in strides]
    for ax, size in enumerate(shape):
        if size == 1:
            continue
        st = [s[ax] for s in strides]
        if dims and all(o[-1] == t * size for o, t in zip(out, st)):
            dims[-1] *= size  # the outer axis steps exactly over this one: one axis
            for o, t in zip(out, st):
                o[-1] = t
            continue
        dims.append(int(size))
        for o, t in zip(out, st):
            o.append(int(t))
    return dims, out


def elementwise(
    spec: KernelSpec,
    name: str,
    ins: Sequence[Any],
    shape: Sequence[int],
    *,
    force: str | None = None,
    max_buffers: int = MAX_BUFFERS,
) -> Launch:
    """The launch of ``name`` (generated for ``spec`` by the Metal dialect) over ``ins``
    (objects with ``shape``, ``strides`` in bytes, ``itemsize``, ``size``, ``flags``)
    broadcast to ``shape``. ``force`` ("contig", "scalar", "strided") picks the variant where
    the layout allows it (tests). Raises PlanError when Metal cannot run it."""
    shape = tuple(int(s) for s in shape)
    if len(ins) != len(spec.inputs):
        raise PlanError(f"{name}: {len(spec.inputs)} inputs expected, got {len(ins)}")
    if force not in (None, "contig", "scalar", "strided"):
        raise ValueError(f"elementwise: force must be contig, scalar or strided, got {force!r}")
    n = _size(shape)
    if n == 0:
        raise PlanError(f"{name}: nothing to launch for an empty shape {shape}")
    if n > MAX_THREADS:
        raise PlanError(f"{name}: {n} elements exceed the Metal kernels' 32-bit thread index")
    nin, nout = len(spec.inputs), len(spec.outputs)
    mask: list[int] | None = []
    for x in ins:
        if x.size == 1 or not any(x.strides):
            # one value everywhere: a size-1 array, or a broadcast of one (all strides 0,
            # what the ops' Broadcast of a scalar gives): read a[0] for every element
            mask.append(0)
        elif tuple(x.shape) == shape and x.flags["C_CONTIGUOUS"]:
            mask.append(1)
        else:
            mask = None
            break
    if force == "strided" or mask is None:
        variant = "strided"
    elif force == "scalar" or 0 in mask:
        variant = "scalar"
    else:
        variant = "contig"
    if force == "contig" and variant != "contig":
        raise PlanError(f"{name}: the contig variant needs every input contiguous, full-size")
    extra = {"contig": 1, "scalar": 2, "strided": 3}[variant]
    if nin + nout + extra > max_buffers:
        raise PlanError(
            f"{name}: {nin + nout + extra} buffer arguments exceed Metal's {max_buffers}"
        )
    args: dict[int, Any] = {j: ArrayRef(j) for j in range(nin + nout)}
    slot = nin + nout
    args[slot] = _u32(n)
    if variant == "scalar":
        args[slot + 1] = np.array(mask, dtype="<u4").tobytes()
    elif variant == "strided":
        strides = [_element_strides(x, shape, f"{name} input {i}") for i, x in enumerate(ins)]
        out_strides = [0] * len(shape)
        step = 1
        for ax in range(len(shape) - 1, -1, -1):  # C order for the new outputs
            out_strides[ax] = step if shape[ax] != 1 else 0
            step *= shape[ax]
        strides += [list(out_strides) for _ in range(nout)]
        dims, merged = merge_dims(shape, strides)
        if not dims:  # every axis has size 1: one element
            dims, merged = [1], [[0] for _ in strides]
        meta = np.array(dims + [t for s in merged for t in s], dtype="<i8")
        args[slot + 1] = _u32(len(dims))
        args[slot + 2] = meta.tobytes()
    return Launch(f"{name}_{variant}", variant, args, (n, 1, 1))


# ----------------------------------------------------------------------------- matmul


def _batch_offsets(x, batch: tuple[int, ...], what: str) -> np.ndarray:
    """Element offset of each batch matrix of ``x`` (broadcast to ``batch``), C order."""
    bshape, bstrides = tuple(x.shape[:-2]), tuple(x.strides[:-2])
    lead = len(batch) - len(bshape)
    off = np.zeros((1,) * len(batch), dtype=np.int64)
    for d, (size, st) in enumerate(zip(bshape, bstrides)):
        if size == 1:
            continue
        if st % x.itemsize:
            raise PlanError(f"{what}: stride {st} is not a whole number of items")
        ax = lead + d
        if ax < 0 or batch[ax] != size:
            raise PlanError(f"{what}: batch shape {bshape} does not broadcast to {batch}")
        shp = [1] * len(batch)
        shp[ax] = size
        off = off + (np.arange(size, dtype=np.int64) * (st // x.itemsize)).reshape(shp)
    return np.broadcast_to(off, batch).reshape(-1)


def _matrix_strides(x, what: str) -> tuple[int, int]:
    rows, cols = x.shape[-2], x.shape[-1]
    out = []
    for size, st in ((rows, x.strides[-2]), (cols, x.strides[-1])):
        if size == 1:
            out.append(0)
        elif st % x.itemsize:
            raise PlanError(f"{what}: stride {st} is not a whole number of items")
        else:
            out.append(st // x.itemsize)
    return out[0], out[1]


def matmul(
    a, b, out_shape: Sequence[int], dtype: str, *, c=None, alpha: float = 1.0, beta: float = 0.0
) -> Launch:
    """The launch of ``nv_mm_<dtype>``: out = alpha * (a @ b) + beta * c (c optional,
    broadcastable to ``out_shape``; then ``dtype`` must be a float type). ``a`` (..., M, K)
    and ``b`` (..., K, N) may have any strides (transposed views need no copy); the output is
    a new C-contiguous array. Arrays: 0 = a, 1 = b, 2 = out, 3 = c."""
    out_shape = tuple(int(s) for s in out_shape)
    if dtype not in MM_DTYPES:
        raise PlanError(f"matmul: no Metal kernel for {dtype}")
    if c is not None and dtype not in ADDMM_DTYPES:
        raise PlanError(f"addmm: no Metal kernel for {dtype}")
    M, K = int(a.shape[-2]), int(a.shape[-1])
    N = int(b.shape[-1])
    if int(b.shape[-2]) != K or out_shape[-2:] != (M, N):
        raise PlanError(f"matmul: shapes {tuple(a.shape)} @ {tuple(b.shape)} -> {out_shape}")
    batch = out_shape[:-2]
    nb = _size(batch)
    if M == 0 or N == 0 or nb == 0:
        raise PlanError("matmul: nothing to launch for an empty product")
    groups = (-(-N // MM_TILE), -(-M // MM_TILE), nb)
    if any(g > MAX_THREADS // MM_TILE for g in groups[:2]) or nb > MAX_THREADS:
        raise PlanError(f"matmul: output {out_shape} is too large for one Metal grid")
    a_rs, a_cs = _matrix_strides(a, "matmul a")
    b_rs, b_cs = _matrix_strides(b, "matmul b")
    offs = [_batch_offsets(a, batch, "matmul a"), _batch_offsets(b, batch, "matmul b")]
    c_rs = c_cs = 0
    if c is not None:
        lead = len(out_shape) - c.ndim
        if lead < 0 or any(cs not in (1, os_) for cs, os_ in zip(c.shape, out_shape[lead:])):
            raise PlanError(f"addmm: c of shape {tuple(c.shape)} does not broadcast to {out_shape}")
        cv = _Shape((1,) * lead + tuple(c.shape), (0,) * lead + tuple(c.strides), c.itemsize)
        c_rs, c_cs = _matrix_strides(cv, "addmm c")
        offs.append(_batch_offsets(cv, batch, "addmm c"))
    else:
        offs.append(np.zeros(nb, dtype=np.int64))
    params = np.array(
        [M, N, K, a_rs, a_cs, b_rs, b_cs, c_rs, c_cs, int(c is not None)], dtype="<i8"
    )
    boff = np.stack(offs, axis=1).astype("<i8").reshape(-1)
    args: dict[int, Any] = {
        0: ArrayRef(0),
        1: ArrayRef(1),
        2: ArrayRef(2),
        3: params.tobytes(),
        4: boff.tobytes(),
        5: np.array([alpha, beta], dtype="<f4").tobytes(),
    }
    # c's slot always holds an array: the output stands in when there is no c (never read);
    # with K == 0 the operands are empty (no memory to bind) and never read either
    args[6] = ArrayRef(3) if c is not None else ArrayRef(2)
    if K == 0:
        args[0] = args[1] = ArrayRef(2)
    return Launch(f"nv_mm_{dtype}", "matmul", args, groups, (MM_TILE, MM_TILE, 1), "threadgroups")


class _Shape(NamedTuple):
    shape: tuple
    strides: tuple
    itemsize: int


_MM_KERNEL = r"""
kernel void nv_mm_@NAME@(
    device const @ST@ *a [[buffer(0)]],
    device const @ST@ *b [[buffer(1)]],
    device @ST@ *o [[buffer(2)]],
    constant long *p [[buffer(3)]],
    constant long *boff [[buffer(4)]],
    constant float *ab [[buffer(5)]],
    device const @ST@ *c [[buffer(6)]],
    uint3 tg [[threadgroup_position_in_grid]],
    uint3 lt [[thread_position_in_threadgroup]])
{
    threadgroup @AT@ As[NV_MM_TILE][NV_MM_TILE];
    threadgroup @AT@ Bs[NV_MM_TILE][NV_MM_TILE];
    const long M = p[0], N = p[1], K = p[2];
    const long row = (long)tg.y * NV_MM_TILE + (long)lt.y;
    const long col = (long)tg.x * NV_MM_TILE + (long)lt.x;
    const long batch = (long)tg.z;
    const long ao = boff[3 * batch], bo = boff[3 * batch + 1], co = boff[3 * batch + 2];
    @AT@ acc = @ZERO@;
    for (long k0 = 0; k0 < K; k0 += NV_MM_TILE) {
        const long ka = k0 + (long)lt.x, kb = k0 + (long)lt.y;
        As[lt.y][lt.x] = (row < M && ka < K) ? @LOAD_A@ : @ZERO@;
        Bs[lt.y][lt.x] = (kb < K && col < N) ? @LOAD_B@ : @ZERO@;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        const int kn = (int)(K - k0 < NV_MM_TILE ? K - k0 : NV_MM_TILE);
        for (int kk = 0; kk < kn; kk++)
            acc = @FMA@;
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (row < M && col < N) {
@EPILOGUE@
        o[batch * M * N + row * N + col] = @STORE@;
    }
}
"""

_FLOAT_EPILOGUE = r"""        float v = acc;
        const float alpha = ab[0], beta = ab[1];
        if (alpha != 1.0f)
            v = v * alpha;
        if (p[9] != 0 && beta != 0.0f) {
            const float cv = @LOAD_C@;
            v = beta == 1.0f ? v + cv : v + beta * cv;
        }"""


def _mm_kernel(dtype: str) -> str:
    d = MetalDialect()
    st = d.stype(dtype)
    a_ref = "a[ao + row * p[3] + ka * p[4]]"
    b_ref = "b[bo + kb * p[5] + col * p[6]]"
    if dtype == "int32":
        # unsigned arithmetic: wraps as NumPy's int32 matmul, with no signed-overflow UB
        subs = {
            "AT": "int",
            "ZERO": "0",
            "LOAD_A": a_ref,
            "LOAD_B": b_ref,
            "FMA": "(int)((uint)acc + (uint)As[lt.y][kk] * (uint)Bs[kk][lt.x])",
            "EPILOGUE": "        const int v = acc;",
            "STORE": "v",
        }
    else:
        subs = {
            "AT": "float",
            "ZERO": "0.0f",
            "LOAD_A": d.load(dtype, a_ref),
            "LOAD_B": d.load(dtype, b_ref),
            # one rounding per product and per sum, in k order, no fma: reproducible;
            # equal to the CPU's BLAS up to float32 rounding of the sum, not bit for bit
            "FMA": "acc + As[lt.y][kk] * Bs[kk][lt.x]",
            "EPILOGUE": _FLOAT_EPILOGUE.replace(
                "@LOAD_C@", d.load(dtype, "c[co + row * p[7] + col * p[8]]")
            ),
            "STORE": d.store(dtype, "v"),
        }
    text = _MM_KERNEL.replace("@NAME@", dtype).replace("@ST@", st)
    for k, v in subs.items():
        text = text.replace(f"@{k}@", v)
    return text


def matmul_source() -> str:
    """MSL of the matmul kernels (``nv_mm_<dtype>`` for MM_DTYPES) over the Metal dialect's
    prelude and library (its float16 / bfloat16 conversions, the same bits as the CPU's)."""
    d = MetalDialect()
    parts = [d.prelude(), d.library(), f"#define NV_MM_TILE {MM_TILE}"]
    parts += [_mm_kernel(t) for t in MM_DTYPES]
    return "\n".join(parts)
