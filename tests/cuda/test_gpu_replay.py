"""A compiled function replays directly on CuPy data (nuvec/backends/cuda/replay.py): no graph
nodes, constants uploaded once, the tape's stream ordered after the inputs' streams, and the
same bits as the uncompiled operations."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv
from devices import cuda_only
from training_step import adam_step, mlp

pytestmark = cuda_only
cp = pytest.importorskip("cupy")

RNG = np.random.default_rng(1)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def on_gpu(x):
    with nv.stream(nv.gpu):
        a = nv.array(x)
        nv.eval(a * 1)  # uploads: the data is a CuPy array from now on
    assert isinstance(a._data, cp.ndarray)
    return a


def _entry(f, *args):
    return f.lookup(f.key_of(args, {}, [], 0))


def test_replay_returns_evaluated_gpu_arrays_with_the_uncompiled_bits():
    c = nv.array(np.linspace(-1, 1, 300, dtype=np.float32))  # a captured NumPy constant

    def fn(x, y):
        z = nv.tanh(x * 1.5 + y) * c - nv.exp(-y * y)
        return z, nv.sum(z, axis=0), z @ y.T

    x, y = on_gpu(randn(7, 300)), on_gpu(randn(7, 300))
    f = nv.compile(fn)
    with nv.stream(nv.gpu):
        want = [np.asarray(v) for v in fn(x, y)]
        f(x, y)  # traces
        tape = _entry(f, x, y).tape
        assert tape.eager_ok and tape.executable is not None
        assert all(isinstance(d, cp.ndarray) for d in tape.const_data)
        out = f(x, y)
    for o, w in zip(out, want):
        assert o._prim is None and isinstance(o._data, cp.ndarray)  # computed, not a node
        assert o.stream.device == nv.gpu
        np.testing.assert_array_equal(np.asarray(o), w)


def test_replay_waits_for_inputs_made_on_another_stream():
    s1 = nv.new_stream(nv.gpu)
    x = randn(1024, 1024)
    with nv.stream(s1):
        a = nv.array(x)
        for _ in range(6):  # long enough to be still running below
            a = nv.tanh(a @ a * 1e-2) + 1
        nv.eval(a)
    f = nv.compile(lambda t: nv.exp(-t) * 2)
    with nv.stream(nv.gpu):
        warm = on_gpu(x)
        f(warm)  # trace on the default GPU stream
        r = f(a)
        got = np.asarray(r)
    with nv.stream(nv.cpu):
        ac = nv.array(x)
        for _ in range(6):
            ac = nv.tanh(ac @ ac * 1e-2) + 1
        want = np.asarray(nv.exp(-ac) * 2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_shapeless_replay_on_the_gpu():
    f = nv.compile(lambda a, b: nv.sigmoid(a) * b + 1, shapeless=True)
    with nv.stream(nv.gpu):
        for shape in [(5, 3), (2, 8), (8,)]:
            a, b = on_gpu(randn(*shape)), on_gpu(randn(*shape[-1:]))
            got = f(a, b)
            assert got._prim is None or shape == (5, 3)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(nv.sigmoid(a) * b + 1))


def test_compiled_training_step_on_gpu_equals_eager():
    data = randn(16, 20)

    def run(compiled: bool) -> list[float]:
        with nv.stream(nv.gpu):
            t = adam_step(
                lambda: mlp(20, 32, 4, dropout=0.2), seed=3, compiled=compiled, random_state=True
            )
            x, y = on_gpu(data), nv.array(np.arange(16) % 4)
            losses = []
            for _ in range(6):
                loss = t.step(x, y)
                nv.eval(t.state)
                losses.append(loss.item())
            return losses

    assert run(True) == run(False)


def _mlp(w1, w2, x):
    h = nv.maximum(x @ w1, 0.0)
    out = nv.tanh(h @ w2) * 2 + 1
    return out, nv.sum(out * out), out.T


def _norm(w1, w2, x):  # element-wise steps and a reduction
    h = nv.maximum(x * w1, 0.0)
    out = nv.tanh(h - nv.mean(h, axis=1, keepdims=True)) * w2 + 1
    return out, nv.sum(out * out), out.T


def _replay_against_plain(fn, w1, w2, xs):
    """(compiled results, uncompiled results as NumPy, the tape's graph hook) of ``fn`` over
    ``xs``; the compiled calls are all queued before any result is read."""
    f = nv.compile(fn)
    with nv.stream(nv.gpu):
        want = [[np.asarray(v) for v in fn(w1, w2, x)] for x in xs]
        got = [f(w1, w2, x) for x in xs]  # calls 3.. launch the recorded graph
        hook = _entry(f, w1, w2, xs[0]).tape.executable.graph
        assert hook.graphs and not hook.failed, hook.reason
    return got, want, hook


def test_graph_replay_gives_the_plain_bits_and_never_overwrites_earlier_results():
    from nuvec.backends.cuda import executable

    w1, w2 = on_gpu(randn(8, 32)), on_gpu(randn(8, 32))
    xs = [on_gpu(randn(8, 32)) for _ in range(6)]
    got, want, hook = _replay_against_plain(_norm, w1, w2, xs)
    assert isinstance(hook, executable.Executable)
    for g, w in zip(got, want):  # read after every call was queued
        for a, b in zip(g, w):
            assert a._prim is None
            np.testing.assert_array_equal(np.asarray(a), b)


def test_a_tape_with_matmuls_is_recorded_through_nuvecs_cublas_handle():
    w1, w2 = on_gpu(randn(32, 64)), on_gpu(randn(64, 16))
    xs = [on_gpu(randn(8, 32)) for _ in range(5)]
    got, want, _ = _replay_against_plain(_mlp, w1, w2, xs)
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(np.asarray(a), b)


def test_graph_replay_falls_back_for_strided_inputs():
    w1, w2 = on_gpu(randn(8, 32)), on_gpu(randn(8, 32))
    f = nv.compile(_norm)
    with nv.stream(nv.gpu):
        for _ in range(4):
            f(w1, w2, on_gpu(randn(8, 32)))
        assert _entry(f, w1, w2, w1).tape.executable.graph.graphs
        xt = on_gpu(randn(32, 8)).T  # same shape, not contiguous
        nv.eval(xt)
        got = f(w1, w2, xt)
        for a, b in zip(got, _norm(w1, w2, xt)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_graphs_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("NUVEC_CUDA_GRAPHS", "0")
    w1, w2 = on_gpu(randn(32, 64)), on_gpu(randn(64, 16))
    x = on_gpu(randn(8, 32))
    f = nv.compile(_mlp)
    with nv.stream(nv.gpu):
        for _ in range(4):
            f(w1, w2, x)
        assert _entry(f, w1, w2, x).tape.executable.graph is None


def test_a_scalar_keeps_its_zero_dimensions_on_upload():
    from nuvec.backends.cuda.runtime import upload

    for host in (np.array(2.0, np.float32), np.float32(0.5), np.array([[3]], np.int32)[0, 0]):
        dev = upload(host)
        assert dev.shape == () and float(dev.get()) == float(host)
    # what a shapeless replay of a slice update does with the Python scalar it stores
    g = nv.compile(lambda x: x.at[-1].maximum(0.5), shapeless=True)
    with nv.stream(nv.gpu):
        for n in (4, 5, 2):
            x = nv.array(np.arange(n, dtype=np.float32))
            np.testing.assert_array_equal(np.asarray(g(x)), np.asarray(x.at[-1].maximum(0.5)))
