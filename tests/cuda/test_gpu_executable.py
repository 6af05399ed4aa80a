"""A compiled step on the GPU as one executable (nuvec/backends/cuda/executable.py): recorded
CUDA graphs over a fixed memory plan, state fed back between two buffer sets, results handed
out earlier never overwritten, and the bits of the uncompiled step."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn
from devices import cuda_only
from training_step import adam_step, mlp

pytestmark = cuda_only
cp = pytest.importorskip("cupy")

RNG = np.random.default_rng(7)


def batches(n, batch=32, dims=(48, 10)):
    return [
        (
            RNG.standard_normal((batch, dims[0])).astype(np.float32),
            RNG.integers(0, dims[1], batch).astype(np.int32),
        )
        for _ in range(n)
    ]


def gpu_array(x) -> nv.Array:
    """``x`` as an array whose data is on the GPU already (``nv.array`` keeps NumPy data until
    a GPU operation reads it, and such inputs keep a compiled call off the direct replay)."""
    with nv.stream(nv.gpu):
        a = nv.array(x)
        nv.eval(a * 1)
    assert isinstance(a._data, cp.ndarray)
    return a


def train(compiled: bool, data, dropout: float = 0.0, steps: int = 8):
    """(losses as arrays read only at the end, final parameters, the compiled step or None)
    of an MLX-style step: Sequential MLP, value_and_grad, Adam, state in and out."""
    with nv.stream(nv.gpu):
        t = adam_step(
            lambda: mlp(48, 64, 64, 10, dropout=dropout),
            seed=5,
            compiled=compiled,
            random_state=True,
        )
        xs = [(gpu_array(x), gpu_array(y)) for x, y in data]
        losses = []
        for i in range(steps):
            losses.append(t.step(*xs[i % len(xs)]))
            nv.eval(losses[-1], t.state)
        got = [np.asarray(v) for v in losses]  # every loss read after the last step
        params = [np.asarray(v) for _, v in nv.utils.tree_flatten(t.model.parameters())]
        return got, params, (t.step if compiled else None), t.model, t.opt


def executable_of(fn):
    ex = fn.stats().get("executable")
    assert ex is not None, fn.stats()
    return ex


@pytest.mark.parametrize("dropout", [0.0, 0.25])
def test_compiled_adam_step_is_one_executable_with_the_eager_bits(dropout):
    data = batches(3)
    want_loss, want_params, *_ = train(False, data, dropout)
    got_loss, got_params, fn, *_ = train(True, data, dropout)
    for a, b in zip(got_loss, want_loss):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(got_params, want_params):
        np.testing.assert_array_equal(a, b)
    ex = executable_of(fn)
    assert ex["state"] == "recorded", ex
    assert ex["graphs"] == 1 and ex["state_in_place"] and ex["launches"] >= 5, ex
    # 6 parameters, their two Adam moments, the step counter (and the key with dropout)
    assert ex["state_fed_back"] >= 19 + (dropout > 0), ex
    assert ex["plain_replays"] == 0, ex
    assert ex["fused_runs_joined"] >= 1, ex  # Adam's updates of the parameters: one launch


def _two_updates_reading_each_others_old_values():
    """(compiled step, [uncompiled results, compiled results]) of two fused updates, each
    reading the other's old value, neither reading the other's new one: a run of two."""
    rng = np.random.default_rng(3)
    p0, q0 = (rng.standard_normal((64, 33)).astype(np.float32) for _ in range(2))

    def make_step(state):
        def step(x):
            p, q = state["p"], state["q"]
            state["p"] = nv.tanh(p * 0.5 + q)
            state["q"] = q * 0.75 - nv.sin(p) * x
            return nv.sum(p)  # the old value: both updates wait to the end, side by side

        return step

    results = []
    for compiled in (False, True):
        with nv.stream(nv.gpu):
            state = {"p": gpu_array(p0), "q": gpu_array(q0)}
            step = make_step(state)
            f = nv.compile(step, inputs=state, outputs=state) if compiled else step
            x = gpu_array(np.float32(0.25))
            sums = []
            for _ in range(6):
                sums.append(f(x))
                nv.eval(sums[-1], state)
            results.append([np.asarray(state["p"]), np.asarray(state["q"])])
            results[-1] += [np.asarray(s) for s in sums]
    return f, results


def test_state_updates_that_read_each_others_old_values_keep_the_eager_bits():
    _, results = _two_updates_reading_each_others_old_values()
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_state_updates_that_read_each_others_old_values_are_not_launched_together():
    """In place, one launch could read a buffer after the other part wrote it, so the graph
    launches the two updates one by one."""
    f, _ = _two_updates_reading_each_others_old_values()
    ex = executable_of(f)
    assert ex["state"] == "recorded" and ex["state_in_place"], ex
    assert ex["fused_runs_joined"] == 0, ex


def test_state_is_updated_in_its_own_buffers_and_a_step_allocates_nothing():
    data = batches(2)
    _, _, fn, model, opt = train(True, data, steps=6)
    state = [model.state, opt.state, nv.random.state]
    x, y = (gpu_array(v) for v in data[0])
    with nv.stream(nv.gpu):
        w = lambda: model.layers[0].weight._data.data.ptr  # noqa: E731
        fn(x, y)
        nv.eval(state)
        nv.synchronize()
        pool = cp.get_default_memory_pool()
        used = pool.used_bytes()
        detached = executable_of(fn)["arrays_detached"]  # the losses train() kept
        ptrs = []
        for _ in range(6):
            fn(x, y)
            ptrs.append(w())
        nv.synchronize()
        assert pool.used_bytes() <= used  # nothing new; the arrays of the plain calls went
    assert len(set(ptrs)) == 1, ptrs  # only the state holds the old values: overwritten
    ex = executable_of(fn)
    assert ex["state_in_place"] and ex["arrays_detached"] == detached, ex


def test_a_state_array_kept_across_calls_keeps_its_value():
    data = batches(2)
    _, _, fn, model, opt = train(True, data, steps=5)
    x, y = (gpu_array(v) for v in data[1])
    with nv.stream(nv.gpu):
        kept = [model.layers[0].weight, opt.state["layers"][0]["weight"]["m"]]
        snap = [np.asarray(a) for a in kept]
        for _ in range(4):
            fn(x, y)
        nv.eval(model.state)
        assert not np.array_equal(np.asarray(model.layers[0].weight), snap[0])
        for a, s in zip(kept, snap):
            np.testing.assert_array_equal(np.asarray(a), s)
    assert executable_of(fn)["arrays_detached"] >= 1


def _loop(fn, p, x, n):
    outs = []
    for _ in range(n):
        p, s = fn(p, x)
        outs.append(s)
    return p, outs


def _sgd(p, x):
    h = nv.tanh(x @ p["w"]) + p["b"]
    loss = nv.sum(h * h)
    return {"w": p["w"] - 1e-3 * (x.T @ h), "b": p["b"] * 0.5}, loss


def test_a_functional_loop_feeds_its_outputs_back_and_keeps_every_result():
    with nv.stream(nv.gpu):
        p0 = {
            "w": gpu_array(RNG.standard_normal((16, 8)).astype(np.float32)),
            "b": gpu_array(np.zeros(8, np.float32)),
        }
        x = gpu_array(RNG.standard_normal((4, 16)).astype(np.float32))
        want_p, want = _loop(_sgd, p0, x, 7)
        f = nv.compile(_sgd)
        got_p, got = _loop(f, p0, x, 7)
        for a, b in zip(got + [got_p["w"], got_p["b"]], want + [want_p["w"], want_p["b"]]):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    ex = executable_of(f)
    assert ex["state"] == "recorded" and ex["state_fed_back"] == 2, ex
    # the caller holds its arguments during the call: two buffer sets, nothing overwritten
    assert not ex["state_in_place"] and "not a stateful call" in ex["state_two_sets"], ex


def test_a_view_of_an_earlier_result_makes_the_call_replay_plainly():
    def fn(a, b):
        return nv.tanh(a @ b) * 2 + 1

    with nv.stream(nv.gpu):
        a = gpu_array(RNG.standard_normal((8, 8)).astype(np.float32))
        f = nv.compile(fn)
        for _ in range(3):
            f(a, a)
        r = f(a, a)
        v = r[2:5]  # a view of the buffer the graph writes
        nv.eval(v)
        want = np.asarray(v).copy()
        b = gpu_array(RNG.standard_normal((8, 8)).astype(np.float32))
        other = f(a, b)
        np.testing.assert_array_equal(np.asarray(v), want)
        np.testing.assert_array_equal(np.asarray(other), np.asarray(fn(a, b)))
    ex = executable_of(f)
    assert ex["plain_replays"] >= 1 and "view" in ex["last_plain_replay"], ex


def test_a_step_that_reads_the_host_runs_plainly_and_says_why():
    def fn(x):
        y = nv.from_fp8(nv.to_fp8(x * 2), nv.float32)  # the fp8 codes go through the host
        return nv.exp(y) + 1

    with nv.stream(nv.gpu):
        x = gpu_array(RNG.standard_normal((64,)).astype(np.float32))
        f = nv.compile(fn)
        for _ in range(5):
            np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(fn(x)))
    ex = executable_of(f)
    assert ex["state"] == "not recorded" and "convert_fp8" in ex["reason"], ex


def test_a_shape_change_retraces_and_says_why():
    data = batches(1)
    _, _, fn, model, opt = train(True, data, steps=5)
    x, y = batches(1, batch=12)[0]
    with nv.stream(nv.gpu):
        fn(gpu_array(x), gpu_array(y))
    s = fn.stats()
    assert s["misses"] == 2 and "(32, 48) -> (12, 48)" in s["last_miss"], s
    assert s["executable"]["state"] == "warming up"


def test_eight_threads_calling_one_compiled_function():
    def fn(a, b):
        h = nv.maximum(a @ b, 0.0)
        return h, nv.sum(h * h, axis=1)

    with nv.stream(nv.gpu):
        b = gpu_array(RNG.standard_normal((32, 32)).astype(np.float32))
        xs = [gpu_array(RNG.standard_normal((16, 32)).astype(np.float32)) for _ in range(8)]
        want = [[np.asarray(v) for v in fn(x, b)] for x in xs]
        f = nv.compile(fn)
        for _ in range(4):  # recorded before the threads start (see executable's docstring)
            f(xs[0], b)
        errors, got = [], [None] * 8

        def worker(i):
            try:
                with nv.stream(nv.gpu):
                    outs = [f(xs[i], b) for _ in range(20)]
                    got[i] = [[np.asarray(v) for v in o] for o in outs]
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors, errors
    for i in range(8):
        for o in got[i]:
            for a, w in zip(o, want[i]):
                np.testing.assert_array_equal(a, w)


def test_attention_products_of_transposed_views_are_recorded_with_the_uncompiled_bits():
    def attention(x, w):
        b, s, d = x.shape
        q = (x @ w).reshape(b, s, 4, d // 4).transpose(0, 2, 1, 3)  # heads from a view
        scores = nv.softmax(q @ q.transpose(0, 1, 3, 2), axis=-1)
        return (scores @ q).transpose(0, 2, 1, 3).reshape(b, s, d)

    x = gpu_array(RNG.standard_normal((2, 8, 16)).astype(np.float32))
    w = gpu_array(RNG.standard_normal((16, 16)).astype(np.float32))
    with nv.stream(nv.gpu):
        want = np.asarray(attention(x, w))
        f = nv.compile(attention)
        for _ in range(4):
            np.testing.assert_array_equal(np.asarray(f(x, w)), want)
    ex = executable_of(f)
    assert ex["state"] == "recorded" and ex["launches"] >= 2, ex


def test_a_state_array_kept_in_the_first_call_after_recording_keeps_its_value():
    data = batches(2)
    _, _, fn, model, opt = train(True, data, steps=3)  # call 3 recorded, in place
    x, y = (gpu_array(v) for v in data[1])
    with nv.stream(nv.gpu):
        fn(x, y)
        nv.eval(model.state)
        kept = model.layers[2].bias  # handed out over the buffer the next call overwrites
        snap = np.asarray(kept).copy()
        d0 = executable_of(fn)["arrays_detached"]
        fn(x, y)
        fn(x, y)
        nv.eval(model.state)
        np.testing.assert_array_equal(np.asarray(kept), snap)
        assert not np.array_equal(np.asarray(model.layers[2].bias), snap)
    ex = executable_of(fn)
    assert ex["state_in_place"] and ex["arrays_detached"] == d0 + 1, ex


def test_an_embedding_step_is_recorded_with_the_eager_bits():
    # a token embedding's gradient adds rows picked by the tokens (many per row): those row
    # adds must run on the device alone for the step to be one graph
    rng = np.random.default_rng(3)
    toks = [rng.integers(0, 13, (4, 24)).astype(np.int32) for _ in range(3)]

    def run(compiled: bool):
        with nv.stream(nv.gpu):
            t = adam_step(
                lambda: nn.Sequential(nn.Embedding(13, 16), nn.ReLU(), nn.Linear(16, 13)),
                seed=2,
                compiled=compiled,
            )
            xs = [gpu_array(tok) for tok in toks]
            losses = []
            for i in range(7):
                losses.append(t.step(xs[i % 3], xs[(i + 1) % 3]))
                nv.eval(losses[-1], t.state)
            return [np.asarray(v) for v in losses], np.asarray(t.model.layers[0].weight), t.step

    want, want_w, _ = run(False)
    got, got_w, fn = run(True)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got_w, want_w)
    ex = executable_of(fn)
    assert ex["state"] == "recorded" and ex["plain_replays"] == 0, ex
