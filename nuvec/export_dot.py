"""``nv.export_to_dot``: the graph behind some arrays, in Graphviz's DOT language.

>>> import io, nuvec as nv
>>> x = nv.ones((2,)); y = nv.exp(x) * 2
>>> buf = io.StringIO(); nv.export_to_dot(buf, y)
>>> "exp" in buf.getvalue() and buf.getvalue().startswith("digraph")
True

Operations are boxes (a fused kernel is named as MLX names it: ``Compiled`` and its ops'
names, ``CompiledBroadcastMultiplyAdd``), arrays are ellipses labelled with dtype
and shape; keyword arguments name outputs (``export_to_dot("g.dot", loss=l)``). Render with
``dot -Tsvg g.dot -o g.svg``.
"""

from __future__ import annotations

import os
from typing import Any, TextIO

from .core.array import Array
from .tree import flatten
from .compile.report import prim_label
from .primitives.compiled import Compiled

__all__ = ["export_to_dot"]


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# MLX's primitive names where they are not the op's name in CamelCase
_MLX_NAMES = {
    "arccos": "ArcCos",
    "arccosh": "ArcCosh",
    "arcsin": "ArcSin",
    "arcsinh": "ArcSinh",
    "arctan": "ArcTan",
    "arctan2": "ArcTan2",
    "arctanh": "ArcTanh",
    "astype": "AsType",
    "erfinv": "ErfInv",
    "logaddexp": "LogAddExp",
    "broadcast_to": "Broadcast",
}


def _mlx_name(name: str) -> str:
    return _MLX_NAMES.get(name) or "".join(w[:1].upper() + w[1:] for w in name.split("_"))


def _compiled_name(node: Array) -> str:
    """A fused node's name as MLX gives it: ``Compiled`` and then its operations' names in
    order, a broadcast that the kernel does (an input of a smaller shape than its output)
    named before the first operation that reads it."""
    prim = node._prim
    ins = node._inputs
    parts = ["Compiled"]
    seen: set[int] = set()
    for member, args in prim.members:
        for kind, i in args:
            if kind == "in" and i not in seen and i < len(ins):
                seen.add(i)
                if tuple(ins[i]._shape) != tuple(node._shape):
                    parts.append("Broadcast")
        parts.append(_mlx_name(member.name))
    return "".join(parts)


def _label(a: Array) -> str:
    if type(a._prim) is Compiled:
        return _compiled_name(a)
    return prim_label(a._prim)


def export_to_dot(file: str | os.PathLike | TextIO, *args: Any, **kwargs: Any) -> None:
    """Writes the graph of the arrays in ``args`` / ``kwargs`` (trees of arrays) to ``file``
    (a path or a text file object)."""
    roots: list[tuple[str, Array]] = []
    leaves, _ = flatten(list(args))
    roots += [(f"out{i}", a) for i, a in enumerate(leaves)]
    for k, v in kwargs.items():
        ls, _ = flatten(v)
        roots += [(k if len(ls) == 1 else f"{k}[{i}]", a) for i, a in enumerate(ls)]
    if not roots:
        raise ValueError("export_to_dot: no arrays to export")
    names: dict[int, str] = {}
    keep: dict[int, Array] = {}
    lines = ["digraph nuvec {", "  rankdir=TB;", '  node [fontname="Helvetica"];']
    done_prims: set = set()
    stack = [a for _, a in roots]
    order: list[Array] = []
    while stack:  # iterative: deep graphs need no recursion
        a = stack.pop()
        if id(a) in keep:
            continue
        keep[id(a)] = a
        order.append(a)
        if a._prim is not None:
            for s in a.siblings:
                keep.setdefault(id(s), s)
                if s is not a:
                    order.append(s)
            stack.extend(x for x in a._inputs if id(x) not in keep)
    label = {id(a): n for n, a in roots}
    for i, a in enumerate(order):
        names[id(a)] = f"a{i}"
        kind = (
            "placeholder"
            if a._data is None and a._prim is None
            else "constant"
            if a._prim is None
            else ""
        )
        head = label.get(id(a), kind)
        text = f"{head}\\n" if head else ""
        text += f"{a._dtype.name} {tuple(a._shape)}"
        style = ', style=filled, fillcolor="#dde8f5"' if id(a) in label else ""
        lines.append(f'  a{i} [shape=ellipse, label="{text}"{style}];')
    for a in order:
        p = a._prim
        if p is None:
            continue
        key = id(a._siblings) if a._siblings is not None else id(a)
        if key in done_prims:
            continue
        done_prims.add(key)
        pid = f"p{len(done_prims)}"
        lines.append(f"  {pid} [shape=box, label={_quote(_label(a))}];")
        for x in a._inputs:
            lines.append(f"  {names[id(x)]} -> {pid};")
        for s in a.siblings:
            lines.append(f"  {pid} -> {names[id(s)]};")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    if hasattr(file, "write"):
        file.write(text)
    else:
        with open(file, "w") as f:
            f.write(text)
