"""The Metal Shading Language dialect (written after the C dialect; see below)."""
from __future__ import annotations

from .base import Dialect


class MetalDialect(Dialect):
    name = "metal"
