"""Fused element-wise kernels (``nuvec.primitives.compiled.Compiled``) on the Apple GPU.

A fused group is one ``KernelSpec`` run by the same code as single ops
(``elementwise._compiled``). ``prepare`` compiles every kernel a trace needs in one Metal
library, so the first call pays one compile; kernels not prepared compile on first use.

    prepare([spec_a, spec_b])     # what MetalBackend.prepare calls
"""

from __future__ import annotations

from . import runtime

__all__ = ["prepare"]


def prepare(specs) -> int:
    """Compiles the Metal kernels of ``specs`` (one library); returns how many were new."""
    return runtime.prepare(specs)
