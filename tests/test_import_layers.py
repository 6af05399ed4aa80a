"""The package's layering (ARCHITECTURE.md, "Layers"), checked on the import graph of the sources
(tests/import_graph.py): module-level imports form no cycle and never point up a layer; the
function-level imports outside the allowed kinds, and those that point up, are the known ones
listed here, each with its reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import import_graph as ig
import pytest

if not (ig.ROOT / ig.PACKAGE / "__init__.py").exists():
    # a checkout without the package (CI tests the installed wheel from one): the sources,
    # .pyx files included, are not here; `make lint` runs this file on the source tree
    pytest.skip("no package sources here (make lint checks them)", allow_module_level=True)

# Bottom-up; a layer may import its own modules and those of the layers below it. The
# primitives sit below the operations: an operation makes primitives, and a primitive's
# transform rules, written with operations, are in the transforms layer (transforms.rules).
LAYERS = [
    ("codegen", ["nuvec.codegen"]),
    # the core and the backend registry (the Backend objects, asked what a device runs) are
    # one layer: evaluation dispatches through the registry, a device asks it whether a GPU
    # exists
    (
        "core",
        [
            "nuvec.core",
            "nuvec.printing",
            "nuvec.constants",
            "nuvec.tree",
            "nuvec.tree_ext",
            "nuvec.backends.registry",
            "nuvec.backends.base",
        ],
    ),
    ("primitives", ["nuvec.primitives"]),
    ("ops", ["nuvec.ops"]),
    ("backends", ["nuvec.backends"]),
    ("transforms", ["nuvec.transforms"]),
    ("compile", ["nuvec.compile"]),
    ("public namespace", ["nuvec"]),  # the root and the modules beside it: fft, linalg, files...
    ("nn and optimizers", ["nuvec.nn", "nuvec.optimizers"]),
]

# Function-level imports that point up a layer, resolved when called:
KNOWN_UPWARD = {
    # device_info of a GPU: the backend modules load CuPy / the Metal shim
    ("nuvec.core.device", "nuvec.backends.cuda.device"),
    ("nuvec.core.device", "nuvec.backends.metal.shim"),
}

# Function-level imports are allowed only where an optional dependency is loaded lazily (these
# packages import CuPy, the Metal shim, mpi4py or NCCL, and run only where those exist). Any
# other would be listed here with the number of its sites and its reason; the figures are exact
# (one that falls is lowered here, so the table says what the code does).
OPTIONAL = ("nuvec.backends.cuda", "nuvec.backends.metal", "nuvec.distributed.backends")
KNOWN_FUNCTION_LEVEL: dict[tuple[str, str], int] = {}

GRAPH = ig.build()


def _under(module: str, prefixes: tuple) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def layer_of(module: str) -> int:
    best, rank = -1, len(LAYERS) - 2  # the public namespace unless a longer prefix matches
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if _under(module, (p,)) and len(p) > best:
                best, rank = len(p), i
    return rank


def test_module_level_imports_form_no_cycle():
    cycles = GRAPH.cycles(function_level=False)
    assert not cycles, f"import cycles at module level: {cycles}"


def test_module_level_imports_point_down():
    up = sorted(
        {
            (i.importer, i.target)
            for i in GRAPH.imports
            if not i.function_level and layer_of(i.target) > layer_of(i.importer)
        }
    )
    assert not up, f"module-level imports from a lower layer into a higher one: {up}"


def test_upward_function_level_imports_are_the_known_ones():
    up = {
        (i.importer, i.target)
        for i in GRAPH.imports
        if i.function_level and layer_of(i.target) > layer_of(i.importer)
    }
    assert up <= KNOWN_UPWARD, f"new imports into a higher layer: {sorted(up - KNOWN_UPWARD)}"


def test_function_level_imports_are_the_allowed_kinds_or_known():
    counted: dict[tuple[str, str], int] = {}
    for i in GRAPH.imports:
        if not i.function_level or _under(i.importer, OPTIONAL) or _under(i.target, OPTIONAL):
            continue
        counted[(i.importer, i.target)] = counted.get((i.importer, i.target), 0) + 1
    grown = {k: n for k, n in counted.items() if n > KNOWN_FUNCTION_LEVEL.get(k, 0)}
    assert not grown, (
        f"function-level imports beyond the known ones (import at module level, or say why "
        f"not in KNOWN_FUNCTION_LEVEL): {sorted(grown.items())}"
    )
    fallen = {
        k: counted.get(k, 0) for k, n in KNOWN_FUNCTION_LEVEL.items() if counted.get(k, 0) < n
    }
    assert not fallen, f"KNOWN_FUNCTION_LEVEL lists more sites than there are: {fallen}"


def test_no_layer_below_the_namespace_imports_nuvec_itself():
    public = next(i for i, (name, _) in enumerate(LAYERS) if name == "public namespace")
    bad = sorted(
        {
            f"{GRAPH.modules[i.importer].relative_to(ig.ROOT)}:{i.line}"
            for i in GRAPH.imports
            if i.target == "nuvec" and layer_of(i.importer) < public
        }
    )
    assert not bad, f"`import nuvec` below the public namespace: {bad}"


def test_every_module_has_a_layer_and_the_graph_is_read():
    assert len(GRAPH.modules) > 150 and len(GRAPH.imports) > 500
    # a cycle in a small synthetic graph is found, so the checks above can fail
    g = ig.Graph(modules={"nuvec.a": Path("a"), "nuvec.b": Path("b")})
    g.imports = [
        ig.Import("nuvec.a", "nuvec.b", 1, False),
        ig.Import("nuvec.b", "nuvec.a", 1, True),
    ]
    assert g.cycles(function_level=False) == []
    assert g.cycles(function_level=True) == [["nuvec.a", "nuvec.b"]]


def test_architecture_names_every_package():
    text = (ig.ROOT / "ARCHITECTURE.md").read_text()
    named = set(re.findall(r"`(nuvec/[\w/]+?)/?`", text)) | set(re.findall(r"`(\w+)/", text))
    packages = [p.parent for p in (ig.ROOT / "nuvec").glob("*/__init__.py")]
    packages += [p.parent for p in (ig.ROOT / "nuvec" / "backends").glob("*/__init__.py")]
    missing = [
        str(p.relative_to(ig.ROOT))
        for p in packages
        if str(p.relative_to(ig.ROOT)) not in named and p.name not in named
    ]
    assert not missing, f"ARCHITECTURE.md's folder table does not name {missing}"
