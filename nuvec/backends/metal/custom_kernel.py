"""``nv.fast.metal_kernel`` on the Apple GPU: the generated source compiled through the shim
(``nv_library_compile``, cached per device by source hash; the pipeline per kernel name),
inputs made row-contiguous where asked, shapes (int32) and strides (int64, in elements) passed
as constant bytes to the kernels that read them, outputs allocated in shared buffers (filled
with ``init_value`` when given), and one dispatch with the grid in threads, as MLX's (the
threadgroup clipped to the grid per axis; larger than the pipeline allows is an error).

Run on Linux against a recording device (tests/test_metal_kernel.py: the slots, bytes, grid
and threadgroup handed to the shim) and in the C++ emulation of MSL (tests/metal/
test_backend.py: a template kernel reading shapes and strides of a transposed view, run thread
by thread). Never run: Apple's compiler on this source, the dispatch on an Apple GPU.
"""

from __future__ import annotations

import numpy as np

from ...primitives.custom_kernel import MetalCustomKernel
from . import memory, runtime
from .memory import MetalArray
from .runtime import gpu

__all__ = ["bind"]


def _kernel(prim: MetalCustomKernel):
    """The pipeline of ``prim``'s entry point; the library is compiled (in the kernel's
    ``compile_options`` math mode, "safe" by default) once per device (the
    backend's library cache, which ``runtime.use_device`` swaps with the device)."""
    key = ("metal_kernel", prim.source, prim.math_mode)
    libs = runtime._State.libraries
    lib = libs.get(key)
    if lib is None:
        lib = libs.setdefault(key, runtime.device().compile(prim.source, math_mode=prim.math_mode))
    k = runtime._State.kernels.get(key)
    if k is None:
        k = runtime._State.kernels.setdefault(key, lib.kernel(prim.name_))
    return k


def bind(prim: MetalCustomKernel, ins: list, outs: list) -> dict:
    """The ``[[buffer(i)]]`` arguments of one launch, in the generated signature's order:
    each input (then its shape / strides / ndim where the source reads them), then each
    output. ``ins`` and ``outs`` are NumPy arrays in shared buffers."""
    dev = runtime.device()
    args: dict = {}
    index = 0
    for a, (shp, strd, nd) in zip(ins, prim.shape_info):
        if a.size == 0:
            args[index] = (dev.buffer(max(1, a.itemsize)), 0)  # Metal binds no empty buffer
        else:
            args[index] = memory.locate(a)
        index += 1
        if a.ndim > 0:
            if shp:
                args[index] = np.array(a.shape, np.int32).tobytes()
                index += 1
            if strd:
                args[index] = np.array([s // a.itemsize for s in a.strides], np.int64).tobytes()
                index += 1
            if nd:
                args[index] = np.int32(a.ndim).tobytes()
                index += 1
    for o in outs:
        args[index] = (dev.buffer(max(1, o.itemsize)), 0) if o.size == 0 else memory.locate(o)
        index += 1
    return args


@gpu(MetalCustomKernel)
def _metal_kernel(prim, ins, node):
    dev = runtime.device()
    q = runtime.queue(node._stream)
    arrays = []
    for m in ins:
        a = m.array
        if prim.contiguous and not a.flags["C_CONTIGUOUS"]:
            m.wait()
            c = memory.empty(dev, a.shape, a.dtype)
            c[...] = a
            a = c
        arrays.append(a)
    outs = []
    for shape, d in prim.output_specs:
        o = memory.empty(dev, shape, d.np)
        if prim.init_value is not None:
            o.fill(prim.init_value)
        outs.append(o)
    kernel = _kernel(prim)
    tg = prim.threadgroup
    info = getattr(kernel, "info", None)
    if info is not None and tg[0] * tg[1] * tg[2] > info["max_total_threads_per_threadgroup"]:
        raise ValueError(
            f"fast.metal_kernel {prim.name_}: threadgroup {tg} has {tg[0] * tg[1] * tg[2]} "
            f"threads, more than the pipeline's maximum "
            f"({info['max_total_threads_per_threadgroup']})"
        )
    group = tuple(min(t, g) for t, g in zip(tg, prim.grid))
    ticket = q.dispatch(kernel, bind(prim, arrays, outs), prim.grid, group, "threads")
    return [MetalArray(o, q, ticket) for o in outs]
