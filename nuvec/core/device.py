"""Devices and streams (MLX's ``nv.cpu``, ``nv.gpu``, ``nv.Stream``, ``nv.stream(...)``).

>>> import nuvec as nv
>>> with nv.stream(nv.cpu):
...     y = nv.ones((3,)) * 2
"""

from __future__ import annotations

import contextlib
import enum
import functools
import platform
import threading
from typing import Iterator

from ..backends import registry


class DeviceType(enum.Enum):
    cpu = "cpu"
    gpu = "gpu"

    def __eq__(self, other) -> bool:
        # MLX converts a DeviceType to Device(type, 0) when compared with a Device
        if isinstance(other, Device):
            return other.type is self and other.index == 0
        return self is other

    def __hash__(self) -> int:
        return hash(self.value)


class Device:
    """A device: ``Device(DeviceType.gpu, 0)``. The GPU exists only where a backend finds one."""

    __slots__ = ("type", "index")

    type: DeviceType
    index: int

    def __init__(self, type: DeviceType | str | Device, index: int = 0) -> None:
        if isinstance(type, Device):  # nv.cpu is a Device; MLX's is a DeviceType
            type = type.type
        self.type = DeviceType(type) if not isinstance(type, DeviceType) else type
        self.index = index

    def __eq__(self, other) -> bool:
        if isinstance(other, DeviceType):
            return other is self.type and self.index == 0
        return isinstance(other, Device) and other.type is self.type and other.index == self.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        return f"Device({self.type.name}, {self.index})"


cpu = Device(DeviceType.cpu)
gpu = Device(DeviceType.gpu)


class Stream:
    """An ordered queue of work on a device."""

    __slots__ = ("index", "device")

    def __init__(self, index: int, device: Device) -> None:
        self.index = index
        self.device = device

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, Stream) and other.index == self.index and other.device == self.device
        )

    def __hash__(self) -> int:
        return hash((self.index, self.device))

    def __repr__(self) -> str:
        return f"Stream({self.device}, index={self.index})"


def gpu_backend_name() -> str | None:
    """The GPU backend present on this machine ("cuda", "metal"), or None."""
    return registry.gpu_backend_name()


_lock = threading.RLock()
_next_index = [0]
_defaults: dict[Device, Stream] = {}


def _new_index() -> int:
    with _lock:
        _next_index[0] += 1
        return _next_index[0] - 1


def check_device(device: Device) -> Device:
    if device.type is DeviceType.gpu and gpu_backend_name() is None:
        raise ValueError(f"no GPU on this machine: {registry.gpu_unavailable_reason()}")
    return device


def default_stream(device: Device) -> Stream:
    """The default stream of ``device``."""
    s = _defaults.get(device)
    if s is None:
        check_device(device)
        with _lock:
            s = _defaults.setdefault(device, Stream(_new_index(), device))
    return s


def new_stream(device: Device) -> Stream:
    """A new stream on ``device``."""
    check_device(device)
    return Stream(_new_index(), device)


class _State(threading.local):
    def __init__(self) -> None:
        self.device: Device | None = None
        self.stream: Stream | None = None


_state = _State()
_global_default: list[Device | None] = [None]


def default_device() -> Device:
    """The device operations run on when none is given (the GPU where one exists, as MLX)."""
    if _state.device is not None:
        return _state.device
    d = _global_default[0]
    if d is None:
        d = _global_default[0] = gpu if gpu_backend_name() is not None else cpu
    return d


def set_default_device(device: Device | DeviceType | str) -> None:
    """Sets the default device for all threads: ``nv.set_default_device(nv.cpu)``."""
    d = as_device(device)
    check_device(d)
    _global_default[0] = d
    _cached_default[0] = None
    _state.device = None


def set_default_stream(stream: Stream) -> None:
    """Sets this thread's default stream (and its device as the default device)."""
    if isinstance(stream, ThreadLocalStream):
        stream = stream.current()
    _state.stream = stream
    _state.device = stream.device


_cached_default: list[Stream | None] = [None]


def current_stream() -> Stream:
    """The stream an operation without ``stream=`` uses."""
    s = _state.stream
    if s is not None:
        return s
    s = _cached_default[0]
    if s is None:
        s = _cached_default[0] = default_stream(default_device())
    return s


def as_device(d) -> Device:
    if isinstance(d, Device):
        return d
    if isinstance(d, (DeviceType, str)):
        return Device(d)
    raise TypeError(f"expected a Device, got {type(d).__name__}")


def resolve_stream(s=None) -> Stream:
    """The stream for an op's ``stream=`` keyword: None, a Stream, a Device or a DeviceType."""
    if s is None:
        return current_stream()
    if isinstance(s, Stream):
        return s
    if isinstance(s, ThreadLocalStream):
        return s.current()
    return default_stream(check_device(as_device(s)))


@contextlib.contextmanager
def stream(s) -> Iterator[Stream]:
    """Runs the enclosed operations on ``s`` (a Stream or a Device) on this thread.

    >>> import nuvec as nv
    >>> with nv.stream(nv.cpu):
    ...     x = nv.zeros((2,))
    """
    target = resolve_stream(s)
    saved = (_state.stream, _state.device)
    _state.stream, _state.device = target, target.device
    try:
        yield target
    finally:
        _state.stream, _state.device = saved


def synchronize(stream=None) -> None:
    """Waits until the work queued on ``stream`` (a Stream or a Device; every stream when
    None) has run: ``nv.synchronize()``. Evaluation on a GPU only queues work; the CPU runs it
    when evaluated, so there is nothing to wait for there."""
    registry.synchronize(None if stream is None else resolve_stream(stream))


def _as_device_type(d) -> DeviceType:
    if isinstance(d, Device):
        return d.type
    if isinstance(d, DeviceType):
        return d
    raise TypeError(f"device_count: device_type must be a DeviceType, got {type(d).__name__}")


def device_count(device_type: DeviceType | Device) -> int:
    """The number of devices of ``device_type`` nuvec can run on: ``nv.device_count(nv.cpu)``
    is 1; the GPU count is 1 where a GPU backend is present (nuvec runs on one GPU per
    process) and 0 otherwise."""
    t = _as_device_type(device_type)
    if t is DeviceType.cpu:
        return 1
    return 1 if gpu_backend_name() is not None else 0


def is_available(device: Device | DeviceType) -> bool:
    """Whether ``device`` can run operations here: ``nv.is_available(nv.gpu)``."""
    if isinstance(device, DeviceType):
        device = Device(device)
    if not isinstance(device, Device):
        raise TypeError(
            f"is_available: device must be a Device or DeviceType, got {type(device).__name__}"
        )
    return 0 <= device.index < device_count(device.type)


@functools.cache
def _cpu_info() -> dict[str, str | int]:
    arch = platform.machine() or "unknown"
    name = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and ": " in line:
                    name = line.split(": ", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"device_name": name or platform.processor() or arch, "architecture": arch}


def device_info(d: Device | DeviceType | None = None) -> dict[str, str | int]:
    """Properties of ``d`` (the default device when None) as a dict. Every device has
    ``device_name`` and ``architecture``; a CUDA GPU adds ``total_memory`` and
    ``free_memory`` in bytes. An unavailable device gives an empty dict.

    >>> import nuvec as nv
    >>> "device_name" in nv.device_info(nv.cpu)
    True
    """
    if d is None:
        d = default_device()
    elif isinstance(d, DeviceType):
        d = Device(d)
    elif not isinstance(d, Device):
        raise TypeError(
            f"device_info: d must be a Device, DeviceType or None, got {type(d).__name__}"
        )
    if not is_available(d):
        return {}
    if d.type is DeviceType.cpu:
        return dict(_cpu_info())
    if gpu_backend_name() == "cuda":
        from ..backends.cuda import device as cuda_device

        return cuda_device.device_info()
    from ..backends.metal import shim

    with shim.Device.open(d.index) as dev:
        return {"device_name": dev.name, "architecture": platform.machine() or "arm64"}


class ThreadLocalStream:
    """A stream that is a different ``Stream`` on each thread that uses it (MLX's
    ``new_thread_local_stream``); pass it wherever a stream is accepted."""

    __slots__ = ("device", "_local")

    def __init__(self, device: Device) -> None:
        self.device = device
        self._local = threading.local()

    def current(self) -> Stream:
        """This thread's stream (made on first use)."""
        s = getattr(self._local, "stream", None)
        if s is None:
            s = self._local.stream = Stream(_new_index(), self.device)
        return s

    def __repr__(self) -> str:
        return f"ThreadLocalStream({self.device})"


def new_thread_local_stream(device: Device | DeviceType) -> ThreadLocalStream:
    """A stream that each thread sees as its own: ``s = nv.new_thread_local_stream(nv.cpu)``."""
    return ThreadLocalStream(check_device(as_device(device)))


def clear_streams() -> None:
    """Forgets this thread's stream settings: operations go back to the default stream of the
    default device."""
    _state.stream = None
    _state.device = None
