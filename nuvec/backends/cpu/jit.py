"""Compile generated C kernels with the system C compiler, load them, cache them on disk.

    from nuvec.backends.cpu import jit
    lib, address = jit.load(source, "nv_k_0123")    # compiled on first use, then cached

The disk cache (``$NUVEC_CACHE_DIR/kernels``, else ``~/.cache/nuvec/kernels``) holds one
shared library per key = sha256(source, compiler identity, flags, CPU identity when
-march=native), followed by a trailer with the sha256 of the library's bytes (the digest lives
inside the entry, as in CuPy's kernel cache). An entry is written to a temporary file and
renamed into place (concurrent processes compiling the same kernel each write a whole file,
one wins). Before an entry is loaded its digest is checked and its ELF headers must fit the
bytes present; an entry that fails either is rebuilt. A cache that cannot be read or written
is no error of its own: valid entries of a read-only cache are loaded, and anything that stops
a kernel from being built or stored (no compiler, a failing one, a full disk, an unwritable
folder) raises ``KernelCompileError`` with the cause and the setting to change, which the
compiler turns into one warning and unfused execution. ``clear_kernel_cache()`` empties it.

It imports only the standard library, the C dialect's flags and the kernel error of
nuvec.codegen, so setup.py loads it (and the generator) from its file without the package,
whose extensions it is building, to prebuild the single-op kernels of
``nuvec.codegen.prebuilt`` at install time with exactly the same flags.
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

__all__ = [
    "KernelCompileError",
    "load",
    "compile_shared",
    "compiler",
    "flags",
    "cache_dir",
    "cache_key",
    "stats",
    "clear_memory_cache",
    "clear_kernel_cache",
    "has_entry",
]

from ...codegen.dialects.c import FLAGS as BASE_FLAGS  # no contraction, no fast-math
from ...codegen.errors import KernelCompileError  # the C compiler is missing or failed


_lock = threading.Lock()
_key_locks: dict[str, threading.Lock] = {}
_loaded: dict[str, tuple[ctypes.CDLL, Path]] = {}  # key -> loaded library
_info: dict[str, object] = {}  # compiler identity, flags (memoised)
_stats = {"compiled": 0, "disk_hits": 0, "memory_hits": 0, "rebuilt_damaged": 0, "reprobed": 0}
_TRAILER = b"NVKCACHE"  # + the 32-byte sha256 of the library before it
_CACHE_HINT = "set NUVEC_CACHE_DIR to a writable folder with free space"


def compiler() -> list[str]:
    """The C compiler command: ``$CC`` (may hold arguments) or ``cc``."""
    return shlex.split(os.environ.get("CC", "") or "cc")


def _run(cmd: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise KernelCompileError(
            f"no C compiler found: {cmd[0]!r} does not exist (set CC to a C compiler)", cmd
        ) from None
    except PermissionError as e:
        raise KernelCompileError(f"cannot run the C compiler {cmd[0]!r}: {e}", cmd) from None
    except subprocess.TimeoutExpired:
        raise KernelCompileError(f"the C compiler {cmd[0]!r} timed out", cmd) from None


def _temp_error(e: OSError) -> KernelCompileError:
    where = tempfile.tempdir or os.environ.get("TMPDIR") or "the temporary folder"
    return KernelCompileError(
        f"cannot write the compiler's temporary files in {where}: {e} "
        "(set TMPDIR to a writable folder with free space)"
    )


def _said(r: subprocess.CompletedProcess) -> str:
    """What a failed compiler run said, or how it ended (a full disk kills it by SIGXFSZ)."""
    text = (r.stderr or r.stdout or "").strip()
    if r.returncode < 0:
        import signal

        try:
            name = signal.Signals(-r.returncode).name
        except ValueError:
            name = f"signal {-r.returncode}"
        text = f"{text}\n(killed by {name}; a full disk or a file size limit sends SIGXFSZ)"
    return text.strip() or f"exit status {r.returncode}"


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
            raise KernelCompileError(
                f"no C compiler found: {cc[0]!r} does not exist (set CC to a C compiler)", cc
            )
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
        text = memo.read_text().strip()
    except FileNotFoundError:
        text = None
    except (OSError, UnicodeDecodeError):
        text = "?"
    if text in ("", flag):
        return tuple(text.split())
    if text is not None:  # anything else is damage: probe again
        _stats["reprobed"] += 1
    try:
        with tempfile.TemporaryDirectory(prefix="nuvec-probe-") as d:
            src = Path(d) / "t.c"
            src.write_text("int nv_probe(void) { return 0; }\n")
            r = _run(cc + [flag, "-c", str(src), "-o", str(Path(d) / "t.o")], timeout=60)
    except OSError as e:
        raise _temp_error(e) from None
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
    """The directory of compiled kernels (created if it can be; it may be read-only)."""
    env = os.environ.get("NUVEC_CACHE_DIR")
    d = (Path(env) if env else Path.home() / ".cache" / "nuvec") / "kernels"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass  # read-only or absent: entries are looked for, never stored
    return d


def compile_shared(sources: list[str] | str, out_path: str | os.PathLike, jobs: int = 1) -> None:
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
                raise KernelCompileError(
                    f"C compiler failed ({' '.join(cmd[:1])}):\n{_said(r)}", cmd
                )
        tmp = out_path.with_name(f".{out_path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        link = cc + list(fl) + ["-shared", "-o", str(tmp)] + [str(o) for o in objs] + ["-lm"]
        r = _run(link, timeout=600)
        if r.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise KernelCompileError(f"linking kernels failed:\n{_said(r)}", link)
        try:
            os.replace(tmp, out_path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _seal(library: bytes) -> bytes:
    """A cache entry: the library, then the trailer holding its digest."""
    return library + _TRAILER + hashlib.sha256(library).digest()


def valid_entry(data: bytes) -> bool:
    """Whether ``data`` is a whole cache entry: its trailer's digest matches the library's
    bytes, and the library's ELF headers and segments lie within them (a library cut short
    would fault in the dynamic loader, not fail)."""
    if len(data) < 40 or data[-40:-32] != _TRAILER:
        return False
    body = data[:-40]
    return hashlib.sha256(body).digest() == data[-32:] and _elf_complete(body)


def _elf_complete(body: bytes) -> bool:
    import struct

    if len(body) < 52 or body[:4] != b"\x7fELF" or body[5] not in (1, 2):
        return False
    e = "<" if body[5] == 1 else ">"
    try:
        if body[4] == 2:  # 64-bit: offsets and sizes are 8 bytes
            phoff, shoff = struct.unpack_from(e + "QQ", body, 0x20)
            phent, phnum, shent, shnum = struct.unpack_from(e + "HHHH", body, 0x36)
            seg = lambda at: (
                struct.unpack_from(e + "Q", body, at + 8)[0]
                + struct.unpack_from(e + "Q", body, at + 0x20)[0]
            )
        elif body[4] == 1:
            phoff, shoff = struct.unpack_from(e + "II", body, 0x1C)
            phent, phnum, shent, shnum = struct.unpack_from(e + "HHHH", body, 0x2A)
            seg = lambda at: (
                struct.unpack_from(e + "I", body, at + 4)[0]
                + struct.unpack_from(e + "I", body, at + 0x10)[0]
            )
        else:
            return False
        end = max(phoff + phent * phnum, shoff + shent * shnum)
        if end > len(body):
            return False
        return all(seg(phoff + i * phent) <= len(body) for i in range(phnum))
    except struct.error:
        return False


def _read_entry(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def has_entry(key: str) -> bool:
    """Whether the disk cache holds a valid entry for ``key``."""
    data = _read_entry(cache_dir() / f"{key}.so")
    return data is not None and valid_entry(data)


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
    so = d / f"{key}.so"
    data = _read_entry(so)
    if data is not None:
        if valid_entry(data):
            try:
                lib = _dlopen(so)
                _stats["disk_hits"] += 1
                return lib, so
            except OSError:
                pass
        _stats["rebuilt_damaged"] += 1
    _stats["compiled"] += 1
    try:
        with tempfile.TemporaryDirectory(prefix="nuvec-build-") as work:
            built = Path(work) / "k.so"
            compile_shared(source, built)
            library = built.read_bytes()
    except OSError as e:
        raise _temp_error(e) from None
    try:
        _write_atomic(so, _seal(library))
    except OSError as e:
        raise KernelCompileError(
            f"cannot store a kernel in the cache {d}: {e} ({_CACHE_HINT})"
        ) from None
    try:
        return _dlopen(so), so
    except OSError as e:
        raise KernelCompileError(
            f"cannot load a kernel from the cache {d}: {e} "
            f"({_CACHE_HINT}, on a filesystem that allows running "
            "code)"
        ) from None


_opened: set[str] = set()  # paths dlopen'ed by this process


def _dlopen(path: Path) -> ctypes.CDLL:
    """dlopen, but never twice by one path: the dynamic loader would hand back the handle it
    loaded first (a damaged file now replaced), so a rebuilt entry loads from a private copy."""
    key = str(path)
    if key not in _opened:
        lib = ctypes.CDLL(key)
        _opened.add(key)
        return lib
    with tempfile.TemporaryDirectory(prefix="nuvec-reload-") as d:  # removed once mapped
        private = Path(d) / path.name
        shutil.copyfile(path, private)
        return ctypes.CDLL(str(private))


def _address(lib: ctypes.CDLL, name: str) -> int:
    try:
        fn = getattr(lib, name)
    except AttributeError:
        raise KernelCompileError(f"compiled library has no kernel {name!r}") from None
    return ctypes.cast(fn, ctypes.c_void_p).value or 0


def stats() -> dict:
    """Counters: compiled, disk_hits, memory_hits, rebuilt_damaged, reprobed."""
    return dict(_stats)


def clear_memory_cache() -> None:
    """Forget loaded libraries (tests: the next load goes to the disk cache)."""
    _loaded.clear()
    _key_locks.clear()
    _info.clear()


def clear_kernel_cache() -> int:
    """Removes every entry of the compiled-kernel cache on disk (``cache_dir()``: kernels,
    compiler-probe memos, leftover temporary files; ``nv.clear_kernel_cache()``) and returns
    how many files went. Kernels this process has loaded stay usable; later ones are built
    anew::

        nv.clear_kernel_cache()     # e.g. after copying a cache from another machine
    """
    removed = 0
    try:
        names = list(cache_dir().iterdir())
    except OSError:
        return 0
    for p in names:
        if p.suffix in (".so", ".sha256", ".tmp") or p.name.startswith("probe-"):
            try:
                p.unlink()
                removed += 1
            except OSError:
                pass
    return removed
