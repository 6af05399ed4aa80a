"""In-place state updates of compiled stateful steps (nuvec/compile/inplace.py): an
optimizer's fused update writes the new parameters and moments into the old state buffers
when nothing but the state refers to them, with the same bits as an uncompiled step; a
buffer that anything else can see (a reference to the old array, a NumPy view of it, a view
read after the update, the function's own return value) is never written."""

import functools

import numpy as np
import pytest

import nuvec as nv
from nuvec.compile import state as cstate

from conftest import assert_same
from training_step import adam_step, mlp

# the in-place state update is the CPU's (fused C kernels writing old state buffers)
pytestmark = pytest.mark.usefixtures("cpu_device")

rng = np.random.default_rng(11)
XS = nv.array(rng.standard_normal((32, 8)).astype(np.float32))
YS = nv.array(rng.integers(0, 4, 32).astype(np.int32))


def setup(compiled: bool):
    t = adam_step(lambda: mlp(8, 16, 4), seed=5, compiled=compiled)
    return t.model, t.opt, t.state, t.step


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


# -- steps with an in-place form: a scatter (a KV cache's slice_update) ---------------------


def cache_step(read_old: bool = False, check_index: bool = False):
    """A decode-like step over a state ``cache`` (two arrays): writes row ``pos`` of each,
    returns a product that reads the new caches (and the old one, with ``read_old``)."""
    cache = [nv.zeros((1, 2, 8, 4)), nv.zeros((1, 2, 8, 4))]
    nv.eval(cache)

    def step(x, pos, i):
        old = cache[0]
        k = nv.slice_update(cache[0], x, pos, axes=(2,))
        v = nv.slice_update(cache[1], x * 2.0, pos, axes=(2,))
        cache[0], cache[1] = k, v
        out = nv.sum(k * v, axis=-1)
        if read_old:
            out = out + nv.sum(old, axis=-1)
        if check_index:  # a step after the scatters that checks its index (may raise)
            out = out + nv.take(nv.reshape(v, (-1,)), i)
        return out

    return cache, step


def drive(step, cache, n, i=0, start=0):
    outs = []
    for t in range(start, start + n):
        x = nv.array(np.full((1, 2, 1, 4), t + 1, np.float32))
        out = step(x, nv.array([t % 8], nv.int32), nv.array(i, nv.int32))
        nv.eval(out, cache)
        outs.append(np.array(out))
    return outs


def address(a):
    return a._data.__array_interface__["data"][0]


@pytest.mark.parametrize("read_old", [False, True])
def test_a_scattered_state_cache_is_written_in_its_own_buffer(read_old):
    c0, eager = cache_step(read_old)
    c1, step = cache_step(read_old)
    comp = nv.compile(step, inputs=c1, outputs=c1)
    want = drive(eager, c0, 6)
    got = drive(comp, c1, 6)
    for a, b in zip(got, want):
        assert_same(a, b)
    for j in range(2):  # (a loop variable bound to a cache array would hold it)
        assert_same(np.array(c1[j]), np.array(c0[j]))
    x = nv.array(np.ones((1, 2, 1, 4), np.float32))
    entry = cstate.entry_for(comp, (x, nv.array([0], nv.int32), nv.array(0, nv.int32)), {})
    pl = entry.info["inplace"]
    if read_old:  # the old keys are read after their update: copied, never written
        assert pl.steps_by_input.keys() == {1}
    else:
        assert pl.steps_by_input.keys() == {0, 1}
    n, bufs = pl.donations, [address(a) for a in c1]
    assert n > 0
    drive(comp, c1, 2)
    assert pl.donations == n + 2 * len(pl.steps_by_input)
    assert [address(a) for a in c1][1] == bufs[1]


def test_a_cache_array_held_elsewhere_keeps_its_value():
    cache, step = cache_step()
    comp = nv.compile(step, inputs=cache, outputs=cache)
    drive(comp, cache, 4)
    held = cache[0]
    before = np.array(held)
    view = np.asarray(cache[1])
    vbefore = view.copy()
    drive(comp, cache, 3, start=4)
    np.testing.assert_array_equal(np.array(held), before)
    np.testing.assert_array_equal(view, vbefore)
    assert not np.array_equal(np.array(cache[0]), before)


def test_an_error_after_an_in_place_scatter_puts_the_cache_back():
    cache, step = cache_step(check_index=True)
    comp = nv.compile(step, inputs=cache, outputs=cache)
    drive(comp, cache, 4)
    x = nv.array(np.full((1, 2, 1, 4), 9.0, np.float32))
    entry = cstate.entry_for(comp, (x, nv.array([0], nv.int32), nv.array(0, nv.int32)), {})
    pl = entry.info["inplace"]
    assert pl.steps_by_input.keys() == {0, 1}
    before = [np.array(a) for a in cache]
    n = pl.donations
    with pytest.raises(Exception, match="out of bounds"):
        nv.eval(comp(x, nv.array([5], nv.int32), nv.array(1000, nv.int32)), cache)
    assert pl.donations == n + 2  # both were written in place before the error, then undone
    for j in range(2):
        np.testing.assert_array_equal(np.array(cache[j]), before[j])
    drive(comp, cache, 2)  # and the step goes on as before


def test_scatter_add_into_a_state_array():
    acc = [nv.zeros((5, 3))]
    nv.eval(acc)

    def step(idx, u):
        acc[0] = acc[0].at[idx].add(u)
        return nv.sum(acc[0])

    comp = nv.compile(step, inputs=acc, outputs=acc)
    want = np.zeros((5, 3), np.float32)
    for t in range(5):
        idx = np.array([t % 5, 1, 1], np.int32)
        u = np.full((3, 3), t + 1, np.float32)
        np.add.at(want, idx, u)
        got = comp(nv.array(idx), nv.array(u))
        nv.eval(got, acc)
        np.testing.assert_array_equal(np.array(acc[0]), want)
        assert np.array(got) == want.sum()
    entry = cstate.entry_for(comp, (nv.array(idx), nv.array(u)), {})
    assert entry.info["inplace"].donations > 0


def test_an_in_place_set_at_one_position_checks_its_index():
    acc = [nv.zeros((5, 3))]
    nv.eval(acc)

    def step(i, u):
        a = acc[0]
        a[i] = u  # a scatter of one position
        acc[0] = a
        return nv.sum(acc[0])

    comp = nv.compile(step, inputs=acc, outputs=acc)
    want = np.zeros((5, 3), np.float32)
    for t in range(6):
        want[t % 5 - 5] = t + 1  # negative positions too
        comp(nv.array([t % 5 - 5], nv.int32), nv.full((1, 3), t + 1.0))
        nv.eval(acc)
        np.testing.assert_array_equal(np.array(acc[0]), want)
    entry = cstate.entry_for(comp, (nv.array([0], nv.int32), nv.ones((1, 3))), {})
    assert entry.info["inplace"].donations > 0
    with pytest.raises(Exception, match="out of bounds"):
        nv.eval(comp(nv.array([7], nv.int32), nv.full((1, 3), 9.0)), acc)
    np.testing.assert_array_equal(np.array(acc[0]), want)
