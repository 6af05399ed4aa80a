"""Shapeless compilation is keyed by dtypes and ranks; each replay infers the shapes
again and element-wise steps broadcast their operands as the uncompiled ones do (results equal
the shaped compile's bit for bit); operations whose parameters hold a traced size fail the
trace with an error naming the operation; a function output is never an inner member of a
fused group."""

import numpy as np
import pytest

import nuvec as nv

from conftest import assert_same, entry_of, unfused

rng = np.random.default_rng(1)


def rand(*shape, dtype=np.float32):
    return nv.array(rng.standard_normal(shape).astype(dtype))


def swiglu(g, u):
    return g * nv.sigmoid(g) * u


@pytest.mark.parametrize("fused", [True, False])
def test_one_trace_serves_every_shape_of_the_same_ranks(fused):
    with unfused() if not fused else _nothing():
        f = nv.compile(swiglu, shapeless=True)
        shaped = nv.compile(swiglu)
        for rows in (7, 64, 3):
            g, u = rand(rows, 16), rand(rows, 16)
            assert_same(np.asarray(f(g, u)), np.asarray(shaped(g, u)))
            assert_same(np.asarray(f(g, u)), np.asarray(swiglu(g, u)))
        assert f.stats()["traces"] == 1 and shaped.stats()["traces"] == 3


def test_the_key_holds_dtypes_and_ranks():
    f = nv.compile(lambda x: x * 2.0, shapeless=True)
    f(rand(3))
    f(rand(9))
    assert f.stats()["traces"] == 1
    f(rand(3, 3))
    assert f.stats()["traces"] == 2 and f.stats()["last_miss"] == "argument 0: ndim 1 -> 2"
    f(rand(3, dtype=np.float16))
    assert f.stats()["traces"] == 3 and "dtype float32 -> float16" in f.stats()["last_miss"]


@pytest.mark.parametrize("fused", [True, False])
def test_element_wise_steps_broadcast_their_operands_again(fused):
    def f(x, b, s):
        return nv.exp(x + b) * 2.0 - b * s + nv.zeros(x.shape)

    with unfused() if not fused else _nothing():
        g = nv.compile(f, shapeless=True)
        for n, m in ((3, 4), (5, 4), (1, 4), (6, 1)):
            x, b, s = rand(n, m), rand(m), rand(1, 1)
            out = g(x, b, s)
            assert_same(np.asarray(out), np.asarray(f(x, b, s)))
        assert g.stats()["traces"] == 1


def test_an_operation_that_fixes_a_traced_size_fails_the_trace_naming_it_and_the_line():
    fn = lambda x: nv.split(x, 3, axis=1)[0] * 2  # noqa: E731  (the line named)
    g = nv.compile(fn, shapeless=True)
    with pytest.raises(
        ValueError,
        match=r"'slice' \(at .*test_shapeless.py:\d+\).*without "
        "shapeless=True",
    ):
        g(rand(2, 3))
    assert nv.compile(fn)(rand(2, 3)).shape == fn(rand(2, 3)).shape  # shaped compile is fine


def test_a_broadcast_to_a_literal_target_replays_only_on_the_traced_input_shape():
    fn = lambda x: nv.broadcast_to(x, (4, 2, 3)) * 2  # noqa: E731
    g = nv.compile(fn, shapeless=True)
    assert_same(np.asarray(g(x := rand(2, 3))), np.asarray(fn(x)))
    for shape in ((5, 3), (1, 3)):  # the target may have come from the traced shape
        with pytest.raises(ValueError, match=r"broadcast_to: traced \(shapeless\).*\(2, 3\)"):
            g(rand(*shape))


def test_a_broadcast_to_sizes_read_from_the_shape_replays_on_every_shape():
    fn = lambda x: nv.broadcast_to(x, (4,) + x.shape) * 2  # noqa: E731
    g = nv.compile(fn, shapeless=True)
    for shape in ((2, 3), (5, 3), (1, 3), (0, 2)):
        x = rand(*shape)
        assert_same(np.asarray(g(x)), np.asarray(fn(x)))
    assert g.stats()["traces"] == 1


def test_random_draws_with_a_shape_fail_the_shapeless_trace():
    key = nv.random.state[0]
    g = nv.compile(lambda x: x + nv.random.uniform(shape=x.shape), shapeless=True)
    with pytest.raises(ValueError, match=r"\.shape \(traced as 3\) \(at .*test_shapeless.py"):
        g(rand(3))
    g = nv.compile(lambda x: x + nv.random.uniform(shape=(3,)), shapeless=True)
    with pytest.raises(ValueError, match="'random_bits'.*without shapeless=True"):
        g(rand(3))
    assert nv.random.state[0] is key  # the failed traces did not advance the key


def test_a_function_output_is_never_an_inner_member():
    def f(x, y):
        a = nv.exp(x) * 3.0  # (n,) ... returned, and broadcast into b
        b = nv.tanh(a + y) - 1.0  # (m, n)
        return a, b

    g = nv.compile(f, shapeless=True)
    for m, n in ((2, 3), (4, 5)):
        x, y = rand(n), rand(m, n)
        for got, want in zip(g(x, y), f(x, y)):
            assert_same(np.asarray(got), np.asarray(want))
    tape = entry_of(g).tape
    a_slot = tape.outputs[0]
    for st in tape.steps:
        if st.prim.name == "compiled" and st.nout > 1:
            raise AssertionError("an output became an extra output of a shapeless kernel")
    producer = [st for st in tape.steps if st.out <= a_slot < st.out + st.nout]
    assert len(producer) == 1 and producer[0].nout == 1


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False
