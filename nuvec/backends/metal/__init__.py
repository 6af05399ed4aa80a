"""nuvec's Metal backend (Apple GPUs). For now: the binding of the Swift shim's C ABI.

    >>> from nuvec.backends import metal
    >>> metal.is_available(), metal.unavailable_reason()
    (False, 'no Metal device: this host has no Metal (Linux)')
"""

from .shim import is_available, unavailable_reason

__all__ = ["is_available", "unavailable_reason"]
