"""Transforms composed: higher-order gradients, vmap of grad, grad of vmap, jvp of vjp,
custom functions under every transform."""

import numpy as np
import pytest

import nuvec as nv

from ._util import exact, numeric_grad

RNG = np.random.default_rng(3)


def test_higher_order_gradients():
    f = lambda x: nv.sin(x) * x  # noqa: E731
    x = exact(0.7, dtype=nv.float64)
    d1 = nv.grad(f)(x).item()
    d2 = nv.grad(nv.grad(f))(x).item()
    d3 = nv.grad(nv.grad(nv.grad(f)))(x).item()
    v = 0.7
    assert np.isclose(d1, np.cos(v) * v + np.sin(v), rtol=1e-12)
    assert np.isclose(d2, -np.sin(v) * v + 2 * np.cos(v), rtol=1e-12)
    assert np.isclose(d3, -np.cos(v) * v - 3 * np.sin(v), rtol=1e-12)


def test_second_order_through_broadcast_and_reductions():
    def f(w):
        return nv.sum(nv.tanh(w * exact([[1.0], [2.0]], dtype=nv.float64)) ** 2)

    w = RNG.normal(size=(3,))
    hv = nv.grad(lambda v: nv.sum(nv.grad(f)(v)))(exact(w))  # H @ 1
    hess = np.stack([numeric_grad(lambda v, i=i: nv.grad(f)(v)[i], [w])[0] for i in range(3)])
    np.testing.assert_allclose(np.array(hv), hess.sum(axis=0), rtol=1e-5, atol=1e-7)


def test_vmap_of_grad_is_per_example_gradients():
    w = exact(RNG.normal(size=(3,)))
    xs = exact(RNG.normal(size=(4, 3)))
    loss = lambda w, x: nv.sum(nv.tanh(w * x))  # noqa: E731
    per = nv.vmap(nv.grad(loss), in_axes=(None, 0))(w, xs)
    ref = np.stack([np.array(nv.grad(loss)(w, xs[i])) for i in range(4)])
    np.testing.assert_allclose(np.array(per), ref, rtol=1e-12)
    # the batch on axis 1 of x, gradients out on axis 1
    per = nv.vmap(nv.grad(loss), in_axes=(None, 1), out_axes=1)(w, exact(np.array(xs).T))
    np.testing.assert_allclose(np.array(per), ref.T, rtol=1e-12)


def test_grad_of_vmap():
    w = exact(RNG.normal(size=(3,)))
    xs = exact(RNG.normal(size=(4, 3)))
    f = lambda w: nv.sum(nv.vmap(lambda x: nv.sin(w * x) * x, in_axes=1, out_axes=0)(xs.T))  # noqa: E731
    g = nv.grad(f)(w)
    ref = np.sum(np.cos(np.array(w) * np.array(xs)) * np.array(xs) ** 2, axis=0)
    np.testing.assert_allclose(np.array(g), ref, rtol=1e-12)


def test_jvp_of_vjp_and_vjp_of_jvp_give_the_hessian_vector_product():
    f = lambda x: nv.sum(nv.exp(x) * nv.sin(x))  # noqa: E731
    x = exact(RNG.normal(size=(3,)))
    v = exact(RNG.normal(size=(3,)))
    xv, vv = np.array(x), np.array(v)
    hdiag = 2 * np.exp(xv) * np.cos(xv)  # f is separable: the Hessian is diagonal
    g = lambda y: nv.vjp(f, [y], [exact(1.0, dtype=nv.float64)])[1][0]  # noqa: E731
    _, (hv,) = nv.jvp(g, [x], [v])
    np.testing.assert_allclose(np.array(hv), hdiag * vv, rtol=1e-12)
    jv = lambda y: nv.jvp(f, [y], [v])[1][0]  # noqa: E731
    _, (hv2,) = nv.vjp(jv, [x], [exact(1.0, dtype=nv.float64)])
    np.testing.assert_allclose(np.array(hv2), hdiag * vv, rtol=1e-12)
    _, (t,) = nv.jvp(nv.grad(f), [x], [v])
    np.testing.assert_allclose(np.array(t), hdiag * vv, rtol=1e-12)


def test_vmap_of_jvp_and_vmap_of_vmap_of_grad():
    f = lambda x: nv.sin(x) * x  # noqa: E731
    xs = exact(RNG.normal(size=(2, 3)))
    out = nv.vmap(lambda x: nv.jvp(f, [x], [nv.ones_like(x)])[1][0], in_axes=1, out_axes=1)(xs)
    xv = np.array(xs)
    np.testing.assert_allclose(np.array(out), np.cos(xv) * xv + np.sin(xv), rtol=1e-12)
    g = nv.vmap(nv.vmap(nv.grad(f)))(xs)
    np.testing.assert_allclose(np.array(g), np.cos(xv) * xv + np.sin(xv), rtol=1e-12)


@nv.custom_function
def _clipped_exp(x):
    return nv.exp(x)


@_clipped_exp.vjp
def _clipped_exp_vjp(primals, cotangent, output):
    return nv.clip(cotangent * output, -1.0, 1.0)


@_clipped_exp.jvp
def _clipped_exp_jvp(x, tangent):  # one argument: the rule gets it itself, as MLX
    return nv.clip(tangent * nv.exp(x), -1.0, 1.0)


def test_custom_function_rules_are_used():
    x = exact([0.0, 1.0, 2.0], dtype=nv.float64)
    assert _clipped_exp(x).tolist() == pytest.approx(np.exp([0, 1, 2]).tolist())
    g = nv.grad(lambda a: nv.sum(_clipped_exp(a)))(x)
    assert g.tolist() == [1.0, 1.0, 1.0]
    _, (t,) = nv.jvp(_clipped_exp, [x], [exact([0.5, 0.1, 1.0], dtype=nv.float64)])
    np.testing.assert_allclose(np.array(t), [0.5, 0.1 * np.e, 1.0])
    # without overrides, the function's own rules
    plain = nv.custom_function(lambda a, b: a * nv.sin(b))
    ga, gb = nv.grad(lambda a, b: nv.sum(plain(a, b)), argnums=(0, 1))(x, x)
    np.testing.assert_allclose(np.array(ga), np.sin([0, 1, 2]), rtol=1e-12)
    np.testing.assert_allclose(np.array(gb), np.array(x) * np.cos([0, 1, 2]), rtol=1e-12)
    _, (t,) = nv.jvp(lambda b: plain(x, b), [x], [nv.ones_like(x)])
    np.testing.assert_allclose(np.array(t), np.array(x) * np.cos([0, 1, 2]), rtol=1e-12)


def test_custom_function_with_trees_and_several_outputs():
    @nv.custom_function
    def f(p, x):
        return {"a": p["w"] * x, "b": x * 2.0}

    @f.vjp
    def f_vjp(primals, cotangents, outputs):
        p, x = primals
        return {"w": cotangents["a"] * 100.0}, cotangents["b"] * 0.0

    p = {"w": exact([1.0, 2.0])}
    x = exact([3.0, 4.0])
    gp, gx = nv.grad(lambda p, x: nv.sum(f(p, x)["a"] + f(p, x)["b"]), argnums=(0, 1))(p, x)
    assert gp["w"].tolist() == [100.0, 100.0] and gx.tolist() == [0.0, 0.0]


def test_custom_function_vmap_override_and_default():
    calls = []

    @nv.custom_function
    def f(x, y):
        return x * y

    @f.vmap
    def f_vmap(inputs, axes):
        calls.append(axes)
        x, y = inputs
        xa, ya = axes
        x = x if xa == 0 else nv.moveaxis(x, xa, 0)
        return x * y + 1000.0, 0

    xs = exact(RNG.normal(size=(3, 2)).astype(np.float32))
    y = exact(np.float32(2.0))
    out = nv.vmap(f, in_axes=(1, None))(xs, y)
    assert calls == [(1, None)]
    np.testing.assert_allclose(np.array(out), np.array(xs).T * 2 + 1000.0, rtol=1e-6)
    g = nv.custom_function(lambda x, y: x * y)
    out = nv.vmap(g, in_axes=(1, None), out_axes=1)(xs, y)
    np.testing.assert_allclose(np.array(out), np.array(xs) * 2, rtol=1e-6)


def test_vmap_of_grad_through_custom_vjp():
    xs = exact([[0.0, 3.0], [1.0, -5.0]], dtype=nv.float64)
    g = nv.vmap(nv.grad(lambda a: nv.sum(_clipped_exp(a))))(xs)
    assert np.array(g).tolist() == [[1.0, 1.0], [1.0, np.exp(-5.0)]]


def test_custom_function_outside_transforms_is_a_plain_call():
    x = exact([1.0])
    out = _clipped_exp(x)
    assert out.primitive is None or out.primitive.name != "custom_function"


def test_grad_of_vmap_keeps_custom_rules():
    xs = exact([[0.0, 1.0, 2.0], [3.0, -5.0, 0.5]], dtype=nv.float64)  # batch on axis 1
    w = exact([1.0, 2.0], dtype=nv.float64)

    @nv.custom_function
    def f(x, w):
        return nv.exp(x) * w

    @f.vjp
    def f_vjp(primals, cotangent, output):
        x, w = primals
        return nv.clip(cotangent * output, -1.0, 1.0), cotangent * 0.0 + 7.0

    @f.jvp
    def f_jvp(primals, tangents):
        return nv.clip(tangents[0] * nv.exp(primals[0]) * primals[1], -1.0, 1.0)

    loss = lambda xs, w: nv.sum(nv.vmap(f, in_axes=(1, None), out_axes=1)(xs, w))  # noqa: E731
    gx, gw = nv.grad(loss, argnums=(0, 1))(xs, w)
    expected = np.clip(np.exp(np.array(xs)) * np.array(w)[:, None], -1, 1)
    np.testing.assert_allclose(np.array(gx), expected)
    # w is shared by the batch: the per-example cotangents (7 each) are summed over it
    assert gw.tolist() == [7.0 * 3, 7.0 * 3]
    _, (t,) = nv.jvp(
        lambda a: nv.vmap(f, in_axes=(1, None), out_axes=1)(a, w), [xs], [nv.ones_like(xs)]
    )
    np.testing.assert_allclose(np.array(t), expected)
