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
