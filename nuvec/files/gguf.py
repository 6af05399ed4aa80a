"""GGUF (GGML's file format), read without trusting any count, length or offset.

A file is ``GGUF``, a u32 version (2 or 3), u64 tensor and key-value counts, the key-value
pairs (a string key, a u32 value type, the value), the tensor infos (a name, a u32 rank, u64
dims in GGML's order, innermost first, a u32 GGML type, a u64 offset into the data section),
then the data section, aligned to ``general.alignment`` (32 by default). Everything is
little-endian. What MLX loads, this loads: F32, F16, I8, I16, I32 (and I64, F64, BF16) as
arrays; Q4_0, Q4_1 and Q8_0 as the triplet ``name.weight`` (packed uint32), ``name.scales``
and ``name.biases`` (float16) of MLX's affine quantization with groups of 32; metadata as
strings, lists of strings, and 0-d or 1-d arrays (float64 values as float32, as MLX).

    tensors, metadata = read(Source.open("m.gguf", "load"))
    write(f, {"w": host_array}, {"name": "tiny"})
"""

from __future__ import annotations

import struct

import ml_dtypes
import numpy as np

from ._source import MAX_NDIM, Source, checked_shape

MAGIC = b"GGUF"
ALIGNMENT = 32
MAX_STRING = 1 << 24  # a key, name or string value; the format's own tools use less
_STRING, _ARRAY = 8, 9
_SCALARS = {
    0: "<u1",
    1: "<i1",
    2: "<u2",
    3: "<i2",
    4: "<u4",
    5: "<i4",
    6: "<f4",
    7: "|b1",
    10: "<u8",
    11: "<i8",
    12: "<f8",
}
_TENSORS = {
    0: "<f4",
    1: "<f2",
    24: "<i1",
    25: "<i2",
    26: "<i4",
    27: "<i8",
    28: "<f8",
    30: ml_dtypes.bfloat16,
}
# quantized types: (bytes per block of 32 weights, bits per weight in MLX's packing)
_QUANT = {2: (18, 4), 3: (20, 4), 8: (34, 8)}


class _Cursor:
    def __init__(self, src: Source, pos: int):
        self.src, self.pos = src, pos

    def take(self, n: int, what: str) -> bytes:
        b = self.src.take(self.pos, n, what)
        self.pos += n
        return b

    def u32(self, what: str) -> int:
        return struct.unpack("<I", self.take(4, what))[0]

    def u64(self, what: str) -> int:
        return struct.unpack("<Q", self.take(8, what))[0]

    def string(self, what: str) -> str:
        n = self.u64(what)
        if n > MAX_STRING:
            raise self.src.error(f"{what} claims {n} bytes (more than {MAX_STRING}): damaged")
        try:
            return self.take(n, what).decode("utf-8")
        except UnicodeDecodeError:
            raise self.src.error(f"{what} is not UTF-8") from None


def _value(c: _Cursor, vtype: int, key: str):
    if vtype in _SCALARS:
        dt = np.dtype(_SCALARS[vtype])
        v = np.frombuffer(c.take(dt.itemsize, f"the value of {key!r}"), dt).reshape(())
        return v.astype(np.float32) if vtype == 12 else v.astype(dt.newbyteorder("="))
    if vtype == _STRING:
        return c.string(f"the value of {key!r}")
    if vtype == _ARRAY:
        etype, n = c.u32(f"the array type of {key!r}"), c.u64(f"the length of {key!r}")
        if etype in _SCALARS:
            dt = np.dtype(_SCALARS[etype])
            c.src.check(c.pos, n * dt.itemsize, f"the array {key!r}")
            v = np.frombuffer(c.take(n * dt.itemsize, f"the array {key!r}"), dt)
            return v.astype(np.float32) if etype == 12 else v.astype(dt.newbyteorder("="))
        if etype == _STRING:
            c.src.check(c.pos, 8 * n, f"the array {key!r}")  # each string has a length
            return [c.string(f"an element of {key!r}") for _ in range(n)]
        if etype == _ARRAY:
            raise c.src.error(f"{key!r} is an array of arrays, which is not supported")
        raise c.src.error(f"{key!r} is an array of unknown type {etype}")
    raise c.src.error(f"{key!r} has an unknown value type {vtype}")


def read(src: Source) -> tuple[dict, dict]:
    """({name: NumPy array}, {key: str, list of str or NumPy array}) of a GGUF file."""
    c = _Cursor(src, 0)
    if src.size < 4 or c.take(4, "the magic") != MAGIC:
        raise src.error("not a GGUF file (no GGUF magic)")
    version = c.u32("the version")
    if version not in (2, 3):
        raise src.error(f"unsupported GGUF version {version} (2 and 3 are read)")
    n_tensors, n_kv = c.u64("the tensor count"), c.u64("the key-value count")
    # each pair needs at least 12 bytes and each tensor info 24: a lying count fails here
    src.check(
        c.pos, 12 * n_kv + 24 * n_tensors, f"{n_kv} key-value pairs and {n_tensors} tensor infos"
    )
    meta: dict = {}
    for _ in range(n_kv):
        key = c.string("a metadata key")
        meta[key] = _value(c, c.u32(f"the type of {key!r}"), key)
    align = meta.get("general.alignment", ALIGNMENT)
    if isinstance(align, np.ndarray):
        if align.ndim != 0 or align.dtype.kind not in "iu":
            raise src.error("general.alignment is not an integer")
        align = int(align)
    if not isinstance(align, int) or not 0 < align <= 1 << 20 or align & (align - 1):
        raise src.error(f"general.alignment is {align!r}, not a power of two")
    infos = []
    for _ in range(n_tensors):
        name = c.string("a tensor name")
        ndim = c.u32(f"the rank of {name!r}")
        if ndim > MAX_NDIM:
            raise src.error(f"{name!r} claims {ndim} dimensions")
        dims = struct.unpack(f"<{ndim}Q", c.take(8 * ndim, f"the shape of {name!r}"))
        infos.append(
            (
                name,
                checked_shape(src, list(reversed(dims)), repr(name)),
                c.u32(f"the type of {name!r}"),
                c.u64(f"the offset of {name!r}"),
            )
        )
    data_at = c.pos + (-c.pos % align)
    out: dict = {}
    for name, shape, gtype, offset in infos:
        if offset % align:
            raise src.error(f"{name!r} has an offset ({offset}) that is not aligned to {align}")
        count = 1
        for d in shape:
            count *= d
        if gtype in _TENSORS:
            dt = np.dtype(_TENSORS[gtype])
            src.check(data_at + offset, count * dt.itemsize, f"the data of {name!r}")
            arrays = {name: src.array(data_at + offset, dt, shape, f"the data of {name!r}")}
        elif gtype in _QUANT:
            arrays = _dequantizable(src, name, shape, gtype, data_at + offset)
        else:
            raise src.error(f"{name!r} has GGML type {gtype}, which nuvec does not load")
        for k, v in arrays.items():
            if k in out:
                raise src.error(f"the tensor name {k!r} appears twice")
            out[k] = np.ascontiguousarray(v.astype(v.dtype.newbyteorder("="), copy=False))
    return out, meta


def _dequantizable(src: Source, name: str, shape: tuple, gtype: int, at: int) -> dict:
    """A Q4_0 / Q4_1 / Q8_0 tensor as MLX's (weight, scales, biases) with groups of 32."""
    block, bits = _QUANT[gtype]
    if not shape or shape[-1] % 32:
        raise src.error(
            f"the quantized tensor {name!r} has shape {shape}, whose last "
            "dimension is not a multiple of 32"
        )
    n_blocks = 1
    for d in shape:
        n_blocks *= d
    n_blocks //= 32
    blocks = src.array(at, np.dtype(np.uint8), (n_blocks, block), f"the data of {name!r}")
    d = blocks[:, 0:2].copy().view("<f2").reshape(-1)
    q: np.ndarray  # uint8 codes
    if gtype == 8:
        q = blocks[:, 2:34] ^ np.uint8(0x80)  # int8 + 128, as uint8
        biases = d * np.float16(-128)
    else:
        first = 4 if gtype == 3 else 2
        qs = blocks[:, first : first + 16]
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=1)  # GGML: low nibbles first
        q = q[:, 0::2] | (q[:, 1::2] << 4)  # MLX: two per byte, low first
        biases = blocks[:, 2:4].copy().view("<f2").reshape(-1) if gtype == 3 else d * np.float16(-8)
    prefix = name[: -len(".weight")] if name.endswith(".weight") else name
    groups = shape[:-1] + (shape[-1] // 32,)
    weight = np.ascontiguousarray(q).view("<u4").reshape(shape[:-1] + (shape[-1] * bits // 32,))
    return {
        name: weight,
        prefix + ".scales": d.reshape(groups),
        prefix + ".biases": biases.astype(np.float16).reshape(groups),
    }


def value_type(v: np.ndarray) -> int | None:
    """The GGUF value type of a metadata array's dtype (float16, bfloat16, complex: None)."""
    for code, dt in _SCALARS.items():
        if code != 12 and np.dtype(dt) == v.dtype.newbyteorder("<"):
            return code
    return None


def tensor_type(dtype: np.dtype) -> int | None:
    for code, dt in _TENSORS.items():
        if np.dtype(dt) == np.dtype(dtype).newbyteorder("<"):
            return code
    return None


def _pack_string(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def write(f, host: dict, metadata: dict) -> None:
    """Writes ``host`` (name -> NumPy array of a dtype ``tensor_type`` knows) and
    ``metadata`` (str, list of str, or 0-d / 1-d NumPy array of a ``value_type``) to ``f``."""
    kv = []
    for key, v in metadata.items():
        if isinstance(v, str):
            kv.append(_pack_string(key) + struct.pack("<I", _STRING) + _pack_string(v))
        elif isinstance(v, list):
            kv.append(
                _pack_string(key)
                + struct.pack("<IIQ", _ARRAY, _STRING, len(v))
                + b"".join(_pack_string(s) for s in v)
            )
        else:
            code = value_type(v)
            data = np.ascontiguousarray(v.astype(v.dtype.newbyteorder("<"), copy=False))
            if v.ndim == 0:
                kv.append(_pack_string(key) + struct.pack("<I", code) + data.tobytes())
            else:
                kv.append(
                    _pack_string(key) + struct.pack("<IIQ", _ARRAY, code, v.size) + data.tobytes()
                )
    infos, offset = [], 0
    for name, h in host.items():
        offset += -offset % ALIGNMENT
        infos.append(
            _pack_string(name)
            + struct.pack("<I", h.ndim)
            + struct.pack(f"<{h.ndim}Q", *reversed(h.shape))
            + struct.pack("<IQ", tensor_type(h.dtype), offset)
        )
        offset += h.nbytes
    head = MAGIC + struct.pack("<IQQ", 3, len(host), len(kv)) + b"".join(kv) + b"".join(infos)
    f.write(head + b"\0" * (-len(head) % ALIGNMENT))
    written = 0
    for h in host.values():
        pad = -written % ALIGNMENT
        f.write(b"\0" * pad)
        data = np.ascontiguousarray(h.astype(h.dtype.newbyteorder("<"), copy=False))
        f.write(data.reshape(-1).view(np.uint8))
        written += pad + h.nbytes
