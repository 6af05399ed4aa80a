"""``nv.fast.cuda_kernel`` on the GPU: the generated source compiled by NVRTC (nuvec's cubin
cache, ``nvrtc.load``), inputs made row-contiguous where asked, shapes and strides (in
elements) uploaded for the kernels that name them, outputs allocated (and filled with
``init_value``), the grid given in threads as MLX's."""

from __future__ import annotations

import cupy as cp
import numpy as np

from ...primitives.custom_kernel import CustomKernel
from . import nvrtc
from .runtime import gpu

_modules: dict = {}


def _function(prim):
    fn = _modules.get(prim.source)
    if fn is None:
        fn = _modules[prim.source] = nvrtc.load(
            prim.source, [prim.name_], name=f"{prim.name_}.cu", extra=nvrtc.include_options()
        )[0]
    return fn


def _declared(source: str) -> list[str]:
    """The parameter names of the generated signature, in order."""
    params = source.split(") {", 1)[0].split("(", 1)[1]
    return [p.strip().split()[-1] for p in params.split(",")]


@gpu(CustomKernel)
def _custom_kernel(prim, ins, node):
    declared = _declared(prim.source)
    names = [n for n in declared if not n.endswith(("_shape", "_strides", "_ndim"))]
    values = {}
    for n, data in zip(names, ins):
        a = cp.ascontiguousarray(data) if prim.contiguous else data
        values[n] = a
        values[n + "_shape"] = cp.asarray(np.array(a.shape, np.int32))
        values[n + "_strides"] = cp.asarray(
            np.array([s // a.itemsize for s in a.strides], np.int64)
        )
        values[n + "_ndim"] = np.int32(a.ndim)
    outs = []
    for n, (shape, d) in zip(names[len(ins) :], prim.output_specs):
        o = cp.empty(shape, np.uint16 if d.name == "bfloat16" else d.np)
        if prim.init_value is not None:
            o.fill(prim.init_value)
        values[n] = o
        outs.append(o)
    block = prim.threadgroup
    grid = tuple(max(1, -(-g // b)) for g, b in zip(prim.grid, block))
    _function(prim)(grid, block, tuple(values[n] for n in declared), shared_mem=prim.shared_memory)
    return outs
