"""Compiled stateful steps (inputs=/outputs= state). The state's arrays and the
random key are traced inputs; the state is rebuilt from the tape after each call; dropout
advances the key exactly as uncompiled; a structure change retraces once; a change on two
consecutive calls is an error saying to initialise the optimizer; on any error the state is
unchanged."""

import functools

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn
import nuvec.optimizers as optim
from nuvec.backends.registry import register
from nuvec.core.array import Array
from nuvec.core.primitive import Primitive

from conftest import assert_same

rng = np.random.default_rng(3)
XS = nv.array(rng.standard_normal((16, 6)).astype(np.float32))
YS = nv.array(rng.integers(0, 3, 16).astype(np.int32))


def training(
    compiled: bool, init: bool, steps: int = 3, dropout: float = 0.25, explicit_key: bool = False
):
    nv.random.seed(7)
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Dropout(dropout), nn.Linear(12, 3))
    nv.eval(model.parameters())
    opt = optim.Adam(learning_rate=1e-2)
    if init:
        opt.init(model.trainable_parameters())
    loss_and_grad = nn.value_and_grad(
        model, lambda m, x, y: nn.losses.cross_entropy(m(x), y, reduction="mean")
    )

    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        opt.update(model, grads)
        return loss

    state = [model.state, opt.state] + ([nv.random.state] if explicit_key else [])
    if compiled:
        step = functools.partial(nv.compile, inputs=state, outputs=state)(step)
    losses = []
    for _ in range(steps):
        loss = step(XS, YS)
        nv.eval(loss, state)
        losses.append(np.asarray(loss))
    return losses, model, opt, step


def assert_same_training(a, b):
    for la, lb in zip(a[0], b[0]):
        assert_same(la, lb)
    pa = nv.utils.tree_flatten(a[1].parameters())
    pb = nv.utils.tree_flatten(b[1].parameters())
    for (ka, va), (kb, vb) in zip(pa, pb):
        assert ka == kb
        assert_same(np.asarray(va), np.asarray(vb))
    sa, sb = nv.utils.tree_flatten(a[2].state), nv.utils.tree_flatten(b[2].state)
    assert [k for k, _ in sa] == [k for k, _ in sb]


def test_a_training_step_with_dropout_matches_uncompiled_and_threads_the_key():
    plain = training(compiled=False, init=True)
    key_plain = np.asarray(nv.random.state[0])
    comp = training(compiled=True, init=True)
    key_comp = np.asarray(nv.random.state[0])
    assert_same_training(plain, comp)
    np.testing.assert_array_equal(key_plain, key_comp)  # dropout advanced it the same way
    assert comp[3].stats()["traces"] == 1
    assert comp[3].stats()["hits"] == 2


def test_the_random_state_may_also_be_named_explicitly():
    plain = training(compiled=False, init=True)
    key_plain = np.asarray(nv.random.state[0])
    comp = training(compiled=True, init=True, explicit_key=True)
    assert_same_training(plain, comp)
    np.testing.assert_array_equal(key_plain, np.asarray(nv.random.state[0]))
    assert comp[3].stats()["traces"] == 1


def test_an_optimizer_creating_its_slots_retraces_once():
    plain = training(compiled=False, init=False, steps=4)
    comp = training(compiled=True, init=False, steps=4)
    assert_same_training(plain, comp)
    assert comp[3].stats()["traces"] == 2


def test_switching_train_and_eval_retraces():
    _, model, opt, step = training(compiled=True, init=True, steps=1, dropout=0.5)
    model.eval()
    out_eval = step(XS, YS)
    assert step.stats()["traces"] == 2
    assert "modes" in step.stats()["last_miss"]
    model.train()
    step(XS, YS)
    assert step.stats()["traces"] == 2
    assert np.isfinite(out_eval.item())


def test_a_structure_changing_on_two_consecutive_calls_is_an_error():
    state = {"w": nv.array([1.0, 2.0])}
    n = [0]

    def step(x):
        n[0] += 1
        state[f"slot{n[0]}"] = state["w"] * 0.0  # a new entry every call
        state["w"] = state["w"] + x
        return state["w"].sum()

    f = nv.compile(step, inputs=state, outputs=state)
    x = nv.array([1.0, 1.0])
    f(x)  # first change: fine (retraces once)
    assert sorted(state) == ["slot1", "w"]
    before = dict(state)
    with pytest.raises(ValueError, match="initialise the optimizer"):
        f(x)
    assert state == before  # same keys, same array objects


BOOM = [False]


class Boom(Primitive):
    """A test primitive that fails at run time when BOOM[0] is set."""

    __slots__ = ()
    name = "boom"

    def infer(self, inputs):
        return [(inputs[0]._shape, inputs[0]._dtype)]


@register(Boom, "cpu")
def _boom(prim, ins, node):
    if BOOM[0]:
        raise RuntimeError("boom at run time")
    return [ins[0]]


@pytest.mark.usefixtures("cpu_device")  # CPU-only behaviour (see tests/conftest.py)
def test_on_any_error_the_state_is_unchanged():
    state = [{"w": nv.array([1.0, 2.0]), "n": nv.array(0)}]

    def step(x, fail=False):
        s = state[0]
        s["w"] = Array.make(Boom(), [s["w"] * x])
        s["n"] = s["n"] + 1
        s["extra"] = s["w"] * 2
        if fail:
            raise KeyError("failure inside the step")
        return s["w"]

    f = nv.compile(step, inputs=state, outputs=state)
    snapshot = (state[0]["w"], state[0]["n"], sorted(state[0]))
    key = nv.random.state[0]
    with pytest.raises(KeyError):  # an error while tracing
        f(nv.array([2.0, 2.0]), fail=True)
    assert (state[0]["w"], state[0]["n"], sorted(state[0])) == snapshot
    assert nv.random.state[0] is key
    f(nv.array([2.0, 2.0]))  # traced and run: the state moves on
    nv.eval(state)
    assert state[0]["w"].tolist() == [2.0, 4.0] and sorted(state[0]) == ["extra", "n", "w"]
    snapshot = (state[0]["w"], state[0]["n"], state[0]["extra"])
    BOOM[0] = True
    try:
        with pytest.raises(RuntimeError, match="boom"):  # an error while replaying
            f(nv.array([2.0, 2.0]))
    finally:
        BOOM[0] = False
    assert (state[0]["w"], state[0]["n"], state[0]["extra"]) == snapshot


class Fragile(dict):
    """A state container whose stores can be made to fail (after the first ``ok`` of them)."""

    ok = None

    def __setitem__(self, k, v):
        if Fragile.ok is not None:
            if Fragile.ok == 0:
                raise RuntimeError("store refused")
            Fragile.ok -= 1
        super().__setitem__(k, v)


def test_the_write_back_stores_into_the_containers_of_this_call():
    from conftest import entry_of
    from nuvec.compile.state import WriteBack

    state = [Fragile(a=nv.array([1.0]), b=nv.array([10.0])), {"c": nv.array([0.5])}]

    def step(x):
        s, t = state
        s["a"] = s["a"] + x
        s["b"] = s["b"] * 2.0
        t["c"] = t["c"] - x
        return s["a"]

    f = nv.compile(step, inputs=state, outputs=state)
    f(nv.array([1.0]))
    f(nv.array([1.0]))
    assert isinstance(entry_of(f).info["writeback"], WriteBack)  # stores, no rebuild
    assert [state[0]["a"].item(), state[0]["b"].item(), state[1]["c"].item()] == [3.0, 40.0, -1.5]
    old = state[1]
    state[1] = {"c": nv.array([7.0])}  # a new container of the same structure
    f(nv.array([1.0]))
    assert state[1]["c"].item() == 6.0 and old["c"].item() == -1.5  # the new one moved on
    assert f.stats()["traces"] == 1
    before = [state[0]["a"], state[0]["b"], state[1]["c"]]
    Fragile.ok = 1  # the second store into state[0] fails
    try:
        with pytest.raises(RuntimeError, match="store refused"):
            f(nv.array([1.0]))
    finally:
        Fragile.ok = None
    assert [state[0]["a"], state[0]["b"], state[1]["c"]] == before  # all put back


def test_called_on_tracers_a_stateful_step_runs_the_function():
    state = {"w": nv.array(3.0)}
    f = nv.compile(lambda x: state["w"] * x, inputs=state, outputs=state)
    g = nv.grad(lambda x: f(x))(nv.array(2.0))
    assert g.item() == 3.0 and f.stats()["traces"] == 0


def test_the_state_walk_finds_what_flatten_and_containers_find():
    from nuvec import tree_ext
    from nuvec.compile.state import containers
    from nuvec.tree import flatten

    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = optim.Adam(learning_rate=1e-2)
    opt.init(model.trainable_parameters())
    shared = [nv.zeros(2)]
    tree = [model.state, opt.state, {"a": shared, "b": (shared, 3, "s", None)}]
    leaves: list = []
    conts: list = []
    node = tree_ext.flat_listed(tree, leaves, conts)
    want_leaves, want_def = flatten(tree)
    assert node == want_def.node
    assert len(leaves) == len(want_leaves) and all(a is b for a, b in zip(leaves, want_leaves))
    want = containers(tree)
    assert len(conts) == len(want) and {id(c) for c in conts} == {id(c) for c in want}
