"""The CUDA C dialect (written after the C dialect; see below)."""
from __future__ import annotations

from .base import Dialect


class CudaDialect(Dialect):
    name = "cuda"
