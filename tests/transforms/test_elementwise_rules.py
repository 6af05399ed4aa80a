"""Derivative and vmap rules of every differentiable element-wise primitive.

Gradients against central finite differences in float64 over broadcasting shapes; jvp against
vjp (the same Jacobian); vmap against a Python loop over the batch with in/out axes not 0.
"""

import numpy as np
import pytest

import nuvec as nv
from nuvec.codegen.optable import OPS
from nuvec.primitives.elementwise import PREDICATES

from ._util import exact, jacobian_by_jvp, jacobian_by_vjp, numeric_grad

RNG = np.random.default_rng(0)

# op -> (low, high) of a domain where it is smooth
UNARY = {
    "sqrt": (0.5, 2.0),
    "rsqrt": (0.5, 2.0),
    "reciprocal": (0.5, 2.0),
    "exp": (-1.0, 1.0),
    "expm1": (-1.0, 1.0),
    "log": (0.5, 2.0),
    "log1p": (-0.5, 1.0),
    "log2": (0.5, 2.0),
    "log10": (0.5, 2.0),
    "sin": (-2.0, 2.0),
    "cos": (-2.0, 2.0),
    "tan": (-1.0, 1.0),
    "arcsin": (-0.8, 0.8),
    "arccos": (-0.8, 0.8),
    "arctan": (-2.0, 2.0),
    "sinh": (-1.0, 1.0),
    "cosh": (-1.0, 1.0),
    "tanh": (-1.5, 1.5),
    "arcsinh": (-2.0, 2.0),
    "arccosh": (1.2, 3.0),
    "arctanh": (-0.8, 0.8),
    "sigmoid": (-3.0, 3.0),
    "erf": (-1.5, 1.5),
    "erfinv": (-0.8, 0.8),
    "abs": (0.2, 1.0),
    "negative": (-1.0, 1.0),
    "square": (-1.0, 1.0),
}
# op -> (domain of a, domain of b)
BINARY = {
    "add": ((-1, 1), (-1, 1)),
    "subtract": ((-1, 1), (-1, 1)),
    "multiply": ((-1, 1), (-1, 1)),
    "divide": ((-1, 1), (0.5, 2)),
    "power": ((0.5, 2), (-1.5, 1.5)),
    "maximum": ((-1, 1), (-1, 1)),
    "minimum": ((-1, 1), (-1, 1)),
    "logaddexp": ((-2, 2), (-2, 2)),
    "arctan2": ((-1, 1), (0.3, 1)),
    "remainder": ((0.1, 0.9), (1.2, 1.8)),
}
ZERO_GRAD = ["floor", "ceil", "round", "sign"]


def _draw(lo, hi, shape):
    return RNG.uniform(lo, hi, size=shape)


def _signed(op, x):
    # abs away from 0 but on both signs
    if op == "abs":
        return x * np.where(RNG.random(x.shape) < 0.5, -1.0, 1.0)
    return x


def test_every_differentiable_op_has_a_test():
    from nuvec.ops import elementwise as ew

    float_ops = set(ew._FLOAT_UNARY) | {"abs", "negative", "square"}
    assert float_ops <= set(UNARY)
    # every derivative in the op table is checked against finite differences here (floor
    # division's partials are constant zeros)
    with_rules = {o for o, r in OPS.items() if r.derivative is not None}
    assert with_rules - {"floor_divide"} <= set(UNARY) | set(BINARY)


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_grad_matches_finite_differences(op):
    x = _signed(op, _draw(*UNARY[op], (2, 3)))
    w = exact(RNG.normal(size=(2, 3)))
    fn = getattr(nv, op)
    f = lambda a: nv.sum(fn(a) * w)  # noqa: E731
    g = nv.grad(f)(exact(x))
    assert g.dtype == nv.float64
    (num,) = numeric_grad(f, [x])
    np.testing.assert_allclose(np.array(g), num, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_grad_with_broadcasting_matches_finite_differences(op):
    (alo, ahi), (blo, bhi) = BINARY[op]
    a = _draw(alo, ahi, (3, 1))
    b = _draw(blo, bhi, (1, 2))
    w = exact(RNG.normal(size=(3, 2)))
    fn = getattr(nv, op)
    f = lambda x, y: nv.sum(fn(x, y) * w)  # noqa: E731
    ga, gb = nv.grad(f, argnums=(0, 1))(exact(a), exact(b))
    assert ga.shape == (3, 1) and gb.shape == (1, 2)
    na, nb = numeric_grad(f, [a, b])
    np.testing.assert_allclose(np.array(ga), na, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.array(gb), nb, rtol=1e-5, atol=1e-7)


def test_binary_with_python_scalar_and_where_and_astype():
    x = _draw(-1, 1, (4,))
    c = exact([True, False, True, False])
    f = lambda a: nv.sum(
        nv.where(c, a * 3.0, nv.exp(a)) + (a.astype(nv.float32) * 2).astype(nv.float64)
    )  # noqa: E731
    g = nv.grad(f)(exact(x))
    expected = np.where(np.array(c), 3.0, np.exp(x)) + 2.0
    np.testing.assert_allclose(np.array(g), expected, rtol=1e-12)


@pytest.mark.parametrize("op", ZERO_GRAD)
def test_piecewise_constant_ops_have_zero_gradient(op):
    x = exact(_draw(-2, 2, (5,)) + 0.25)
    g = nv.grad(lambda a: nv.sum(getattr(nv, op)(a) * a))(x)
    # d/dx (h(x) * x) = h(x) where h is piecewise constant
    np.testing.assert_allclose(np.array(g), np.array(getattr(nv, op)(x)), rtol=0, atol=0)


def test_maximum_tie_splits_gradient_and_floor_divide_is_flat():
    a = exact([1.0, 2.0, 3.0])
    b = exact([1.0, 3.0, 2.0])
    ga, gb = nv.grad(lambda x, y: nv.sum(nv.maximum(x, y)), argnums=(0, 1))(a, b)
    assert ga.tolist() == [0.5, 0.0, 1.0] and gb.tolist() == [0.5, 1.0, 0.0]
    g = nv.grad(lambda x: nv.sum(nv.floor_divide(x, 0.7)))(a)
    assert g.tolist() == [0.0, 0.0, 0.0]


def test_integer_paths_carry_gradient_boolean_paths_none():
    # MLX's rule: astype passes the cotangent through (cast to the input's dtype), so an
    # integer round trip is the identity's gradient; a comparison's boolean output carries none
    x = exact([0.5, 1.5, 2.5], dtype=nv.float64)
    f = lambda a: nv.sum(a.astype(nv.int32).astype(nv.float64) + a * (a > 1.0))  # noqa: E731
    g = nv.grad(f)(x)
    assert g.tolist() == [1.0, 2.0, 2.0]


@pytest.mark.parametrize("op", ["exp", "tanh", "sqrt", "arctan", "erfinv", "sigmoid"])
def test_unary_jvp_equals_vjp_jacobian(op):
    x = exact(_draw(*UNARY[op], (2, 2)))
    fn = getattr(nv, op)
    f = lambda a: fn(a) * exact([[1.0, 2.0], [3.0, 4.0]], dtype=nv.float64)  # noqa: E731
    jv = jacobian_by_vjp(f, x)
    jf = jacobian_by_jvp(f, x)
    np.testing.assert_allclose(jv, jf, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.diag(jv), np.array(nv.grad(lambda a: nv.sum(f(a)))(x)).ravel())


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_jvp_equals_vjp_jacobian(op):
    (alo, ahi), (blo, bhi) = BINARY[op]
    a = exact(_draw(alo, ahi, (3,)))
    b = exact(_draw(blo, bhi, (3,)))
    fn = getattr(nv, op)
    for f in (lambda x: fn(x, b), lambda y: fn(a, y)):
        arg = a if f.__code__.co_varnames[0] == "x" else b
        np.testing.assert_allclose(
            jacobian_by_vjp(f, arg), jacobian_by_jvp(f, arg), rtol=1e-12, atol=1e-14
        )


def test_unary_jvp_all_ops_against_finite_differences():
    for op, (lo, hi) in sorted(UNARY.items()):
        x = _signed(op, _draw(lo, hi, (3,)))
        fn = getattr(nv, op)
        _, (t,) = nv.jvp(fn, [exact(x)], [nv.ones((3,), nv.float64)])
        eps = 1e-6
        fd = (np.array(fn(exact(x + eps))) - np.array(fn(exact(x - eps)))) / (2 * eps)
        np.testing.assert_allclose(np.array(t), fd, rtol=1e-5, atol=1e-7, err_msg=op)


def _loop(fn, xs, in_axes, out_axis):
    """Reference: fn applied to each batch slice, stacked along ``out_axis`` (NumPy)."""
    sizes = {x.shape[ax] for x, ax in zip(xs, in_axes) if ax is not None}
    (n,) = sizes
    outs = []
    for i in range(n):
        args = [exact(x if ax is None else np.take(x, i, axis=ax)) for x, ax in zip(xs, in_axes)]
        outs.append(np.array(fn(*args)))
    return np.stack(outs, axis=out_axis)


@pytest.mark.parametrize("op", sorted(set(UNARY) | set(ZERO_GRAD) | {"isnan", "logical_not"}))
def test_unary_vmap_matches_loop(op):
    lo, hi = UNARY.get(op, (-2.0, 2.0))
    x = _draw(lo, hi, (2, 3, 4)).astype(np.float32)
    fn = getattr(nv, op)
    got = nv.vmap(fn, in_axes=1, out_axes=2)(exact(x))
    ref = _loop(fn, [x], [1], 2)
    assert got.shape == ref.shape == (2, 4, 3)
    np.testing.assert_array_equal(np.array(got), ref)


@pytest.mark.parametrize(
    "op",
    sorted(
        set(BINARY)
        | PREDICATES - {"logical_not", "isnan", "isinf", "isposinf", "isneginf", "isfinite"}
        | {"bitwise_and", "left_shift"}
    ),
)
def test_binary_vmap_matches_loop(op):
    fn = getattr(nv, op)
    if op in ("bitwise_and", "left_shift"):
        a = RNG.integers(0, 8, size=(3, 2)).astype(np.int32)
        b = RNG.integers(0, 4, size=(2,)).astype(np.int32)
        b2 = RNG.integers(0, 4, size=(2, 3)).astype(np.int32)
    else:
        (alo, ahi), (blo, bhi) = BINARY.get(op, ((-1, 1), (-1, 1)))
        a = _draw(alo, ahi, (3, 2)).astype(np.float32)
        b = _draw(blo, bhi, (2,)).astype(np.float32)
        b2 = _draw(blo, bhi, (2, 3)).astype(np.float32)
    # batched with an unbatched operand; then both batched on different axes
    got = nv.vmap(fn, in_axes=(0, None), out_axes=1)(exact(a), exact(b))
    np.testing.assert_array_equal(np.array(got), _loop(fn, [a, b], [0, None], 1))
    got = nv.vmap(fn, in_axes=(0, 1), out_axes=-1)(exact(a), exact(b2))
    np.testing.assert_array_equal(np.array(got), _loop(fn, [a, b2], [0, 1], 1))


def test_select_and_astype_vmap_match_loop():
    c = RNG.random((4, 3)) < 0.5
    x = _draw(-1, 1, (3, 4)).astype(np.float32)
    y = _draw(-1, 1, (4,)).astype(np.float32)
    f = lambda cc, a, b: nv.where(cc, a, b).astype(nv.float16)  # noqa: E731
    got = nv.vmap(f, in_axes=(1, 0, None), out_axes=1)(exact(c), exact(x), exact(y))
    np.testing.assert_array_equal(np.array(got), _loop(f, [c, x, y], [1, 0, None], 1))
