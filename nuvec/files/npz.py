"""NumPy's ``.npz`` format: a zip archive of ``.npy`` members, read without trusting it.

A stored (uncompressed) member is read in place, as a range of the archive (memory-mapped for
a path), after its local header and declared size are checked against the archive's bytes. A
compressed member is inflated chunk by chunk, so what is allocated grows with the data that
actually comes out, never with what a header claims; its CRC is checked at the end.

    arrays = read(Source.open("w.npz", "load"), "w.npz")
    write(f, {"w": host_array}, compressed=False)
"""

from __future__ import annotations

import struct
import zipfile
import zlib

import numpy as np

from . import npy
from ._source import Source

_CHUNK = 1 << 22
_MAX_TRAILING = 4096
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    NotImplementedError,
    EOFError,
    zlib.error,
    struct.error,
    UnicodeDecodeError,
    OverflowError,
    KeyError,
    RuntimeError,
    ValueError,
    OSError,
)


def read(src: Source, file) -> dict:
    """{name: NumPy array} of an ``.npz`` archive (``file``: its path or file object)."""
    try:
        zf = zipfile.ZipFile(file)
    except _ZIP_ERRORS as e:
        raise src.error(f"not a readable .npz (zip) archive ({e})") from None
    out: dict = {}
    with zf:
        for info in zf.infolist():
            key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if key in out:
                raise src.error(f"the member {info.filename!r} appears twice")
            try:
                out[key] = _member(src, zf, info)
            except _ZIP_ERRORS as e:
                if isinstance(e, ValueError) and str(e).startswith(src.what):
                    raise
                raise src.error(f"the member {info.filename!r} is damaged ({e})") from None
    return out


def _member(src: Source, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    if info.flag_bits & 0x1:
        raise src.error(f"the member {info.filename!r} is encrypted")
    if info.compress_type == zipfile.ZIP_STORED:
        local = src.take(info.header_offset, 30, f"the zip header of {info.filename!r}")
        if local[:4] != b"PK\x03\x04":
            raise src.error(f"the zip header of {info.filename!r} is damaged")
        n, m = struct.unpack("<HH", local[26:30])
        start = info.header_offset + 30 + n + m
        src.check(start, info.compress_size, f"the member {info.filename!r}")
        return npy.read(src, start, start + info.compress_size)
    with zf.open(info) as f:
        data = _read_upto(f, 12)
        if len(data) < 10:
            raise src.error(f"the member {info.filename!r} is truncated")
        hstart, n, encoding = npy.header_length(bytes(data), src)
        data += _read_upto(f, hstart + n - len(data))
        if len(data) == hstart + n:
            dtype, shape, _ = npy.parse_header(bytes(data[hstart:]), encoding, src)
            count = 1
            for d in shape:
                count *= d
            data += _read_upto(f, count * dtype.itemsize)
        if len(_read_upto(f, _MAX_TRAILING + 1)) > _MAX_TRAILING:
            raise src.error(f"the member {info.filename!r} has data beyond its array")
    return npy.read(Source.of_bytes(data, f"{src.label} (member {info.filename!r})", src.what))


def _read_upto(f, n: int) -> bytearray:
    """Up to ``n`` bytes of ``f``, read in chunks: the buffer grows only with what comes out
    (at the end of the stream, zipfile checks the member's CRC)."""
    out = bytearray()
    while len(out) < n:
        chunk = f.read(min(_CHUNK, n - len(out)))
        if not chunk:
            break
        out += chunk
    if len(out) < n:
        f.read(1)
    return out


def write(f, host: dict, compressed: bool) -> None:
    """Writes ``host`` (name -> NumPy array) as an ``.npz`` archive to the open file ``f``."""
    mode = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(f, "w", compression=mode, allowZip64=True) as zf:
        for name, h in host.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(h), allow_pickle=False)
