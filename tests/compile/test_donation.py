"""A fused kernel may write its output into the buffer of an input that nothing
else references (an intermediate of the tape at its last use, same shape and dtype), never
into an array the caller holds, an output, a constant, or memory a view still reads."""

import numpy as np

import pytest

import nuvec as nv

from conftest import assert_same, entry_of

rng = np.random.default_rng(11)
X = nv.array(rng.standard_normal((4, 4)).astype(np.float32))


@pytest.mark.usefixtures("cpu_device")  # CPU-only behaviour (see tests/conftest.py)
def test_an_intermediate_at_its_last_use_lends_its_buffer():
    def f(x):
        m = x @ x  # a fresh buffer nobody else sees
        return nv.tanh(m * 2.0 + 1.0) - nv.sum(x, axis=1, keepdims=True)

    g = nv.compile(f)
    for k in range(3):
        assert_same(np.asarray(g(X)), np.asarray(f(X)))
        assert entry_of(g).tape.donations == k + 1


def test_the_callers_arrays_are_never_written():
    g = nv.compile(lambda x: nv.tanh(x * 2.0 + 1.0))
    held = X * 1.0
    nv.eval(held)
    before = np.asarray(held).copy()
    for _ in range(3):
        out = g(held)
        assert not np.shares_memory(np.asarray(out), np.asarray(held))
    np.testing.assert_array_equal(np.asarray(held), before)
    assert entry_of(g).tape.donations == 0


def test_outputs_and_arrays_a_view_still_reads_are_never_donated():
    def f(x):
        m = x @ x
        return m, nv.reshape(m, (16,)), nv.tanh(m * 2.0 + 1.0)

    g = nv.compile(f)
    for _ in range(2):
        got, want = g(X), f(X)
        for a, b in zip(got, want):
            assert_same(np.asarray(a), np.asarray(b))
    assert entry_of(g).tape.donations == 0

    def h(x):
        m = x @ x
        return nv.reshape(m, (16,)) + 0.0, nv.tanh(m * 2.0 + 1.0)  # the view is read later

    k = nv.compile(h)
    for a, b in zip(k(X), h(X)):
        assert_same(np.asarray(a), np.asarray(b))


def test_an_input_the_kernel_reads_twice_keeps_its_buffer():
    # the kernel's pointers are restrict: an input read by two nodes could be read again
    # after the aliased output was written, so it never lends its buffer
    def f(x):
        m = x @ x
        return nv.tanh(m * 2.0 + 1.0) * m

    g = nv.compile(f)
    for _ in range(2):
        assert_same(np.asarray(g(X)), np.asarray(f(X)))
    assert entry_of(g).tape.donations == 0


# -- an input the caller lets go of (MLX's donation, seen through NumPy zero-copy) -----------


def _address(a) -> int:
    return np.asarray(a, copy=False).__array_interface__["data"][0]


def _fresh_input():
    x = nv.arange(16, dtype=nv.float32)
    nv.eval(x)
    return x, _address(x)


def _ready(g):
    e = entry_of(g)
    if e.ready is not None:
        e.ready.wait()


@pytest.mark.usefixtures("cpu_device")
@pytest.mark.parametrize("fused", [False, True], ids=["tracing call", "fused kernel"])
def test_an_input_dropped_before_evaluation_lends_its_buffer(fused):
    def f(x):
        return nv.sin(x) + 1

    g = nv.compile(f)
    want = np.asarray(f(nv.arange(16, dtype=nv.float32)))  # uncompiled
    if fused:
        g(nv.zeros((16,)))
        _ready(g)
    x, address = _fresh_input()
    out = g(x)
    del x  # the caller's last reference: only the compiled call's graph holds it now
    nv.eval(out)
    assert _address(out) == address
    np.testing.assert_array_equal(np.asarray(out), want)


@pytest.mark.usefixtures("cpu_device")
def test_an_input_held_across_the_call_keeps_its_value():
    g = nv.compile(lambda x: nv.sin(x) + 1)
    g(nv.zeros((16,)))
    _ready(g)
    want = np.asarray(nv.sin(nv.arange(16, dtype=nv.float32)) + 1)
    for hold in ("name", "numpy view", "other graph", "eval list"):
        x, address = _fresh_input()
        view = np.asarray(x, copy=False) if hold == "numpy view" else None
        other = x * 2 if hold == "other graph" else None  # a lazy node reading x
        out = g(x)
        if hold == "eval list":
            nv.eval(out, x)
        else:
            nv.eval(out)
        assert _address(out) != address, hold
        np.testing.assert_array_equal(np.asarray(out), want)
        np.testing.assert_array_equal(np.asarray(x), np.arange(16, dtype=np.float32))
        if view is not None:
            np.testing.assert_array_equal(view, np.arange(16, dtype=np.float32))
        if other is not None:
            np.testing.assert_array_equal(np.asarray(other), 2 * np.arange(16, dtype=np.float32))


@pytest.mark.usefixtures("cpu_device")
def test_an_input_read_after_the_kernel_or_returned_is_not_lent():
    def f(x, y):
        return nv.exp(x) * y, x  # x is an output

    def h(x, y):
        return nv.exp(x) * y, nv.sum(x)  # x is read after the product

    for fn in (f, h):
        g = nv.compile(fn)
        for _ in range(2):
            x, address = _fresh_input()
            y, y_address = _fresh_input()
            got = g(x, y)
            del x, y
            nv.eval(got)
            want = fn(nv.arange(16, dtype=nv.float32), nv.arange(16, dtype=nv.float32))
            for a, b in zip(got, want):
                assert_same(np.asarray(a), np.asarray(b))
            _ready(g)


@pytest.mark.usefixtures("cpu_device")
def test_the_same_array_passed_twice_keeps_its_value():
    g = nv.compile(lambda a, b: nv.sin(a) + b)
    g(nv.zeros((16,)), nv.zeros((16,)))
    _ready(g)
    x, address = _fresh_input()
    out = g(x, x)
    nv.eval(out)
    np.testing.assert_array_equal(np.asarray(x), np.arange(16, dtype=np.float32))
    a = nv.arange(16, dtype=nv.float32)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(nv.sin(a) + a))


@pytest.mark.usefixtures("cpu_device")
def test_an_uncompiled_graph_donates_as_well():
    x, address = _fresh_input()
    y = nv.exp(nv.sin(x))
    del x
    nv.eval(y)
    assert _address(y) == address
    np.testing.assert_array_equal(
        np.asarray(y), np.asarray(nv.exp(nv.sin(nv.arange(16, dtype=nv.float32))))
    )


def _chains():
    return {
        "reshape": lambda a: nv.reshape(a, (4, 4)),
        "transpose twice": lambda a: nv.reshape(a, (4, 4)).T.T,
        "stop_gradient": nv.stop_gradient,
        "slice": lambda a: a[:-1],
    }


@pytest.mark.usefixtures("cpu_device")
@pytest.mark.parametrize("chain", list(_chains()))
def test_a_buffer_lends_itself_through_views_of_an_intermediate(chain):
    """An element-wise result read through a reshape, transposes, stop_gradient or a slice
    (views of views: NumPy's base chain has several links) still lends its buffer to the
    next element-wise op when only the graph holds it (MLX donates through these no-ops)."""
    view = _chains()[chain]
    x, address = _fresh_input()
    y = nv.abs(view(nv.abs(x)))
    del x
    nv.eval(y)
    assert _address(y) == address
    ref = np.abs(np.asarray(view(nv.arange(16, dtype=nv.float32))))
    np.testing.assert_array_equal(np.asarray(y), ref)


@pytest.mark.usefixtures("cpu_device")
@pytest.mark.parametrize("chain", list(_chains()))
def test_a_view_of_an_intermediate_the_caller_keeps_is_never_written(chain):
    """The same chains, with the caller keeping the view, the element-wise result under it or
    a NumPy view of it: nothing is donated and every kept value stays as it was."""
    view = _chains()[chain]
    for keep in ("view", "inner", "numpy"):
        x = nv.arange(16, dtype=nv.float32)
        inner = nv.abs(x)
        v = view(inner)
        nv.eval(v)
        expected = np.asarray(v).copy()
        held = {"view": v, "inner": inner, "numpy": np.asarray(v, copy=False)}[keep]
        if keep != "inner":
            del inner
        out = nv.negative(v)
        if keep != "view":
            del v
        nv.eval(out)
        np.testing.assert_array_equal(np.asarray(out), -expected)
        np.testing.assert_array_equal(
            np.asarray(held).reshape(-1)[: expected.size], expected.reshape(-1)
        )
        assert _address(out) != _address(held)
