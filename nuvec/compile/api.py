"""``nv.compile`` and the global switch (``nv.disable_compile`` / ``nv.enable_compile``)."""

from __future__ import annotations

import functools
import os
from typing import Any, Callable

from . import _runtime
from ._runtime import CompiledFunction

__all__ = ["compile", "disable_compile", "enable_compile", "CompiledFunction"]


def compile(
    fun: Callable | None = None,
    inputs: Any = None,
    outputs: Any = None,
    shapeless: bool = False,
    *,
    cache_capacity: int = 64,
    warn_traces: int | None = None,
    fast_math: bool = False,
) -> Any:
    """Returns ``fun`` compiled: same results; traced once per signature, then replayed.

    The signature of a call is the structure of its arguments (lists, tuples, dicts, with
    non-array leaves such as ints, floats, bools, strings and None as constants), each array's
    dtype and shape (its rank when ``shapeless=True``) and the default stream. The first call
    of a signature runs ``fun`` on placeholders, simplifies the graph, fuses element-wise
    chains into generated kernels and caches the result; later calls replay it without
    running ``fun``.

    >>> import nuvec as nv
    >>> @nv.compile
    ... def gelu(x):
    ...     return x * 0.5 * (1.0 + nv.erf(x * 0.7071067811865476))
    >>> gelu(nv.array([0.0, 1.0])).tolist()
    [0.0, 0.8413447141647339]

    Options (also through ``functools.partial(nv.compile, shapeless=True)``):

    - ``inputs`` / ``outputs``: trees of implicit state (e.g. ``[model.state,
      optimizer.state]``): its arrays are traced inputs and, after each call, the ``outputs``
      tree is updated in place; ``nv.random.state`` is threaded automatically.
    - ``shapeless``: replay for any shapes of the traced ranks.
    - ``cache_capacity``: signatures kept per function (least recently used evicted;
      0 never caches).
    - ``warn_traces``: warn (once) when this function has traced more than that many times.
    - ``fast_math`` (nuvec's addition; CUDA GPUs only, ignored elsewhere): fused kernels may
      use the GPU's approximate functions (``__expf``, ``__sinf``, ...), contract ``a * b + c``
      into one rounding, divide approximately, and keep float16 / bfloat16 intermediates in
      float32 (rounding once, where a value is stored), as torch.compile does; tanh and erf
      of float16 / bfloat16 use coarser approximations (relative error below 2^-14), and a
      NaN read or stored as float16 / bfloat16 may lose its payload (the canonical NaN).
      Results then differ from the uncompiled ones in the last bits (float32: a few ulp;
      float16 / bfloat16: about one ulp of the format). Off by default: compiled results
      equal the uncompiled ones bit for bit.

    As in MLX, ``fun`` should be pure: arrays it captures are constants frozen at the first
    trace, and arrays cannot be evaluated inside it. Called on arrays that a transform is
    tracing (inside grad, vmap or another compile) it runs ``fun`` directly.
    """
    if fun is None:
        return functools.partial(
            compile,
            inputs=inputs,
            outputs=outputs,
            shapeless=shapeless,
            cache_capacity=cache_capacity,
            warn_traces=warn_traces,
            fast_math=fast_math,
        )
    if not callable(fun):
        raise TypeError(f"compile: expected a function, got {type(fun).__name__}")
    if not isinstance(cache_capacity, int) or cache_capacity < 0:
        raise ValueError(f"compile: cache_capacity must be an int >= 0, got {cache_capacity!r}")
    if warn_traces is not None and (not isinstance(warn_traces, int) or warn_traces < 0):
        raise ValueError(f"compile: warn_traces must be None or an int >= 0, got {warn_traces!r}")
    cf = CompiledFunction(
        fun,
        shapeless=bool(shapeless),
        capacity=cache_capacity,
        inputs=inputs,
        outputs=outputs,
        warn_traces=warn_traces,
        fast_math=bool(fast_math),
    )
    functools.update_wrapper(cf, fun)
    return cf


def disable_compile() -> None:
    """Makes every compiled function run its function directly (for debugging)."""
    _runtime.set_enabled(False)


def enable_compile() -> None:
    """Turns compilation back on (unless ``NUVEC_DISABLE_COMPILE`` is set, as MLX does with
    ``MLX_DISABLE_COMPILE``, this is the default)."""
    _runtime.set_enabled(True)


if os.environ.get("NUVEC_DISABLE_COMPILE", "") not in ("", "0"):
    _runtime.set_enabled(False)
