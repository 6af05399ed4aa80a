"""In-place state updates of compiled stateful steps (nuvec/compile/inplace.py): an
optimizer's fused update writes the new parameters and moments into the old state buffers
when nothing but the state refers to them, with the same bits as an uncompiled step; a
buffer that anything else can see (a reference to the old array, a NumPy view of it, a view
read after the update, the function's own return value) is never written."""

import functools

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn
import nuvec.optimizers as optim
from nuvec.compile import state as cstate

from conftest import assert_same

# the in-place state update is the CPU's (fused C kernels writing old state buffers)
pytestmark = pytest.mark.usefixtures("cpu_device")

rng = np.random.default_rng(11)
XS = nv.array(rng.standard_normal((32, 8)).astype(np.float32))
YS = nv.array(rng.integers(0, 4, 32).astype(np.int32))


def setup(compiled: bool):
    nv.random.seed(5)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    nv.eval(model.parameters())
    opt = optim.Adam(learning_rate=1e-2)
    opt.init(model.trainable_parameters())
    lg = nn.value_and_grad(
        model, lambda m, x, y: nn.losses.cross_entropy(m(x), y, reduction="mean")
    )

    def step(x, y):
        loss, grads = lg(model, x, y)
        opt.update(model, grads)
        return loss

    state = [model.state, opt.state]
    if compiled:
        step = functools.partial(nv.compile, inputs=state, outputs=state)(step)
    return model, opt, state, step


def run(step, state, n):
    losses = []
    for _ in range(n):
        loss = step(XS, YS)
        nv.eval(loss, state)
        losses.append(np.array(loss))
    return losses


def plan_of(step):
    entry = cstate.entry_for(step, (XS, YS), {})
    return entry.info["inplace"]


def test_adam_updates_in_place_with_the_uncompiled_bits():
    m0, o0, s0, eager = setup(False)
    m1, o1, s1, comp = setup(True)
    want = run(eager, s0, 6)
    got = run(comp, s1, 6)
    for a, b in zip(got, want):
        assert_same(a, b)
    for (ka, va), (kb, vb) in zip(nv.utils.tree_flatten(s1), nv.utils.tree_flatten(s0)):
        assert ka == kb
        assert_same(np.array(va), np.array(vb))
    pl = plan_of(comp)
    assert pl.donations > 0
    # weights, biases and both moments of each parameter are updated in place
    assert len(pl.by_input) == 3 * len(nv.utils.tree_flatten(m1.trainable_parameters()))
    w = m1.layers[0].weight
    buf = w._data.__array_interface__["data"][0]
    del w
    run(comp, s1, 1)
    assert m1.layers[0].weight._data.__array_interface__["data"][0] == buf


@pytest.mark.parametrize("hold", ["array", "numpy_view"])
def test_a_state_array_seen_elsewhere_keeps_its_value(hold):
    model, opt, state, comp = setup(True)
    run(comp, state, 4)  # the fused tape is in use and proven
    old = model.layers[0].weight
    kept = old if hold == "array" else np.asarray(old)
    before = np.array(kept)
    pl = plan_of(comp)
    n = pl.donations
    run(comp, state, 2)
    np.testing.assert_array_equal(np.asarray(kept), before)
    assert not np.array_equal(np.array(model.layers[0].weight), before)
    assert pl.donations > n  # the other parameters still update in place


@pytest.mark.parametrize("returns_old", [False, True])
def test_a_state_input_read_after_its_update_or_returned_is_not_written(returns_old):
    p = {"w": nv.array(np.arange(6, dtype=np.float32))}
    state = [p]

    @functools.partial(nv.compile, inputs=state, outputs=state)
    def step(x):
        old = p["w"]
        p["w"] = old * 0.5 + x
        # a matmul after the update reads a view of the old value
        out = nv.reshape(old, (2, 3)) @ nv.reshape(p["w"], (3, 2))
        return (out, old) if returns_old else out

    for _ in range(5):
        prev = np.array(p["w"])
        res = step(nv.array(1.0))
        nv.eval(res, state)
        upd = prev * np.float32(0.5) + np.float32(1.0)
        out = res[0] if returns_old else res
        if returns_old:
            np.testing.assert_array_equal(np.array(res[1]), prev)
        np.testing.assert_array_equal(np.array(out), prev.reshape(2, 3) @ upd.reshape(3, 2))
        np.testing.assert_array_equal(np.array(p["w"]), upd)


def test_an_error_after_the_update_leaves_the_state_unchanged():
    p = {"w": nv.array(np.arange(6, dtype=np.float32))}
    state = [p]

    @functools.partial(nv.compile, inputs=state, outputs=state)
    def step(i):
        p["w"] = p["w"] * 0.5 + 1.0
        return nv.take(p["w"], i)  # checks its indices after the update ran

    for _ in range(4):
        nv.eval(step(nv.array([1], nv.int32)), state)
    before = np.array(p["w"])
    with pytest.raises(Exception, match="out of bounds"):
        nv.eval(step(nv.array([100], nv.int32)), state)
    np.testing.assert_array_equal(np.array(p["w"]), before)
