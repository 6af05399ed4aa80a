"""Shapeless replays re-infer what depends on shapes (element counts, -1 sizes, *_like shapes,
scalar broadcasts, squeezes, vector products) and refuse, naming the operation, what they
cannot replay; one test per case that once gave a wrong result silently."""

import os
import sys

import numpy as np
import pytest

import nuvec as nv

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from fuzz.shapeless import check  # noqa: E402

from conftest import assert_same  # noqa: E402


def same_as_uncompiled(fn, *inputs_per_call):
    g = nv.compile(fn, shapeless=True)
    for args in inputs_per_call:
        try:
            want = fn(*args)
            nv.eval(want)
        except ValueError:
            with pytest.raises(ValueError):
                nv.eval(g(*args))
            continue
        got = g(*args)
        assert got.shape == want.shape
        assert_same(np.asarray(got), np.asarray(want))
    return g


f32 = lambda *v: nv.array(np.array(v, np.float32))  # noqa: E731
i32 = lambda *v: nv.array(np.array(v, np.int32))  # noqa: E731


@pytest.mark.parametrize(
    "fn",
    [
        nv.mean,
        nv.var,
        nv.std,
        lambda x: nv.mean(x, keepdims=True),
        lambda x: nv.var(x, ddof=1),
        lambda x: nv.mean(nv.take(x, nv.arange(1))),
    ],
)
def test_normalisers_count_the_replayed_elements(fn):
    g = same_as_uncompiled(fn, (f32(1, 2),), (f32(1, 2, 3),), (f32(5),), (f32(4, 5, 6, 7),))
    assert g.stats()["traces"] == 1


def test_mean_after_take_counts_the_taken_elements():
    buf = f32(10, 20, 30, 40, 50)
    same_as_uncompiled(
        lambda b, i: nv.mean(nv.take(b, i, axis=0)), *[(buf, nv.arange(n)) for n in (1, 2, 3, 4)]
    )


def test_a_slice_that_is_whole_at_the_traced_shape_is_not_dropped():
    g = same_as_uncompiled(lambda x: x[:2], (f32(1, 2),), (f32(1, 2, 3, 4, 5),), (f32(),))
    assert g(f32(1, 2, 3, 4, 5)).shape == (2,)  # never the whole (5,)


def test_a_reshape_to_the_traced_shape_still_checks_the_size():
    same_as_uncompiled(lambda x: nv.reshape(x, (2,)), (f32(1, 2),), (f32(1, 2, 3),))


def test_a_reshape_keeps_its_minus_one():
    same_as_uncompiled(
        lambda x: nv.reshape(x, (-1,)) + 1,
        (nv.zeros((2, 3)),),
        (nv.zeros((3, 4)),),
        (nv.zeros((0, 4)),),
    )
    same_as_uncompiled(
        lambda x: nv.unflatten(x, -1, (4, -1)),
        (nv.zeros((1, 1, 128)),),
        (nv.zeros((2, 3, 64)),),
        (nv.zeros((1, 1, 6)),),
    )


@pytest.mark.parametrize(
    "fn", [lambda x: x / 2, lambda x: nv.logaddexp(x, -1), lambda x: 2 - x * 3]
)
def test_python_scalars_broadcast_at_each_replay(fn):
    same_as_uncompiled(fn, (i32(1, 2),), (i32(1, 2, 3),), (i32(4),))


@pytest.mark.parametrize("fn", [nv.isnan, nv.isinf, nv.isfinite])
def test_predicates_of_integers_take_the_replayed_shape(fn):
    same_as_uncompiled(fn, (i32(1, 2),), (i32(1, 2, 3),), (i32(),))


@pytest.mark.parametrize("fn", [nv.zeros_like, nv.ones_like, lambda x: nv.full_like(x, 7)])
def test_like_creations_take_the_replayed_shape(fn):
    same_as_uncompiled(fn, (nv.zeros((1, 1, 32)),), (nv.zeros((2, 2, 16)),))


def test_squeeze_of_every_size1_axis_refuses_another_pattern():
    g = same_as_uncompiled(nv.squeeze, (nv.zeros((2, 2, 1)),), (nv.zeros((5, 3, 1)),))
    with pytest.raises(ValueError, match=r"squeeze: traced \(shapeless\)"):
        g(nv.zeros((5, 1, 1)))  # uncompiled: (5,); never the traced rank's (5, 1)


def test_a_trace_on_a_zero_size_shape_serves_later_calls():
    fn = lambda x: nv.sum(x, axis=1) * 3 + nv.mean(x, axis=0)  # noqa: E731
    same_as_uncompiled(fn, (nv.zeros((1, 0)),), (nv.ones((2, 3)),), (nv.ones((3, 3)),))


def test_vector_products_of_any_length():
    same_as_uncompiled(lambda a, b: a @ b, (f32(0, 1, 2), f32(0, 1, 2)), (f32(1, 2), f32(3, 4)))
    same_as_uncompiled(
        lambda a, b: a @ b, (nv.ones((2, 3)), f32(1, 2, 3)), (nv.ones((4, 2)), f32(1, 2))
    )


def test_broadcast_arrays_follows_the_inputs():
    fn = lambda a, b: nv.broadcast_arrays(a, b)[0] * 1  # noqa: E731
    same_as_uncompiled(
        fn,
        (nv.zeros((2, 1)), nv.ones((3,))),
        (nv.zeros((4, 1)), nv.ones((5,))),
        (nv.zeros((2, 2)), nv.ones((3,))),
    )


def test_random_programs_replay_exactly_or_refuse_by_name():
    outcomes = [check(seed) for seed in range(200)]
    assert outcomes.count("mismatch") == 0 and outcomes.count("one-sided") == 0
    assert outcomes.count("ok") > 120  # most programs replay on every shape


def test_an_object_argument_is_refused_positionally_and_by_keyword():
    class Config:
        value = 1

    f = nv.compile(lambda x, y: x + y.value)
    with pytest.raises(ValueError, match=r"nv.compile\(.*<lambda>\): argument 1 is a Config"):
        f(nv.array(0.0), Config())
    with pytest.raises(ValueError, match=r"keyword 'y' is a Config"):
        f(nv.array(0.0), y=Config())
    g = nv.compile(lambda x, s, d: x * s if d is None else x)  # constants MLX accepts
    assert_same(np.asarray(g(f32(1, 2), 2.0, None)), np.array([2.0, 4.0], np.float32))


def test_an_input_reached_through_the_closure_is_refused():
    x = nv.array([1, 2, 3]) + 2

    def fn(a):
        return a + (x + 1)

    with pytest.raises(ValueError, match="reaches one of its input arrays through its closure"):
        nv.compile(fn)(x)
    y = nv.array([1.0, 2.0, 3.0]) + x  # an array computed from the input
    with pytest.raises(ValueError, match="reaches one of its input arrays"):
        nv.compile(lambda a: a + y)(x)
    assert_same(np.asarray(nv.compile(fn)(x + 0)), np.asarray(fn(x + 0)))  # another array


def _normal(*shape):
    return nv.array(np.random.default_rng(len(shape) + sum(shape)).normal(size=shape), nv.float32)


@pytest.mark.parametrize(
    "fn, weight, shapes",
    [
        (lambda x, w: nv.conv1d(x, w, stride=2, padding=1), (6, 3, 3), [(4, 64, 3), (1, 33, 3)]),
        (lambda x, w: nv.conv1d(x, w, dilation=2, groups=3), (6, 3, 1), [(2, 9, 3), (1, 40, 3)]),
    ],
)
def test_conv1d_replays_on_any_length(fn, weight, shapes):
    w = _normal(*weight)
    same_as_uncompiled(lambda x: fn(x, w), *[(_normal(*s),) for s in shapes + [(2, 8, 3)]])


def test_conv2d_and_pooling_replay_on_any_size():
    w = _normal(5, 3, 3, 2)
    import nuvec.nn as nn

    pool = nn.MaxPool2d(2, stride=2)
    fn = lambda x: pool(nv.conv2d(x, w, stride=(1, 2), padding=1))  # noqa: E731
    same_as_uncompiled(fn, *[(_normal(*s),) for s in [(2, 8, 8, 2), (1, 12, 6, 2), (3, 5, 9, 2)]])


def test_constant_padding_replays_and_other_modes_are_refused_by_name():
    same_as_uncompiled(lambda x: nv.pad(x, (1, 2)), (f32(1, 2, 3),), (f32(1, 2, 3, 4, 5),))
    for mode in ("edge", "reflect", "symmetric"):
        g = nv.compile(lambda x, mode=mode: nv.pad(x, (1, 2), mode=mode), shapeless=True)
        with pytest.raises(ValueError, match=f"pad: under nv.compile.*mode='{mode}'"):
            g(f32(1, 2, 3))


def test_a_convolution_on_an_input_smaller_than_the_kernel_raises_at_the_replay():
    w = nv.ones((2, 3, 1))
    g = same_as_uncompiled(lambda x: nv.conv1d(x, w), (nv.ones((1, 8, 1)),), (nv.ones((1, 3, 1)),))
    with pytest.raises(ValueError, match="conv1d: the number of output positions is 0"):
        g(nv.ones((1, 2, 1)))
    with pytest.raises(ValueError, match="smaller than the"):
        nv.conv1d(nv.ones((1, 2, 1)), w)  # as the uncompiled call


@pytest.mark.parametrize(
    "op, fn",
    [
        ("diagonal", nv.diagonal),
        ("diagonal", nv.diag),
        ("diag", lambda x: nv.diag(x[0])),
        ("diagonal", nv.trace),
        ("median", lambda x: nv.median(x, axis=1)),
        ("tril", nv.tril),
        ("triu", lambda x: nv.triu(x, 1)),
        ("roll", lambda x: nv.roll(x, 1, axis=0)),
        ("roll", lambda x: nv.roll(x, 4, axis=1)),  # a whole turn at the traced size
        ("as_strided", nv.as_strided),
        ("hadamard_transform", nv.hadamard_transform),
    ],
)
def test_positions_counted_at_the_trace_are_refused_by_name(op, fn):
    g = nv.compile(fn, shapeless=True)
    with pytest.raises(ValueError, match=f"{op}: under nv.compile\\(shapeless=True\\)"):
        g(nv.ones((3, 4)))


def test_differences_replay_on_any_length():
    # traced on (2, 2); the (2, 3) replay once kept the traced 2 - 1 columns of the low side
    fn = lambda x: nv.diff(x, axis=1)  # noqa: E731
    same_as_uncompiled(fn, (nv.ones((2, 2)),), (_normal(2, 3),), (_normal(4, 1),), (_normal(1, 6),))
    same_as_uncompiled(lambda x: nv.diff(x, n=2), (_normal(5),), (_normal(9),), (_normal(2),))


def test_a_modules_lazy_parameters_replay_with_it():
    # made before the trace, their random initialisation holds no traced size
    import nuvec.nn as nn

    layer = nn.Linear(8, 5)  # not evaluated: the trace reaches its initialisation
    g = nv.compile(layer, shapeless=True)
    got = [np.asarray(g(x)) for x in (_normal(2, 8), _normal(5, 8), _normal(1, 8))]
    for x, y in zip((_normal(2, 8), _normal(5, 8), _normal(1, 8)), got):
        assert_same(y, np.asarray(layer(x)))


def test_recurrent_layers_are_refused_by_name():
    import nuvec.nn as nn

    for layer in (nn.RNN(8, 4), nn.GRU(8, 4), nn.LSTM(8, 4)):
        g = nv.compile(layer, shapeless=True)
        with pytest.raises(ValueError, match="the number of time steps"):
            g(_normal(2, 3, 8))
