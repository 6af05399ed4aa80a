"""The safetensors format, read without trusting the header.

8 bytes (little-endian u64) give the header's length N, then N bytes of UTF-8 JSON
``{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
"__metadata__": {str: str}}`` (padded with spaces to a multiple of 8), then the tensors'
bytes, row-major and little-endian, the offsets counted from the end of the header. The
8-bit float types load as uint8, as MLX loads them (``from_fp8`` converts).

    arrays, metadata = read(Source.open("w.safetensors", "load"))
    write(f, {"w": host_array}, {"format": "mlx"})
"""

from __future__ import annotations

import json
import struct

import ml_dtypes
import numpy as np

from ._source import MAX_HEADER, Source, checked_shape

TO_NP = {
    "BOOL": np.dtype(np.bool_),
    "U8": np.dtype(np.uint8),
    "I8": np.dtype(np.int8),
    "U16": np.dtype("<u2"),
    "I16": np.dtype("<i2"),
    "U32": np.dtype("<u4"),
    "I32": np.dtype("<i4"),
    "U64": np.dtype("<u8"),
    "I64": np.dtype("<i8"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "C64": np.dtype("<c8"),
}
FROM_NP = {v: k for k, v in TO_NP.items()}
_FP8 = ("F8_E4M3", "F8_E5M2", "F8_E4M3FN", "F8_E5M2FNUZ", "F8_E4M3FNUZ", "F8_E8M0")


def read(src: Source) -> tuple[dict, dict]:
    """({name: NumPy array}, metadata) of a safetensors file."""
    if src.size < 8:
        raise src.error(f"{src.size} bytes are too few for a safetensors file: truncated")
    (n,) = struct.unpack("<Q", src.take(0, 8))
    if n > min(MAX_HEADER, src.size - 8):
        raise src.error(
            f"a header length ({n}) beyond the file's size ({src.size} bytes) "
            f"or the format's limit ({MAX_HEADER})"
        )
    try:
        header = json.loads(src.take(8, n).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise src.error(f"a malformed header ({e})") from None
    except RecursionError:
        raise src.error("a header nested too deeply to be a safetensors header") from None
    if not isinstance(header, dict):
        raise src.error("a header that is not a JSON object")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise src.error("__metadata__ must map strings to strings")
    start = 8 + n
    out = {}
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise src.error(f"the entry of {name!r} is not {{dtype, shape, data_offsets}}")
        code, offsets = info["dtype"], info["data_offsets"]
        dtype = TO_NP.get(code) if isinstance(code, str) else None
        if dtype is None and code in _FP8:
            dtype = np.dtype(np.uint8)
        if dtype is None:
            raise src.error(f"{name!r} has an unknown dtype {str(code)[:20]!r}")
        shape = checked_shape(src, info["shape"], repr(name))
        if not (
            isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
        ):
            raise src.error(f"{name!r} has invalid data offsets")
        begin, end = offsets
        count = 1
        for d in shape:
            count *= d
        if not 0 <= begin <= end <= src.size - start or end - begin != count * dtype.itemsize:
            raise src.error(
                f"the data offsets of {name!r} ({begin}, {end}) do not fit its "
                f"shape {shape} and dtype {code} within the "
                f"{src.size - start} bytes of data"
            )
        out[name] = src.array(start + begin, dtype, shape, f"the data of {name!r}")
    return out, meta


def write(f, host: dict, metadata: dict | None) -> None:
    """Writes ``host`` (name -> C-ordered NumPy array of a dtype in FROM_NP) to ``f``."""
    header: dict = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    for name, h in host.items():
        header[name] = {
            "dtype": code_of(h.dtype),
            "shape": list(h.shape),
            "data_offsets": [offset, offset + h.nbytes],
        }
        offset += h.nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for h in host.values():
        f.write(little_endian_bytes(h))


def code_of(dtype: np.dtype) -> str | None:
    """The safetensors name of a dtype (None where the format has none)."""
    return FROM_NP.get(np.dtype(dtype).newbyteorder("<"))


def little_endian_bytes(h: np.ndarray) -> np.ndarray:
    """``h``'s bytes, row-major and little-endian, as a flat uint8 array (no copy when they
    are already so)."""
    h = np.ascontiguousarray(h.astype(h.dtype.newbyteorder("<"), copy=False))
    return h.reshape(-1).view(np.uint8)
