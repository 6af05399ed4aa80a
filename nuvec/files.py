"""Arrays in files, with MLX's functions: ``nv.save`` (``.npy``), ``nv.savez`` /
``nv.savez_compressed`` (``.npz``), ``nv.save_safetensors`` and ``nv.load`` (any of the three).
Every file is written to a temporary name and renamed into place, so an error (or a crash)
never leaves a half-written file under the requested name.

The safetensors layout: 8 bytes (little-endian u64) giving the header's length N, then N bytes
of UTF-8 JSON ``{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
"__metadata__": {str: str}}`` (padded with spaces to a multiple of 8), then the tensors' bytes,
row-major and little-endian, the offsets counted from the end of the header.

>>> import nuvec as nv, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
>>> nv.save_safetensors(path, {"w": nv.ones((2, 3))})
>>> nv.load(path)["w"].shape
(2, 3)
"""
from __future__ import annotations

import json
import os
import struct

import ml_dtypes
import numpy as np

import nuvec as nv

_ST_TO_NP = {
    "BOOL": np.dtype(np.bool_), "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
    "U16": np.dtype("<u2"), "I16": np.dtype("<i2"), "U32": np.dtype("<u4"),
    "I32": np.dtype("<i4"), "U64": np.dtype("<u8"), "I64": np.dtype("<i8"),
    "F16": np.dtype("<f2"), "BF16": np.dtype(ml_dtypes.bfloat16), "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"), "C64": np.dtype("<c8"),
}
_NP_TO_ST = {v: k for k, v in _ST_TO_NP.items()}
_MAX_HEADER = 100 * 1024 * 1024


def _host(a, name: str, what: str) -> np.ndarray:
    if isinstance(a, nv.array):
        return np.asarray(a)
    if isinstance(a, np.ndarray):
        return a
    raise TypeError(f"{what}: {name!r} is a {type(a).__name__}, not an array")


def save_safetensors(file: str, arrays: dict, metadata: dict | None = None, *,
                     what: str = "save_safetensors") -> None:
    """Writes ``arrays`` (name -> array) to ``file`` in the safetensors format."""
    header: dict = {}
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError(f"{what}: metadata must map strings to strings")
        header["__metadata__"] = dict(metadata)
    blobs = []
    offset = 0
    for name in sorted(arrays):
        if not isinstance(name, str) or name == "__metadata__":
            raise ValueError(f"{what}: invalid tensor name {name!r}")
        h = _host(arrays[name], name, what)
        code = _NP_TO_ST.get(h.dtype.newbyteorder("="))
        if code is None:
            raise TypeError(f"{what}: {name!r} has dtype {h.dtype}, which safetensors "
                            "cannot store")
        data = np.ascontiguousarray(h).astype(h.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": code, "shape": list(h.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)

    def write(f) -> None:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    _atomic_write(file, write)


def _atomic_write(file: str, write) -> None:
    """Calls ``write(f)`` on a temporary file beside ``file``, then renames it into place;
    on any error the temporary file is removed and ``file`` is left as it was."""
    tmp = f"{file}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            write(f)
        os.replace(tmp, file)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def load_safetensors(file: str, *, what: str = "load_safetensors",
                     return_metadata: bool = False):
    """Reads a safetensors file: a dict name -> array (and the metadata dict if asked)."""
    with open(file, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{what}: {file} is too short to be a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > min(_MAX_HEADER, len(raw) - 8):
        raise ValueError(f"{what}: {file} has a header length ({n}) beyond the file's size")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{what}: {file} has a malformed header ({e})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{what}: {file} has a header that is not a JSON object")
    data = memoryview(raw)[8 + n:]
    meta = header.pop("__metadata__", None) or {}
    out = {}
    for name, info in header.items():
        try:
            dtype = _ST_TO_NP[info["dtype"]]
            shape = tuple(int(d) for d in info["shape"])
            begin, end = (int(o) for o in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{what}: {file}: bad entry for {name!r}: {info!r}") from None
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= len(data) or end - begin != count * dtype.itemsize:
            raise ValueError(f"{what}: {file}: the data offsets of {name!r} do not fit its "
                             f"shape {shape} and dtype {info['dtype']}")
        arr = np.frombuffer(data[begin:end], dtype=dtype, count=count).reshape(shape)
        out[name] = nv.array(arr.astype(dtype.newbyteorder("="), copy=True))
    return (out, meta) if return_metadata else out


def save_npz(file: str, arrays: dict, *, what: str = "savez", compressed: bool = False) -> None:
    """Writes ``arrays`` to a NumPy ``.npz`` file (bfloat16 is not storable there)."""
    host = {}
    for name, a in arrays.items():
        h = _host(a, name, what)
        if h.dtype == ml_dtypes.bfloat16:
            raise TypeError(f"{what}: {name!r} is bfloat16, which .npz cannot store; save to "
                            ".safetensors or cast it first")
        host[name] = h
    saver = np.savez_compressed if compressed else np.savez
    _atomic_write(file, lambda f: saver(f, **host))


def load_npz(file: str, *, what: str = "load") -> dict:
    with np.load(file, allow_pickle=False) as z:
        return {k: nv.array(z[k]) for k in z.files}


def save_arrays(file: str, arrays: dict, what: str) -> None:
    """Saves by extension: ``.npz`` or ``.safetensors``."""
    if file.endswith(".npz"):
        save_npz(file, arrays, what=what)
    elif file.endswith(".safetensors"):
        save_safetensors(file, arrays, what=what)
    else:
        raise ValueError(f"{what}: unsupported file extension in {file!r}; use .npz or "
                         ".safetensors")


def load_arrays(file: str, what: str) -> dict:
    """Loads by extension: ``.npz`` or ``.safetensors``."""
    if not os.path.exists(file):
        raise FileNotFoundError(f"{what}: no such file {file!r}")
    if file.endswith(".npz"):
        return load_npz(file, what=what)
    if file.endswith(".safetensors"):
        return load_safetensors(file, what=what)
    raise ValueError(f"{what}: unsupported file extension in {file!r}; use .npz or "
                     ".safetensors")


# ---- MLX's functions ---------------------------------------------------------------------------

def save(file: str, arr) -> None:
    """Saves one array to a NumPy ``.npy`` file (``.npy`` is appended to a name without it).

    >>> import nuvec as nv, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x")
    >>> nv.save(path, nv.arange(3)); nv.load(path + ".npy").tolist()
    [0, 1, 2]
    """
    file = os.fspath(file)
    if not file.endswith(".npy"):
        file += ".npy"
    h = _host(arr, "arr", "save")
    if h.dtype == ml_dtypes.bfloat16:
        raise TypeError("save: the array is bfloat16, which .npy cannot store; use "
                        "save_safetensors or cast it first")
    _atomic_write(file, lambda f: np.save(f, h, allow_pickle=False))


def _named(args: tuple, kwargs: dict, what: str) -> dict:
    arrays = {f"arr_{i}": a for i, a in enumerate(args)}
    for k, v in kwargs.items():
        if k in arrays:
            raise ValueError(f"{what}: the name {k!r} is given twice")
        arrays[k] = v
    return arrays


def savez(file: str, *args, **kwargs) -> None:
    """Saves arrays to an uncompressed ``.npz`` file (``.npz`` appended if missing); positional
    arrays are named ``arr_0``, ``arr_1``, ... as NumPy names them."""
    file = os.fspath(file)
    save_npz(file if file.endswith(".npz") else file + ".npz", _named(args, kwargs, "savez"),
             what="savez")


def savez_compressed(file: str, *args, **kwargs) -> None:
    """As ``savez``, compressed."""
    file = os.fspath(file)
    save_npz(file if file.endswith(".npz") else file + ".npz",
             _named(args, kwargs, "savez_compressed"), what="savez_compressed", compressed=True)


_FORMATS = ("npy", "npz", "safetensors")


def load(file: str, format: str | None = None, return_metadata: bool = False):
    """Loads a ``.npy`` file (an array), a ``.npz`` file (a dict of arrays) or a
    ``.safetensors`` file (a dict; with ``return_metadata``, also its metadata dict). The format
    comes from the extension unless ``format`` names it."""
    file = os.fspath(file)
    fmt = format or os.path.splitext(file)[1].lstrip(".")
    if fmt not in _FORMATS:
        raise ValueError(f"load: unknown format {fmt!r} for {file!r}; expected one of "
                         f"{', '.join(_FORMATS)} (by extension or format=)")
    if not os.path.exists(file):
        raise FileNotFoundError(f"load: no such file {file!r}")
    if return_metadata and fmt != "safetensors":
        raise ValueError(f"load: return_metadata is only supported for safetensors, not {fmt}")
    if fmt == "npy":
        return nv.array(np.load(file, allow_pickle=False))
    if fmt == "npz":
        return load_npz(file, what="load")
    return load_safetensors(file, what="load", return_metadata=return_metadata)
