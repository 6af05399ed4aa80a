"""The internal tree layer: arrays inside nested containers, flattened and rebuilt.

Transforms and ``nv.compile`` take and return trees: lists, tuples, dicts (and dict
subclasses such as ``nn.Module``), namedtuples and None, with arrays at the leaves. ``flatten``
splits a tree into its arrays and a ``TreeDef``, a hashable, comparable description of the rest:
container types, dict keys in order, and every non-array leaf (int, float, bool, str, None,
...) as a static value, typed, so that ``1``, ``1.0`` and ``True`` differ. ``unflatten`` puts
arrays back into that structure (a dict subclass comes back as a plain dict unless it defines
``_tree_unflatten``; namedtuples keep their type).

>>> import nuvec as nv
>>> leaves, td = flatten({"w": nv.ones((2,)), "cfg": (3, "relu")})
>>> len(leaves), td.num_leaves
(1, 1)
>>> unflatten(td, [nv.zeros((2,))])["cfg"]
(3, 'relu')

flatten runs on every compiled call, so it is one recursive function with exact-type fast
paths; the structure is nested tuples, so equality and hashing run at C speed.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Sequence

from . import tree_ext as _ext  # type: ignore[attr-defined]  # a Cython module
from .core.array import Array

__all__ = ["TreeDef", "flatten", "unflatten", "leaves", "all_leaves", "is_leaf_def", "LEAF"]


class _LeafMarker:
    """Where an array sits in a tree structure (one shared instance)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "*"

    def __reduce__(self):
        return "LEAF"


LEAF = _LeafMarker()

# Node kinds (first item of a structure tuple). Containers store their type object there;
# a static leaf stores _STATIC.
_STATIC = "static"


class TreeDef:
    """The structure of a tree without its arrays.

    Hashable (when its static leaves are) and comparable; ``num_leaves`` is the number of
    arrays it holds.
    """

    __slots__ = ("node", "num_leaves", "_hash")
    _hash: int | None

    def __init__(self, node: Any, num_leaves: int) -> None:
        self.node = node
        self.num_leaves = num_leaves
        self._hash = None

    def __eq__(self, other: Any) -> bool:
        return self is other or (
            type(other) is TreeDef
            and self.num_leaves == other.num_leaves
            and self.node == other.node
        )

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            try:
                h = self._hash = hash(self.node)
            except TypeError as e:
                raise TypeError(
                    f"tree structure is not hashable: a non-array leaf is unhashable ({e})"
                ) from None
        return h

    def __repr__(self) -> str:
        return f"TreeDef({_describe(self.node)})"

    def unflatten(self, leaves: Sequence[Array] | Iterable[Array]) -> Any:
        return unflatten(self, leaves)


def _flat(obj: Any, out: list) -> Any:
    t = type(obj)
    if t is Array:
        out.append(obj)
        return LEAF
    if t is list:
        return (list, tuple([_flat(x, out) for x in obj]))
    if t is tuple:
        return (tuple, tuple([_flat(x, out) for x in obj]))
    if t is dict:
        keys = tuple(obj)
        return (dict, keys, tuple([_flat(obj[k], out) for k in keys]))
    if obj is None or t is int or t is float or t is bool or t is str:
        return (_STATIC, t, obj)
    if isinstance(obj, Array):
        out.append(obj)
        return LEAF
    if isinstance(obj, dict):  # dict subclasses (nn.Module): the subclass is part of the def
        keys = tuple(obj)
        return (t, keys, tuple([_flat(obj[k], out) for k in keys]))
    if isinstance(obj, tuple):
        if hasattr(t, "_fields"):  # namedtuple
            return (t, tuple([_flat(x, out) for x in obj]))
        return (t, tuple([_flat(x, out) for x in obj]))
    if isinstance(obj, list):
        return (t, tuple([_flat(x, out) for x in obj]))
    return (_STATIC, t, obj)


# the Cython walk (nuvec/tree_ext.pyx): same structure, about 3x faster
_ext.setup(Array, LEAF)
_flat_fast = _ext.flat


def flatten(obj: Any) -> tuple[list[Array], TreeDef]:
    """The arrays of ``obj`` (depth first, dict keys in order) and its structure.

    >>> import nuvec as nv
    >>> xs, td = flatten([nv.ones(2), {"b": nv.zeros(1), "a": 2}])
    >>> len(xs)
    2
    """
    out: list[Array] = []
    node = _flat_fast(obj, out)
    return out, TreeDef(node, len(out))


def leaves(obj: Any) -> list[Array]:
    """Only the arrays of ``obj`` (in ``flatten`` order)."""
    out: list[Array] = []
    _flat_fast(obj, out)
    return out


def all_leaves(obj: Any) -> list:
    """Every leaf of ``obj`` in ``flatten`` order: its arrays and its non-array leaves (None,
    numbers, strings, other objects), for checks on what a tree holds.

    >>> import nuvec as nv
    >>> all_leaves([1, {"a": None, "b": (nv.ones(2), "s")}])[::2]
    [1, 's']
    """
    arrays: list[Array] = []
    out: list = []
    _leaves_of(_flat_fast(obj, arrays), iter(arrays), out)
    return out


def _leaves_of(node: Any, arrays: Iterator[Array], out: list) -> None:
    if node is LEAF:
        out.append(next(arrays))
    elif node[0] is _STATIC:
        out.append(node[2])
    else:
        for child in node[-1]:  # a container's children come last in its node
            _leaves_of(child, arrays, out)


def is_leaf_def(td: TreeDef) -> bool:
    """Whether the tree was a single array."""
    return td.node is LEAF


def _build(node: Any, it) -> Any:
    if node is LEAF:
        return next(it)
    kind = node[0]
    if kind is _STATIC:
        return node[2]
    if kind is list:
        return [_build(c, it) for c in node[1]]
    if kind is tuple:
        return tuple([_build(c, it) for c in node[1]])
    if kind is dict:
        return {k: _build(c, it) for k, c in zip(node[1], node[2])}
    if issubclass(kind, dict):
        items = {k: _build(c, it) for k, c in zip(node[1], node[2])}
        return _make_dict_subclass(kind, items)
    if issubclass(kind, tuple):
        children = [_build(c, it) for c in node[1]]
        return kind(*children) if hasattr(kind, "_fields") else kind(children)
    if issubclass(kind, list):
        return kind([_build(c, it) for c in node[1]])
    raise TypeError(f"unflatten: unknown node kind {kind!r}")


def _make_dict_subclass(cls: type, items: dict) -> Any:
    """A dict subclass rebuilt from its items: ``cls._tree_unflatten(items)`` where the class
    defines it (a classmethod), else a plain dict, as MLX (an ``nn.Module`` holds more than its
    items: attributes set by its constructor, which a structure cannot rebuild)."""
    hook = getattr(cls, "_tree_unflatten", None)
    if hook is not None:
        return hook(items)
    return items


def unflatten(treedef: TreeDef, leaves: Sequence[Array] | Iterable[Array]) -> Any:
    """The tree of ``treedef`` with ``leaves`` (in ``flatten`` order) as its arrays.

    >>> import nuvec as nv
    >>> xs, td = flatten((nv.ones(1), [nv.ones(2)]))
    >>> type(unflatten(td, xs)[1])
    <class 'list'>
    """
    if not isinstance(treedef, TreeDef):
        raise TypeError(f"unflatten: expected a TreeDef, got {type(treedef).__name__}")
    if isinstance(leaves, (list, tuple)) and len(leaves) != treedef.num_leaves:
        raise ValueError(
            f"unflatten: the structure holds {treedef.num_leaves} arrays, got {len(leaves)}"
        )
    it = iter(leaves)
    out = _build(treedef.node, it)
    if next(it, _END) is not _END:
        raise ValueError(
            f"unflatten: more leaves than the {treedef.num_leaves} the structure holds"
        )
    return out


_END = object()


def _describe(node: Any) -> str:
    if node is LEAF:
        return "*"
    kind = node[0]
    if kind is _STATIC:
        return repr(node[2])
    if kind is list or (isinstance(kind, type) and issubclass(kind, list)):
        return "[" + ", ".join(_describe(c) for c in node[1]) + "]"
    if isinstance(kind, type) and issubclass(kind, dict):
        body = ", ".join(f"{k!r}: {_describe(c)}" for k, c in zip(node[1], node[2]))
        return ("{" + body + "}") if kind is dict else f"{kind.__name__}({{{body}}})"
    inner = ", ".join(_describe(c) for c in node[1])
    if kind is tuple:
        return "(" + inner + ("," if len(node[1]) == 1 else "") + ")"
    return f"{kind.__name__}({inner})"


# -- helpers used by the transforms -------------------------------------------------------------
def broadcast_prefix(prefix: Any, tree: Any, name: str) -> list:
    """One value of ``prefix`` per array of ``tree``: ``prefix`` is a tree whose structure is a
    prefix of ``tree``'s (an int or None applies to a whole subtree), as vmap's in_axes.

    Non-array leaves of ``tree`` get no entry.
    """
    out: list = []
    stack = [(prefix, tree)]
    while stack:
        p, t = stack.pop()
        if p is None or isinstance(p, int):
            out.extend([p] * len(leaves(t)))
            continue
        if isinstance(t, Array):
            raise ValueError(f"{name}: an axis spec {p!r} is given where the argument is an array")
        if isinstance(p, dict) and isinstance(t, dict):
            if set(p) != set(t):
                raise ValueError(
                    f"{name}: the axes' dict keys {sorted(map(str, p))} do not match "
                    f"the argument's {sorted(map(str, t))}"
                )
            items = [(p[k], t[k]) for k in t]
        elif (
            isinstance(p, (list, tuple))
            and isinstance(t, (list, tuple))
            and not isinstance(p, dict)
        ):
            if len(p) != len(t):
                raise ValueError(f"{name}: {len(p)} axes given for a sequence of {len(t)} items")
            items = list(zip(p, t))
        else:
            raise ValueError(
                f"{name}: the axes structure {p!r} does not match the argument's "
                f"structure ({type(t).__name__})"
            )
        stack.extend(reversed(items))
    return out
