"""Writes the API reference pages (docs/api/generated/*.rst) when a build starts.

Each page lists the public members of one namespace as they are at build time (``__all__``
where the module has one, else the functions and classes it defines), so names added to the
library appear without editing the docs. A name is documented under the public namespace that
exports it (``nuvec.exp``, not ``nuvec.ops.elementwise.exp``).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Page:
    """One page: its file name, title, a sentence, and the namespaces whose members it lists.

    ``sources`` holds (module, public namespace) pairs; ``keep(name, obj)`` filters the
    members (and, for a module without ``__all__``, lets through names it imports)."""

    name: str
    title: str
    intro: str
    sources: list[tuple[str, str]]
    keep: object = None
    extra: list[str] = field(default_factory=list)  # objects named by hand (classes)
    rest: bool = False  # also what ``nuvec`` exports that no other page lists


def _layer(obj) -> bool:
    from nuvec.nn import Module

    return inspect.isclass(obj) and issubclass(obj, Module)


def _function(obj) -> bool:
    return callable(obj) and not inspect.isclass(obj)


def _optimizer(obj) -> bool:
    return inspect.isclass(obj) or obj.__name__ == "clip_grad_norm"


PAGES = [
    Page(
        "array",
        "Arrays",
        "The array type: a lazy graph node with MLX's methods.",
        [],
        extra=["nuvec.array"],
    ),
    Page(
        "dtypes",
        "Data types",
        "MLX's dtypes, their categories and promotion.",
        [("nuvec.core.dtypes", "nuvec")],
        keep=lambda name, obj: _exported(name, obj),
    ),
    Page(
        "devices",
        "Devices and streams",
        "Where arrays live and operations run.",
        [("nuvec.core.device", "nuvec")],
        keep=lambda name, obj: _exported(name, obj),
    ),
    Page(
        "ops_creation",
        "Creation",
        "Arrays made from values, shapes and ranges.",
        [("nuvec.ops.creation", "nuvec")],
    ),
    Page(
        "ops_elementwise",
        "Arithmetic and math",
        "Element-wise operations, with MLX's "
        "promotion and broadcasting; fused into one kernel inside a compiled function.",
        [("nuvec.ops.elementwise", "nuvec")],
    ),
    Page(
        "ops_shape",
        "Shapes",
        "Reshaping, joining, splitting, padding and reordering axes.",
        [("nuvec.ops.shape", "nuvec"), ("nuvec.ops.padding", "nuvec")],
    ),
    Page(
        "ops_indexing",
        "Indexing",
        "Gathers, scatters and take/put along axes.",
        [("nuvec.ops.indexing", "nuvec")],
    ),
    Page(
        "ops_reduction",
        "Reductions and scans",
        "Sums, extrema, statistics and cumulative operations over axes.",
        [("nuvec.ops.reduction", "nuvec")],
    ),
    Page("ops_sort", "Sorting", "Sorts, partitions and top-k.", [("nuvec.ops.sort", "nuvec")]),
    Page(
        "ops_products",
        "Products and comparisons",
        "Matrix products, einsum, and comparisons of whole arrays.",
        [("nuvec.ops.linalg", "nuvec")],
    ),
    Page(
        "ops_conv",
        "Convolutions",
        "N-dimensional convolutions (im2col and a matrix product).",
        [("nuvec.ops.conv", "nuvec")],
    ),
    Page(
        "random",
        "Random",
        "Threefry keys and distributions; the global key is ``nuvec.random.state``.",
        [("nuvec.random", "nuvec.random")],
    ),
    Page("linalg", "Linear algebra", "``nuvec.linalg``.", [("nuvec.linalg", "nuvec.linalg")]),
    Page("fft", "FFT", "``nuvec.fft``: discrete Fourier transforms.", [("nuvec.fft", "nuvec.fft")]),
    Page(
        "fast",
        "Fast",
        "``nuvec.fast``: fused forms of common layers' arithmetic, and user GPU kernels "
        "(``cuda_kernel``, ``metal_kernel``).",
        [("nuvec.fast", "nuvec.fast")],
    ),
    Page(
        "transforms",
        "Transforms",
        "Gradients, forward-mode derivatives and vectorization.",
        [("nuvec.transforms", "nuvec")],
    ),
    Page(
        "compile",
        "Compile",
        "``nuvec.compile`` and its controls; see the compile guide.",
        [("nuvec.compile", "nuvec")],
        extra=["nuvec.compile.report.CompileReport"],
    ),
    Page(
        "export",
        "Exported functions",
        "Functions saved to a file and loaded back without their Python code.",
        [("nuvec.export", "nuvec")],
    ),
    Page(
        "distributed",
        "Distributed",
        "``nuvec.distributed``: groups and collectives over MPI.",
        [("nuvec.distributed", "nuvec.distributed")],
    ),
    Page(
        "memory",
        "Memory",
        "The buffer cache and its limits.",
        [("nuvec.backends.cpu.memory", "nuvec")],
    ),
    Page(
        "files",
        "Saving and loading",
        ".npy, .npz, .safetensors and .gguf files.",
        [("nuvec.files", "nuvec")],
    ),
    Page(
        "tree_utils",
        "Tree utilities",
        "Nested lists, tuples and dicts of arrays.",
        [("nuvec.utils", "nuvec.utils")],
    ),
    Page(
        "nn_module",
        "nn: modules",
        "``nuvec.nn.Module`` and the functions that go with it.",
        [("nuvec.nn", "nuvec.nn")],
        keep=lambda name, obj: (
            name in ("Module", "value_and_grad", "checkpoint", "average_gradients")
        ),
    ),
    Page(
        "nn_layers",
        "nn: layers",
        "The layers of ``nuvec.nn``.",
        [("nuvec.nn", "nuvec.nn")],
        keep=lambda name, obj: _layer(obj) and name != "Module",
    ),
    Page(
        "nn_functions",
        "nn: functions",
        "Activation functions as plain functions.",
        [("nuvec.nn.layers.activations", "nuvec.nn")],
        keep=lambda name, obj: _function(obj),
    ),
    Page(
        "nn_losses", "nn: losses", "``nuvec.nn.losses``.", [("nuvec.nn.losses", "nuvec.nn.losses")]
    ),
    Page(
        "nn_init",
        "nn: initializers",
        "``nuvec.nn.init``.",
        [("nuvec.nn.init", "nuvec.nn.init")],
        keep=lambda name, obj: _function(obj),
    ),
    Page(
        "optimizers",
        "Optimizers",
        "``nuvec.optimizers``.",
        [("nuvec.optimizers", "nuvec.optimizers")],
        keep=lambda name, obj: _optimizer(obj),
    ),
    Page(
        "schedules",
        "Schedules",
        "Learning-rate schedules for the optimizers.",
        [("nuvec.optimizers.schedulers", "nuvec.optimizers")],
    ),
    Page(
        "other",
        "Other functions",
        "Evaluation, graph export, and whatever else ``nuvec`` "
        "exports that the other pages do not list.",
        [],
        rest=True,
    ),
]


def _exported(name: str, obj) -> bool:
    import nuvec

    return getattr(nuvec, name, None) is obj


def _resolve(path: str):
    """A module or an attribute reached from one (``nuvec.linalg`` may be either)."""
    try:
        return importlib.import_module(path)
    except ImportError:
        head, _, tail = path.rpartition(".")
        return getattr(_resolve(head), tail)


def _members(module_path: str, public: str, keep) -> list[str]:
    try:
        module = _resolve(module_path)
        namespace = _resolve(public)
    except (ImportError, AttributeError):
        return []
    names = getattr(module, "__all__", None)
    if names is None:  # a page's filter picks from a namespace; else what it defines
        names = [
            n
            for n, v in vars(module).items()
            if not n.startswith("_")
            and (
                keep
                or (
                    (inspect.isfunction(v) or inspect.isclass(v))
                    and getattr(v, "__module__", None) == module.__name__
                )
            )
        ]
    out = []
    for name in names:
        obj = getattr(module, name, None)
        if obj is None or inspect.ismodule(obj) or (keep and not keep(name, obj)):
            continue
        where = public if getattr(namespace, name, None) is obj else module_path
        out.append(f"{where}.{name}")
    return out


def _entry(path: str) -> str:
    obj = _resolve(path)
    if inspect.isclass(obj):
        return f".. autoclass:: {path}\n   :members:\n"
    if callable(obj):
        return f".. autofunction:: {path}\n"
    return f".. autodata:: {path}\n   :no-value:\n"


def write_pages(app) -> None:
    out = Path(app.srcdir) / "api" / "generated"
    out.mkdir(parents=True, exist_ok=True)
    listed: dict[str, list[str]] = {}
    for page in PAGES:
        paths = list(page.extra)
        for module, public in page.sources:
            paths += [p for p in _members(module, public, page.keep) if p not in paths]
        listed[page.name] = paths
    import nuvec

    seen = {p for paths in listed.values() for p in paths}
    rest = [
        f"nuvec.{n}"
        for n, v in vars(nuvec).items()
        if not n.startswith("_") and not inspect.ismodule(v) and f"nuvec.{n}" not in seen
    ]
    for page in PAGES:
        paths = listed[page.name] + (rest if page.rest else [])
        body = [page.title, "=" * len(page.title), "", page.intro, ""]
        if paths:
            body += [".. autosummary::", ""] + [f"   {p}" for p in paths] + [""]
            body += [_entry(p) for p in paths]
        else:
            body.append("Nothing in this namespace in this version.")
        text = "\n".join(body) + "\n"
        target = out / f"{page.name}.rst"
        if not target.exists() or target.read_text() != text:  # keep incremental builds
            target.write_text(text)


def setup(app):
    app.connect("builder-inited", write_pages)
    return {"parallel_read_safe": True}
