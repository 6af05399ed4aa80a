"""Compile CUDA C with NVRTC into loaded kernels, with nuvec's own on-disk cubin cache.

    fns = load(source_text, ["nvk_vec_i32"])      # CuPy Function objects, launched like RawKernel

Why not ``cupy.RawModule(code=...)``: CuPy appends ``-ftz=true`` to every NVRTC compilation
(subnormal inputs and results flushed to zero), which would make GPU results differ from the
CPU's on subnormal values. nuvec compiles through CuPy's NVRTC binding with
``source.nvrtc_options()`` and ``-ftz=false`` (IEEE subnormals; no contraction, IEEE division
and square root, never fast math), for the device's own architecture (``sm_XY``: machine code,
no PTX JIT at load), and loads the cubin with ``cupy.cuda.function.Module``.

Cache: ``$NUVEC_CACHE_DIR/cuda`` (else ``~/.cache/nuvec/cuda``), one ``<sha256>.cubin`` per
(source, options, architecture, NVRTC version), written to a temporary file and renamed into
place (concurrent processes each write a whole file); a file that does not load is rebuilt.
An unwritable directory only costs the cache.
"""

from __future__ import annotations

import glob
import hashlib
import os
import sys
import tempfile
import threading
from pathlib import Path

import cupy as cp

from . import source

_lock = threading.Lock()
_alive: list = []  # loaded modules (their functions must outlive nothing else)
_info: dict[str, object] = {}
stats = {"compiled": 0, "disk_hits": 0}


class KernelCompileError(RuntimeError):
    """NVRTC rejected a generated kernel; the message holds its log."""


def _binding():
    from cupy_backends.cuda.libs import nvrtc as binding

    return binding


def options(fast: bool = False) -> tuple[str, ...]:
    """The NVRTC options used for this device (architecture included); ``fast``: those of
    fast-math kernels."""
    key = "fast_options" if fast else "options"
    opts = _info.get(key)
    if opts is None:
        cc = cp.cuda.Device().compute_capability
        opts = tuple(source.nvrtc_options(fast)) + ("-ftz=false", f"--gpu-architecture=sm_{cc}")
        _info[key] = opts
    return opts


def cache_dir() -> Path:
    base = os.environ.get("NUVEC_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "nuvec"
    )
    return Path(base) / "cuda"


def _key(src: str, opts: tuple) -> str:
    ver = _info.get("version")
    if ver is None:
        try:
            ver = _info["version"] = str(_binding().getVersion())
        except Exception:  # noqa: BLE001 - an older binding: the CuPy version stands in
            ver = _info["version"] = "cupy-" + cp.__version__
    h = hashlib.sha256()
    for part in (src, "\0".join(opts), ver):
        h.update(part.encode())
        h.update(b"\1")
    return h.hexdigest()


def include_options() -> tuple[str, ...]:
    """``-I`` options for the CUDA toolkit's headers (cuda_fp16.h and the others a user's
    kernel may include; nuvec's generated kernels include none): the toolkit CuPy found, or
    the headers of NVIDIA's CUDA wheels on ``sys.path``."""
    opts = _info.get("include")
    if opts is None:
        roots = [os.path.join(cp.cuda.get_cuda_path() or "", "include")]
        for base in sys.path:
            roots += glob.glob(os.path.join(base, "nvidia", "*", "include"))
        found = [r for r in roots if os.path.exists(os.path.join(r, "cuda_fp16.h"))][:1]
        # libcu++'s <nv/target>, which cooperative groups include: CUDA 13 keeps it under
        # include/cccl, and CuPy carries its own copy of CCCL
        cupy_cccl = os.path.join(
            os.path.dirname(cp.__file__), "_core", "include", "cupy", "_cccl", "libcudacxx"
        )
        found += [
            d
            for d in [os.path.join(r, "cccl") for r in found] + [cupy_cccl]
            if os.path.exists(os.path.join(d, "nv", "target"))
        ][:1]
        opts = _info["include"] = tuple(f"-I{r}" for r in found)
    return opts


def compile_cubin(
    src: str, name: str = "nuvec.cu", fast: bool = False, extra: tuple[str, ...] = ()
) -> bytes:
    """The cubin of ``src`` (KernelCompileError with NVRTC's log if it is rejected);
    ``extra``: options beyond the device's."""
    nv = _binding()
    prog = nv.createProgram(src, name, (), ())
    try:
        try:
            nv.compileProgram(prog, list(options(fast) + extra))
        except nv.NVRTCError as e:
            log = nv.getProgramLog(prog)
            raise KernelCompileError(f"NVRTC rejected {name}: {e}\n{log[-4000:]}") from None
        return nv.getCUBIN(prog)
    finally:
        nv.destroyProgram(prog)


def _store(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        pass  # no cache, same kernels


def load(
    src: str,
    entries: list[str],
    name: str = "nuvec.cu",
    fast: bool = False,
    extra: tuple[str, ...] = (),
) -> list:
    """The kernels ``entries`` of ``src``, compiled now or read from the disk cache
    (``fast``: with the options of fast-math kernels; ``extra``: more options)."""
    opts = options(fast) + extra
    path = cache_dir() / f"{_key(src, opts)}.cubin"
    mod = None
    if path.exists():
        try:
            mod = cp.cuda.function.Module()
            mod.load(path.read_bytes())
            fns = [mod.get_function(e) for e in entries]
            with _lock:
                stats["disk_hits"] += 1
                _alive.append(mod)
            return fns
        except Exception:  # noqa: BLE001 - a damaged entry: build it again
            mod = None
    cubin = compile_cubin(src, name, fast, extra)
    _store(path, cubin)
    mod = cp.cuda.function.Module()
    mod.load(cubin)
    fns = [mod.get_function(e) for e in entries]
    with _lock:
        stats["compiled"] += 1
        _alive.append(mod)
    return fns
