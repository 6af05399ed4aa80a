"""Readable call signatures: what a compiled function was traced for, and why a call missed.

A signature lists every leaf of the arguments with its path ("argument 0", "argument 1['w']",
"keyword 'scale'"): arrays with dtype and shape, other leaves with their value, plus the
default stream. Comparing the signature of a missing call with the previous call's gives the
reason of the miss, e.g. ``"argument 0: shape (3, 4) -> (5, 4)"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ..core import device, dtypes, shapeless
from ..core.array import Array
from ..core.device import current_stream

_SCALARS = (type(None), int, float, bool, str)


def is_constant(value: Any) -> bool:
    """Whether a non-array leaf is a constant a compiled function may be keyed on: a Python
    scalar, string or None (MLX's), a NumPy scalar, or one of nuvec's dtypes, devices and
    streams. Other objects (a class instance) are refused, as MLX refuses them."""
    return isinstance(
        value,
        (
            type(None),
            bool,
            int,
            float,
            complex,
            str,
            bytes,
            np.generic,
            dtypes.Dtype,
            dtypes.DtypeCategory,
            device.Device,
            device.Stream,
        ),
    )


def walk(obj: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """(path, kind, leaf) in ``nuvec.tree.flatten`` order; kind is "array", "static" or the
    container's description when a container is empty."""
    t = type(obj)
    if isinstance(obj, Array):
        yield path, "array", obj
    elif t in _SCALARS:
        yield path, "static", obj
    elif isinstance(obj, dict):
        if not obj:
            yield path, f"empty {t.__name__}", None
        for k in tuple(obj):
            yield from walk(obj[k], f"{path}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        if not obj:
            yield path, f"empty {t.__name__}", None
        for i, x in enumerate(obj):
            yield from walk(x, f"{path}[{i}]")
    else:
        yield path, "static", obj


def call_leaves(args: tuple, kwargs: dict, prefix: str = "argument") -> list:
    out = []
    for i, a in enumerate(args):
        out.extend(walk(a, f"{prefix} {i}"))
    for k, v in kwargs.items():
        out.extend(walk(v, f"keyword {k!r}"))
    return out


def _describe(kind: str, leaf: Any, shapeless: bool) -> str:
    if kind == "array":
        shape = f"ndim {leaf.ndim}" if shapeless else f"shape {leaf.shape}"
        return f"{leaf.dtype.name} {shape}"
    if kind == "static":
        return f"{type(leaf).__name__} {leaf!r}"
    return kind


@dataclass
class Signature:
    stream: Any
    leaves: list  # (path, kind, dtype name or None, shape or value)

    @staticmethod
    def of(
        args: tuple,
        kwargs: dict,
        arrays: list,
        shapeless: bool,
        prefix: str = "argument",
        extra: list | None = None,
    ) -> "Signature":
        items = list(extra or []) + call_leaves(args, kwargs, prefix)
        leaves = []
        for path, kind, leaf in items:
            if kind == "array":
                leaves.append(
                    (
                        path,
                        kind,
                        leaf.dtype.name,
                        leaf.ndim if shapeless and not path.startswith("state") else leaf.shape,
                    )
                )
            else:
                leaves.append((path, kind, None, leaf))
        return Signature(current_stream(), leaves)

    def foreign(self) -> tuple[str, Any] | None:
        """The first leaf of the call's arguments that is neither an array nor a constant (see
        ``is_constant``)."""
        for path, kind, _, value in self.leaves:
            user = path.startswith(("argument", "keyword"))
            if user and kind == "static" and not is_constant(value):
                return path, value
        return None

    def unhashable(self) -> tuple[str, Any]:
        for path, kind, _, value in self.leaves:
            if kind == "static":
                try:
                    hash(value)
                except TypeError:
                    return path, value
        return "an argument", None

    def describe(self) -> str:
        return ", ".join(f"{p}: {d + ' ' if d else ''}{v}" for p, _, d, v in self.leaves)


def diff(old: Signature, new: Signature) -> str:
    """Why ``new`` is not ``old``, in words."""
    if old.stream != new.stream:
        return f"default stream {old.stream} -> {new.stream}"
    o = {p: (k, d, v) for p, k, d, v in old.leaves}
    n = {p: (k, d, v) for p, k, d, v in new.leaves}
    reasons = []
    for p, (k, d, v) in n.items():
        if p not in o:
            reasons.append(f"{p}: new {_short(k, d, v)}")
            continue
        ok, od, ov = o[p]
        if ok != k:
            reasons.append(f"{p}: {_short(ok, od, ov)} -> {_short(k, d, v)}")
        elif k == "array":
            if od != d:
                reasons.append(f"{p}: dtype {od} -> {d}")
            if ov != v:
                what = "ndim" if isinstance(v, int) else "shape"
                reasons.append(f"{p}: {what} {ov} -> {v}")
        elif k == "static":
            if type(ov) is not type(v) or not _same(ov, v):
                reasons.append(f"{p}: constant {ov!r} -> {v!r}")
    for p, (k, d, v) in o.items():
        if p not in n:
            reasons.append(f"{p}: removed ({_short(k, d, v)})")
    if not reasons and [p for p, *_ in old.leaves] != [p for p, *_ in new.leaves]:
        reasons.append("the order of the arguments' keys changed")
    return "; ".join(reasons)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return a is b


def _short(kind: str, d: Any, v: Any) -> str:
    if kind == "array":
        return f"array {d} {'ndim ' + str(v) if isinstance(v, int) else v}"
    if kind == "static":
        return f"{type(v).__name__} {v!r}"
    return kind


def miss_reason(cf, sig: Signature, key=None, leaves=None) -> str:
    """The reason a call of ``cf`` with signature ``sig`` (and arrays ``leaves``) missed the
    cache."""
    try:
        head = cf.cache.get(key) if key is not None else None
    except TypeError:  # an unhashable static argument
        head = None
    if head is not None and head.conditions is not None and leaves is not None:
        shapes = [a._shape for a in leaves]
        failed = next((c for c in head.conditions if not shapeless.hold((c,), shapes)), None)
        if failed is not None:
            return (
                "shapeless: a comparison of the traced shapes comes out otherwise: "
                f"{shapeless.describe(failed)}"
            )
    if key is not None and key in cf.evicted:
        del cf.evicted[key]
        return (
            f"this signature was traced before and evicted from the cache (capacity "
            f"{cf.capacity}, least recently used first)"
        )
    prev = None
    if cf.last_key is not None:
        e = cf.cache.get(cf.last_key)
        if e is not None:
            prev = e.sig
    if prev is None and len(cf.cache):
        prev = next(reversed(cf.cache.values())).sig
    if prev is None:
        if cf.statistics.traces == 0:
            return "first call"
        if cf.capacity <= 0:
            return "caching is off (cache capacity 0)"
        return "the previous trace was not cached (it captured an array an outer transform traces)"
    why = diff(prev, sig)
    if not why:
        return (
            f"this signature was evicted from the cache (capacity {cf.capacity})"
            if cf.capacity > 0
            else "caching is off (cache capacity 0)"
        )
    return why
