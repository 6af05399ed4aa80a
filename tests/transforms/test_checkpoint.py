"""nv.checkpoint: the same values and gradients as the function, the gradient from a rerun."""

import numpy as np

import nuvec as nv


def test_checkpoint_values_and_gradients_match():
    def g(x, y):
        return nv.sum(nv.exp(x) * y), x * y

    f = nv.checkpoint(g)
    x, y = nv.array([0.5, 1.0]), nv.array([2.0, 3.0])
    assert nv.array_equal(f(x, y)[1], g(x, y)[1]).item()

    def loss(fn):
        return lambda a, b: fn(a, b)[0] + fn(a, b)[1].sum()

    got = nv.grad(loss(f), argnums=(0, 1))(x, y)
    want = nv.grad(loss(g), argnums=(0, 1))(x, y)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-6)


def test_checkpoint_reruns_the_function_for_the_gradient():
    calls = [0]

    def body(x):
        calls[0] += 1
        return nv.sin(x) * x

    f = nv.checkpoint(body)
    nv.grad(lambda x: f(x).sum())(nv.array([1.0, 2.0]))
    assert calls[0] == 2  # the forward pass, then the recomputation in the vjp
    calls[0] = 0
    assert abs(f(nv.array([1.0])).item() - np.sin(1.0)) < 1e-6
    assert calls[0] == 1


def test_checkpoint_under_vmap_and_compile():
    f = nv.checkpoint(lambda x: nv.tanh(x) ** 2)
    x = nv.array(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    g = nv.vmap(nv.grad(lambda r: f(r).sum()))(x)
    t = np.tanh(np.array(x))
    np.testing.assert_allclose(np.array(g), 2 * t * (1 - t**2), rtol=1e-5)
    c = nv.compile(nv.grad(lambda r: f(r).sum()))
    np.testing.assert_array_equal(np.array(c(x)), np.array(nv.grad(lambda r: f(r).sum())(x)))
