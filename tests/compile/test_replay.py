"""Replay runs a flat tape (no graph analysis per call) and returns the outputs in
the function's own structure; every call returns fresh output arrays."""

from collections import namedtuple

import numpy as np

import nuvec as nv
from nuvec.compile import _builder, fuse, passes

from conftest import assert_same

Pair = namedtuple("Pair", "lo hi")


def test_outputs_come_back_in_the_functions_structure():
    def f(x, y):
        return {
            "sum": x + y,
            "parts": [x * 2, (y - 1, "tag", 3)],
            "pair": Pair(x, y * y),
            "none": None,
        }

    g = nv.compile(f)
    x, y = nv.array([1.0, 2.0]), nv.array([3.0, 4.0])
    got, want = g(x, y), f(x, y)
    assert list(got) == ["sum", "parts", "pair", "none"]
    assert got["none"] is None and got["parts"][1][1:] == ("tag", 3)
    assert type(got["pair"]) is Pair and type(got["parts"]) is list
    for a, b in zip(nv.utils.tree_flatten(got), nv.utils.tree_flatten(want)):
        assert a[0] == b[0]
        assert_same(np.asarray(a[1]), np.asarray(b[1]))
    h = nv.compile(lambda x: (x + 1, x * 2))
    out = h(x)
    assert type(out) is tuple and [o.tolist() for o in out] == [[2.0, 3.0], [2.0, 4.0]]


def test_replay_does_no_graph_analysis(monkeypatch):
    g = nv.compile(lambda x, y: nv.exp(x) * y - nv.sum(y))
    # inputs that are views lend no buffer, so the replay runs now (a call whose input could
    # lend its buffer to a kernel is left lazy, as MLX's calls are: Tape.call)
    x, y = nv.broadcast_to(nv.array(0.5), (2,)), nv.array([[2.0, 3.0]])[0]
    nv.eval(x, y)
    first = np.asarray(g(x, y))

    def forbidden(*a, **k):
        raise AssertionError("graph analysis on a replay")

    for mod, name in (
        (passes, "build"),
        (passes, "finalize"),
        (passes, "fuse"),
        (fuse, "fuse"),
        (_builder, "build"),
        (passes, "run"),
    ):
        monkeypatch.setattr(mod, name, forbidden)
    import nuvec.core.run as ev

    monkeypatch.setattr(ev, "topo_order", forbidden)  # the eager replay needs no eval walk
    for _ in range(3):
        assert_same(np.asarray(g(x, y)), first)
    assert g.stats()["hits"] == 3


def test_every_call_returns_fresh_arrays():
    w = nv.array([1.0, 2.0])
    g = nv.compile(lambda x: (x * 2, w, x))
    x = nv.array([3.0, 4.0])
    a1, c1, i1 = g(x)
    a2, c2, i2 = g(x)
    assert a1 is not a2 and c1 is not c2
    assert i1 is x and i2 is x  # an input comes back as itself, as uncompiled
    a1[0] = 100.0  # mutating one result ...
    c1[0] = -5.0
    a3, c3, _ = g(x)
    assert a3.tolist() == [6.0, 8.0]  # ... never changes a later one
    assert c3.tolist() == [1.0, 2.0]
    assert a2.tolist() == [6.0, 8.0]


def test_lazy_inputs_replay_as_graph_nodes():
    g = nv.compile(lambda x: nv.exp(x) * 2.0 + x)
    x = nv.array([0.5, 1.5])
    nv.eval(g(x))
    lazy = x * 3.0  # not evaluated yet
    out = g(lazy)
    assert not out.is_evaluated  # the replay stays lazy, as the uncompiled function
    assert_same(np.asarray(out), np.asarray(nv.exp(lazy) * 2.0 + lazy))
    assert g.stats()["traces"] == 1


def test_repeated_outputs_are_one_array_only_where_the_function_returns_one():
    def f(x):
        y = x + 1
        return y, y, x + 1, x, 7

    g = nv.compile(f)
    for v, lazy in ((1.0, False), (2.0, True)):
        x = nv.array([v])
        if lazy:
            x = x * 1.0  # unevaluated: the replay builds graph nodes
        a, b, c, d, e = g(x)
        assert a is b  # one object returned twice, as uncompiled
        assert c is not a  # an equal value (computed once by CSE) is its own array
        assert d is x and e == 7
        assert a.tolist() == c.tolist() == [v + 1]
        c[0] = 0.0
        assert a.tolist() == [v + 1]
