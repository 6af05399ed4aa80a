"""Run element-wise kernels (single ops and fused groups) on CuPy arrays.

    (out,) = kernels.run(KernelSpec.single("add", ("float32",) * 2, "float32"), [a, b], a.shape)

``run`` takes inputs in the spec's storage dtypes (bfloat16 as uint16 bits), broadcastable to
``shape``, with any strides, and returns new C-contiguous outputs allocated on the current
stream, after queueing the kernel on that stream (no host synchronisation).

Choice of entry point (``source`` has the kernels): when every input is C-contiguous with the
output's shape or has one element (a broadcast scalar) and the arrays are aligned, the ``vec``
kernel (vector loads and stores); unaligned views of that kind use the dialect's ``contig`` /
``scalar`` kernels; anything else (transposes, slices with steps, broadcasts along some axes)
a strided kernel over the shape with size-1 axes dropped and mergeable axes merged: with
32-bit indices and at most ``source.ND_MAX`` axes the ``nd`` kernel of that many axes (layout
as arguments, coordinates by multiply-high and shift), else ``strided`` (layout in device
memory). 32-bit indexing wherever every index fits, 64-bit otherwise.

Each (spec, variant, index width, scalar mask, vector cap) is one NVRTC module compiled on
first use by ``nvrtc.load`` (``--fmad=false``, ``-ftz=false``: no contraction, IEEE subnormals,
division and square root, never fast math; cached on disk as cubins). ``precompile`` builds
many kernels in few modules, in threads (NVRTC runs without the GIL). ``run_group`` launches
the ``vec`` kernels of several independent specs as one kernel, each over blocks of its own
(``source.group_kernel``: a compiled step's run of independent fused steps, such as an
optimizer's updates of every parameter); ``prepare_group`` builds such a kernel ahead.
``set_vec_cap`` bounds the elements a ``vec`` thread handles (8 by default; benchmarks sweep
it).
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import cupy as cp
import numpy as np

from ...codegen.ir import KernelSpec
from ...core import dtypes as dt
from . import nvrtc, source
from .nvrtc import KernelCompileError

__all__ = [
    "run",
    "launcher",
    "run_group",
    "astype",
    "precompile",
    "forced",
    "stats",
    "set_vec_cap",
    "KernelCompileError",
]

_BLOCK = 256
_GRID_CAP = 1 << 20  # grid-stride kernels: at most this many blocks
_I32_LIMIT = (1 << 31) - 1

_STORE = {
    name: (np.dtype(np.uint16) if name == "bfloat16" else dt.from_name(name).np)
    for name in (
        "bool",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "int8",
        "int16",
        "int32",
        "int64",
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex64",
    )
}

_kernels: dict[tuple, object] = {}
_widths: dict[tuple, int] = {}  # (spec, mask, cap) -> elements per vec thread
_meta: dict[tuple, cp.ndarray] = {}
_lock = threading.Lock()
_stats = {"compiled": 0, "launches": {v: 0 for v in source.VARIANTS + ("group",)}}
_force: dict[str, str | None] = {"variant": None, "idx": None}
_cap = [int(os.environ.get("NUVEC_CUDA_VEC_CAP", "8"))]


def set_vec_cap(cap: int) -> int:
    """At most ``cap`` (1, 2, 4 or 8) elements per ``vec`` thread; returns the previous cap."""
    if cap not in (1, 2, 4, 8):
        raise ValueError(f"set_vec_cap: cap must be 1, 2, 4 or 8, got {cap!r}")
    prev, _cap[0] = _cap[0], cap
    return prev


def _module(src: str, entries: list[str], what: str, fast: bool = False) -> list:
    try:
        return nvrtc.load(src, entries, fast=fast)
    except KernelCompileError as e:
        raise KernelCompileError(f"cuda kernels: {what}: {e}") from None


def _compile(key: tuple):
    spec, variant, idx, mask, cap = key
    src, entry = source.module_source(spec, variant, idx, mask, cap or 8)
    (fn,) = _module(src, [entry], f"{entry} for {[n.op for n in spec.nodes]}", spec.fast)
    with _lock:
        _stats["compiled"] += 1
        return _kernels.setdefault(key, fn)


def _kernel(spec: KernelSpec, variant: str, idx: str, mask: tuple, cap: int = 0):
    key = (spec, variant, idx, mask, cap)
    k = _kernels.get(key)
    if k is None:
        k = _compile(key)
    return k


def _group_kernel(members: tuple, cap: int):
    key = ("group", members, cap)
    k = _kernels.get(key)
    if k is None:
        src, entry = source.group_source(members, cap)
        what = f"{entry} for {len(members)} kernels"
        (fn,) = _module(src, [entry], what, members[0][0].fast)
        with _lock:
            _stats["compiled"] += 1
            k = _kernels.setdefault(key, fn)
    return k


def _width(spec: KernelSpec, mask: tuple, cap: int) -> int:
    key = (spec, mask, cap)
    w = _widths.get(key)
    if w is None:
        w = _widths[key] = source.vec_width(spec, mask, cap)
    return w


def precompile(keys, threads: int | None = None, per_module: int = 48) -> int:
    """Builds the kernels ``keys`` ((spec, variant, idx, mask) tuples; ``vec`` ones for the
    current vector cap) not built yet, in modules of ``per_module`` kernels (the shared library
    is parsed once per module) compiled by ``threads`` threads; returns how many were built."""
    keys = [k + ((_cap[0] if k[1] == "vec" else 0),) for k in keys]
    todo = [k for k in dict.fromkeys(keys) if k not in _kernels]
    if not todo:
        return 0
    chunks = []  # a module is compiled with one set of options: fast specs apart
    for fast in (False, True):
        part = [k for k in todo if k[0].fast == fast]
        chunks += [part[i : i + per_module] for i in range(0, len(part), per_module)]
    dev = cp.cuda.Device().id

    def build(chunk):
        cp.cuda.Device(dev).use()
        src, entries = source.batch_source(chunk)
        fns = _module(src, entries, f"a batch of {len(chunk)} kernels", chunk[0][0].fast)
        with _lock:
            _stats["compiled"] += len(chunk)
            for key, fn in zip(chunk, fns):
                _kernels.setdefault(key, fn)

    n = threads or min(len(chunks), os.cpu_count() or 1)
    if n <= 1:
        for c in chunks:
            build(c)
    else:
        with ThreadPoolExecutor(n) as pool:
            list(pool.map(build, chunks))
    return len(todo)


@contextlib.contextmanager
def forced(variant: str | None = None, idx: str | None = None):
    """Tests: use ``variant`` wherever the layout allows it ("strided" always does, "nd"
    where indices fit in 32 bits and the merged layout has at most ``source.ND_MAX`` axes,
    "scalar" for contiguous-or-scalar inputs, "contig" for contiguous ones, "vec" for aligned
    ones) and index width ``idx``."""
    saved = dict(_force)
    _force.update(variant=variant, idx=idx)
    try:
        yield
    finally:
        _force.update(saved)


def stats() -> dict:
    """Modules compiled and launches per variant (tests and diagnostics)."""
    return {
        "compiled": _stats["compiled"],
        "launches": dict(_stats["launches"]),
        "modules": len(_kernels),
    }


_divisors: dict[int, tuple[int, int]] = {}


def _divisor(d: int) -> tuple[int, int]:
    r = _divisors.get(d)
    if r is None:
        r = _divisors[d] = source.divisor(d)
    return r


def _meta_array(meta: tuple) -> cp.ndarray:
    """The strided kernel's layout (shape, then each array's strides) in device memory, cached."""
    m = _meta.get(meta)
    if m is None:
        if len(_meta) >= 1024:
            _meta.clear()
        m = cp.asarray(np.array(meta, dtype=np.int64))
        _meta[meta] = m
    return m


def _size(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def run(spec: KernelSpec, ins: list, shape: tuple, outs: list | None = None) -> list:
    """Outputs of ``spec`` over ``ins`` (see the module docstring)."""
    shape = tuple(shape)
    n = _size(shape)
    if outs is None:
        outs = [cp.empty(shape, _STORE[spec.nodes[o].dtype]) for o in spec.outputs]
    if n == 0:
        return outs
    fv, fi = _force["variant"], _force["idx"]
    mask = []
    simple = fv not in ("strided", "nd")
    if simple:
        for x in ins:
            if x.size == 1:
                mask.append(1)
            elif x.shape == shape and x.flags.c_contiguous:
                mask.append(0)
            else:
                simple = False
                break
    if simple:
        mask = tuple(mask)
        if fv in (None, "vec"):
            cap = _cap[0]
            V = _width(spec, mask, cap)
            if all(
                m or x.data.ptr % source.vec_align(V, x.itemsize) == 0 for x, m in zip(ins, mask)
            ) and all(o.data.ptr % source.vec_align(V, o.itemsize) == 0 for o in outs):
                idx = fi or ("i32" if n < _I32_LIMIT - (1 << 24) else "i64")
                nvec, tail = divmod(n, V)
                threads = nvec + tail
                I = np.int32 if idx == "i32" else np.int64
                k = _kernel(spec, "vec", idx, mask, cap)
                k(((threads + _BLOCK - 1) // _BLOCK,), (_BLOCK,), (I(nvec), I(n), *ins, *outs))
                _stats["launches"]["vec"] += 1
                return outs
        scalars = any(mask)
        if not (fv == "contig" and scalars):
            variant = "scalar" if (scalars or fv == "scalar") else "contig"
            grid = min((n + _BLOCK - 1) // _BLOCK, _GRID_CAP)
            idx = fi or ("i32" if n + grid * _BLOCK <= _I32_LIMIT else "i64")
            I = np.int32 if idx == "i32" else np.int64
            args = [I(n)]
            if variant == "scalar":
                for x, m in zip(ins, mask):
                    args += [x, I(0 if m else 1)]
            else:
                args += ins
            _kernel(spec, variant, idx, ())((grid,), (_BLOCK,), (*args, *outs))
            _stats["launches"][variant] += 1
            return outs
    _strided(spec, ins, shape, n, outs, fi)
    return outs


def prepare_group(members: tuple) -> bool:
    """Builds the kernel of ``run_group`` for ``members`` ((spec, scalar mask), ...) now,
    outside a graph's recording; False where it cannot be built (its parts then launch one
    by one)."""
    try:
        _group_kernel(members, _cap[0])
    except KernelCompileError:
        return False
    return True


def run_group(parts: list) -> bool:
    """Launches the ``vec`` kernels of several specs as one kernel (``source.group_kernel``):
    ``parts`` is [(spec, inputs, shape, outputs), ...], the outputs allocated by the caller.
    Only where each part would take its own ``vec`` kernel with 32-bit indices (every input
    C-contiguous with the part's shape or a broadcast scalar, the arrays aligned, no forced
    variant) and all are fast-math or none is; False (nothing launched) otherwise. Each
    element gets the bits that part's own kernel gives it."""
    if _force["variant"] is not None or _force["idx"] is not None or len(parts) < 2:
        return False
    cap = _cap[0]
    fast = parts[0][0].fast
    members, args, bounds = [], [], []
    blocks = 0
    for spec, ins, shape, outs in parts:
        n = _size(shape)
        if (
            spec.fast != fast
            or n == 0
            or n >= _I32_LIMIT - (1 << 24)
            or len(ins) != len(spec.inputs)
        ):
            return False
        mask = []
        for x in ins:
            if x.size == 1:
                mask.append(1)
            elif x.shape == shape and x.flags.c_contiguous:
                mask.append(0)
            else:
                return False
        mask_t = tuple(mask)
        V = _width(spec, mask_t, cap)
        if any(
            not m and x.data.ptr % source.vec_align(V, x.itemsize) for x, m in zip(ins, mask_t)
        ) or any(o.shape != shape or o.data.ptr % source.vec_align(V, o.itemsize) for o in outs):
            return False
        nvec, tail = divmod(n, V)
        if blocks:
            bounds.append(np.int32(blocks))
        blocks += (nvec + tail + _BLOCK - 1) // _BLOCK
        members.append((spec, mask_t))
        args += [np.int32(nvec), np.int32(n), *ins, *outs]
    try:
        k = _group_kernel(tuple(members), cap)
    except KernelCompileError:
        return False
    k((blocks,), (_BLOCK,), (*bounds, *args))
    _stats["launches"]["group"] += 1
    return True


def launcher(spec: KernelSpec):
    """``run`` for one spec, with a shortcut for a compiled function's usual call: every
    input C-contiguous with the output's shape and aligned for the ``vec`` kernel, 32-bit
    indices. The kernel, its launch grid and the output dtypes are looked up once per shape;
    any other call (a broadcast scalar, a view, a forced variant) goes through ``run``."""
    memo: dict = {}
    nin = len(spec.inputs)
    out_dtypes = [_STORE[spec.nodes[o].dtype] for o in spec.outputs]
    mask = (0,) * nin

    def launch(ins: list, shape: tuple, outs: list | None = None) -> list:
        plan = memo.get(shape)
        if plan is None:
            n = _size(shape)
            if n == 0 or n >= _I32_LIMIT - (1 << 24) or len(ins) != nin:
                return run(spec, ins, shape, outs)
            V = _width(spec, mask, _cap[0])
            nvec, tail = divmod(n, V)
            plan = memo[shape] = (
                _kernel(spec, "vec", "i32", mask, _cap[0]),
                V,
                np.int32(nvec),
                np.int32(n),
                ((nvec + tail + _BLOCK - 1) // _BLOCK,),
            )
        fn, V, nvec, n, grid = plan
        if outs is not None or _force["variant"] is not None or _force["idx"] is not None:
            return run(spec, ins, shape, outs)
        for x in ins:
            if (
                x.shape != shape
                or not x.flags.c_contiguous
                or x.data.ptr % source.vec_align(V, x.itemsize)
            ):
                return run(spec, ins, shape, outs)
        outs = [cp.empty(shape, d) for d in out_dtypes]  # fresh blocks: aligned
        fn(grid, (_BLOCK,), (nvec, n, *ins, *outs))
        _stats["launches"]["vec"] += 1
        return outs

    return launch


def _strided(spec, ins, shape, n, outs, fi) -> None:
    xs = [x if x.shape == shape else cp.broadcast_to(x, shape) for x in ins]
    arrays = xs + outs
    dims = []
    strides: list[list[int]] = [[] for _ in arrays]
    for ax, size in enumerate(shape):
        if size == 1:
            continue
        st = [a.strides[ax] // a.itemsize for a in arrays]
        if dims and all(s[-1] == t * size for s, t in zip(strides, st)):
            dims[-1] *= size  # the previous axis steps over this one exactly: merge
            for s, t in zip(strides, st):
                s[-1] = t
            continue
        dims.append(size)
        for s, t in zip(strides, st):
            s.append(t)
    ndim = len(dims)
    meta = tuple(dims) + tuple(t for s in strides for t in s)
    grid = min((n + _BLOCK - 1) // _BLOCK, _GRID_CAP)
    reach = max(sum((d - 1) * abs(t) for d, t in zip(dims, s)) for s in strides)
    fits = n + grid * _BLOCK <= _I32_LIMIT and reach <= _I32_LIMIT
    idx = fi or ("i32" if fits else "i64")
    if idx == "i32" and 1 <= ndim <= source.ND_MAX and _force["variant"] != "strided":
        # the layout by value, the coordinates by multiply-high and shift (source.nd_kernel)
        args = [np.int32(n)] + [np.int32(d) for d in dims[1:]]
        divs = [_divisor(d) for d in dims[1:]]
        args += [np.uint32(m) for m, _ in divs] + [np.int32(sh) for _, sh in divs]
        args += [np.int32(t) for s in strides for t in s]
        _kernel(spec, "nd", "i32", (ndim,))((grid,), (_BLOCK,), (*args, *xs, *outs))
        _stats["launches"]["nd"] += 1
        return
    I = np.int32 if idx == "i32" else np.int64
    k = _kernel(spec, "strided", idx, ())
    k((grid,), (_BLOCK,), (I(n), np.int32(ndim), _meta_array(meta), *xs, *outs))
    _stats["launches"]["strided"] += 1


def astype(x: cp.ndarray, src: dt.Dtype, dst: dt.Dtype) -> cp.ndarray:
    """``x`` (storage of ``src``) converted to ``dst`` by the engine's cast kernel."""
    if src == dst:
        return x
    return run(KernelSpec.single("astype", (src.name,), dst.name), [x], x.shape)[0]
