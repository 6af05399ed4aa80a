"""Functions saved to a file and loaded back without their Python code: MLX's
``export_function``, ``import_function`` and ``exporter``.

Exporting traces the function on placeholders of the example inputs, as ``nv.compile``
traces it (the same simplifications; with ``shapeless=True`` the same shapeless graph), and
stores the graph of primitives and its constants. An imported function replays that graph,
compiled (fused as ``nv.compile`` fuses), on arrays of a signature it was exported for, and
returns a tuple of arrays. One file holds several input signatures (``exporter``).

>>> import nuvec as nv, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "fun.nvfn")
>>> def fun(x, y=None):
...     return x * 2 + y
>>> nv.export_function(path, fun, nv.array([1.0, 2.0]), y=nv.array(1.0))
>>> f = nv.import_function(path)
>>> f(nv.array([3.0, 4.0]), y=nv.array(0.5))[0].tolist()
[6.5, 8.5]

The file is nuvec's own (a safetensors file of the constants whose metadata holds the
graph; see ``fileformat.py``); it cannot read MLX's ``.mlxfn`` files, nor MLX nuvec's.
Reading a file runs no code from it: a damaged or foreign file raises ValueError naming it.
The imported function runs on the default device. A ``custom_function`` is exported as its
forward graph (its custom derivative rules are Python code, so they are not kept); fused
kernels, user kernels (``nv.fast.cuda_kernel``, ``nv.fast.metal_kernel``) and collectives
cannot be exported.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from ..compile import compile
from ..core.shapeless import describe
from ..core.array import Array
from . import fileformat
from .graph import Trace, replay, trace

__all__ = ["export_function", "import_function", "exporter", "FunctionExporter"]


def _inputs(args: tuple, kwargs: dict, what: str) -> tuple[list, dict]:
    """MLX's two ways of passing arrays: ``f(*arrays, **arrays)``, or one tuple (or list)
    of arrays and / or one dict of str -> array."""

    def arrays(x) -> bool:
        return isinstance(x, (list, tuple)) and all(isinstance(a, Array) for a in x)

    def named(x) -> bool:
        return isinstance(x, dict) and all(
            isinstance(k, str) and isinstance(v, Array) for k, v in x.items()
        )

    if not args and named(kwargs):
        return [], dict(kwargs)
    if args and isinstance(args[0], Array):
        if arrays(args) and named(kwargs):
            return list(args), dict(kwargs)
    elif len(args) == 1 and not kwargs:
        if arrays(args[0]):
            return list(args[0]), {}
        if named(args[0]):
            return [], dict(args[0])
    elif len(args) == 2 and not kwargs and arrays(args[0]) and named(args[1]):
        return list(args[0]), dict(args[1])
    raise ValueError(
        f"{what}: inputs can either be a variable number of positional and keyword arrays "
        "or a single tuple and/or dictionary of arrays"
    )


def _name(fun: Any) -> str:
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or repr(fun)


def _describe(args: list, kwargs: dict) -> str:
    lines = [f"   {i + 1}: {list(a.shape)} {a.dtype.name}" for i, a in enumerate(args)]
    lines += [f'   "{k}": {list(a.shape)} {a.dtype.name}' for k, a in sorted(kwargs.items())]
    return "\n".join(lines) or "   (none)"


class FunctionExporter:
    """Exports several input signatures of one function to one file (``nv.exporter``).

    Each call traces the function for its arrays and rewrites the file whole (atomically),
    so the file always holds every signature exported so far. A call after ``close()`` (or
    the end of the ``with`` block) raises RuntimeError, as a second call with a signature
    already exported does.

    >>> import nuvec as nv, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "sum.nvfn")
    >>> with nv.exporter(path, lambda *xs: sum(xs)) as export:
    ...     export(nv.array(1))
    ...     export(nv.array(1), nv.array(2))
    >>> nv.import_function(path)(nv.array(3), nv.array(4))[0].item()
    7
    """

    def __init__(
        self,
        file: str | os.PathLike | Callable,
        fun: Callable,
        shapeless: bool = False,
        metadata: str = "",
    ) -> None:
        self._callback: Callable | None = None if isinstance(file, (str, os.PathLike)) else file
        self._file = file
        self._fun = fun
        self._shapeless = bool(shapeless)
        self._metadata = metadata
        self._traces: list[Trace] = []
        self._encoded: list[dict] = []
        self._pool = fileformat.ConstantPool()
        self._closed = False
        self._written = False

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if self._closed:
            raise RuntimeError("export_function: attempting to write after exporting is closed")
        pos, kw = _inputs(args, kwargs, "export_function")
        if any(t.matches(pos, kw, self._shapeless) for t in self._traces):
            raise RuntimeError(
                "export_function: attempting to export a function twice with the same "
                "signature is not allowed"
            )
        t = trace(self._fun, pos, kw, self._shapeless, _name(self._fun), "export_function")
        if self._callback is not None:
            self._report(t)
            self._traces.append(t)
            return
        try:
            encoded = fileformat.encode_trace(t, self._pool)
        except fileformat.ExportError as e:
            raise ValueError(f"export_function: {_name(self._fun)}: {e}") from None
        self._traces.append(t)
        self._encoded.append(encoded)
        self._write()

    def _write(self) -> None:
        fileformat.write(self._file, self._encoded, self._shapeless, self._metadata, self._pool)
        self._written = True

    def close(self) -> None:
        """Ends the export (the file already holds every signature exported)."""
        if not self._closed and self._callback is None and not self._written:
            self._write()  # a file of no signature, as MLX leaves one
        self._closed = True

    def __enter__(self) -> "FunctionExporter":
        return self

    def __exit__(self, exc_type=None, exc_value=None, traceback=None) -> None:
        if exc_type is None:
            self.close()
        else:  # a failed export writes nothing more
            self._closed = True

    def _report(self, t: Trace) -> None:
        """Describes ``t`` to the callback, as MLX does: its inputs, keyword inputs, outputs,
        constants, then each primitive (MLX's name and arguments for it)."""
        n_in = len(t.inputs)
        n_values = n_in + len(t.constants)

        def name(v: int) -> str:
            return f"in{v}" if v < n_in else f"c{v - n_in}" if v < n_values else f"v{v}"

        shapes = [(s, d) for s, d in t.inputs] + [(c.shape, c.dtype) for c in t.constants]
        for st in t.steps:
            shapes += list(st.outs)

        def data(vs) -> list:
            return [(name(v), tuple(shapes[v][0]), shapes[v][1]) for v in vs]

        cb = self._callback
        assert cb is not None  # the caller checked
        cb({"type": "inputs", "inputs": data(range(n_in))})
        keys = [(k, name(t.n_positional + j)) for j, k in enumerate(t.kwarg_keys)]
        cb({"type": "keyword_inputs", "keywords": keys})
        cb({"type": "outputs", "outputs": data(t.outputs)})
        cb(
            {
                "type": "constants",
                "constants": [(name(n_in + j), c) for j, c in enumerate(t.constants)],
            }
        )
        v = n_values
        for st in t.steps:
            outs = range(v, v + len(st.outs))
            v += len(st.outs)
            cb(
                {
                    "type": "primitive",
                    "inputs": data(st.args),
                    "outputs": data(outs),
                    "name": fileformat.mlx_name(st.prim),
                    "arguments": fileformat.mlx_arguments(st.prim),
                }
            )


def _check_metadata(metadata: Any, file: Any) -> str:
    if metadata is None:
        return ""
    if not isinstance(metadata, str):
        raise TypeError(f"export_function: metadata must be a str, not {type(metadata).__name__}")
    if metadata and not isinstance(file, (str, os.PathLike)):
        raise ValueError(
            "export_function: the metadata argument is only supported when exporting to a "
            "file, not when using a callback"
        )
    return metadata


def exporter(
    file: str | os.PathLike,
    fun: Callable,
    *,
    shapeless: bool = False,
    metadata: str | None = None,
) -> FunctionExporter:
    """A ``FunctionExporter`` of ``fun`` to ``file``: call it with example inputs once per
    signature (``*args, **kwargs`` of arrays, or a tuple and / or a dict of arrays).
    ``metadata``: a string stored with the function (``import_function(...,
    return_metadata=True)`` reads it back).

    >>> import nuvec as nv, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "add.nvfn")
    >>> with nv.exporter(path, lambda x, y: x + y, shapeless=True) as export:
    ...     export(nv.array([1, 2]), nv.array(3))
    >>> nv.import_function(path)(nv.array([1, 2, 3]), nv.array(1))[0].tolist()
    [2, 3, 4]
    """
    if not isinstance(file, (str, os.PathLike)):
        raise TypeError(f"exporter: file must be a path, not {type(file).__name__}")
    if not callable(fun):
        raise TypeError(f"exporter: fun must be callable, not {type(fun).__name__}")
    return FunctionExporter(file, fun, shapeless, _check_metadata(metadata, file))


def export_function(
    file_or_callback: str | os.PathLike | Callable,
    fun: Callable,
    *args: Any,
    shapeless: bool = False,
    metadata: str | None = None,
    **kwargs: Any,
) -> None:
    """Exports ``fun`` traced for the example inputs ``args`` / ``kwargs`` (arrays, or one
    tuple of arrays and / or one dict of str -> array) to a file, or describes its graph to
    a callback (``file_or_callback(dict)`` per item: ``type`` ``"inputs"``,
    ``"keyword_inputs"``, ``"outputs"``, ``"constants"``, then one ``"primitive"`` per
    operation, with nuvec's operation names and constructor arguments).

    ``fun`` returns an array, or a tuple or list of arrays. ``shapeless=True``: the imported
    function accepts inputs of any shapes of the same ranks (as ``nv.compile(...,
    shapeless=True)``). ``metadata``: a string stored with it (files only). The file is in
    nuvec's own format (a safetensors file of the constants, the graph in its metadata), not
    MLX's ``.mlxfn``: MLX cannot read it, nor nuvec MLX's.

    >>> import nuvec as nv, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "f.nvfn")
    >>> nv.export_function(path, lambda x: nv.abs(nv.sin(x)), nv.array([1.0, -1.0]))
    >>> nv.import_function(path)(nv.array([0.0, 0.0]))[0].tolist()
    [0.0, 0.0]
    """
    if not callable(fun):
        raise TypeError(f"export_function: fun must be callable, not {type(fun).__name__}")
    if not isinstance(file_or_callback, (str, os.PathLike)) and not callable(file_or_callback):
        raise TypeError(
            "export_function: file_or_callback must be a path or a callable, not "
            f"{type(file_or_callback).__name__}"
        )
    meta = _check_metadata(metadata, file_or_callback)
    with FunctionExporter(file_or_callback, fun, shapeless, meta) as export:
        export(*args, **kwargs)


class ImportedFunction:
    """A function loaded by ``import_function``: call it as the exported function was called
    (``*args, **kwargs`` of arrays, or a tuple and / or a dict of arrays); it returns a tuple
    of arrays. Inputs of no exported signature raise ValueError listing the signatures."""

    def __init__(self, traces: list[Trace], shapeless: bool, label: str) -> None:
        self._traces = traces
        self._shapeless = shapeless
        self._label = label
        self._compiled = [self._compile(t, k) for k, t in enumerate(traces)]

    def _compile(self, t: Trace, k: int) -> Callable:
        def imported(*inputs):
            return replay(t, inputs)

        imported.__qualname__ = f"import_function({self._label})[{k}]"
        return compile(imported, shapeless=self._shapeless)

    def __call__(self, *args: Any, **kwargs: Any) -> tuple:
        pos, kw = _inputs(args, kwargs, "import_function")
        for t, f in zip(self._traces, self._compiled):
            if t.matches(pos, kw, self._shapeless):
                return f(*pos, *[kw[k] for k in t.kwarg_keys])
        exported = []
        for t in self._traces:
            leaves = [(list(s), d.name) for s, d in t.inputs]
            exported.append(
                "  "
                + ", ".join(f"{s} {d}" for s, d in leaves[: t.n_positional])
                + "".join(
                    f", {k}={s} {d}" for k, (s, d) in zip(t.kwarg_keys, leaves[t.n_positional :])
                )
                + "".join(f"; where {describe(c)}" for c in t.conditions)
            )
        raise ValueError(
            f"import_function: {self._label} has no exported signature for "
            f"{len(pos)} positional and {len(kw)} keyword inputs:\n{_describe(pos, kw)}\n"
            + (
                "it was exported for (shapeless: same ranks)"
                if self._shapeless
                else "it was exported for"
            )
            + ":\n"
            + ("\n".join(exported) or "  (no signature)")
        )

    def __repr__(self) -> str:
        return f"<imported function {self._label}: {len(self._traces)} signature(s)>"


def import_function(file: str | os.PathLike, return_metadata: bool = False):
    """Loads a function exported by ``export_function`` or ``exporter``; with
    ``return_metadata``, also the metadata string stored with it (``""`` if none). Only
    nuvec's own files (not MLX's ``.mlxfn``); nothing in the file runs as code, and a damaged
    or foreign file raises ValueError naming it.

    >>> import nuvec as nv, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "g.nvfn")
    >>> nv.export_function(path, lambda x: x + 1, nv.array([1]), metadata="v1")
    >>> g, meta = nv.import_function(path, return_metadata=True)
    >>> g(nv.array([5]))[0].tolist(), meta
    ([6], 'v1')
    """
    if not isinstance(file, (str, os.PathLike)):
        raise TypeError(f"import_function: file must be a path, not {type(file).__name__}")
    traces, shapeless, metadata = fileformat.read(file)
    fn = ImportedFunction(traces, shapeless, repr(os.fspath(file)))
    return (fn, metadata) if return_metadata else fn
