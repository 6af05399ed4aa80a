"""Tree utilities (MLX's ``mlx.utils``): nested lists, tuples and dicts of arrays (or anything).

A tree is a nested collection of dicts, lists and tuples; anything else is a leaf. Flat keys
use dots: ``{"layers": [{"weight": w}]}`` flattens to ``[("layers.0.weight", w)]``.

>>> from nuvec.utils import tree_flatten, tree_unflatten, tree_map
>>> tree_flatten({"a": [1, 2], "b": {"c": 3}})
[('a.0', 1), ('a.1', 2), ('b.c', 3)]
>>> tree_unflatten([("a.0", 1), ("a.1", 2), ("b.c", 3)])
{'a': [1, 2], 'b': {'c': 3}}
>>> tree_map(lambda x: x * 10, {"a": (1, 2)})
{'a': (10, 20)}
"""

from __future__ import annotations

import itertools

from typing import Any, Callable

__all__ = [
    "tree_flatten",
    "tree_unflatten",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_merge",
]


def _seq_like(tree: Any, children: list) -> Any:
    """A list/tuple of the same kind as ``tree`` (namedtuples keep their type)."""
    t = type(tree)
    if isinstance(tree, tuple) and hasattr(t, "_fields"):
        return t(*children)
    return t(children)


def tree_map(fn: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None) -> Any:
    """A new tree with ``fn(leaf, *leaves_of_rest)`` at every leaf of ``tree``.

    Each tree of ``rest`` has (at least) the structure of ``tree``; its matching subtrees are
    passed along. Dicts come back as plain dicts; lists, tuples and namedtuples keep their type.

    >>> tree_map(lambda a, b: a + b, [1, {"x": 2}], [10, {"x": 20}])
    [11, {'x': 22}]
    """
    if is_leaf is not None and is_leaf(tree):
        return fn(tree, *rest)
    if isinstance(tree, (list, tuple)):
        return _seq_like(
            tree,
            [tree_map(fn, c, *(r[i] for r in rest), is_leaf=is_leaf) for i, c in enumerate(tree)],
        )
    if isinstance(tree, dict):
        return {k: tree_map(fn, c, *(r[k] for r in rest), is_leaf=is_leaf) for k, c in tree.items()}
    return fn(tree, *rest)


def tree_map_with_path(
    fn: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None, path: str | None = None
) -> Any:
    """Like ``tree_map``, but ``fn(path, leaf, *others)`` also gets the leaf's dotted path.

    >>> tree_map_with_path(lambda p, x: p, {"a": [0, 0]})
    {'a': ['a.0', 'a.1']}
    """
    if is_leaf is not None and is_leaf(tree):
        return fn(path, tree, *rest)
    prefix = f"{path}." if path else ""
    if isinstance(tree, (list, tuple)):
        return _seq_like(
            tree,
            [
                tree_map_with_path(
                    fn, c, *(r[i] for r in rest), is_leaf=is_leaf, path=f"{prefix}{i}"
                )
                for i, c in enumerate(tree)
            ],
        )
    if isinstance(tree, dict):
        return {
            k: tree_map_with_path(
                fn, c, *(r[k] for r in rest), is_leaf=is_leaf, path=f"{prefix}{k}"
            )
            for k, c in tree.items()
        }
    return fn(path, tree, *rest)


def tree_flatten(
    tree: Any,
    prefix: str = "",
    is_leaf: Callable | None = None,
    destination: list | dict | None = None,
) -> list | dict:
    """The leaves of ``tree`` with their dotted keys, as a list of ``(key, leaf)`` (or into
    ``destination``, a list or a dict).

    As in MLX, ``prefix``'s first character is dropped: ``prefix=".model"`` gives keys
    ``"model.0"``, and so on.

    >>> tree_flatten([[[0]]])
    [('0.0.0', 0)]
    >>> tree_flatten([[[0]]], prefix=".hello")
    [('hello.0.0.0', 0)]
    >>> tree_flatten({"a": {"b": 1}}, destination={})
    {'a.b': 1}
    """
    if destination is None:
        destination = []
    if isinstance(destination, list):
        add = lambda k, v: destination.append((k, v))  # noqa: E731
    elif isinstance(destination, dict):
        add = destination.__setitem__
    else:
        raise TypeError(
            f"tree_flatten: destination must be a list or a dict, not {type(destination).__name__}"
        )
    # Iterative, depth first, left to right.
    stack = [(prefix, tree)]
    while stack:
        key, node = stack.pop()
        if not (is_leaf is not None and is_leaf(node)):
            if isinstance(node, (list, tuple)):
                stack.extend(reversed([(f"{key}.{i}", c) for i, c in enumerate(node)]))
                continue
            if isinstance(node, dict):
                stack.extend(reversed([(f"{key}.{k}", c) for k, c in node.items()]))
                continue
        add(key[1:], node)
    return destination


def tree_unflatten(tree: list | dict) -> Any:
    """The nested tree described by ``(key, value)`` pairs (or a dict of them), as made by
    ``tree_flatten``. Levels whose keys are all integers become lists.

    >>> tree_unflatten({"hello.world": 42})
    {'hello': {'world': 42}}
    >>> tree_unflatten([("0.a", 1), ("1.a", 2)])
    [{'a': 1}, {'a': 2}]
    """
    items = list(tree.items()) if isinstance(tree, dict) else list(tree)
    if len(items) == 1 and items[0][0] == "":
        return items[0][1]
    root = _Level()
    for pair in items:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
            raise TypeError(
                f"tree_unflatten: expected (key, value) pairs with string keys, got {pair!r}"
            )
        key, value = pair
        parts = key.split(".")
        node = root
        for p in parts[:-1]:
            nxt = node.get(p)
            if nxt is None:
                nxt = node[p] = _Level()
            elif not isinstance(nxt, _Level):
                raise ValueError(f"tree_unflatten: key {key!r} goes through the leaf at {p!r}")
            node = nxt
        node[parts[-1]] = value
    return _lists_from_int_keys(root)


class _Level(dict):
    """A level that tree_unflatten made; a dict given as a value (a Module) stays a leaf."""


def _lists_from_int_keys(node: Any) -> Any:
    if type(node) is not _Level:
        return node
    out = {k: _lists_from_int_keys(v) for k, v in node.items()}
    # canonical integers only: "01" next to "1" keeps the level a dict (no collision)
    if out and all(k.isdigit() and str(int(k)) == k for k in out):
        idx = sorted(out, key=int)
        n = int(idx[-1]) + 1
        lst: list = [{} for _ in range(n)]  # missing indices become empty dicts, as MLX
        for k in idx:
            lst[int(k)] = out[k]
        return lst
    return out


def tree_reduce(
    fn: Callable, tree: Any, initializer: Any = None, is_leaf: Callable | None = None
) -> Any:
    """Folds ``fn(accumulator, leaf)`` over the leaves of ``tree`` (depth first); without an
    ``initializer`` the first leaf starts the fold.

    >>> tree_reduce(lambda acc, x: acc + x, {"a": [1, 2], "b": 3}, 0)
    6
    """
    acc = initializer
    started = initializer is not None
    for _, leaf in tree_flatten(tree, is_leaf=is_leaf):
        if not started:
            acc, started = leaf, True
        else:
            acc = fn(acc, leaf)
    return acc


def tree_merge(tree_a: Any, tree_b: Any, merge_fn: Callable | None = None) -> Any:
    """Merges two trees of the same shape where at most one side has each leaf (the other has
    None or an empty container); ``merge_fn(a, b)`` resolves leaves present in both.

    >>> tree_merge({"a": 1}, {"b": 2})
    {'a': 1, 'b': 2}
    """
    empty_a, empty_b = _empty(tree_a), _empty(tree_b)
    if empty_a and empty_b and tree_a is not None and tree_b is not None:
        if type(tree_a) is not type(tree_b):
            raise ValueError(
                f"tree_merge: cannot merge an empty {type(tree_a).__name__} with "
                f"an empty {type(tree_b).__name__}"
            )
        return type(tree_a)()
    if empty_a:
        return tree_b
    if empty_b:
        return tree_a
    if isinstance(tree_a, (list, tuple)) and isinstance(tree_b, (list, tuple)):
        # the shorter sequence is missing its last elements (None), as MLX
        pairs = itertools.zip_longest(tree_a, tree_b)
        return _seq_like(tree_a, [tree_merge(a, b, merge_fn) for a, b in pairs])
    if isinstance(tree_a, dict) and isinstance(tree_b, dict):
        keys = list(tree_a) + [k for k in tree_b if k not in tree_a]
        return {k: tree_merge(tree_a.get(k), tree_b.get(k), merge_fn) for k in keys}
    if merge_fn is None:
        raise ValueError("tree_merge: both trees have a leaf at the same place; pass merge_fn")
    return merge_fn(tree_a, tree_b)


def _empty(t: Any) -> bool:
    return t is None or (isinstance(t, (list, tuple, dict)) and len(t) == 0)
