"""Trees: the internal layer (nuvec.tree) and the public utilities (nuvec.utils)."""

import collections

import numpy as np
import pytest

import nuvec as nv
from nuvec import tree
from nuvec.utils import (
    tree_flatten,
    tree_map,
    tree_map_with_path,
    tree_merge,
    tree_reduce,
    tree_unflatten,
)

Pair = collections.namedtuple("Pair", "a b")


class Module(dict):
    """Stands in for nn.Module: a dict subclass."""


def _sample():
    m = Module(weight=nv.ones((2, 3)), bias=nv.zeros((3,)))
    return {
        "layers": [m, {"w": nv.arange(4)}],
        "cfg": (1, 2.0, True, "relu", None),
        "pair": Pair(nv.array([1.0]), 7),
        "empty": [],
        "none": None,
    }


def test_flatten_roundtrip_keeps_types_and_leaves():
    t = _sample()
    xs, td = tree.flatten(t)
    assert len(xs) == td.num_leaves == 4
    back = tree.unflatten(td, xs)
    assert type(back["layers"][0]) is dict  # as MLX: a module's attributes cannot be rebuilt
    assert type(back["pair"]) is Pair and back["pair"].b == 7
    assert back["cfg"] == (1, 2.0, True, "relu", None)
    assert back["empty"] == [] and back["none"] is None
    assert list(back["layers"][0]) == ["weight", "bias"]
    xs2, td2 = tree.flatten(t)
    assert td2 == td and hash(td2) == hash(td)
    assert all(a is b for a, b in zip(xs, xs2))
    assert tree.flatten(back)[1] != td  # the subclass is part of the structure


def test_dict_subclass_hook_rebuilds_the_subclass():
    class Rebuilt(dict):
        @classmethod
        def _tree_unflatten(cls, items):
            obj = cls(items)
            obj.rebuilt = True
            return obj

    xs, td = tree.flatten({"m": Rebuilt(a=nv.ones(1))})
    back = tree.unflatten(td, xs)
    assert type(back["m"]) is Rebuilt and back["m"].rebuilt and back["m"]["a"] is xs[0]


def test_flatten_order_is_depth_first_in_key_order():
    a, b, c = nv.array(1), nv.array(2), nv.array(3)
    xs, _ = tree.flatten({"z": [a, (b,)], "a": c})
    assert [x.item() for x in xs] == [1, 2, 3]


def test_treedef_distinguishes_static_types_keys_and_containers():
    x = nv.ones(2)
    defs = [
        tree.flatten(v)[1]
        for v in (
            (x, 1),
            (x, 1.0),
            (x, True),
            [x, 1],
            {"a": x, "b": 1},
            {"b": 1, "a": x},
            Module(a=x, b=1),
            Pair(x, 1),
            (x, "1"),
            (x, None),
        )
    ]
    for i in range(len(defs)):
        for j in range(len(defs)):
            assert (defs[i] == defs[j]) == (i == j), (defs[i], defs[j])
    assert len(set(defs)) == len(defs)
    # shapes and dtypes are not part of the structure (compile keys those separately)
    assert tree.flatten((nv.ones(3), 1))[1] == tree.flatten((nv.zeros((2, 2), nv.int32), 1))[1]


def test_unflatten_checks_leaf_count_and_treedef():
    _, td = tree.flatten([nv.ones(1), nv.ones(1)])
    with pytest.raises(ValueError, match="2 arrays"):
        tree.unflatten(td, [nv.ones(1)])
    with pytest.raises(ValueError, match="more leaves"):
        tree.unflatten(td, iter([nv.ones(1)] * 3))
    with pytest.raises(TypeError, match="TreeDef"):
        tree.unflatten("nope", [])


def test_unhashable_static_leaf_names_the_problem():
    _, td = tree.flatten((nv.ones(1), [1], {"k": np.zeros(2)}))
    with pytest.raises(TypeError, match="not hashable"):
        hash(td)


def test_python_and_cython_walks_agree():
    t = _sample()
    o1, o2 = [], []
    assert tree._flat(t, o1) == tree._flat_fast(t, o2)
    assert all(a is b for a, b in zip(o1, o2))


def test_all_leaves_holds_every_leaf_in_flatten_order():
    Point = collections.namedtuple("Point", "x y")
    a, b = nv.ones(1), nv.zeros(2)
    t = [1, {"k": None, "j": (a, "s")}, Point(2.5, [b]), ()]
    got = tree.all_leaves(t)
    assert got[:2] == [1, None] and got[2] is a and got[3:5] == ["s", 2.5] and got[5] is b
    assert len(got) == 6
    arrays = [x for x in got if isinstance(x, nv.array)]
    assert [id(x) for x in arrays] == [id(x) for x in tree.leaves(t)]
    assert tree.all_leaves(a)[0] is a and tree.all_leaves(7) == [7] and tree.all_leaves([]) == []


def test_broadcast_prefix():
    x = nv.ones(1)
    args = (x, {"a": x, "b": [x, x]}, 3)
    assert tree.broadcast_prefix((0, {"a": None, "b": 1}, None), args, "vmap") == [0, None, 1, 1]
    assert tree.broadcast_prefix(1, args, "vmap") == [1, 1, 1, 1]
    with pytest.raises(ValueError, match="vmap"):
        tree.broadcast_prefix((0, 1), args, "vmap")


def test_tree_flatten_keys_prefix_destination():
    w = nv.ones(2)
    t = {"layers": [{"weight": w}, {"weight": 2}], "b": (3,)}
    assert tree_flatten(t) == [("layers.0.weight", w), ("layers.1.weight", 2), ("b.0", 3)]
    assert tree_flatten([[[0]]], prefix=".hello") == [("hello.0.0.0", 0)]
    assert tree_flatten({"a": {"b": 1}}, destination={}) == {"a.b": 1}
    assert tree_flatten(5) == [("", 5)]
    assert tree_flatten({"a": [1, 2]}, is_leaf=lambda x: isinstance(x, list)) == [("a", [1, 2])]


def test_tree_unflatten_inverts_flatten():
    t = {"layers": [{"weight": 1, "bias": 2}, {"weight": 3, "bias": 4}], "head": {"w": 5}}
    assert tree_unflatten(tree_flatten(t)) == t
    assert tree_unflatten(dict(tree_flatten(t))) == t
    assert tree_unflatten([("", 9)]) == 9
    assert tree_unflatten([("x.10", 1), ("x.2", 2)])["x"][10] == 1
    with pytest.raises(TypeError, match="tree_unflatten"):
        tree_unflatten([(1, 2)])


def test_tree_map_and_with_path():
    t = {"a": [1, 2], "b": Pair(3, 4), "c": (5,)}
    out = tree_map(lambda x, y: x * 10 + y, t, tree_map(lambda x: 1, t))
    assert out == {"a": [11, 21], "b": Pair(31, 41), "c": (51,)}
    assert type(out["b"]) is Pair
    paths = tree_map_with_path(lambda p, x: p, t)
    assert paths == {"a": ["a.0", "a.1"], "b": Pair("b.0", "b.1"), "c": ("c.0",)}
    assert tree_map(lambda x: len(x), {"a": [1, 2]}, is_leaf=lambda x: isinstance(x, list)) == {
        "a": 2
    }
    arr = tree_map(lambda x: x + 1, {"w": nv.ones(2)})["w"]
    assert arr.tolist() == [2.0, 2.0]


def test_tree_reduce_and_merge():
    t = {"a": [1, 2], "b": {"c": 3}}
    assert tree_reduce(lambda a, x: a + x, t) == 6
    assert tree_reduce(lambda a, x: a + [x], t, []) == [1, 2, 3]
    assert tree_reduce(lambda a, x: a + x, {}, 0) == 0
    assert tree_merge({"a": 1, "b": None}, {"a": None, "b": 2}) == {"a": 1, "b": 2}
    with pytest.raises(ValueError, match="merge_fn"):
        tree_merge({"a": 1}, {"a": 2})
    assert tree_merge([1, None], [None, 2]) == [1, 2]


def test_tree_unflatten_keeps_non_canonical_integer_keys_in_a_dict():
    from nuvec.utils import tree_unflatten

    tree = tree_unflatten([("01", "a"), ("1", "b"), ("2", "c")])
    assert tree == {"01": "a", "1": "b", "2": "c"}
    assert tree_unflatten([("0", "a"), ("1", "b"), ("2", "c")]) == ["a", "b", "c"]


def test_tree_merge_empty_subtrees_and_ragged_lists():
    import pytest
    from nuvec.utils import tree_merge

    assert tree_merge({}, {}) == {}
    assert tree_merge([{"a": 1}, {}], [{"b": 2}, {}]) == [{"a": 1, "b": 2}, {}]
    assert tree_merge({"a": 1, "b": {}, "c": {}}, {"a": {}, "b": {}, "c": 2}) == {
        "a": 1,
        "b": {},
        "c": 2,
    }
    assert tree_merge({"a": ()}, {"a": ()}) == {"a": ()}
    with pytest.raises(ValueError, match="tree_merge"):
        tree_merge({}, [])
    assert tree_merge({"layers": [1]}, {"layers": [None, 2]}) == {"layers": [1, 2]}
