"""Which code runs a primitive on which device, and which GPU backend this machine has.

Backends register implementations per (device type, primitive class):

    @register(Unary, "cpu")
    def _unary(prim, inputs, node): ...   # inputs: backend data; returns one datum per output

``node`` is the array being computed (its ``siblings`` give every output's shape and dtype).
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

_IMPLS: dict[tuple[str, type], Callable] = {}
_LOADED: set[str] = set()


def register(prim_type: type, device: str = "cpu") -> Callable[[Callable], Callable]:
    def deco(fn: Callable) -> Callable:
        _IMPLS[(device, prim_type)] = fn
        return fn

    return deco


def _load(device: str) -> None:
    if device == "cpu":
        from . import cpu  # noqa: F401  (registers the CPU implementations)
    elif device == "gpu":
        name = gpu_backend_name()
        if name == "cuda":
            from . import cuda  # noqa: F401
        elif name == "metal":
            from . import metal  # noqa: F401
    _LOADED.add(device)


def implementation(prim_type: type, device: str) -> Callable | None:
    if device not in _LOADED:
        _load(device)
    return _IMPLS.get((device, prim_type))


def node_runner(node) -> Callable:
    """The function that runs ``node``'s primitive on its device: ``fn(prim, datas, node)``."""
    device = node._stream.device.type.value
    fn = implementation(type(node._prim), device)
    if fn is None:
        raise NotImplementedError(f"{node._prim.name}: no implementation on the {device}")
    if device != "cpu":
        return fn

    def on_host(prim, datas, node, fn=fn):
        for i, d in enumerate(datas):
            if not isinstance(d, np.ndarray):
                datas[i] = to_host(d, node._inputs[i]._dtype if i < len(node._inputs) else None)
        return fn(prim, datas, node)

    return on_host


def run(prim, inputs, node) -> list:
    """Runs ``prim`` for ``node`` on its stream's device."""
    device = node._stream.device.type.value
    fn = _IMPLS.get((device, type(prim)))
    if fn is None:
        fn = implementation(type(prim), device)
        if fn is None:
            raise NotImplementedError(f"{prim.name}: no implementation on the {device}")
    datas = [x._data for x in inputs]
    if device == "cpu":
        for i, d in enumerate(datas):
            if not isinstance(d, np.ndarray):
                datas[i] = to_host(d, inputs[i]._dtype)
    return fn(prim, datas, node)


def to_host(data, dtype=None) -> np.ndarray:
    """Backend data as a NumPy array (a device array is copied back, waiting for the work that
    makes it). ``dtype`` is the array's nuvec dtype: a GPU backend may store a dtype its array
    library lacks in another one (CUDA keeps bfloat16 as uint16 bits)."""
    if isinstance(data, np.ndarray):
        return data
    get = getattr(data, "get", None)  # CuPy arrays
    if get is not None:
        h = get()
        if dtype is not None and dtype.name == "bfloat16" and h.dtype == np.uint16:
            import ml_dtypes

            h = h.view(ml_dtypes.bfloat16)
        return h
    return np.asarray(data)


def synchronize(stream=None) -> None:
    """Waits until the work queued on ``stream`` (a Stream or a Device; every stream when
    None) has run: ``nv.synchronize()``. Evaluation on a GPU only queues work; the CPU runs it
    when evaluated, so there is nothing to wait for there."""
    from ..core.device import DeviceType, Stream, resolve_stream

    if stream is not None and not isinstance(stream, Stream):
        stream = resolve_stream(stream)
    if stream is not None and stream.device.type is not DeviceType.gpu:
        return
    if "gpu" not in _LOADED:
        return
    if gpu_backend_name() == "cuda":
        from .cuda import runtime

        runtime.synchronize(stream)
    elif gpu_backend_name() == "metal":
        from .metal import runtime as metal_runtime

        metal_runtime.synchronize(stream)


@functools.cache
def _probe_gpu() -> tuple[str | None, str]:
    try:
        from .cuda import device as cuda_device

        if cuda_device.is_available():
            return "cuda", ""
        cuda_reason = cuda_device.unavailable_reason()
    except ImportError as e:
        cuda_reason = f"CUDA backend not importable ({e})"
    try:
        from .metal import shim

        if shim.is_available():
            return "metal", ""
        metal_reason = shim.unavailable_reason()
    except ImportError as e:
        metal_reason = f"Metal backend not importable ({e})"
    return None, f"{cuda_reason}; {metal_reason}"


def gpu_backend_name() -> str | None:
    """ "cuda" or "metal" where a GPU is usable, else None (probed once)."""
    return _probe_gpu()[0]


def gpu_unavailable_reason() -> str:
    return _probe_gpu()[1]
