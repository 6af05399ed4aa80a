"""Element-wise primitives and fused kernels on the Apple GPU: the generator's Metal Shading
Language kernels (a single op is a fused group of one), dispatched through the shim.

The per-element code is the CPU's (nuvec's own math library, each value rounded to its dtype,
no contraction, compiled with math_mode "safe"), so results are meant to equal the CPU's bit
for bit; tests/metal/test_msl_emulation.py checks the generated MSL as C++ against the CPU,
which has run, while no Metal GPU has run it. float64 (absent from Metal), more than 2^32 - 1
elements, or more buffers than Metal binds run on the CPU implementation over the same memory.
"""

from __future__ import annotations

import numpy as np

from ...codegen.ir import KernelSpec
from ...core import dtypes as dt
from ...codegen.ops import supports
from ...primitives.compiled import Compiled
from ...primitives.elementwise import AsType, Binary, Select, Unary
from . import layout, memory, runtime
from .memory import MetalArray
from .runtime import gpu, on_cpu

__all__ = ["run", "spec_of"]

_SPECS: dict[tuple, KernelSpec | None] = {}


def spec_of(op: str, node) -> KernelSpec | None:
    """The single-op spec of ``node`` (None where the Metal dialect lacks a dtype)."""
    key = (op, tuple(x._dtype.name for x in node._inputs), node._dtype.name)
    spec = _SPECS.get(key, False)
    if spec is False:
        names = key[1] + (key[2],)
        ok = all(supports("copy", d, "metal") for d in names) and supports(op, key[1][-1], "metal")
        spec = KernelSpec.single(op, key[1], key[2]) if ok else None
        _SPECS[key] = spec
    return spec


def run(
    spec: KernelSpec,
    ins: list[MetalArray],
    shape: tuple,
    q: runtime.Queue,
    out_dtypes: list[np.dtype],
    force: str | None = None,
) -> list[MetalArray] | None:
    """Dispatches ``spec`` over ``ins`` (MetalArrays in shared memory) broadcast to ``shape``;
    returns the outputs (new C-contiguous shared arrays), or None when Metal cannot run it
    (the caller then runs the CPU implementation)."""
    dev = runtime.device()
    outs = [memory.empty(dev, shape, d) for d in out_dtypes]
    if any(s == 0 for s in shape):
        return [MetalArray(o) for o in outs]
    name = runtime.name_of(spec)
    try:
        plan = layout.elementwise(
            spec,
            name,
            ins,
            shape,
            force=force,
            max_buffers=runtime.limits()["max_buffer_arguments"],
        )
    except layout.PlanError:
        return None
    kernel, _ = runtime.elementwise_kernel(spec, plan.variant)
    ticket = runtime.launch(plan, list(ins) + outs, q, kernel)
    return [MetalArray(o, q, ticket) for o in outs]


def _engine(op: str, prim, ins: list, node) -> list:
    spec = spec_of(op, node)
    if spec is not None:
        outs = run(spec, ins, node._shape, runtime.queue(node._stream), [node._dtype.np])
        if outs is not None:
            return outs
    return on_cpu(prim, ins, node)


@gpu(Unary)
def _unary(prim, ins, node):
    return _engine(prim.op, prim, ins, node)


@gpu(Binary)
def _binary(prim, ins, node):
    return _engine(prim.op, prim, ins, node)


@gpu(Select)
def _select(prim, ins, node):
    return _engine("select", prim, ins, node)


@gpu(AsType)
def _astype(prim, ins, node):
    return _engine("astype", prim, ins, node)


@gpu(Compiled)
def _compiled(prim, ins, node):
    spec = prim.spec
    ok = all(supports("copy", d, "metal") for d in spec.inputs) and all(
        supports("copy", n.dtype, "metal") for n in spec.nodes
    )
    if ok:
        dts = [dt.from_name(spec.nodes[o].dtype).np for o in spec.outputs]
        outs = run(spec, ins, node._shape, runtime.queue(node._stream), dts)
        if outs is not None:
            return outs
    return on_cpu(prim, ins, node)
