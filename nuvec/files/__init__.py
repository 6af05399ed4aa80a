"""Arrays in files, with MLX's functions: ``nv.save`` (``.npy``), ``nv.savez`` /
``nv.savez_compressed`` (``.npz``), ``nv.save_safetensors``, ``nv.save_gguf`` and
``nv.load`` (any of the four).

Each takes a path or an open binary file object. A path is written through a temporary file
beside it, synced to disk and renamed into place, so an error or a crash never leaves a
half-written file under the name. Readers trust nothing in a file: every declared length,
count and offset is checked against the bytes present before anything is allocated, and a
damaged file raises ValueError naming the file and what is wrong. A ``.npy`` file loaded from
a path on the CPU is read as MLX reads it: its header at once, its data when the array is
evaluated, into a buffer of the CPU cache (``lazy.py``; data the file lacks then is a
RuntimeError naming the file, raised before anything is allocated). The other formats' arrays
loaded from a path are views of a private memory map of it (nothing is read until used, and a
large checkpoint is not held twice); the file must not be truncated in place while they are
alive.

One module per format: ``npy.py``, ``npz.py``, ``safetensors.py``, ``gguf.py``; ``_source.py``
holds the bounded reads and the atomic writes, ``lazy.py`` the read made at evaluation.

>>> import nuvec as nv, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
>>> nv.save_safetensors(path, {"w": nv.ones((2, 3))})
>>> nv.load(path)["w"].shape
(2, 3)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..core.array import Array
from ..core.device import resolve_stream
from ..core.dtypes import from_numpy
from . import gguf, npy, npz, safetensors
from ._source import Source, is_path, write_file
from .lazy import FileData

__all__ = [
    "save",
    "savez",
    "savez_compressed",
    "save_safetensors",
    "save_gguf",
    "load",
    "load_safetensors",
    "save_arrays",
    "load_arrays",
]

_FORMATS = ("npy", "npz", "safetensors", "gguf")


def _host(a, name: str, what: str) -> np.ndarray:
    if isinstance(a, Array):
        return a._host()  # (np.asarray refuses bfloat16: NumPy lacks its buffer format)
    if isinstance(a, np.ndarray):
        return a
    raise TypeError(f"{what}: {name!r} is a {type(a).__name__}, not an array")


def _with_ext(file, ext: str):
    if is_path(file):
        file = os.fspath(file)
        return file if file.endswith(ext) else file + ext
    return file


def _wrap(a: np.ndarray, stream) -> Array:
    return Array.constant(a, stream, from_numpy(a.dtype))


# ---- saving ------------------------------------------------------------------------------


def save(file, arr) -> None:
    """Saves one array to a NumPy ``.npy`` file (``.npy`` is appended to a path without it)
    or to an open binary file. bfloat16 is stored as ``V2``, as MLX stores it.

    >>> import nuvec as nv, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x")
    >>> nv.save(path, nv.arange(3)); nv.load(path + ".npy").tolist()
    [0, 1, 2]
    """
    h = _host(arr, "arr", "save")
    write_file(_with_ext(file, ".npy"), lambda f: np.save(f, h, allow_pickle=False), "save")


def _named(args: tuple, kwargs: dict, what: str) -> dict:
    arrays = {f"arr_{i}": a for i, a in enumerate(args)}
    for k, v in kwargs.items():
        if k in arrays:
            raise ValueError(f"{what}: the name {k!r} is given twice")
        arrays[k] = v
    return arrays


def save_npz(file, arrays: dict, *, what: str = "savez", compressed: bool = False) -> None:
    """Writes ``arrays`` (name -> array) to a NumPy ``.npz`` file or open binary file."""
    host = {name: _host(a, name, what) for name, a in arrays.items()}
    write_file(file, lambda f: npz.write(f, host, compressed), what)


def savez(file, /, *args, **kwargs) -> None:
    """Saves arrays to an uncompressed ``.npz`` file (``.npz`` appended to a path without it);
    positional arrays are named ``arr_0``, ``arr_1``, ... as NumPy names them."""
    save_npz(_with_ext(file, ".npz"), _named(args, kwargs, "savez"), what="savez")


def savez_compressed(file, /, *args, **kwargs) -> None:
    """As ``savez``, compressed."""
    save_npz(
        _with_ext(file, ".npz"),
        _named(args, kwargs, "savez_compressed"),
        what="savez_compressed",
        compressed=True,
    )


def save_safetensors(
    file, arrays: dict, metadata: dict | None = None, *, what: str = "save_safetensors"
) -> None:
    """Writes ``arrays`` (name -> array) in the safetensors format, with an optional
    ``metadata`` dict of strings, to a path or an open binary file."""
    if metadata is not None and (
        not isinstance(metadata, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        raise ValueError(f"{what}: metadata must be a dict mapping strings to strings")
    if not isinstance(arrays, dict):
        raise TypeError(f"{what}: arrays must be a dict of name -> array")
    host = {}
    for name in arrays:
        if not isinstance(name, str) or name == "__metadata__":
            raise ValueError(f"{what}: invalid tensor name {name!r}")
        h = _host(arrays[name], name, what)
        if safetensors.code_of(h.dtype) is None:
            raise TypeError(f"{what}: {name!r} has dtype {h.dtype}, which safetensors cannot store")
        host[name] = h
    write_file(file, lambda f: safetensors.write(f, host, metadata), what)


def save_gguf(file, arrays: dict, metadata: dict | None = None) -> None:
    """Writes ``arrays`` (name -> array of float32, float16, bfloat16, float64, int8, int16,
    int32 or int64) in the GGUF format (``.gguf`` appended to a path without it), with
    optional ``metadata``: name -> a string, a list of strings, or a 0-d or 1-d non-empty
    array of an integer type, bool or float32.

    >>> import nuvec as nv, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "m.gguf")
    >>> nv.save_gguf(path, {"w": nv.ones((2, 3))}, {"name": "tiny"})
    >>> w, meta = nv.load(path, return_metadata=True); w["w"].shape, meta["name"]
    ((2, 3), 'tiny')
    """
    if not isinstance(arrays, dict):
        raise TypeError("save_gguf: arrays must be a dict of name -> array")
    host = {}
    for name, a in arrays.items():
        if not isinstance(name, str):
            raise ValueError(f"save_gguf: invalid tensor name {name!r}")
        h = _host(a, name, "save_gguf")
        if gguf.tensor_type(h.dtype) is None:
            raise ValueError(
                f"save_gguf: {name!r} has dtype {h.dtype}, which GGUF tensors cannot store"
            )
        host[name] = h
    meta: dict[str, Any] = {}
    for key, v in (metadata or {}).items():
        if not isinstance(key, str):
            raise ValueError(f"save_gguf: metadata key {key!r} is not a string")
        if isinstance(v, str) or (isinstance(v, list) and all(isinstance(s, str) for s in v)):
            meta[key] = v
            continue
        if not isinstance(v, (Array, np.ndarray)):
            raise ValueError(
                f"save_gguf: metadata {key!r} is a {type(v).__name__}; expected "
                "a string, a list of strings or an array"
            )
        h = _host(v, key, "save_gguf")
        if h.ndim > 1 or h.size == 0:
            raise ValueError(
                f"save_gguf: metadata {key!r} must be a 0-d or 1-d non-empty "
                f"array, not shape {h.shape}"
            )
        if gguf.value_type(h) is None:
            raise ValueError(
                f"save_gguf: metadata {key!r} has dtype {h.dtype}, which GGUF metadata cannot store"
            )
        meta[key] = h
    write_file(_with_ext(file, ".gguf"), lambda f: gguf.write(f, host, meta), "save_gguf")


def save_arrays(file: str, arrays: dict, what: str) -> None:
    """Saves by extension: ``.npz`` or ``.safetensors`` (``Module.save_weights``)."""
    if file.endswith(".npz"):
        save_npz(file, arrays, what=what)
    elif file.endswith(".safetensors"):
        save_safetensors(file, arrays, what=what)
    else:
        raise ValueError(
            f"{what}: unsupported file extension in {file!r}; use .npz or .safetensors"
        )


# ---- loading -----------------------------------------------------------------------------


def load_safetensors(
    file, *, what: str = "load_safetensors", return_metadata: bool = False, stream=None
):
    """Reads a safetensors file: a dict name -> array (and the metadata dict if asked)."""
    arrays, meta = safetensors.read(Source.open(file, what))
    s = resolve_stream(stream)
    out = {k: _wrap(v, s) for k, v in arrays.items()}
    return (out, meta) if return_metadata else out


def load_arrays(file: str, what: str) -> dict:
    """Loads by extension: ``.npz`` or ``.safetensors`` (``Module.load_weights``)."""
    if file.endswith(".npz") or file.endswith(".safetensors"):
        return load(file, what=what)
    raise ValueError(f"{what}: unsupported file extension in {file!r}; use .npz or .safetensors")


def load(
    file,
    format: str | None = None,
    return_metadata: bool = False,
    *,
    stream=None,
    what: str = "load",
):
    """Loads a ``.npy`` file (an array), a ``.npz`` file (a dict of arrays), a
    ``.safetensors`` or a ``.gguf`` file (a dict; with ``return_metadata``, also its
    metadata dict), from a path or an open binary file. The format comes from the extension
    (a file object's ``name``) unless ``format`` names it; ``stream`` is where the arrays
    live (the default stream if None).

    >>> import nuvec as nv, io
    >>> f = io.BytesIO(); nv.save(f, nv.arange(3)); _ = f.seek(0)
    >>> nv.load(f, format="npy").tolist()
    [0, 1, 2]
    """
    if format is None:
        name = os.fspath(file) if is_path(file) else getattr(file, "name", None)
        if not isinstance(name, str):
            raise ValueError(
                f"{what}: cannot tell the format of a file object without a name; pass format="
            )
        format = os.path.splitext(name)[1].lstrip(".")
    if format not in _FORMATS:
        raise ValueError(
            f"{what}: unknown format {format!r} for {file!r}; expected one of "
            f"{', '.join(_FORMATS)} (by extension or format=)"
        )
    if return_metadata and format in ("npy", "npz"):
        raise ValueError(
            f"{what}: return_metadata is only supported for safetensors and gguf, not {format}"
        )
    s = resolve_stream(stream)
    src = Source.open(file, what)
    if format == "npy":
        if src.opened is not None and s.device.type.value == "cpu":
            # a path on the CPU: read when evaluated, as MLX reads (the header now)
            at, dtype, shape, fortran = npy.header(src)
            if not fortran and dtype.isnative:
                prim = FileData(src.opened, at, dtype, shape, src.label, what)
                return Array.make(prim, [], s)
        return _wrap(npy.read(src), s)
    if format == "npz":
        return {k: _wrap(v, s) for k, v in npz.read(src, file).items()}
    reader = safetensors if format == "safetensors" else gguf
    arrays, meta = reader.read(src)
    out = {k: _wrap(v, s) for k, v in arrays.items()}
    if not return_metadata:
        return out
    meta = {k: _wrap(v, s) if isinstance(v, np.ndarray) else v for k, v in meta.items()}
    return out, meta
