"""nuvec's Metal backend (Apple GPUs), through the Swift shim's C ABI (``shim``).

    >>> from nuvec.backends import metal
    >>> metal.is_available(), metal.unavailable_reason()     # on Linux
    (False, 'no Metal device: this host has no Metal (Linux)')

Where a Metal device opens (``shim.is_available()``: macOS with a GPU and a built shim),
importing this package registers the "gpu" implementations:

* data: arrays live in shared (unified-memory) shim buffers, seen by NumPy without a copy
  (``memory``); results carry the dispatch that writes them and reads wait for it;
* element-wise primitives and fused kernels: the generator's Metal Shading Language dialect,
  compiled with math_mode "safe", dispatched through the shim (``elementwise``; libraries are
  cached by source hash in the shim);
* matmul / addmm for float32, float16, bfloat16, int32: an own tiled MSL kernel (``linalg``);
* user kernels of ``nv.fast.metal_kernel`` (``custom_kernel``);
* every other primitive: its CPU implementation, run over the same unified memory after the
  GPU work it reads has finished (``runtime.register_fallbacks``). Reductions, indexing,
  sorting, random bits, shape copies and so on therefore run on the CPU cores.

What has run and what has not. No Apple hardware is available to this project. Run here: the
launch planning (``layout``: variants, [[buffer(i)]] packing, grids), buffer wrapping on the
shim's host device, queue and wait logic, registration, and the whole element-wise and matmul
path with dispatches executed by the C++ emulation of the generated MSL
(tests/metal/test_backend.py, tests/metal/test_msl_emulation.py). Never run: Metal library
compilation of this MSL by Apple's compiler, pipelines, dispatch on an Apple GPU, and the
results there.
"""

from .shim import is_available, unavailable_reason

__all__ = ["is_available", "unavailable_reason", "install"]


def install() -> list:
    """Registers the Metal "gpu" implementations (kernels, then CPU fallbacks for the rest);
    returns the primitive types that run on the CPU. Called on import where Metal exists."""
    from .. import cpu  # noqa: F401  (the CPU implementations the fallbacks reuse)
    from ..registry import _IMPLS, register
    from . import compiled, custom_kernel, elementwise, linalg  # noqa: F401  (fill runtime.IMPLS)
    from .runtime import IMPLS, register_fallbacks

    for prim_type, fn in IMPLS.items():
        register(prim_type, "gpu")(fn)
    return register_fallbacks(_IMPLS, lambda prim_type, fn: register(prim_type, "gpu")(fn))


if is_available():
    install()
