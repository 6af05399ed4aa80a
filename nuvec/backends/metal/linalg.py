"""Matrix products on the Apple GPU: nuvec's own tiled MSL kernel (``layout.matmul_source``;
16 x 16 threads per 16 x 16 output tile, operands staged through threadgroup memory).

float32, float16 and bfloat16 (multiplied and summed in float32 in k order, rounded once at
the end, as the CPU rounds its float32 product once) and int32 (wrapping, as NumPy). Operands
may be any strided views, batch dimensions broadcast. AddMM applies alpha and beta as the CPU
backend does. Other dtypes, and shapes one grid cannot hold, run on the CPU implementation
over the same memory. Sums are ordered differently from the CPU's BLAS, so float results
agree to rounding, not bit for bit. The kernel has run only in the C++ emulation
(tests/metal/test_msl_emulation.py), never on an Apple GPU.
"""

from __future__ import annotations

from ...primitives.linalg import AddMM, Matmul
from . import layout, memory, runtime
from .memory import MetalArray
from .runtime import gpu, on_cpu

__all__ = ["run"]


def run(
    a: MetalArray,
    b: MetalArray,
    node,
    c: MetalArray | None = None,
    alpha: float = 1.0,
    beta: float = 0.0,
) -> list[MetalArray] | None:
    """Dispatches the product for ``node`` (its shape and dtype); None when Metal cannot."""
    d = node._dtype
    out = memory.empty(runtime.device(), node._shape, d.np)
    if out.size == 0:
        return [MetalArray(out)]
    try:
        plan = layout.matmul(a, b, node._shape, d.name, c=c, alpha=alpha, beta=beta)
    except layout.PlanError:
        return None
    kernel = runtime.matmul_kernel(d.name)
    info = getattr(kernel, "info", None)
    if info is not None and info["max_total_threads_per_threadgroup"] < layout.MM_TILE**2:
        return None  # the pipeline cannot hold one tile of threads
    arrays = [a, b, out] + ([c] if c is not None else [])
    q = runtime.queue(node._stream)
    ticket = runtime.launch(plan, arrays, q, kernel)
    return [MetalArray(out, q, ticket)]


@gpu(Matmul)
def _matmul(prim, ins, node):
    outs = run(ins[0], ins[1], node) if node._dtype.name in layout.MM_DTYPES else None
    return outs if outs is not None else on_cpu(prim, ins, node)


@gpu(AddMM)
def _addmm(prim, ins, node):
    outs = None
    if node._dtype.name in layout.ADDMM_DTYPES:
        c, a, b = ins
        outs = run(a, b, node, c=c, alpha=prim.alpha, beta=prim.beta)
    return outs if outs is not None else on_cpu(prim, ins, node)
