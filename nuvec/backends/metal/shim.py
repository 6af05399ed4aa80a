"""ctypes binding of nuvec's Apple-GPU shim (the C ABI in ``shim/nuvec_shim.h``).

The shim is a Swift package (``swift/``) built to ``libNuvecShim.dylib`` (macOS) or
``libNuvecShim.so`` (Linux, where it has no Metal device). This module finds and loads it,
checks its ABI version and struct layouts, and wraps devices, buffers, libraries, kernels and
command streams. Importing it never fails: without a built library, ``is_available()`` is
False and ``unavailable_reason()`` says why.

Usage::

    from nuvec.backends.metal import shim

    if not shim.is_available():
        print(shim.unavailable_reason())   # e.g. "no Metal device: this host has no Metal (Linux)"
    else:
        dev = shim.Device.open()
        x = dev.buffer_from(np.arange(8, dtype=np.float32))
        lib = dev.compile(MSL_SOURCE)
        stream = dev.stream()
        stream.dispatch(lib.kernel("scale"), {0: x, 1: np.float32(2.0)}, grid=(8,))
        stream.synchronize()
        print(x.as_array(np.float32))       # zero-copy view of the shared buffer

Nothing here imports the rest of nuvec.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from importlib.resources import files
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

ABI_VERSION = 1

# Status codes (nv_status).
NV_OK = 0
NV_ERR_INVALID_ARGUMENT = 1
NV_ERR_INVALID_HANDLE = 2
NV_ERR_NO_METAL = 3
NV_ERR_OUT_OF_MEMORY = 4
NV_ERR_COMPILE = 5
NV_ERR_NOT_FOUND = 6
NV_ERR_UNSUPPORTED = 7
NV_ERR_GPU = 8
NV_ERR_INTERNAL = 9

NV_KIND_DEVICE, NV_KIND_BUFFER, NV_KIND_LIBRARY, NV_KIND_KERNEL, NV_KIND_STREAM = 1, 2, 3, 4, 5
NV_ARG_BUFFER, NV_ARG_BYTES = 1, 2
NV_GRID_THREADS, NV_GRID_THREADGROUPS = 0, 1
NV_BUILD_METAL = 1
MATH_MODES = {"safe": 0, "relaxed": 1, "fast": 2}

NOT_BUILT = "the Metal shim library is not built: run `make install` where swift is present"


# ----------------------------------------------------------------------------- structs


class DeviceLimits(ctypes.Structure):
    """``nv_device_limits``."""

    _fields_ = [
        ("max_buffer_length", ctypes.c_uint64),
        ("recommended_working_set_size", ctypes.c_uint64),
        ("max_threads_per_threadgroup", ctypes.c_uint32 * 3),
        ("max_threadgroup_memory_length", ctypes.c_uint32),
        ("max_buffer_arguments", ctypes.c_uint32),
        ("max_constant_argument_length", ctypes.c_uint32),
        ("has_unified_memory", ctypes.c_uint32),
        ("supports_nonuniform_threadgroups", ctypes.c_uint32),
        ("is_metal", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
    ]


class CompileOptions(ctypes.Structure):
    """``nv_compile_options``."""

    _fields_ = [
        ("math_mode", ctypes.c_int32),
        ("language_version", ctypes.c_uint32),
        ("preprocessor_macros", ctypes.c_char_p),
        ("reserved", ctypes.c_uint64),
    ]


class KernelInfo(ctypes.Structure):
    """``nv_kernel_info``."""

    _fields_ = [
        ("max_total_threads_per_threadgroup", ctypes.c_uint32),
        ("thread_execution_width", ctypes.c_uint32),
        ("static_threadgroup_memory_length", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
    ]


class Arg(ctypes.Structure):
    """``nv_arg``."""

    _fields_ = [
        ("kind", ctypes.c_uint32),
        ("index", ctypes.c_uint32),
        ("buffer", ctypes.c_uint64),
        ("offset", ctypes.c_uint64),
        ("bytes", ctypes.c_void_p),
        ("length", ctypes.c_uint64),
    ]


class CacheStats(ctypes.Structure):
    """``nv_cache_stats``."""

    _fields_ = [
        ("library_hits", ctypes.c_uint64),
        ("library_misses", ctypes.c_uint64),
        ("kernel_hits", ctypes.c_uint64),
        ("kernel_misses", ctypes.c_uint64),
    ]


# nv_abi_struct_size ids -> the ctypes mirror that must have the same size.
STRUCTS = {1: DeviceLimits, 2: CompileOptions, 3: KernelInfo, 4: Arg, 5: CacheStats}

# ----------------------------------------------------------------------------- prototypes

_u32, _u64, _i32 = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32
_vp, _cp = ctypes.c_void_p, ctypes.c_char_p
_err = ctypes.POINTER(ctypes.c_void_p)  # char **error, kept as void* so we can free it
_P = ctypes.POINTER

# Every function of the header: name -> (restype, argtypes).
PROTOTYPES: dict[str, tuple[Any, list[Any]]] = {
    "nv_abi_version": (_u32, []),
    "nv_abi_struct_size": (_u32, [_u32]),
    "nv_build_flags": (_u32, []),
    "nv_status_name": (_cp, [_i32]),
    "nv_string_free": (None, [_vp]),
    "nv_retain": (_i32, [_u64, _err]),
    "nv_release": (_i32, [_u64, _err]),
    "nv_handle_kind": (_i32, [_u64, _P(_i32), _err]),
    "nv_live_handle_count": (_u64, []),
    "nv_metal_probe": (_i32, [_err]),
    "nv_device_count": (_u32, []),
    "nv_device_open": (_i32, [_u32, _P(_u64), _err]),
    "nv_device_open_host": (_i32, [_P(_u64), _err]),
    "nv_device_name": (_i32, [_u64, _P(_vp), _err]),
    "nv_device_limits_get": (_i32, [_u64, _P(DeviceLimits), _err]),
    "nv_device_cache_stats": (_i32, [_u64, _P(CacheStats), _err]),
    "nv_device_clear_cache": (_i32, [_u64, _err]),
    "nv_buffer_new": (_i32, [_u64, _u64, _P(_u64), _err]),
    "nv_buffer_new_with_bytes": (_i32, [_u64, _vp, _u64, _P(_u64), _err]),
    "nv_buffer_length": (_i32, [_u64, _P(_u64), _err]),
    "nv_buffer_contents": (_i32, [_u64, _P(_vp), _err]),
    "nv_source_hash": (_i32, [_cp, _P(CompileOptions), _P(ctypes.c_uint8), _err]),
    "nv_library_compile": (_i32, [_u64, _cp, _P(CompileOptions), _P(_u64), _err]),
    "nv_library_function_names": (_i32, [_u64, _P(_vp), _err]),
    "nv_kernel_new": (_i32, [_u64, _cp, _P(_u64), _err]),
    "nv_kernel_info_get": (_i32, [_u64, _P(KernelInfo), _err]),
    "nv_stream_new": (_i32, [_u64, _P(_u64), _err]),
    "nv_stream_dispatch": (_i32, [_u64, _u64, _P(Arg), _u32, _P(_u64), _P(_u32), _u32, _err]),
    "nv_stream_pending": (_i32, [_u64, _P(_u64), _err]),
    "nv_stream_commit": (_i32, [_u64, _err]),
    "nv_stream_wait": (_i32, [_u64, _err]),
    "nv_stream_synchronize": (_i32, [_u64, _err]),
}


# ----------------------------------------------------------------------------- errors


class ShimError(RuntimeError):
    """A call into the shim failed: ``status`` (NV_ERR_*), its name, and the shim's message."""

    def __init__(self, status: int, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.status = status
        self.status_name = name
        self.message = message


class ShimArgumentError(ShimError, ValueError):
    """The shim rejected an argument (NV_ERR_INVALID_ARGUMENT) or a handle
    (NV_ERR_INVALID_HANDLE)."""


class ShimUnavailable(RuntimeError):
    """The shim library is missing, does not load, or has another ABI version."""


# ----------------------------------------------------------------------------- loading


def repo_root() -> Path:
    """The checkout this module lives in, for an editable install (``nuvec/backends/metal/shim.py``
    -> repo root); an installed package has no ``swift/`` there."""
    return Path(__file__).resolve().parents[3]


def library_filename() -> str:
    """``libNuvecShim.dylib`` on macOS, ``libNuvecShim.so`` elsewhere."""
    return "libNuvecShim.dylib" if sys.platform == "darwin" else "libNuvecShim.so"


def candidate_paths() -> list[Path]:
    """Where the library is looked for, in order (``NUVEC_SHIM_LIB`` is handled first, alone)."""
    name = library_filename()
    packaged = Path(str(files(__package__) / name))  # built into the wheel (setup.py)
    root = repo_root()
    return [
        packaged,
        root / "swift" / ".build" / "release" / name,
        root / "swift" / ".build" / "debug" / name,
    ]


def find_library() -> Path | None:
    """Path of the shim library to load, or None. ``NUVEC_SHIM_LIB`` wins when set."""
    override = os.environ.get("NUVEC_SHIM_LIB")
    if override:
        return Path(override)
    return next((p for p in candidate_paths() if p.is_file()), None)


class _State:
    lock = threading.Lock()
    loaded = False
    lib: ctypes.CDLL | None = None
    path: Path | None = None
    load_error: str | None = None
    metal_reason: str | None = None  # None: not probed yet; "": a Metal device opens


def _bind(lib: ctypes.CDLL) -> None:
    for name, (restype, argtypes) in PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def _load() -> ctypes.CDLL:
    """Loads and checks the library once; raises ShimUnavailable with the reason otherwise."""
    lib = _State.lib
    if lib is not None:  # fast path once loaded; the lock guards the first load only
        return lib
    with _State.lock:
        if not _State.loaded:
            _State.loaded = True
            _State.lib, _State.path, _State.load_error = _open_checked()
        if _State.lib is None:
            raise ShimUnavailable(_State.load_error)
        return _State.lib


def _open_checked() -> tuple[ctypes.CDLL | None, Path | None, str | None]:
    path = find_library()
    if path is None:
        searched = ", ".join(str(p) for p in candidate_paths())
        return None, None, f"{NOT_BUILT} (searched NUVEC_SHIM_LIB, {searched})"
    if not path.is_file():
        return None, path, f"NUVEC_SHIM_LIB={path} does not exist"
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as exc:
        return None, path, f"shim library {path} failed to load: {exc}"
    try:
        lib.nv_abi_version.restype = ctypes.c_uint32
        lib.nv_abi_version.argtypes = []
        version = lib.nv_abi_version()
    except AttributeError:
        return None, path, f"{path} is not a nuvec shim library (no nv_abi_version)"
    if version != ABI_VERSION:
        return (
            None,
            path,
            (
                f"shim ABI version {version} at {path}, this binding needs "
                f"{ABI_VERSION}: rebuild with `make install`"
            ),
        )
    try:
        _bind(lib)
    except AttributeError as exc:
        return None, path, f"shim library {path} lacks a function of ABI {ABI_VERSION}: {exc}"
    for struct_id, mirror in STRUCTS.items():
        size = lib.nv_abi_struct_size(struct_id)
        if size != ctypes.sizeof(mirror):
            return (
                None,
                path,
                (
                    f"shim struct {mirror.__name__} is {size} bytes in {path}, "
                    f"{ctypes.sizeof(mirror)} here: binding and library disagree"
                ),
            )
    return lib, path, None


def library() -> ctypes.CDLL:
    """The loaded, version-checked shim library (raises ShimUnavailable)."""
    return _load()


def library_path() -> Path | None:
    """Path of the library that was loaded (or tried), after the first load attempt."""
    try:
        _load()
    except ShimUnavailable:
        pass
    return _State.path


def is_available() -> bool:
    """True only when the shim is built and a real Metal device opened through it."""
    return unavailable_reason() == ""


def unavailable_reason() -> str:
    """Why Metal cannot be used here ("" when it can).

    >>> unavailable_reason()  # on Linux, with the shim built
    'no Metal device: this host has no Metal (Linux)'
    """
    try:
        lib = _load()
    except ShimUnavailable as exc:
        return str(exc)
    with _State.lock:
        if _State.metal_reason is None:
            err = ctypes.c_void_p()
            status = lib.nv_metal_probe(ctypes.byref(err))
            message = _take_string(lib, err)
            _State.metal_reason = "" if status == NV_OK else (message or status_name(status))
        return _State.metal_reason


def abi_version() -> int:
    """ABI version of the loaded library."""
    return int(_load().nv_abi_version())


def build_has_metal() -> bool:
    """True when the library was compiled with Metal support (an Apple platform)."""
    return bool(_load().nv_build_flags() & NV_BUILD_METAL)


def status_name(status: int) -> str:
    """``"NV_ERR_NO_METAL"`` etc. for a status code."""
    return _load().nv_status_name(status).decode()


def live_handle_count() -> int:
    """Handles alive in the shim (all kinds); for leak checks."""
    return int(_load().nv_live_handle_count())


def _take_string(lib: ctypes.CDLL, pointer: ctypes.c_void_p) -> str | None:
    """Copies a shim-allocated string and frees it."""
    if not pointer.value:
        return None
    try:
        return ctypes.string_at(pointer.value).decode("utf-8", "replace")
    finally:
        lib.nv_string_free(pointer.value)
        pointer.value = None


def _call(name: str, *args: Any) -> None:
    """Calls ``name(*args, &error)``; raises ShimError with the shim's message on failure."""
    lib = _load()
    err = ctypes.c_void_p()
    status = getattr(lib, name)(*args, ctypes.byref(err))
    message = _take_string(lib, err)
    if status != NV_OK:
        kind = (
            ShimArgumentError
            if status in (NV_ERR_INVALID_ARGUMENT, NV_ERR_INVALID_HANDLE)
            else ShimError
        )
        raise kind(status, status_name(status), message or "(no message)")


def _new_handle(name: str, *args: Any) -> int:
    out = ctypes.c_uint64(0)
    _call(name, *args, ctypes.byref(out))
    return out.value


def _out_string(name: str, handle: int) -> str:
    out = ctypes.c_void_p()
    _call(name, handle, ctypes.byref(out))
    return _take_string(_load(), out) or ""


def source_hash(
    source: str,
    *,
    math_mode: str = "safe",
    language_version: int = 0,
    macros: Mapping[str, Any] | None = None,
) -> bytes:
    """SHA-256 cache key of (source, options), as the shim computes it."""
    digest = (ctypes.c_uint8 * 32)()
    options, _keep = _options(math_mode, language_version, macros, "source_hash")
    _call("nv_source_hash", source.encode(), ctypes.byref(options), digest)
    return bytes(digest)


def _options(
    math_mode: str, language_version: int, macros: Mapping[str, Any] | None, op: str
) -> tuple[CompileOptions, bytes | None]:
    if math_mode not in MATH_MODES:
        raise ValueError(f"{op}: math_mode must be one of {sorted(MATH_MODES)}, got {math_mode!r}")
    text = None
    if macros:
        text = "\n".join(f"{k}={v}" for k, v in macros.items()).encode()
    return CompileOptions(MATH_MODES[math_mode], int(language_version), text, 0), text


# ----------------------------------------------------------------------------- objects


class _Handle:
    """Owns one reference to a shim handle; ``close()`` (or garbage collection) drops it."""

    _kind_name = "handle"

    def __init__(self, handle: int) -> None:
        self._lib = _load()  # kept so release still works while the module is torn down
        self._handle = handle

    @property
    def handle(self) -> int:
        """The raw ``nv_handle`` (0 after close)."""
        return self._handle

    def _live(self, op: str) -> int:
        if not self._handle:
            raise ValueError(f"{op}: the {self._kind_name} is closed")
        return self._handle

    def close(self) -> None:
        """Drops this object's reference; the shim frees the object with its last reference."""
        handle, self._handle = self._handle, 0
        if handle:
            self._lib.nv_release(handle, None)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing sensible to do
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Device(_Handle):
    """A Metal GPU (``Device.open()``) or the CPU-memory host device (``Device.host()``)."""

    _kind_name = "device"

    @classmethod
    def open(cls, index: int = 0) -> "Device":
        """Metal device ``index`` (0: the system default). Raises ShimError(NV_ERR_NO_METAL)."""
        if index < 0:
            raise ValueError(f"Device.open: index must be >= 0, got {index}")
        return cls(_new_handle("nv_device_open", index))

    @classmethod
    def host(cls) -> "Device":
        """The host device: page-aligned CPU buffers, no kernels."""
        return cls(_new_handle("nv_device_open_host"))

    @staticmethod
    def count() -> int:
        """Number of Metal devices."""
        return int(_load().nv_device_count())

    @property
    def name(self) -> str:
        return _out_string("nv_device_name", self._live("Device.name"))

    @property
    def limits(self) -> dict[str, int]:
        """``nv_device_limits`` as a dict (threadgroup limits as a 3-tuple)."""
        raw = DeviceLimits()
        _call("nv_device_limits_get", self._live("Device.limits"), ctypes.byref(raw))
        out: dict[str, Any] = {name: getattr(raw, name) for name, _ in DeviceLimits._fields_}
        out["max_threads_per_threadgroup"] = tuple(raw.max_threads_per_threadgroup)
        del out["reserved"]
        return out

    @property
    def is_metal(self) -> bool:
        return bool(self.limits["is_metal"])

    @property
    def cache_stats(self) -> dict[str, int]:
        raw = CacheStats()
        _call("nv_device_cache_stats", self._live("Device.cache_stats"), ctypes.byref(raw))
        return {name: getattr(raw, name) for name, _ in CacheStats._fields_}

    def clear_cache(self) -> None:
        _call("nv_device_clear_cache", self._live("Device.clear_cache"))

    def buffer(self, nbytes: int) -> "Buffer":
        """A zero-filled shared buffer of ``nbytes`` (> 0) bytes."""
        if not isinstance(nbytes, (int, np.integer)) or isinstance(nbytes, bool):
            raise TypeError(f"Device.buffer: nbytes must be an int, got {type(nbytes).__name__}")
        if nbytes <= 0:
            raise ValueError(f"Device.buffer: nbytes must be > 0, got {nbytes}")
        return Buffer(_new_handle("nv_buffer_new", self._live("Device.buffer"), int(nbytes)))

    def buffer_from(self, data: Any) -> "Buffer":
        """A buffer holding a copy of ``data`` (array-like or bytes; C-contiguous copy taken)."""
        if isinstance(data, (bytes, bytearray, memoryview)):
            raw = bytes(data)
        else:
            raw = np.ascontiguousarray(data).tobytes()
        if not raw:
            raise ValueError("Device.buffer_from: data is empty; buffers hold at least one byte")
        return Buffer(
            _new_handle("nv_buffer_new_with_bytes", self._live("Device.buffer_from"), raw, len(raw))
        )

    def compile(
        self,
        source: str,
        *,
        math_mode: str = "safe",
        language_version: int = 0,
        macros: Mapping[str, Any] | None = None,
    ) -> "Library":
        """Compiles Metal Shading Language (cached by source hash). ``math_mode`` "safe" (the
        default) keeps IEEE results; ``macros`` become ``#define NAME VALUE``."""
        if not isinstance(source, str):
            raise TypeError(f"Device.compile: source must be a str, got {type(source).__name__}")
        options, _keep = _options(math_mode, language_version, macros, "Device.compile")
        return Library(
            _new_handle(
                "nv_library_compile",
                self._live("Device.compile"),
                source.encode(),
                ctypes.byref(options),
            )
        )

    def stream(self) -> "Stream":
        """A new command stream (command queue)."""
        return Stream(_new_handle("nv_stream_new", self._live("Device.stream")))

    def __repr__(self) -> str:
        return f"Device({self.name!r})" if self._handle else "Device(<closed>)"


class _ArrayInterface:
    """Exposes shim memory to NumPy without copying; keeps the Buffer alive via ``owner``."""

    def __init__(self, owner: "Buffer", address: int, shape: tuple[int, ...], dtype: np.dtype):
        self.owner = owner
        self.__array_interface__ = {
            "version": 3,
            "shape": shape,
            "typestr": dtype.str,
            "data": (address, False),
        }


class Buffer(_Handle):
    """Shared memory the CPU and the device both address."""

    _kind_name = "buffer"

    @property
    def nbytes(self) -> int:
        out = ctypes.c_uint64()
        _call("nv_buffer_length", self._live("Buffer.nbytes"), ctypes.byref(out))
        return out.value

    @property
    def address(self) -> int:
        """CPU address of the memory (valid while the buffer lives)."""
        out = ctypes.c_void_p()
        _call("nv_buffer_contents", self._live("Buffer.address"), ctypes.byref(out))
        return int(out.value or 0)

    def as_array(
        self, dtype: Any = np.uint8, shape: Iterable[int] | int | None = None, offset: int = 0
    ) -> np.ndarray:
        """A zero-copy, writable NumPy view of the memory; it keeps the buffer alive.

        >>> dev.buffer(16).as_array(np.float32)          # 4 zeros, shared with the device
        """
        dt = np.dtype(dtype)
        nbytes = self.nbytes
        if offset < 0 or offset > nbytes:
            raise ValueError(f"Buffer.as_array: offset {offset} is outside 0..{nbytes}")
        if shape is None:
            if (nbytes - offset) % dt.itemsize:
                raise ValueError(
                    f"Buffer.as_array: {nbytes - offset} bytes is not a whole number "
                    f"of {dt} items; pass shape"
                )
            dims: tuple[int, ...] = ((nbytes - offset) // dt.itemsize,)
        else:
            dims = (
                (int(shape),)
                if isinstance(shape, (int, np.integer))
                else tuple(int(s) for s in shape)
            )
            if any(d < 0 for d in dims):
                raise ValueError(f"Buffer.as_array: negative dimension in shape {dims}")
            need = int(np.prod(dims, dtype=np.int64)) * dt.itemsize
            if need > nbytes - offset:
                raise ValueError(
                    f"Buffer.as_array: shape {dims} of {dt} needs {need} bytes, the "
                    f"buffer has {nbytes - offset} after offset {offset}"
                )
        if (self.address + offset) % dt.alignment:
            raise ValueError(f"Buffer.as_array: offset {offset} is not aligned for {dt}")
        return np.asarray(_ArrayInterface(self, self.address + offset, dims, dt))

    def __repr__(self) -> str:
        return f"Buffer(nbytes={self.nbytes})" if self._handle else "Buffer(<closed>)"


class Library(_Handle):
    """A compiled Metal library."""

    _kind_name = "library"

    @property
    def function_names(self) -> list[str]:
        text = _out_string("nv_library_function_names", self._live("Library.function_names"))
        return text.split("\n") if text else []

    def kernel(self, name: str) -> "Kernel":
        """The compute pipeline of kernel function ``name`` (cached)."""
        return Kernel(_new_handle("nv_kernel_new", self._live("Library.kernel"), name.encode()))


class Kernel(_Handle):
    """A compute pipeline."""

    _kind_name = "kernel"

    @property
    def info(self) -> dict[str, int]:
        raw = KernelInfo()
        _call("nv_kernel_info_get", self._live("Kernel.info"), ctypes.byref(raw))
        return {name: getattr(raw, name) for name, _ in KernelInfo._fields_ if name != "reserved"}


def _triple(values: Iterable[int] | int, op: str, what: str) -> tuple[int, int, int]:
    dims = [int(values)] if isinstance(values, (int, np.integer)) else [int(v) for v in values]
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{op}: {what} must have 1 to 3 dimensions, got {len(dims)}")
    if any(d < 0 for d in dims):
        raise ValueError(f"{op}: {what} {tuple(dims)} has a negative extent")
    fill = 0 if what == "threadgroup" and all(d == 0 for d in dims) else 1
    dims += [fill] * (3 - len(dims))
    return dims[0], dims[1], dims[2]


class Stream(_Handle):
    """A command stream: dispatches run in order; ``synchronize()`` waits for them."""

    _kind_name = "stream"

    def dispatch(
        self,
        kernel: Kernel,
        args: Mapping[int, Any],
        grid: Iterable[int] | int,
        threadgroup: Iterable[int] | int = (0, 0, 0),
        mode: str = "threads",
    ) -> None:
        """Encodes one dispatch. ``args`` maps ``[[buffer(i)]]`` slots to a Buffer,
        ``(Buffer, byte_offset)``, or constant bytes (bytes, NumPy scalar or small array).
        ``mode`` "threads" counts ``grid`` in threads, "threadgroups" in threadgroups;
        ``threadgroup`` (0, 0, 0) lets the shim pick."""
        op = "Stream.dispatch"
        if mode not in ("threads", "threadgroups"):
            raise ValueError(f"{op}: mode must be 'threads' or 'threadgroups', got {mode!r}")
        if not isinstance(kernel, Kernel):
            raise TypeError(f"{op}: kernel must be a Kernel, got {type(kernel).__name__}")
        items = list(args.items())
        c_args = (Arg * max(len(items), 1))()
        keep: list[bytes] = []
        for slot, (index, value) in zip(c_args, items):
            if not isinstance(index, (int, np.integer)) or index < 0:
                raise ValueError(f"{op}: argument index must be an int >= 0, got {index!r}")
            slot.index = int(index)
            if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], Buffer):
                value, offset = value
            else:
                offset = 0
            if isinstance(value, Buffer):
                slot.kind, slot.buffer, slot.offset = NV_ARG_BUFFER, value._live(op), int(offset)
            else:
                raw = (
                    bytes(value)
                    if isinstance(value, (bytes, bytearray, memoryview))
                    else np.ascontiguousarray(value).tobytes()
                )
                keep.append(raw)
                slot.kind, slot.length = NV_ARG_BYTES, len(raw)
                slot.bytes = ctypes.cast(ctypes.c_char_p(raw), ctypes.c_void_p).value
        g = (ctypes.c_uint64 * 3)(*_triple(grid, op, "grid"))
        t = (ctypes.c_uint32 * 3)(*_triple(threadgroup, op, "threadgroup"))
        grid_mode = NV_GRID_THREADS if mode == "threads" else NV_GRID_THREADGROUPS
        _call(
            "nv_stream_dispatch",
            self._live(op),
            kernel._live(op),
            c_args,
            len(items),
            g,
            t,
            grid_mode,
        )
        del keep  # the shim copied the bytes during the call

    @property
    def pending(self) -> int:
        """Dispatches encoded since the last commit."""
        out = ctypes.c_uint64()
        _call("nv_stream_pending", self._live("Stream.pending"), ctypes.byref(out))
        return out.value

    def commit(self) -> None:
        _call("nv_stream_commit", self._live("Stream.commit"))

    def wait(self) -> None:
        _call("nv_stream_wait", self._live("Stream.wait"))

    def synchronize(self) -> None:
        """Commit, then wait for all committed work; raises ShimError(NV_ERR_GPU) on failure."""
        _call("nv_stream_synchronize", self._live("Stream.synchronize"))
