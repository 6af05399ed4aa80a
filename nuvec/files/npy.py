"""NumPy's ``.npy`` format, read without trusting the header.

A file is ``\\x93NUMPY``, a version (1.0, 2.0 or 3.0), the header's length (2 bytes in 1.0,
4 after), the header (a Python dict literal: ``descr``, ``fortran_order``, ``shape``), then the
data. The header is bounded in length and nesting before it is parsed, and the data it
declares must be in the file before an array is made. Any byte order loads (converted to the
machine's); bfloat16 is stored as MLX and ml_dtypes store it, ``V2``.

    arr = read(Source.open("x.npy", "load"))
"""

from __future__ import annotations

import ast
import struct

import ml_dtypes
import numpy as np

from ..core.dtypes import from_numpy
from ._source import Source, checked_shape, to_native

MAGIC = b"\x93NUMPY"
MAX_HEADER = 65536  # NumPy itself refuses headers over 10,000 bytes by default
_MAX_NESTING = 4  # {'shape': (...)}: two levels; room for a little more
_BF16 = np.dtype(ml_dtypes.bfloat16)


def header_length(prefix: bytes, src: Source) -> tuple[int, int, str]:
    """(where the header starts, its length, its encoding) from the file's first 12 bytes."""
    if prefix[:6] != MAGIC:
        raise src.error("not a .npy file (no \\x93NUMPY magic)")
    major, minor = prefix[6], prefix[7]
    if (major, minor) == (1, 0):
        start, n = 10, struct.unpack("<H", prefix[8:10])[0]
    elif (major, minor) in ((2, 0), (3, 0)):
        if len(prefix) < 12:
            raise src.error("truncated inside the header's length")
        start, n = 12, struct.unpack("<I", prefix[8:12])[0]
    else:
        raise src.error(f"unknown .npy version {major}.{minor}")
    if n > MAX_HEADER:
        raise src.error(f"a header length of {n} bytes (more than {MAX_HEADER}): damaged")
    return start, n, "utf-8" if major == 3 else "latin-1"


def parse_header(text: bytes, encoding: str, src: Source) -> tuple[np.dtype, tuple, bool]:
    """(dtype, shape, fortran_order) from the header's text."""
    try:
        s = text.decode(encoding)
    except UnicodeDecodeError:
        raise src.error("the header is not valid text") from None
    depth = deepest = 0
    for c in s:
        if c in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in ")]}":
            depth -= 1
    if deepest > _MAX_NESTING:
        raise src.error(f"the header is nested {deepest} levels deep: damaged")
    try:
        d = ast.literal_eval(s.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise src.error(f"the header is not a Python literal: {s.strip()[:60]!r}") from None
    if not isinstance(d, dict) or set(d) != {"descr", "fortran_order", "shape"}:
        raise src.error("the header lacks descr, fortran_order and shape")
    if not isinstance(d["fortran_order"], bool):
        raise src.error(f"fortran_order is {d['fortran_order']!r}, not a bool")
    shape = checked_shape(src, d["shape"], "the array")
    return descr_dtype(d["descr"], src), shape, d["fortran_order"]


def descr_dtype(descr, src: Source) -> np.dtype:
    """The dtype a header's ``descr`` names, if nuvec has it (complex128 is refused, as MLX
    refuses it: nuvec's complex type is complex64)."""
    if not isinstance(descr, str) or len(descr) > 8:
        raise src.error(f"unsupported dtype {descr!r} (nuvec reads plain numeric arrays)")
    if descr in ("<V2", "|V2", "V2"):
        return _BF16
    try:
        dt = np.dtype(descr)
        ok = dt.kind in "biufc" and dt.newbyteorder("=") != np.complex128
        ok = ok and from_numpy(dt.newbyteorder("=")) is not None
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise src.error(f"dtype {descr!r} is not supported by nuvec")
    return dt


def header(src: Source, start: int = 0, end: int | None = None) -> tuple:
    """(where the data starts, dtype, shape, fortran_order) of the array stored at
    ``[start, end)`` of ``src``; the data itself is not checked to be there."""
    end = src.size if end is None else end
    if end - start < 10:
        raise src.error(f"{end - start} bytes are too few for a .npy file: truncated")
    prefix = src.take(start, min(12, end - start))
    hstart, n, encoding = header_length(prefix, src)
    if start + hstart + n > end:
        raise src.error(f"the header ({n} bytes) extends past the end of the data: truncated")
    dtype, shape, fortran = parse_header(src.take(start + hstart, n), encoding, src)
    return start + hstart + n, dtype, shape, fortran


def read(src: Source, start: int = 0, end: int | None = None) -> np.ndarray:
    """The array stored at ``[start, end)`` of ``src`` (the whole source by default), in the
    machine's byte order and C order."""
    end = src.size if end is None else end
    data_at, dtype, shape, fortran = header(src, start, end)
    count = 1
    for d in shape:
        count *= d
    if data_at + count * dtype.itemsize > end:
        raise src.error(
            f"the header declares {count * dtype.itemsize} bytes of data for shape "
            f"{shape} ({dtype}), but {end - data_at} follow: truncated or damaged"
        )
    if fortran:
        a = src.array(data_at, dtype, shape[::-1], "the data").T
        a = np.ascontiguousarray(to_native(a))
    else:
        a = to_native(src.array(data_at, dtype, shape, "the data"))
    return a
