"""The backends (one list) and which code runs a primitive on which device.

Every backend is one line of ``BACKENDS``: its device type and the module holding its
``BACKEND`` object (``base.Backend``). The CPU is always there; the first GPU backend whose
device opens serves the "gpu" streams. Importing a backend's package registers its
implementations per (device type, primitive class):

    @register(Unary, "cpu")
    def _unary(prim, inputs, node): ...   # inputs: backend data; returns one datum per output

``node`` is the array being computed (its ``siblings`` give every output's shape and dtype).

    backend_of(stream).policy.fuses       # what compile asks
"""

from __future__ import annotations

import functools
import importlib
from typing import Callable

import numpy as np

from ..core._graph import on_host_already
from .base import Backend

#: (device type, module of its ``BACKEND``); GPU backends in probe order
BACKENDS: tuple[tuple[str, str], ...] = (
    ("cpu", "nuvec.backends.cpu.backend"),
    ("gpu", "nuvec.backends.cuda.backend"),
    ("gpu", "nuvec.backends.metal.backend"),
)

_IMPLS: dict[tuple[str, type], Callable] = {}
_INTO: dict[tuple[str, type], Callable] = {}  # in-place forms (``register_into``)
_SPECIAL: dict[tuple[str, type], Callable] = {}  # step specializers (``register_specialized``)
_LOADED: set[str] = set()
_BY_TYPE: dict[str, Backend] = {}  # device type -> its backend (resolved once)
_BY_ENUM: dict = {}  # DeviceType -> its backend (the per-op lookup)


def register(prim_type: type, device: str = "cpu") -> Callable[[Callable], Callable]:
    def deco(fn: Callable) -> Callable:
        _IMPLS[(device, prim_type)] = fn
        return fn

    return deco


def register_into(prim_type: type, device: str = "cpu") -> Callable[[Callable], Callable]:
    """Registers the in-place form of a primitive whose output has its first input's shape
    and dtype (a scatter): ``fn(prim, inputs, node) -> (outputs, undo)`` writes the result
    into ``inputs[0]``'s own buffer, raising before anything is written where the arguments
    are bad, and ``undo()`` puts the overwritten elements back. A compiled stateful step
    uses it where only the state holds that input (``compile.inplace``)."""

    def deco(fn: Callable) -> Callable:
        _INTO[(device, prim_type)] = fn
        return fn

    return deco


def implementation_into(prim_type: type, device: str) -> Callable | None:
    """The in-place form registered for ``prim_type`` on ``device`` (``register_into``)."""
    implementation(prim_type, device)  # loads the device's backend
    return _INTO.get((device, prim_type))


def register_specialized(prim_type: type, device: str = "cpu") -> Callable[[Callable], Callable]:
    """Registers how a compiled tape's step of ``prim_type`` runs with what its primitive and
    node fix worked out once (the kernel of an element-wise op, a slice's index, a product's
    output shape): ``fn(prim, node) -> impl`` (called as the registered implementation, for
    inputs of exactly ``node``'s shapes and dtypes), or None where the generic one serves.
    A decode step replays a hundred small steps: their per-call setup is most of its time."""

    def deco(fn: Callable) -> Callable:
        _SPECIAL[(device, prim_type)] = fn
        return fn

    return deco


def specialized(prim, node, device: str, impl: Callable) -> Callable:
    """The implementation of a fixed-shape step (``register_specialized``), else ``impl``."""
    fn = _SPECIAL.get((device, type(prim)))
    if fn is None:
        return impl
    return fn(prim, node) or impl


def _module_backend(module: str) -> Backend:
    return importlib.import_module(module).BACKEND


@functools.cache
def _probe_gpu() -> tuple[Backend | None, str]:
    reasons = []
    for kind, module in BACKENDS:
        if kind != "gpu":
            continue
        try:
            b = _module_backend(module)
        except ImportError as e:
            reasons.append(f"{module.rsplit('.', 2)[-2]} backend not importable ({e})")
            continue
        if b.is_available():
            return b, ""
        reasons.append(b.unavailable_reason())
    return None, "; ".join(reasons)


def backend(device_type: str) -> Backend | None:
    """The backend of ``device_type`` ("cpu" or "gpu"), None where this machine has none.
    Resolving it imports its package, which registers its implementations."""
    b = _BY_TYPE.get(device_type)
    if b is None:
        if device_type == "gpu":
            b = _probe_gpu()[0]
        else:
            b = next((_module_backend(m) for k, m in BACKENDS if k == device_type), None)
        if b is None:
            return None
        _BY_TYPE[device_type] = b
        _LOADED.add(device_type)
    return b


def backend_of(stream) -> Backend | None:
    """The backend that runs ``stream`` (a Stream or a Device)."""
    t = getattr(stream, "device", stream).type
    b = _BY_ENUM.get(t)
    if b is None:
        b = backend(t.value)
        if b is not None:
            _BY_ENUM[t] = b
    return b


def loaded() -> list[Backend]:
    """The backends resolved so far."""
    return list(_BY_TYPE.values())


def implementation(prim_type: type, device: str) -> Callable | None:
    if device not in _LOADED:
        backend(device)
        _LOADED.add(device)
    return _IMPLS.get((device, prim_type))


def node_runner(node) -> Callable:
    """The function that runs ``node``'s primitive on its device: ``fn(prim, datas, node)``.
    On the CPU it copies device data to the host first; its ``host_impl`` is the
    implementation alone, for a caller that has checked the data are NumPy arrays."""
    device = node._stream.device.type.value
    fn = implementation(type(node._prim), device)
    if fn is None:
        raise NotImplementedError(f"{node._prim.name}: no implementation on the {device}")
    if device != "cpu":
        return fn

    def on_host(prim, datas, node, fn=fn):
        if not on_host_already(datas):
            for i, d in enumerate(datas):
                if not isinstance(d, np.ndarray):
                    ins = node._inputs
                    datas[i] = to_host(d, ins[i]._dtype if i < len(ins) else None)
            d = None  # holds no input's data through the call (an impl counts its references)
        return fn(prim, datas, node)

    on_host.host_impl = fn  # type: ignore[attr-defined]  # what it calls on host data
    return on_host


def to_host(data, dtype=None) -> np.ndarray:
    """Backend data as a NumPy array (a device array is copied back, waiting for the work that
    makes it). ``dtype`` is the array's nuvec dtype: a GPU backend may store a dtype its array
    library lacks in another one (CUDA keeps bfloat16 as uint16 bits)."""
    if isinstance(data, np.ndarray):
        return data
    for b in list(_BY_TYPE.values()):
        if isinstance(data, b.data_type):
            return b.to_host(data, dtype)
    return np.asarray(data)


def synchronize(stream=None) -> None:
    """Waits until the work queued on ``stream`` (a Stream; every stream when None) has run
    (``nv.synchronize``, ``core.device.synchronize``, resolves a Device to its stream first)."""
    if stream is None:
        for b in list(_BY_TYPE.values()):
            b.synchronize(None)
        return
    b = _BY_TYPE.get(stream.device.type.value)
    if b is not None:
        b.synchronize(stream)


def gpu_backend_name() -> str | None:
    """ "cuda" or "metal" where a GPU is usable, else None (probed once)."""
    b = _probe_gpu()[0]
    return b.name if b is not None else None


def gpu_unavailable_reason() -> str:
    return _probe_gpu()[1]
