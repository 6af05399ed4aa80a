"""The error of a kernel that cannot be built, shared by the backends' compilers (the C
compiler through ``backends.cpu.jit``, NVRTC) and compile's passes, which turn it into one
warning and unfused execution."""

from __future__ import annotations


class KernelCompileError(RuntimeError):
    """A backend could not build its kernels (a missing or failing compiler); ``message``
    holds what the compiler said."""

    def __init__(self, message: str, command: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.command = command
