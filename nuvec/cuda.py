"""``nv.cuda.is_available()``: whether an NVIDIA GPU can run nuvec here."""

from .backends.cuda.device import is_available, unavailable_reason  # noqa: F401
