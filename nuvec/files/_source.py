"""What every reader and writer shares: a bounded view of the bytes being read, the error that
names the file, and writes that replace a file whole or not at all.

A reader never trusts a size, count or offset it reads: each is checked against the bytes the
file holds before anything is allocated (``Source.take``, ``Source.array``).

    src = Source.open("w.npy", "load")        # a path (memory-mapped) or a binary file object
    magic = src.take(0, 6)                     # ValueError naming the file if it is too short
    a = src.array(128, np.dtype("<f4"), (4, 4))
"""

from __future__ import annotations

import mmap
import os
import threading
from typing import Any

import numpy as np

# the first bytes of a header are read into memory; no format here needs more
MAX_HEADER = 100 * 1024 * 1024
MAX_NDIM = 64


class Source:
    """The bytes of one file: ``size``, bounded reads, arrays over a range (views of a
    private, copy-on-write memory map for a path; read into a new buffer from a file object).

    A mapped file must not be truncated in place while arrays loaded from it are alive (the
    system would fault on the missing pages); nuvec's own writers replace files by renaming
    a new one into place, which leaves the mapped one intact."""

    def __init__(self, label: str, what: str, size: int, mapped=None, fileobj=None, base: int = 0):
        self.label, self.what, self.size = label, what, size
        self._map, self._file, self._base = mapped, fileobj, base
        self.opened: Any = None  # a path's own open file

    @staticmethod
    def open(file, what: str) -> "Source":
        if isinstance(file, (str, os.PathLike)):
            path = os.fspath(file)
            if not os.path.exists(path):
                raise FileNotFoundError(f"{what}: no such file {path!r}")
            f = open(path, "rb")
            try:
                size = os.fstat(f.fileno()).st_size
                m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) if size else None
            except BaseException:
                f.close()
                raise
            src = Source(path, what, size, mapped=m)
            src.opened = f  # what a lazy read (``lazy.FileData``) reads from later
            return src
        return Source.of_fileobj(file, what)

    @staticmethod
    def of_fileobj(f, what: str) -> "Source":
        label = label_of(f)
        if not callable(getattr(f, "read", None)):
            raise TypeError(
                f"{what}: expected a path or a binary file object, not {type(f).__name__}"
            )
        try:
            start = f.tell()
            f.seek(0, os.SEEK_END)
            size = f.tell() - start
            f.seek(start)
        except (OSError, AttributeError, ValueError):
            data = f.read()  # not seekable: what it yields is what there is
            if not isinstance(data, (bytes, bytearray)):
                raise TypeError(f"{what}: {label} is not opened in binary mode") from None
            return Source.of_bytes(bytes(data), label, what)
        return Source(label, what, size, fileobj=f, base=start)

    @staticmethod
    def of_bytes(data: bytes | bytearray, label: str, what: str) -> "Source":
        return Source(label, what, len(data), mapped=memoryview(data) if data else None)

    def error(self, problem: str) -> ValueError:
        return ValueError(f"{self.what}: {self.label}: {problem}")

    def check(self, offset: int, n: int, what: str) -> None:
        if n < 0 or offset < 0 or offset + n > self.size:
            raise self.error(
                f"{what} ({n} bytes at offset {offset}) extends past the end of "
                f"the file ({self.size} bytes): truncated or damaged"
            )

    def take(self, offset: int, n: int, what: str = "the header") -> bytes:
        """``n`` bytes at ``offset`` (they must all be there)."""
        self.check(offset, n, what)
        if self._map is not None:
            return bytes(self._map[offset : offset + n])
        if n == 0:
            return b""
        self._file.seek(self._base + offset)
        data = self._file.read(n)
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"{self.what}: {self.label} is not opened in binary mode")
        if len(data) != n:
            raise self.error(f"{what} could not be read whole ({len(data)} of {n} bytes)")
        return bytes(data)

    def array(self, offset: int, dtype: np.dtype, shape: tuple, what: str) -> np.ndarray:
        """A C-ordered array of ``shape`` over the bytes at ``offset`` (checked to be there)."""
        count = 1
        for d in shape:
            count *= d
        nbytes = count * dtype.itemsize
        self.check(offset, nbytes, what)
        if self._map is not None and nbytes:
            a = np.frombuffer(self._map, dtype=dtype, count=count, offset=offset)
            if not a.flags.aligned:  # kernels assume naturally aligned elements
                a = a.copy()
            return a.reshape(shape)
        a = np.empty(count, dtype=dtype)
        if nbytes:
            self._file.seek(self._base + offset)
            view = memoryview(a.view(np.uint8))  # type: ignore[arg-type]  # NumPy arrays are buffers
            got = 0
            readinto = getattr(self._file, "readinto", None)
            while got < nbytes:
                if readinto is not None:
                    n = readinto(view[got:])
                else:
                    chunk = self._file.read(min(nbytes - got, 1 << 26))
                    n = len(chunk)
                    view[got : got + n] = chunk
                if not n:
                    raise self.error(f"{what} could not be read whole ({got} of {nbytes} bytes)")
                got += n
        return a.reshape(shape)


def label_of(f) -> str:
    name = getattr(f, "name", None)
    return repr(name) if isinstance(name, (str, bytes)) else f"<{type(f).__name__}>"


def checked_shape(src: Source, dims, what: str) -> tuple[int, ...]:
    """A shape read from a header: a list of non-negative ints, at most MAX_NDIM of them."""
    if (
        not isinstance(dims, (list, tuple))
        or len(dims) > MAX_NDIM
        or not all(type(d) is int and d >= 0 for d in dims)
    ):
        raise src.error(f"{what} has an invalid shape {_short(dims)}")
    size = 1
    for d in dims:
        size *= max(d, 1)
    if size >= 1 << 62:  # beyond any array (NumPy's own limit), even with a zero in it
        raise src.error(f"{what} has a shape too large for any array {_short(dims)}")
    return tuple(dims)


def _short(x) -> str:
    r = repr(x)
    return r if len(r) <= 80 else r[:77] + "..."


def to_native(a: np.ndarray) -> np.ndarray:
    """``a`` in the machine's byte order (a converted copy where it is not)."""
    if a.dtype.byteorder not in ("=", "|") and not a.dtype.isnative:
        return a.astype(a.dtype.newbyteorder("="))
    return a


def is_path(file) -> bool:
    return isinstance(file, (str, os.PathLike))


def write_file(file, write, what: str) -> None:
    """Calls ``write(f)`` on ``file``: a binary file object is written in place; a path gets a
    temporary file beside it, flushed to disk (fsync) and renamed over it, so an error or a
    crash never leaves a half-written file under the name. On an error the temporary file is
    removed and the old file is left as it was."""
    if not is_path(file):
        if not callable(getattr(file, "write", None)):
            raise TypeError(
                f"{what}: expected a path or a binary file object, not {type(file).__name__}"
            )
        write(file)
        return
    path = os.fspath(file)
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    _sync_dir(os.path.dirname(os.path.abspath(path)))


def _sync_dir(d: str) -> None:
    """Makes the rename itself durable (where the system allows directories to be synced)."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
