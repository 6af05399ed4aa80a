"""vmap: axes, trees, None, errors, and a loop reference for composite functions."""

import numpy as np
import pytest

import nuvec as nv

from ._util import exact
from nuvec.core.evaluate import TraceEvaluationError
from nuvec.transforms import is_tracer

RNG = np.random.default_rng(2)


def test_in_axes_trees_and_none():
    def f(p, x):
        return {"y": nv.expand_dims(p["w"], 1) * x + p["b"], "z": x * 2.0}

    p = {"w": exact(RNG.normal(size=(3, 4)).astype(np.float32)), "b": exact(1.0)}
    x = exact(RNG.normal(size=(4, 5)).astype(np.float32))
    out = nv.vmap(f, in_axes=({"w": 1, "b": None}, 0), out_axes={"y": 1, "z": 0})(p, x)
    assert out["y"].shape == (3, 4, 5) and out["z"].shape == (4, 5)
    w, xx = np.array(p["w"]), np.array(x)
    ref = np.stack([w[:, i][:, None] * xx[i][None, :] + 1.0 for i in range(4)], axis=1)
    np.testing.assert_array_equal(np.array(out["z"]), xx * 2.0)
    np.testing.assert_allclose(np.array(out["y"]), ref, rtol=1e-6)


def test_unbatched_outputs_are_broadcast_and_out_axes_none():
    c = exact([1.0, 2.0])
    out = nv.vmap(lambda x: (x * 2.0, c), in_axes=0, out_axes=(0, 1))(nv.ones((3,)))
    assert out[0].shape == (3,) and out[1].shape == (2, 3)
    assert np.array(out[1]).tolist() == [[1.0] * 3, [2.0] * 3]
    out = nv.vmap(lambda x: (x, c), out_axes=(0, None))(nv.ones((3,)))
    assert out[1] is c
    with pytest.raises(ValueError, match="out_axes is None for an output that depends"):
        nv.vmap(lambda x: x, out_axes=None)(nv.ones(3))


def test_identity_and_placeholders_are_tracers():
    seen = []

    def f(x):
        seen.append(is_tracer(x))
        return x

    x = exact(RNG.normal(size=(2, 3)).astype(np.float32))
    out = nv.vmap(f, in_axes=1, out_axes=0)(x)
    np.testing.assert_array_equal(np.array(out), np.array(x).T)
    assert seen == [True]


def test_errors():
    with pytest.raises(ValueError, match="vmap: inputs have different sizes"):
        nv.vmap(lambda a, b: a + b)(nv.ones(2), nv.ones(3))
    with pytest.raises(ValueError, match="at least one input must be mapped"):
        nv.vmap(lambda a: a, in_axes=None)(nv.ones(2))
    with pytest.raises(ValueError, match="input axis 2 is out of bounds"):
        nv.vmap(lambda a: a, in_axes=2)(nv.ones((2, 2)))
    with pytest.raises(ValueError, match="in_axes has 1 entries for 2 arguments"):
        nv.vmap(lambda a, b: a, in_axes=(0,))(nv.ones(2), nv.ones(2))
    with pytest.raises(ValueError, match="in_axes must be ints"):
        nv.vmap(lambda a: a, in_axes="0")
    with pytest.raises(ValueError, match="out_axes must be ints"):
        nv.vmap(lambda a: a, out_axes="0")
    with pytest.raises(TraceEvaluationError):
        nv.vmap(lambda a: nv.sum(a).item())(nv.ones((2, 2)))


def test_composite_function_matches_loop():
    def f(w, x):
        h = nv.tanh(nv.matmul(x, w))
        return nv.sum(nv.exp(-h * h), axis=-1)

    w = RNG.normal(size=(3, 4)).astype(np.float32)
    xs = RNG.normal(size=(5, 2, 3)).astype(np.float32)
    got = nv.vmap(f, in_axes=(None, 0))(exact(w), exact(xs))
    ref = np.stack([np.array(f(exact(w), exact(xs[i]))) for i in range(5)])
    np.testing.assert_allclose(np.array(got), ref, rtol=1e-5, atol=1e-6)
    ws = RNG.normal(size=(3, 4, 6)).astype(np.float32)
    got = nv.vmap(f, in_axes=(2, None), out_axes=1)(exact(ws), exact(xs[0]))
    ref = np.stack([np.array(f(exact(ws[..., i]), exact(xs[0]))) for i in range(6)], axis=1)
    np.testing.assert_allclose(np.array(got), ref, rtol=1e-5, atol=1e-6)


def test_nested_vmap_is_an_outer_product():
    a = exact([1.0, 2.0, 3.0])
    b = exact([10.0, 20.0])
    out = nv.vmap(nv.vmap(lambda x, y: x * y, in_axes=(None, 0)), in_axes=(0, None))(a, b)
    np.testing.assert_array_equal(np.array(out), np.outer([1, 2, 3], [10, 20]))


def test_static_arguments_and_kwargs_pass_through():
    out = nv.vmap(lambda x, n, scale=1.0: x * n * scale)(exact([1.0, 2.0]), 3, scale=2.0)
    assert out.tolist() == [6.0, 12.0]


def test_a_dict_spec_applies_to_every_argument_and_one_out_axis_in_a_tuple():
    tree = {"a": nv.ones((2, 3)), "b": (2 * nv.ones((2, 3)), 3 * nv.ones((3, 2)))}

    def f(t):
        return t["a"] + t["b"][0] + t["b"][1].T

    out = nv.vmap(f, in_axes={"a": 0, "b": (0, 1)})(tree)
    assert out.shape == (2, 3) and out.tolist() == [[6.0] * 3] * 2
    with pytest.raises(ValueError, match="vmap"):
        nv.vmap(f, in_axes={"a": 0, "b": ((0, 0), 0)})(tree)
    a = nv.random.uniform(shape=(2, 3, 4))
    b = nv.random.uniform(shape=(4, 5))
    out = nv.vmap(nv.matmul, in_axes=(1, None), out_axes=(1,))(a, b)
    np.testing.assert_allclose(np.array(out), np.array(a) @ np.array(b), rtol=1e-5)
