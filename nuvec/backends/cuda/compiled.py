"""Fused element-wise kernels (``nuvec.primitives.compiled.Compiled``) on the GPU.

A fused group is one ``KernelSpec`` with several nodes; the GPU runs it through the same
kernel sources and launcher as single ops (``kernels``), so a compiled function's results
equal the uncompiled ones bit for bit. ``prepare`` builds the kernels a trace needs at trace
time, all in one NVRTC module (the library is parsed once), so the first call pays one compile.

    prepare([spec_a, spec_b])          # then Compiled nodes launch without compiling
"""

from __future__ import annotations

from . import kernels

__all__ = ["prepare"]


def prepare(specs) -> int:
    """Compiles the contiguous (vector) kernels of ``specs``; returns how many were built.
    Other layouts (strided inputs, broadcast scalars) compile on first use."""
    keys = [(s, "vec", "i32", (0,) * len(s.inputs)) for s in dict.fromkeys(specs)]
    return kernels.precompile(keys, threads=1, per_module=max(1, len(keys)))
