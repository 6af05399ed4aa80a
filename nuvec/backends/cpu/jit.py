"""Compile generated C kernels with the system C compiler, load them, cache them on disk.

    from nuvec.backends.cpu import jit
    lib, address = jit.load(source, "nv_k_0123")    # compiled on first use, then cached

The disk cache (``$NUVEC_CACHE_DIR``, else ``~/.cache/nuvec``) holds one shared library per
key = sha256(source, compiler identity, flags, CPU identity when -march=native). An entry is
written to a temporary file and renamed into place (atomic: concurrent processes compiling the
same kernel each write a whole file, one wins), together with a ``.sha256`` digest of its
bytes; an entry whose digest is missing or wrong (a truncated or damaged file) is rebuilt. An
unwritable cache directory falls back to a private temporary directory. No C compiler, or a
compiler that fails, raises ``KernelCompileError`` carrying the compiler's message.

Besides the standard library this imports only nuvec.codegen (pure Python), so setup.py can
use it to prebuild the single-op kernels at install time with exactly the same flags.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

__all__ = ["KernelCompileError", "load", "compile_shared", "build_prebuilt", "compiler", "flags", "cache_dir",
           "cache_key", "stats", "clear_memory_cache"]

from ...codegen.dialects.c import FLAGS as BASE_FLAGS   # no contraction, no fast-math


class KernelCompileError(RuntimeError):
    """The C compiler is missing or failed; ``message`` holds what it said."""

    def __init__(self, message: str, command: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.command = command


_lock = threading.Lock()
_key_locks: dict[str, threading.Lock] = {}
_loaded: dict[str, tuple[ctypes.CDLL, Path]] = {}     # key -> loaded library
_info: dict[str, object] = {}                          # compiler identity, flags (memoised)
_stats = {"compiled": 0, "disk_hits": 0, "memory_hits": 0, "rebuilt_damaged": 0,
          "cache_fallback": 0}
_fallback_dir: Path | None = None


def compiler() -> list[str]:
    """The C compiler command: ``$CC`` (may hold arguments) or ``cc``."""
    return shlex.split(os.environ.get("CC", "") or "cc")


def _run(cmd: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise KernelCompileError(f"no C compiler found: {cmd[0]!r} does not exist "
                                 "(set CC to a C compiler)", cmd) from None
    except PermissionError as e:
        raise KernelCompileError(f"cannot run the C compiler {cmd[0]!r}: {e}", cmd) from None
    except subprocess.TimeoutExpired:
        raise KernelCompileError(f"the C compiler {cmd[0]!r} timed out", cmd) from None


def _identity() -> tuple[str, tuple[str, ...]]:
    """(compiler identity, flags), memoised per compiler command.

    The identity is the compiler binary itself (resolved path, size, modification time) and
    its extra arguments: cheap to get (no process is run), and it changes when the compiler
    is replaced. Whether it takes -march=native is probed once and remembered on disk.
    """
    cc = compiler()
    key = " ".join(cc)
    got = _info.get(key)
    if got is None:
        path = shutil.which(cc[0]) if os.sep not in cc[0] else cc[0]
        try:
            real = os.path.realpath(path) if path else ""
            st = os.stat(real) if real else None
        except OSError:
            st = None
        if st is None or not os.access(real, os.X_OK):
            raise KernelCompileError(f"no C compiler found: {cc[0]!r} does not exist "
                                     "(set CC to a C compiler)", cc)
        ident = f"{real}\n{st.st_size}:{st.st_mtime_ns}\n{' '.join(cc[1:])}"
        got = (ident, tuple(BASE_FLAGS) + _arch_flags(cc, ident))
        _info[key] = got
    return got  # type: ignore[return-value]


def _arch_flags(cc: list[str], ident: str) -> tuple[str, ...]:
    """-march=native when the compiler takes it (NUVEC_MARCH overrides; 'none' for none).

    The answer is kept in the cache directory, keyed by the compiler's identity."""
    march = os.environ.get("NUVEC_MARCH", "native")
    if march in ("", "none"):
        return ()
    flag = f"-march={march}"
    memo = cache_dir() / f"probe-{hashlib.sha256((ident + flag).encode()).hexdigest()[:24]}"
    try:
        return tuple(memo.read_text().split())
    except OSError:
        pass
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "t.c"
        src.write_text("int nv_probe(void) { return 0; }\n")
        r = _run(cc + [flag, "-c", str(src), "-o", str(Path(d) / "t.o")], timeout=60)
    got = (flag,) if r.returncode == 0 else ()
    try:
        _write_atomic(memo, " ".join(got).encode())
    except OSError:
        pass
    return got


def flags() -> tuple[str, ...]:
    """The flags kernels are compiled with here."""
    return _identity()[1]


@functools.lru_cache(maxsize=None)
def _cpu_identity() -> str:
    """What -march=native depends on: the CPU model and its feature flags."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        import platform
        return platform.processor() or platform.machine()
    keep = [ln for ln in lines if ln.startswith(("model name", "flags", "Features"))]
    return "\n".join(sorted(set(keep)))


def cache_key(source: str) -> str:
    """The disk-cache key of a source under the current compiler and flags."""
    ident, fl = _identity()
    h = hashlib.sha256()
    for part in (source, ident, " ".join(fl)):
        h.update(part.encode())
        h.update(b"\0")
    if any(f.startswith("-march=native") for f in fl):
        h.update(_cpu_identity().encode())
    return h.hexdigest()


def cache_dir() -> Path:
    """The directory of compiled kernels (created if needed; a temp dir if unwritable)."""
    global _fallback_dir
    if _fallback_dir is not None:
        return _fallback_dir
    env = os.environ.get("NUVEC_CACHE_DIR")
    d = Path(env) if env else Path.home() / ".cache" / "nuvec"
    d = d / "kernels"
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / f".probe-{os.getpid()}-{threading.get_ident()}"
        probe.write_bytes(b"")
        probe.unlink()
        return d
    except OSError:
        _stats["cache_fallback"] += 1
        _fallback_dir = Path(tempfile.mkdtemp(prefix="nuvec-kernels-"))
        return _fallback_dir


def compile_shared(sources: list[str] | str, out_path: str | os.PathLike,
                   jobs: int = 1) -> None:
    """Compile C sources into a shared library at out_path (written atomically).

    Several sources are compiled in parallel (``jobs`` processes), then linked.
    """
    if isinstance(sources, str):
        sources = [sources]
    cc = compiler()
    _, fl = _identity()
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nuvec-cc-") as work:
        work_p = Path(work)
        objs, cmds = [], []
        for i, src in enumerate(sources):
            c = work_p / f"k{i}.c"
            c.write_text(src)
            o = work_p / f"k{i}.o"
            objs.append(o)
            cmds.append(cc + list(fl) + ["-c", str(c), "-o", str(o)])
        if jobs > 1 and len(cmds) > 1:
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(jobs) as ex:
                results = list(ex.map(lambda cmd: _run(cmd, timeout=1800), cmds))
        else:
            results = [_run(cmd, timeout=1800) for cmd in cmds]
        for cmd, r in zip(cmds, results):
            if r.returncode != 0:
                raise KernelCompileError(f"C compiler failed ({' '.join(cmd[:1])}):\n"
                                         f"{(r.stderr or r.stdout).strip()}", cmd)
        tmp = out_path.with_name(f".{out_path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        link = cc + list(fl) + ["-shared", "-o", str(tmp)] + [str(o) for o in objs] + ["-lm"]
        r = _run(link, timeout=600)
        if r.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise KernelCompileError(f"linking kernels failed:\n{(r.stderr or r.stdout).strip()}",
                                     link)
        os.replace(tmp, out_path)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _valid_entry(so: Path, sha: Path) -> bool:
    try:
        return sha.read_text().strip() == _digest(so)
    except OSError:
        return False


def load(source: str, name: str) -> tuple[ctypes.CDLL, int]:
    """The library built from ``source`` (compiled if not cached) and the address of ``name``.

    Raises KernelCompileError when there is no working C compiler.
    """
    key = cache_key(source)
    got = _loaded.get(key)
    if got is not None:
        _stats["memory_hits"] += 1
        return got[0], _address(got[0], name)
    with _lock:
        klock = _key_locks.setdefault(key, threading.Lock())
    with klock:
        got = _loaded.get(key)
        if got is not None:
            return got[0], _address(got[0], name)
        lib, path = _load_or_build(key, source)
        _loaded[key] = (lib, path)
    return lib, _address(lib, name)


def _load_or_build(key: str, source: str) -> tuple[ctypes.CDLL, Path]:
    d = cache_dir()
    so, sha = d / f"{key}.so", d / f"{key}.sha256"
    if so.exists():
        if _valid_entry(so, sha):
            try:
                lib = _dlopen(so)
                _stats["disk_hits"] += 1
                return lib, so
            except OSError:
                pass
        _stats["rebuilt_damaged"] += 1
    _stats["compiled"] += 1
    try:
        compile_shared(source, so)
        _write_atomic(sha, _digest(so).encode())
    except KernelCompileError:
        raise
    except OSError:
        # the cache directory became unwritable: build privately instead
        global _fallback_dir
        if _fallback_dir is None:
            _fallback_dir = Path(tempfile.mkdtemp(prefix="nuvec-kernels-"))
            _stats["cache_fallback"] += 1
        so = _fallback_dir / f"{key}.so"
        compile_shared(source, so)
    return _dlopen(so), so


_opened: set[str] = set()          # paths dlopen'ed by this process


def _dlopen(path: Path) -> ctypes.CDLL:
    """dlopen, but never twice by one path: the dynamic loader would hand back the handle it
    loaded first (a damaged file now replaced), so a rebuilt entry loads from a private copy."""
    key = str(path)
    if key in _opened:
        private = Path(tempfile.mkdtemp(prefix="nuvec-reload-")) / path.name
        shutil.copyfile(path, private)
        path = private
    lib = ctypes.CDLL(str(path))
    _opened.add(key)
    return lib


def _address(lib: ctypes.CDLL, name: str) -> int:
    try:
        fn = getattr(lib, name)
    except AttributeError:
        raise KernelCompileError(f"compiled library has no kernel {name!r}") from None
    return ctypes.cast(fn, ctypes.c_void_p).value or 0


def stats() -> dict:
    """Counters: compiled, disk_hits, memory_hits, rebuilt_damaged, cache_fallback."""
    return dict(_stats)


def clear_memory_cache() -> None:
    """Forget loaded libraries (tests: the next load goes to the disk cache)."""
    _loaded.clear()
    _key_locks.clear()
    _info.clear()


def _reset_fallback_for_tests() -> None:
    global _fallback_dir
    _fallback_dir = None


def build_prebuilt(out_path: str | os.PathLike, jobs: int | None = None, chunks: int = 16) -> int:
    """Compile every single-op kernel (codegen.prebuilt) into one library; returns the count.

    The library exports ``nv_prebuilt_stamp``, the generator fingerprint it was built from.
    """
    from ...codegen.generator import generate_many
    from ...codegen.prebuilt import fingerprint, prebuilt_specs
    specs = prebuilt_specs()
    groups = [specs[i::chunks] for i in range(chunks)]
    sources = [generate_many(g, "c") for g in groups if g]
    sources[0] += f'\nNV_EXPORT const char nv_prebuilt_stamp[65] = "{fingerprint()}";\n'
    compile_shared(sources, out_path, jobs=jobs or os.cpu_count() or 1)
    return len(specs)
