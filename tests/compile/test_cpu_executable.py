"""The CPU executable of a compiled tape (nuvec/backends/cpu/executable.py): steps bound at
their first run and replayed by address over a static arena, with the bits of the steps' own
replay; arrays the caller holds keep their values, a failed step leaves the state unchanged,
other layouts and concurrent calls replay plainly."""

import threading

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn
from nuvec.backends.cpu import blas
from nuvec.primitives.linalg import AddMM, Matmul

from conftest import assert_same, entry_of
from training_step import adam_step, mlp

pytestmark = pytest.mark.usefixtures("cpu_device")

rng = np.random.default_rng(3)


def _stats(f) -> dict:
    return f.stats()["executable"]


def _leaves(state) -> list:
    return [np.array(v) for _, v in nv.utils.tree_flatten(state)]


def _train(make_model, xs, ys, n: int):
    """(losses, state leaves) of n eager steps and of n compiled ones, and the compiled step."""
    out = []
    for compiled in (False, True):
        t = adam_step(make_model, seed=7, compiled=compiled)
        losses = []
        for k in range(n):
            loss = t.step(xs[k % len(xs)], ys[k % len(ys)])
            nv.eval(loss, t.state)
            losses.append(np.array(loss))
        out.append((losses, _leaves(t.state), t.step))
    return out


def _check_same(eager, compiled) -> None:
    for a, b in zip(compiled[0], eager[0]):
        assert_same(a, b)
    assert len(compiled[1]) == len(eager[1])
    for a, b in zip(compiled[1], eager[1]):
        assert_same(a, b)


def test_an_mlp_adam_step_has_the_eager_bits():
    xs = [nv.array(rng.standard_normal((32, 8)).astype(np.float32)) for _ in range(2)]
    ys = [nv.array(rng.integers(0, 4, 32).astype(np.int32)) for _ in range(2)]
    eager, compiled = _train(lambda: mlp(8, 16, 16, 4), xs, ys, 6)
    _check_same(eager, compiled)
    ex = _stats(compiled[2])
    assert ex["state"] == "executable" and ex["calls"] >= 4, ex
    # products are bound to MKL's CBLAS; without it (macOS, aarch64, no mkl wheel) each one
    # runs NumPy's matmul on every call
    steps = entry_of(compiled[2]).tape.steps
    products = sum(type(st.prim) in (Matmul, AddMM) for st in steps)
    assert products == 8, products  # 3 forward, 3 weight gradients, 2 input gradients
    unbound = 0 if blas.provider() == "mkl" else products
    assert ex["plain_replays"] == 0 and ex["ops_unbound"] == unbound, ex
    assert ex["steps_in_c"] > ex["steps"] // 2, ex  # products, kernels, views, column sums


class _TinyTransformer(nn.Module):
    def __init__(self, vocab: int = 11, dims: int = 16, heads: int = 2):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dims)
        self.attention = nn.MultiHeadAttention(dims, heads)
        self.norm1 = nn.LayerNorm(dims)
        self.norm2 = nn.LayerNorm(dims)
        self.mlp = mlp(dims, 2 * dims, dims)
        self.out = nn.Linear(dims, vocab)

    def __call__(self, tokens):
        x = self.embedding(tokens)
        mask = nn.MultiHeadAttention.create_additive_causal_mask(tokens.shape[1])
        h = self.norm1(x)
        x = x + self.attention(h, h, h, mask=mask)
        x = x + self.mlp(self.norm2(x))
        return self.out(x)


def test_a_transformer_adam_step_has_the_eager_bits():
    xs = [nv.array(rng.integers(0, 11, (4, 6)).astype(np.int32)) for _ in range(2)]
    ys = [nv.array(rng.integers(0, 11, (4, 6)).astype(np.int32)) for _ in range(2)]
    eager, compiled = _train(_TinyTransformer, xs, ys, 5)
    _check_same(eager, compiled)
    ex = _stats(compiled[2])
    assert ex["state"] == "executable" and ex["calls"] >= 3, ex


def test_arrays_the_caller_holds_keep_their_values():
    t = adam_step(lambda: mlp(8, 16, 4), seed=2, compiled=True)
    x = nv.array(rng.standard_normal((16, 8)).astype(np.float32))
    y = nv.array(rng.integers(0, 4, 16).astype(np.int32))
    for _ in range(3):  # the in-place updates are armed once a write-back has worked
        nv.eval(t.step(x, y), t.state)
    held = [v for _, v in nv.utils.tree_flatten(t.state)]  # references kept across the call
    before = [np.array(v) for v in held]
    losses = [t.step(x, y) for _ in range(2)]
    nv.eval(losses, t.state)
    for a, b in zip(held, before):
        np.testing.assert_array_equal(np.array(a), b)
    after = _leaves(t.state)
    assert any(not np.array_equal(a, b) for a, b in zip(after, before))  # the step did update
    # returned arrays are new buffers each call: an earlier loss keeps its value
    first = np.array(losses[0])
    nv.eval(t.step(x, y))
    np.testing.assert_array_equal(np.array(losses[0]), first)


def test_a_returned_intermediate_is_a_new_buffer_each_call():
    def f(x, w):
        m = x @ w  # an intermediate in the arena, also returned through a view
        return nv.tanh(m * 2.0 + 1.0), nv.reshape(m, (-1,)), nv.sum(m, axis=0)

    g = nv.compile(f)
    x = nv.array(rng.standard_normal((4, 4)).astype(np.float32))[::1]
    w = nv.array(rng.standard_normal((4, 4)).astype(np.float32))
    got = [g(x, w) for _ in range(3)]
    want = f(x, w)
    for outs in got:  # the later calls did not overwrite the first call's outputs
        for a, b in zip(outs, want):
            assert_same(np.asarray(a), np.asarray(b))
    assert _stats(g)["calls"] >= 2


def test_an_error_in_a_step_leaves_the_state_unchanged():
    cache = [nv.zeros((1, 2, 8, 4)), nv.zeros((1, 2, 8, 4))]
    nv.eval(cache)

    def step(x, pos, i):
        cache[0] = nv.slice_update(cache[0], x, pos, axes=(2,))
        cache[1] = nv.slice_update(cache[1], x * 2.0, pos, axes=(2,))
        out = nv.sum(cache[0] * cache[1], axis=-1)
        return out + nv.take(nv.reshape(cache[1], (-1,)), i)  # checks its index (may raise)

    comp = nv.compile(step, inputs=cache, outputs=cache)
    for t in range(4):
        x = nv.array(np.full((1, 2, 1, 4), t + 1, np.float32))
        nv.eval(comp(x, nv.array([t], nv.int32), nv.array(0, nv.int32)), cache)
    assert _stats(comp)["calls"] >= 2
    before = [np.array(a) for a in cache]
    x = nv.array(np.full((1, 2, 1, 4), 9.0, np.float32))
    with pytest.raises(Exception, match="out of bounds"):
        nv.eval(comp(x, nv.array([5], nv.int32), nv.array(1000, nv.int32)), cache)
    for a, b in zip(cache, before):
        np.testing.assert_array_equal(np.array(a), b)
    nv.eval(comp(x, nv.array([5], nv.int32), nv.array(0, nv.int32)), cache)  # goes on
    assert np.array(cache[0])[0, 0, 5, 0] == 9.0


def _fn(x, w):
    return nv.tanh(x @ w + 1.0) * 2.0, nv.sum(nv.exp(x @ w), axis=0)


def test_another_shape_or_layout_replays_with_the_same_bits():
    g = nv.compile(_fn)
    w = nv.array(rng.standard_normal((8, 8)).astype(np.float32))
    for rows in (4, 6, 4):  # a shape change: an entry of its own
        x = nv.array(rng.standard_normal((rows, 8)).astype(np.float32))
        for _ in range(2):
            for a, b in zip(g(x, w), _fn(x, w)):
                assert_same(np.asarray(a), np.asarray(b))
    assert g.stats()["entries"] == 2
    x = nv.array(rng.standard_normal((8, 4)).astype(np.float32)).T  # another layout
    nv.eval(x)
    for a, b in zip(g(x, w), _fn(x, w)):
        assert_same(np.asarray(a), np.asarray(b))
    ex = _stats(g)
    assert ex["plain_replays"] == 1, ex
    assert "laid out differently" in ex["last_plain_replay"]


def test_eight_threads_calling_one_compiled_function():
    g = nv.compile(_fn)
    w = nv.array(rng.standard_normal((64, 64)).astype(np.float32))
    xs = [nv.array(rng.standard_normal((48, 64)).astype(np.float32)) for _ in range(8)]
    want = [[np.asarray(a) for a in _fn(x, w)] for x in xs]
    g(xs[0], w)
    errors: list = []
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        try:
            barrier.wait()
            for _ in range(40):
                for a, b in zip(g(xs[i], w), want[i]):
                    assert_same(np.asarray(a), b)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    ex = _stats(g)
    assert ex["calls"] + ex["plain_replays"] == 1 + 8 * 40, ex


def test_stats_say_what_runs_where():
    g = nv.compile(_fn)
    x = nv.array(rng.standard_normal((4, 8)).astype(np.float32))
    w = nv.array(rng.standard_normal((8, 8)).astype(np.float32))
    g(x, w)
    g(x, w)
    ex = _stats(g)
    assert ex["state"] == "executable"
    assert ex["steps"] == ex["steps_in_c"] + sum(ex["steps_in_python"].values())
    assert ex["arena_bytes"] > 0
    one = nv.compile(lambda x: nv.exp(x) + 1.0)  # one fused kernel: launched directly
    one(x)
    assert _stats(one)["state"] == "replays its steps"
    assert entry_of(one).tape.executable is None


def test_a_launch_that_cannot_be_bound_runs_through_the_launcher():
    # a kernel reading a 9-dimensional transpose: no axes merge, more than a bound launch
    # keeps, so the view is made as an array for it on every call
    def f(x):
        return nv.tanh(nv.transpose(x) * 2.0 + 1.0), nv.sum(x, axis=-1)

    g = nv.compile(f)
    x = nv.array(rng.standard_normal((2, 3, 2, 3, 2, 3, 2, 3, 2)).astype(np.float32))[..., ::1]
    for _ in range(3):
        for a, b in zip(
            g(
                x,
            ),
            f(x),
        ):
            assert_same(np.asarray(a), np.asarray(b))
    assert _stats(g)["calls"] >= 2


def _compiled_both_ways(f, monkeypatch):
    """``f`` compiled with the executable and compiled with it turned off."""
    g = nv.compile(f)
    monkeypatch.setenv("NUVEC_CPU_EXECUTABLE", "0")
    plain = nv.compile(f)
    plain(*_ARGS[f])  # traced now, while the executable is off
    monkeypatch.delenv("NUVEC_CPU_EXECUTABLE")
    return g, plain


_ARGS: dict = {}


def _check_bound(f, args, monkeypatch, name: str) -> None:
    """Calls of ``f`` compiled have the bits of ``f`` eager and of ``f`` compiled without the
    executable, the steps named ``name`` running in C. (No element-wise step of ``f`` reads
    an input of its own shape: such a call, whose input could lend its buffer, is lazy.)"""
    _ARGS[f] = args
    g, plain = _compiled_both_ways(f, monkeypatch)
    want = [np.asarray(a) for a in f(*args)]
    for _ in range(3):  # the first call binds, the later ones run by address
        for a, b, c in zip(g(*args), plain(*args), want):
            assert_same(np.asarray(a), c)
            assert_same(np.asarray(b), c)
    ex = _stats(g)
    assert ex["state"] == "executable" and ex["calls"] >= 2, ex
    assert name not in ex["steps_in_python"] and ex["ops_unbound"] == 0, ex
    assert _stats(plain)["state"] == "replays its steps"


def _special_rows(shape) -> np.ndarray:
    """float32 rows (at least 5) of random values, all -inf, with an inf, with a NaN, of
    values whose exponentials overflow unshifted, of subnormals."""
    x = (rng.standard_normal(shape) * 30).astype(np.float32)
    rows = x.reshape(-1, shape[-1])
    rows[0] = -np.inf
    rows[1, -1] = np.inf
    rows[2, 0] = np.nan
    rows[3] = 88.5  # exp overflows without the shift
    rows[4] = np.float32(1e-40)  # subnormals
    return x


@pytest.mark.filterwarnings("error")  # rows of -inf or NaN are taken quietly, as eagerly
@pytest.mark.parametrize("special", [True, False])
@pytest.mark.parametrize("shape", [(6, 7), (2, 3, 33), (5, 1)])
def test_logsumexp_runs_in_c_with_the_eager_bits(shape, special, monkeypatch):
    def f(x):
        return nv.logsumexp(x, axis=-1), nv.logsumexp(x, axis=-1, keepdims=True) * 0.5

    x = _special_rows(shape) if special else rng.standard_normal(shape).astype(np.float32)
    _check_bound(f, (nv.array(x),), monkeypatch, "logsumexp")


@pytest.mark.parametrize(
    "dtype, itype, axis",
    [
        (np.float32, np.int32, 1),
        (np.float64, np.int64, 0),
        (np.int32, np.int64, 2),
        (np.float16, np.int32, -1),
        (np.uint8, np.int32, 1),
    ],
)
def test_take_along_axis_runs_in_c_with_the_eager_bits(dtype, itype, axis, monkeypatch):
    a = (rng.standard_normal((3, 5, 4)) * 50).astype(dtype)
    n = a.shape[axis]
    shape = list(a.shape)
    shape[axis] = 6  # more indices than the axis has: repeats
    idx = rng.integers(-n, n, shape).astype(itype)  # negative ones count from the end

    def f(a, idx, idx2):
        return nv.take_along_axis(a, idx, axis=axis), nv.take_along_axis(a, idx2, axis=axis)

    args = (nv.array(a), nv.array(idx), nv.array(np.flip(idx, 0).copy()))
    _check_bound(f, args, monkeypatch, "gather_axis")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_gradient_of_take_along_axis_runs_in_c_with_the_eager_bits(dtype, monkeypatch):
    x = rng.standard_normal((4, 5)).astype(dtype)
    idx = rng.integers(-5, 5, (4, 9)).astype(np.int32)  # repeated indices: adds in order
    w = (rng.standard_normal(9) * 1e3).astype(dtype)

    def f(x, idx, w):
        return nv.grad(lambda x: nv.sum(nv.take_along_axis(x, idx, axis=1) * w))(x)

    _check_bound(f, (nv.array(x), nv.array(idx), nv.array(w)), monkeypatch, "scatter_axis")


def test_cross_entropy_in_a_step_runs_with_no_python_step():
    xs = [nv.array(rng.standard_normal((16, 8)).astype(np.float32)) for _ in range(2)]
    ys = [nv.array(rng.integers(0, 4, 16).astype(np.int32)) for _ in range(2)]
    eager, compiled = _train(lambda: mlp(8, 16, 4), xs, ys, 4)
    _check_same(eager, compiled)
    ex = _stats(compiled[2])
    assert ex["steps_in_python"] == {} and ex["steps_in_c"] == ex["steps"], ex


def test_an_index_out_of_bounds_in_a_bound_step_leaves_the_state_unchanged():
    state = [nv.array(rng.standard_normal((4, 5)).astype(np.float32))]
    nv.eval(state)

    def step(idx):
        w = state[0]
        picked = nv.take_along_axis(w, idx, axis=1)
        state[0] = w * 0.5 + 1.0
        return nv.logsumexp(picked, axis=-1)

    comp = nv.compile(step, inputs=state, outputs=state)
    good = nv.array(rng.integers(-5, 5, (4, 3)).astype(np.int32))
    for _ in range(3):
        nv.eval(comp(good), state)
    assert _stats(comp)["calls"] >= 2 and "gather_axis" not in _stats(comp)["steps_in_python"]
    before = np.array(state[0])
    bad = nv.array(np.array([[0, 1, 2]] * 3 + [[0, 5, 1]], np.int32))
    with pytest.raises(Exception, match="out of bounds"):
        nv.eval(comp(bad), state)
    np.testing.assert_array_equal(np.array(state[0]), before)
    nv.eval(comp(good), state)  # goes on
    np.testing.assert_array_equal(np.array(state[0]), before * np.float32(0.5) + np.float32(1))
