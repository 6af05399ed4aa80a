"""vjp, jvp, grad and value_and_grad: API, trees, errors, tracers, evaluation inside."""

import collections

import numpy as np
import pytest

import nuvec as nv
from nuvec.transforms import is_tracer

from ._util import exact, numeric_grad


def test_mlx_examples():
    out, dout = nv.jvp(lambda x: 2 * x, [exact(1.0)], [exact(2.0)])
    assert out[0].item() == 2.0 and dout[0].item() == 4.0
    _, out = nv.jvp(lambda x, y: x * y, [exact(4.0), exact(2.0)], [exact(3.0), exact(2.0)])
    assert out[0].item() == 4.0 * 2.0 + 2.0 * 3.0
    _, out = nv.jvp(
        lambda x, y, z: (x * y, y * z),
        [exact(2.0), exact(4.0), exact(6.0)],
        [exact(1.0), exact(3.0), exact(1.0)],
    )
    assert [o.item() for o in out] == [4.0 + 6.0, 4.0 + 18.0]
    _, dout = nv.vjp(
        lambda x, y, z: (x * y, y * z),
        [exact(2.0), exact(4.0), exact(6.0)],
        [exact(1.0), exact(3.0)],
    )
    assert [d.item() for d in dout] == [4.0, 2.0 + 18.0, 12.0]


def test_grad_argnums_argnames_and_structure():
    def f(a, b, *, c):
        return nv.sum(a["w"] * b[0] + c * c)

    a = {"w": exact([1.0, 2.0])}
    b = (exact([3.0, 4.0]), 7)
    c = exact(5.0)
    ga = nv.grad(f)(a, b, c=c)
    assert set(ga) == {"w"} and ga["w"].tolist() == [3.0, 4.0]
    ga, gb = nv.grad(f, argnums=(0, 1))(a, [b[0]], c=c)
    assert gb[0].tolist() == [1.0, 2.0] and isinstance(gb, list)
    pos, kw = nv.grad(f, argnums=0, argnames="c")(a, b, c=c)
    assert pos["w"].tolist() == [3.0, 4.0] and kw["c"].item() == 20.0
    pos, kw = nv.grad(f, argnames=["c"])(a, b, c=c)
    assert pos is None and kw["c"].item() == 20.0
    g = nv.grad(f, argnums=-1)(a, [b[0]], c=c)
    assert g[0].tolist() == [1.0, 2.0]


def test_grad_of_namedtuple_and_unused_input():
    P = collections.namedtuple("P", "w b")
    g = nv.grad(lambda p, x: nv.sum(p.w * x))(P(exact([2.0]), exact([9.0])), exact([3.0]))
    assert type(g) is P and g.w.tolist() == [3.0] and g.b.tolist() == [0.0]


def test_value_and_grad_with_aux_outputs():
    def loss(w, x):
        y = w * x
        return nv.sum(y * y), y, "tag"

    (l, y, tag), g = nv.value_and_grad(loss)(exact([1.0, 2.0]), exact([3.0, 4.0]))
    assert l.item() == 9.0 + 64.0 and y.tolist() == [3.0, 8.0] and tag == "tag"
    assert g.tolist() == [2 * 3.0 * 3.0, 2 * 8.0 * 4.0]


def test_errors_name_the_transform():
    with pytest.raises(ValueError, match="grad: the function must return a scalar"):
        nv.grad(lambda x: x * 2)(nv.ones(3))
    with pytest.raises(ValueError, match="value_and_grad: argnums 3 is out of range"):
        nv.value_and_grad(lambda x: x, argnums=3)(nv.ones(()))
    with pytest.raises(ValueError, match="grad: argument 0 holds a float"):
        nv.grad(lambda x: x * 2)(1.5)
    with pytest.raises(ValueError, match="grad: argname 'z'"):
        nv.grad(lambda x, z=1: x, argnames="z")(nv.ones(()))
    with pytest.raises(ValueError, match="vjp: 2 cotangents given for 1 outputs"):
        nv.vjp(lambda x: x, [nv.ones(2)], [nv.ones(2), nv.ones(2)])
    with pytest.raises(ValueError, match="vjp: a cotangent of shape"):
        nv.vjp(lambda x: x, [nv.ones(2)], [nv.ones(3)])
    with pytest.raises(ValueError, match="jvp: 1 tangents given for 2 primals"):
        nv.jvp(lambda x, y: x, [nv.ones(2), nv.ones(2)], [nv.ones(2)])
    with pytest.raises(TypeError, match="argnums must be ints"):
        nv.grad(lambda x: x, argnums="0")


def test_identity_and_constant_outputs():
    _, (g,) = nv.vjp(lambda x: x, [exact([1.0, 2.0])], [exact([5.0, 6.0])])
    assert g.tolist() == [5.0, 6.0]
    c = exact(3.0)
    assert nv.grad(lambda x: c * 1.0)(exact(1.0)).item() == 0.0
    _, (t,) = nv.jvp(lambda x: c + 0.0, [exact(1.0)], [exact(1.0)])
    assert t.item() == 0.0
    assert nv.grad(lambda x, y: nv.sum(x * y))(exact([2.0]), exact([2.0])).tolist() == [2.0]


def test_same_array_twice_and_reused_intermediates():
    x = exact(3.0)
    gx, gy = nv.grad(lambda a, b: a * b * a, argnums=(0, 1))(x, x)
    assert gx.item() == 2 * 3.0 * 3.0 and gy.item() == 9.0

    def f(a):
        b = nv.exp(a)
        return b * b + b

    assert np.isclose(nv.grad(f)(exact(0.5)).item(), 2 * np.exp(1.0) + np.exp(0.5), rtol=1e-6)


def test_stop_gradient():
    f = lambda x: x * nv.stop_gradient(x * x)  # noqa: E731
    assert nv.grad(f)(exact(3.0)).item() == 9.0
    _, (t,) = nv.jvp(f, [exact(3.0)], [exact(1.0)])
    assert t.item() == 9.0


def test_evaluating_inside_the_function_keeps_the_gradient():
    seen = []

    def f(x):
        y = nv.sin(x) * 2.0
        nv.eval(y)
        seen.append((is_tracer(x), is_tracer(y), float(y.sum().item())))
        z = nv.exp(y)
        print(z)  # evaluation through printing
        return nv.sum(z)

    x = exact([0.1, 0.2], dtype=nv.float64)
    g = nv.grad(f)(x)
    expected = np.exp(2 * np.sin([0.1, 0.2])) * 2 * np.cos([0.1, 0.2])
    np.testing.assert_allclose(np.array(g), expected, rtol=1e-12)
    assert seen[0][:2] == (True, True)


def test_tracers_are_released_after_the_transform():
    x = exact([1.0, 2.0])
    captured = {}

    def f(a):
        captured["y"] = a * 3.0
        return nv.sum(captured["y"])

    val, g = nv.value_and_grad(f)(x)
    assert not is_tracer(captured["y"]) and not captured["y"]._tracer
    assert not val._tracer and not g._tracer and not x._tracer
    nv.eval(val, g)
    assert val.primitive is None and val.inputs == ()  # evaluated arrays detach again


def test_lazy_inputs_and_outer_graph():
    base = exact([1.0, 2.0])
    lazy = base * 2.0  # not evaluated
    g = nv.grad(lambda a: nv.sum(a * a))(lazy)
    assert g.tolist() == [4.0, 8.0]
    assert not lazy._tracer


def test_finite_differences_of_a_small_network():
    rng = np.random.default_rng(1)
    w1, b1 = rng.normal(size=(3, 4)), rng.normal(size=(4,))
    x = rng.normal(size=(5, 3))

    def loss(w, b):
        h = nv.tanh(nv.matmul(exact(x), w) + b)
        return nv.mean(nv.logaddexp(h, -h) * nv.sigmoid(h))

    gw, gb = nv.grad(loss, argnums=(0, 1))(exact(w1), exact(b1))
    nw, nb = numeric_grad(loss, [w1, b1])
    np.testing.assert_allclose(np.array(gw), nw, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(np.array(gb), nb, rtol=1e-5, atol=1e-8)


def test_float32_gradients_keep_dtype():
    g = nv.grad(lambda x: nv.sum(nv.exp(x.astype(nv.float16)).astype(nv.float32)))(nv.ones(3))
    assert g.dtype == nv.float32
    assert np.allclose(np.array(g), np.e, rtol=1e-2)


@pytest.mark.parametrize("side", ["right", "left", "batched"])
def test_matmul_grad_of_transposed_operand_is_contiguous(side):
    """``x @ w.T`` (and ``w.T @ x``): w's gradient comes out in w's own layout (a product
    computed as ``g.T @ x``, transposed twice), so optimizers read it contiguously; values
    match NumPy's, and compiled runs give the same bits as eager ones."""
    rng = np.random.default_rng(3)
    if side == "batched":
        w0 = rng.standard_normal((2, 5, 4)).astype(np.float32)
        x0 = rng.standard_normal((2, 3, 4)).astype(np.float32)
    else:
        w0 = rng.standard_normal((5, 4)).astype(np.float32)
        x0 = rng.standard_normal((3, 4) if side != "left" else (5, 3)).astype(np.float32)
    g0 = rng.standard_normal((3, 5) if side != "left" else (4, 3)).astype(np.float32)
    if side == "batched":
        g0 = rng.standard_normal((2, 3, 5)).astype(np.float32)

    def f(w, x):
        y = x @ nv.swapaxes(w, -1, -2) if side != "left" else nv.swapaxes(w, -1, -2) @ x
        return nv.sum(y * exact(g0))

    eager = nv.grad(f, argnums=(0, 1))(exact(w0), exact(x0))
    compiled = nv.compile(nv.grad(f, argnums=(0, 1)))(exact(w0), exact(x0))
    gw = np.array(eager[0])
    if side == "left":
        want_w, want_x = x0 @ g0.T, w0 @ g0  # d/dw of sum(g * (w.T @ x))
    else:
        want_w = np.swapaxes(g0, -1, -2) @ x0
        want_x = g0 @ w0
    np.testing.assert_allclose(gw, want_w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array(eager[1]), want_x, rtol=1e-5, atol=1e-5)
    assert eager[0]._data.flags.c_contiguous
    for e, c in zip(eager, compiled):
        assert np.array_equal(np.array(e), np.array(c))


def test_comparison_tangent_is_float32_zeros():
    x = nv.array([1.0, -2.0, 3.0])
    for op in (nv.greater, nv.less, nv.equal, nv.not_equal):
        _, (t,) = nv.jvp(lambda v, op=op: op(v, 0.0), [x], [nv.ones_like(x)])
        assert t.dtype == nv.float32 and t.tolist() == [0.0, 0.0, 0.0]


def test_grad_needs_a_scalar_output_value_and_grad_takes_aux():
    import pytest

    x = nv.ones((2,))
    with pytest.raises(ValueError, match="grad: the function must return a scalar array"):
        nv.grad(lambda v: (nv.sum(v), {"aux": v}))(x)
    (loss, aux), g = nv.value_and_grad(lambda v: (nv.sum(v * v), {"aux": v}))(x)
    assert loss.item() == 2.0 and g.tolist() == [2.0, 2.0]


def test_grad_writes_assigned_items_back_to_the_callers_containers():
    def fun(arrs):
        arrs[1] = arrs[0] * 3
        arrs[2]["w"] = nv.array(5.0)
        return arrs[1] + arrs[0]

    a0, a1, d = nv.array(2.0), nv.array(7.0), {"w": nv.array(1.0), "v": nv.array(4.0)}
    v = d["v"]
    arrs = [a0, a1, d]
    g = nv.grad(fun)(arrs)
    assert g[0].item() == 4.0 and g[1].item() == 0.0
    assert arrs[0] is a0 and arrs[2] is d and d["v"] is v  # untouched items stay themselves
    assert arrs[1] is not a1 and arrs[1].item() == 6.0  # assigned ones keep their new value
    assert d["w"].item() == 5.0
    assert nv.grad(lambda x: x * arrs[1])(nv.array(1.0)).item() == 6.0


def test_divmod_has_zero_derivatives_and_grad_needs_a_0d_loss():
    def fun(x):
        q, r = nv.divmod(x, nv.array(3.0))
        return q, -r

    _, (dq, dr) = nv.jvp(fun, [nv.array(7.0)], [nv.array(1.0)])
    assert dq.item() == 0.0 and dr.item() == 0.0  # as MLX's divmod primitive
    assert nv.grad(lambda x: nv.divmod(x, 3.0)[1])(nv.array(7.0)).item() == 0.0
    assert nv.remainder(nv.array(7.5, nv.float16), 2.0).dtype == nv.float16
    assert nv.divmod(nv.array(7.5, nv.float16), 2.0)[1].dtype == nv.float16
    with pytest.raises(ValueError, match=r"grad: the function must return a scalar.*\(1, 1\)"):
        nv.grad(lambda x: nv.sum(x, keepdims=True))(nv.ones((2, 2)))


def test_async_eval_refuses_traced_arrays():
    def fun(x):
        y = x + 1.0
        nv.async_eval(y)
        return nv.exp(y)

    with pytest.raises(ValueError, match="async_eval: cannot evaluate arrays that a transform"):
        nv.grad(fun)(nv.array(1.0))
    with pytest.raises(ValueError, match="async_eval"):
        nv.vmap(fun)(nv.ones((2, 2)))
    y = nv.array(1.0) + 1
    nv.async_eval(y)  # outside a transform it evaluates
    assert y.item() == 2.0
    g = nv.grad(lambda x: (nv.eval(x * 2), nv.sum(x * x))[1])(nv.array(3.0))
    assert g.item() == 6.0  # nv.eval inside a transform still works


def test_jvp_carries_integer_tangents_through_integer_arithmetic():
    a, t = nv.arange(4), nv.array([3, 2, 1, 0])
    for f, want in ((nv.sum, 6), (nv.prod, 18), (nv.min, 3), (nv.max, 0)):
        (tangent,) = nv.jvp(f, (a,), (t,))[1]
        assert tangent.dtype == nv.int32 and tangent.item() == want  # as MLX
    (tangent,) = nv.jvp(lambda x: x * 3 + 1, [a], [t])[1]
    assert tangent.tolist() == [9, 6, 3, 0]
    (tangent,) = nv.jvp(lambda x: x > 1, [nv.array([1.0, 2.0])], [nv.ones(2)])[1]
    assert tangent.dtype == nv.float32 and tangent.tolist() == [0.0, 0.0]  # bools: zeros
