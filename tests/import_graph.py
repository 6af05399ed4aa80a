"""nuvec's internal import graph, read from the sources (no import is run).

Each ``.py`` file is parsed with ``ast``; Cython files (``.pyx``), which ``ast`` cannot read,
by their ``import`` / ``cimport`` lines outside triple-quoted strings. An import is
*module-level* when it runs at import time (also inside ``if``/``try`` at the top),
*function-level* when it sits inside a function body (it runs on the first call). Imports
under ``if TYPE_CHECKING:`` are not counted.

Importing ``nuvec.a.b`` first runs the package ``nuvec.a``'s ``__init__``, so an import of a
module also depends on its parent packages, except those the importer is itself inside (they
are already being imported) and the root ``nuvec`` (always imported first).

    python tests/import_graph.py        # the figures: imports, cycles, function-level imports
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "nuvec"


@dataclass(frozen=True)
class Import:
    importer: str  # the importing module, dotted
    target: str  # the imported module (a submodule where the name is one), dotted
    line: int
    function_level: bool


@dataclass
class Graph:
    modules: dict[str, Path] = field(default_factory=dict)
    imports: list[Import] = field(default_factory=list)

    def edges(self, function_level: bool = True) -> dict[str, set[str]]:
        """importer -> the modules it needs (with their parent packages, see above)."""
        out: dict[str, set[str]] = {m: set() for m in self.modules}
        for imp in self.imports:
            if imp.function_level and not function_level:
                continue
            for t in _with_parents(imp.target, imp.importer):
                if t != imp.importer and t in self.modules:
                    out[imp.importer].add(t)
        return out

    def cycles(self, function_level: bool = True) -> list[list[str]]:
        """The strongly connected components of more than one module, largest first."""
        comps = _tarjan(self.edges(function_level))
        return sorted((sorted(c) for c in comps if len(c) > 1), key=len, reverse=True)


def _with_parents(target: str, importer: str) -> list[str]:
    parts = target.split(".")
    out = [target]
    for i in range(2, len(parts)):
        parent = ".".join(parts[:i])
        if not (importer == parent or importer.startswith(parent + ".")):
            out.append(parent)
    return out


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(importer: str, is_package: bool, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _targets(modules: dict[str, Path], base: str, names: list[str]) -> list[str]:
    """``from base import names``: a name that is a submodule is an import of it."""
    subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in modules]
    if len(subs) < len([n for n in names if n != "*"]):
        subs.append(base)  # some names are attributes of base itself
    return subs or [base]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _python_imports(graph: Graph, name: str, path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for sub in child.orelse:
                    visit_stmt(sub, in_function)
                continue
            visit_stmt(child, in_function)

    def visit_stmt(child: ast.AST, in_function: bool) -> None:
        if isinstance(child, ast.Import):
            for alias in child.names:
                add(child, [alias.name], in_function)
        elif isinstance(child, ast.ImportFrom):
            base = _resolve(name, is_package, child.level, child.module)
            add(child, _targets(graph.modules, base, [a.name for a in child.names]), in_function)
        else:
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            visit(child, inner)

    def add(node: ast.AST, targets: list[str], in_function: bool) -> None:
        for t in targets:
            if t == PACKAGE or t.startswith(PACKAGE + "."):
                graph.imports.append(Import(name, t, node.lineno, in_function))

    visit(tree, False)


_CYTHON_FROM = re.compile(r"^(\s*)from\s+(\.*)([\w.]*)\s+c?import\s+(.+)$")
_CYTHON_IMPORT = re.compile(r"^(\s*)c?import\s+([\w., ]+)$")


def _cython_imports(graph: Graph, name: str, path: Path) -> None:
    in_string = False  # inside a triple-quoted string (a docstring's usage example)
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        quoted = in_string
        in_string ^= line.count('"""') % 2 == 1
        if quoted or '"""' in line:
            continue
        line = line.split("#")[0].rstrip()
        if m := _CYTHON_FROM.match(line):
            indent, dots, module, names = m.groups()
            base = _resolve(name, False, len(dots), module or None)
            listed = [n.split(" as ")[0].strip(" ()") for n in names.split(",")]
            targets = _targets(graph.modules, base, [n for n in listed if n])
        elif m := _CYTHON_IMPORT.match(line):
            indent, names = m.groups()
            targets = [n.split(" as ")[0].strip() for n in names.split(",")]
        else:
            continue
        for t in targets:
            if t == PACKAGE or t.startswith(PACKAGE + "."):
                graph.imports.append(Import(name, t, lineno, bool(indent)))


def build(root: Path = ROOT) -> Graph:
    graph = Graph()
    files = sorted((root / PACKAGE).rglob("*.py")) + sorted((root / PACKAGE).rglob("*.pyx"))
    for path in files:
        graph.modules[module_name(path)] = path
    for name, path in graph.modules.items():
        if path.suffix == ".py":
            _python_imports(graph, name, path)
        else:
            _cython_imports(graph, name, path)
    return graph


def _tarjan(edges: dict[str, set[str]]) -> list[set[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    comps: list[set[str]] = []
    counter = 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    comps.append(comp)
    return comps


def main() -> None:
    g = build()
    internal = len(g.imports)
    local = [i for i in g.imports if i.function_level]
    print(f"{len(g.modules)} modules, {internal} internal imports, {len(local)} function-level")
    for label, fl in (("with function-level imports", True), ("module-level only", False)):
        cycles = g.cycles(fl)
        sizes = [len(c) for c in cycles]
        print(f"cycles {label}: {len(cycles)} (sizes {sizes})")
    if "-v" in sys.argv:
        for c in g.cycles(True):
            print(" ", " ".join(c))
        for i in local:
            print(f"  {g.modules[i.importer].relative_to(ROOT)}:{i.line} -> {i.target}")


if __name__ == "__main__":
    main()
