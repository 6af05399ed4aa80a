"""Run element-wise kernels on NumPy arrays: prebuilt single ops, JIT-compiled fused groups.

    from nuvec.codegen.ir import KernelSpec
    from nuvec.backends.cpu import kernels
    (out,) = kernels.run(KernelSpec.single("add", ("float32", "float32"), "float32"),
                         [a, b], a.shape)

``run`` takes inputs already in the spec's dtypes and broadcastable to ``shape`` (any strides),
and returns new C-contiguous outputs (one per ``spec.outputs``) from the buffer cache. Single
ops come from the library built at install time (``_prebuilt_kernels.so``: a dictionary lookup
after the first call, no compiler); other specs are generated and compiled by ``jit`` on first
use (``KernelCompileError`` if there is no working C compiler). The prebuilt library is used
only if it was built from the same generator and headers as the JIT uses now (its stamp is
codegen.prebuilt.fingerprint()), so a fused kernel and the chain of single ops always compute
the same bits. Compiler flags do not change results: contraction and fast-math are always
off, and fma is exactly rounded with or without hardware support.
"""

from __future__ import annotations

import ctypes
import threading
import warnings
from importlib.resources import files
from pathlib import Path

from ...codegen import generator
from ...codegen import source as kernel_source
from ...codegen.ir import KernelSpec
from ...codegen.optable import COSTLY, OPS
from ...codegen.prebuilt import fingerprint
from . import jit
from ._eltwise import Kernel, get_num_threads, set_num_threads
from .jit import KernelCompileError

__all__ = [
    "run",
    "get_kernel",
    "cache_info",
    "KernelCompileError",
    "set_num_threads",
    "get_num_threads",
    "PREBUILT_NAME",
]

PREBUILT_NAME = "_prebuilt_kernels.so"

_kernels: dict[KernelSpec, Kernel] = {}
_lock = threading.Lock()
_prebuilt: dict[str, object] = {"state": None, "lib": None, "reason": ""}
_counts = {"prebuilt": 0, "jit": 0}

# cost of one element of each op, in adds (the op table's cost class; decides the thread
# split); float16 / bfloat16 conversions cost as much as a costly op
_COST = {o.name: o.cost for o in OPS.values()}


# identity fast path: hashing a spec runs Python code, id() does not. Each entry holds its
# spec, so the id cannot be reused by another object while the entry exists.
_by_id: dict[int, tuple[KernelSpec, Kernel]] = {}


def run(spec: KernelSpec, inputs: list, shape: tuple[int, ...], outs: list | None = None) -> list:
    """Outputs of ``spec`` over ``inputs`` (see the module docstring); ``outs``: arrays to
    write them into (``Kernel.__call__``), one of them possibly an input."""
    e = _by_id.get(id(spec))
    if e is not None and e[0] is spec:
        return e[1](inputs, shape, outs)
    k = _kernels.get(spec)
    if k is None:
        k = get_kernel(spec)
    if len(_by_id) >= 4096:  # specs made afresh per call: do not hoard them
        _by_id.clear()
    _by_id[id(spec)] = (spec, k)
    return k(inputs, shape, outs)


def _load_prebuilt():
    """The install-time library, if present and built from this generator with these flags."""
    if _prebuilt["state"] is not None:
        return _prebuilt["lib"]
    path = Path(str(files(__package__) / PREBUILT_NAME))  # package data: a file on disk
    lib, reason = None, ""
    if not path.exists():
        reason = f"{PREBUILT_NAME} not built (installing nuvec builds it)"
    else:
        try:
            cand = ctypes.CDLL(str(path))
            stamp = (ctypes.c_char * 65).in_dll(cand, "nv_prebuilt_stamp").value.decode()
            if stamp == fingerprint():
                lib = cand
            else:
                reason = "stale (built from another version of the generator); rebuild it"
        except (OSError, ValueError) as e:
            reason = f"unusable: {e}"
    if lib is None and path.exists():
        warnings.warn(
            f"nuvec: the prebuilt element-wise kernels are {reason}; "
            "single ops will be compiled on first use",
            RuntimeWarning,
            stacklevel=3,
        )
    _prebuilt.update(state="loaded" if lib is not None else "missing", lib=lib, reason=reason)
    return lib


def _grain(spec: KernelSpec) -> int:
    """Minimum elements per thread: about 30 us of work (thread wake-up is ~10 us)."""
    cost = sum(
        max(_COST[n.op], COSTLY) if n.dtype in ("float16", "bfloat16") else _COST[n.op]
        for n in spec.nodes
    )
    return max(2048, 131072 // max(cost, 1))


def get_kernel(spec: KernelSpec) -> Kernel:
    """The callable kernel of ``spec`` (prebuilt or compiled now), cached per spec."""
    k = _kernels.get(spec)
    if k is not None:
        return k
    spec.validate()
    name = generator.kernel_name(spec)
    outs = tuple(spec.nodes[o].dtype for o in spec.outputs)
    addr, lib, source = 0, None, "jit"
    if spec.is_single():
        lib = _load_prebuilt()
        if lib is not None:
            fn = getattr(lib, name, None)
            if fn is not None:
                addr, source = ctypes.cast(fn, ctypes.c_void_p).value or 0, "prebuilt"
    if not addr:
        src = kernel_source.generate(spec, "c", name)
        lib, addr = jit.load(src, name)
    k = Kernel(
        addr,
        _np_dtypes(spec.inputs),
        _np_dtypes(outs),
        _grain(spec),
        name=name,
        source=source,
        keepalive=lib,
        bcast_address=bcast_address(lib, name),
    )
    with _lock:
        _kernels.setdefault(spec, k)
        _counts[source] += 1
    return _kernels[spec]


def bcast_address(lib: ctypes.CDLL, name: str) -> int:
    """The address of kernel ``name``'s loops for a broadcast input (``NAME_bcast``, see
    nuvec.codegen.dialects.c) in ``lib``; 0 where the kernel has none."""
    fn = getattr(lib, f"{name}_bcast", None)
    return (ctypes.cast(fn, ctypes.c_void_p).value or 0) if fn is not None else 0


def _np_dtypes(names) -> tuple:
    import numpy as np

    out = []
    for n in names:
        if n == "bfloat16":
            import ml_dtypes

            out.append(np.dtype(ml_dtypes.bfloat16))
        else:
            out.append(np.dtype(n))
    return tuple(out)


def cache_info() -> dict:
    """Kernel cache state for tests and diagnostics."""
    _load_prebuilt()
    return {
        "kernels": len(_kernels),
        "prebuilt_used": _counts["prebuilt"],
        "jit_used": _counts["jit"],
        "prebuilt": _prebuilt["state"],
        "prebuilt_reason": _prebuilt["reason"],
        "threads": get_num_threads(),
        "jit": jit.stats(),
    }


def clear() -> None:
    """Forget loaded kernels (tests)."""
    with _lock:
        _kernels.clear()
        _by_id.clear()
        _counts.update(prebuilt=0, jit=0)
