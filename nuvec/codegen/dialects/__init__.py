"""Kernel dialects: what differs between C, CUDA C and Metal for the one generator.

A dialect supplies the prelude (types, qualifiers, bit casts, the math functions the shared
library calls), float literals, and the kernel entry points (signature, indexing, loads and
stores); the per-element code is the generator's and the same for all.
"""

from __future__ import annotations

from .c import CDialect
from .cuda import CudaDialect
from .metal import MetalDialect

DIALECTS = {"c": CDialect(), "cuda": CudaDialect(), "metal": MetalDialect()}

__all__ = ["DIALECTS", "CDialect", "CudaDialect", "MetalDialect"]
