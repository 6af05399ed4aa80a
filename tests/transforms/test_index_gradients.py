"""Gradients around indices and integers, as MLX defines them: a gather's or scatter's
indices take no gradient (a vjp that must flow into indices that depend on a differentiated
input is refused), integer arrays carry gradients in their dtype, and the permutation ops'
rules cut their (locally constant) permutations so that they can be differentiated twice."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv


def _hvp(f, x, v):
    return nv.grad(lambda a: nv.sum(nv.grad(f)(a) * v))(x)


PERMUTATIONS = {
    "sort": lambda a: nv.sort(a),
    "partition": lambda a: nv.partition(a, 2),
    "topk": lambda a: nv.topk(a, 2),
    "cummax": lambda a: nv.cummax(a, axis=0),
    "cummin": lambda a: nv.cummin(a, axis=0),
    "cummax_reverse": lambda a: nv.cummax(a, axis=0, reverse=True),
    "cummax_exclusive": lambda a: nv.cummax(a, axis=0, inclusive=False),
    "cummin_reverse_exclusive": lambda a: nv.cummin(a, axis=0, reverse=True, inclusive=False),
}


def _selection(name: str, x: np.ndarray) -> np.ndarray:
    """The 0/1 matrix P with fn(x) = P @ x for the test's x (the permutation op's Jacobian)."""
    n = len(x)
    if name in ("sort", "partition"):
        order = np.argsort(x, kind="stable")
    elif name == "topk":
        order = np.argsort(x, kind="stable")[-2:]
    else:
        pick = np.argmax if "max" in name else np.argmin
        reverse = "reverse" in name
        exclusive = "exclusive" in name
        rows = []
        for i in range(n):
            lo, hi = (i, n) if reverse else (0, i + 1)
            if exclusive:
                lo, hi = (lo + 1, hi) if reverse else (lo, hi - 1)
            rows.append(lo + pick(x[lo:hi]) if hi > lo else -1)
        order = np.array(rows)
    p = np.zeros((len(order), n))
    for r, c in enumerate(order):
        if c >= 0:
            p[r, c] = 1.0
    return p


@pytest.mark.parametrize("name", sorted(PERMUTATIONS))
def test_second_order_of_permutation_ops(name):
    # f = sum(fn(x)^2) = |P x|^2 (P the selection, locally constant): its Hessian is 2 P^T P
    x = np.array([3.0, 1.0, 2.0, 5.0])
    v = np.array([1.0, -2.0, 0.5, 1.5])
    fn = PERMUTATIONS[name]
    f = lambda a: nv.sum(fn(a) ** 2)  # noqa: E731
    p = _selection(name, x)
    got = _hvp(f, nv.array(x, dtype=nv.float64), nv.array(v, dtype=nv.float64))
    np.testing.assert_allclose(np.array(got), 2 * p.T @ p @ v, rtol=0, atol=1e-12)


def test_second_order_along_a_leading_axis():
    y = nv.array([[3.0, 1.0], [2.0, 5.0]], dtype=nv.float64)
    w = nv.array([[1.0, -2.0], [0.5, 1.5]], dtype=nv.float64)
    for fn in (lambda a: nv.sort(a, axis=0), lambda a: nv.partition(a, 1, axis=0)):
        got = _hvp(lambda a, fn=fn: nv.sum(fn(a) ** 2), y, w)
        assert got.tolist() == (2 * w).tolist()  # a permutation: the Hessian is 2 I
    got = _hvp(lambda a: nv.sum(nv.cummax(a, axis=0) ** 2), y, w)
    assert got.tolist() == [[4.0, -4.0], [0.0, 3.0]]  # 3 holds rows 0-1 of column 0


def test_cummax_vjp_keeps_small_cotangents_next_to_large_ones():
    # each element's gradient is the sum of the cotangents it owns; a difference of running
    # sums would round the 1 away beside 1e8 in float32
    x = nv.array([2.0, 3.0, 1.0])
    _, (g,) = nv.vjp(lambda a: nv.cummax(a), [x], [nv.array([1.0, 1e8, 1e8])])
    assert g.tolist() == [1.0, 2e8, 0.0]
    y = nv.array([3.0, 1.0, 2.0])  # reverse running minima [1, 1, 2], owned by 1, 1, 2
    _, (g,) = nv.vjp(lambda a: nv.cummin(a, reverse=True), [y], [nv.array([1e8, 1e8, 1.0])])
    assert g.tolist() == [0.0, 2e8, 1.0]


def test_cummax_jvp_and_vjp_agree_on_ties():
    x = nv.array([1.0, 4.0, 4.0, 2.0, 4.0])
    t = nv.array([1.0, 10.0, 100.0, 1000.0, 10000.0])
    _, (jt,) = nv.jvp(lambda a: nv.cummax(a), [x], [t])
    # the latest tie owns the running maximum
    assert jt.tolist() == [1.0, 10.0, 100.0, 100.0, 10000.0]
    _, (g,) = nv.vjp(lambda a: nv.cummax(a), [x], [nv.ones(5)])
    assert g.tolist() == [1.0, 1.0, 2.0, 0.0, 1.0]


INDEXED = [
    ("gather", lambda x, i: nv.take(x, i), lambda: [nv.ones(4), nv.array([1, 3])], (2,)),
    (
        "gather_axis",
        lambda x, i: nv.take_along_axis(x, i, axis=0),
        lambda: [nv.ones((4, 1)), nv.array([[1], [3]])],
        (2, 1),
    ),
    (
        "scatter",
        lambda x, i, u: x.at[i].add(u),
        lambda: [nv.ones(4), nv.array([1, 3]), nv.array([5.0, 6.0])],
        (4,),
    ),
    (
        "scatter_axis",
        lambda x, i, u: nv.put_along_axis(x, i, u, axis=0),
        lambda: [nv.ones((4, 1)), nv.array([[1], [3]]), nv.array([[5.0], [6.0]])],
        (4, 1),
    ),
]


@pytest.mark.parametrize("name,fun,args,out_shape", INDEXED, ids=[c[0] for c in INDEXED])
def test_vjp_into_indices_is_refused(name, fun, args, out_shape):
    with pytest.raises(ValueError, match=f"vjp of {name}: .*stop_gradient"):
        nv.vjp(fun, args(), [nv.ones(out_shape)])


@pytest.mark.parametrize("name,fun,args,out_shape", INDEXED, ids=[c[0] for c in INDEXED])
def test_indices_not_differentiated_are_fine(name, fun, args, out_shape):
    a = args()
    rest = a[1:]
    _, (g,) = nv.vjp(lambda x: fun(x, *rest), [a[0]], [nv.ones(out_shape)])
    assert g.shape == a[0].shape


def test_computed_indices_need_stop_gradient():
    w = nv.array([4.0, 3.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="stop_gradient"):
        nv.grad(lambda a: nv.take(a, nv.argsort(a)[:2]).sum())(w)
    g = nv.grad(lambda a: nv.take(a, nv.stop_gradient(nv.argsort(a)[:2])).sum())(w)
    assert g.tolist() == [0.0, 0.0, 1.0, 1.0]
    a = nv.ones((4, 1, 2, 2))

    def mm(v):
        idx = nv.reshape(nv.argsort(v)[:2], (1, 2))
        return nv.gather_mm(a, a, idx, idx).sum()

    with pytest.raises(ValueError, match="stop_gradient"):
        nv.grad(mm)(w)


def test_solve_gradient_is_not_blocked_by_its_pivots():
    a = nv.array([[1.0, 2.0], [3.0, 4.0]], dtype=nv.float64)
    b = nv.array([1.0, 1.0], dtype=nv.float64)
    g = nv.grad(lambda m: nv.sum(nv.linalg.solve(m, b, stream=nv.cpu)))(a)
    # d sum(A^-1 b) / dA = -A^-T 1 (A^-1 b)^T
    an = np.array(a)
    x = np.linalg.solve(an, np.array(b))
    np.testing.assert_allclose(np.array(g), -np.outer(np.linalg.solve(an.T, np.ones(2)), x))


def test_integer_inputs_and_outputs_have_integer_gradients():
    ints = (nv.array([1, 2, 3]), nv.array([4, 5, 6]))
    ga, gb = nv.grad(lambda t: (t[0] + 10).sum() + (t[1] * 10).sum())(ints)
    assert ga.dtype == nv.int32 and ga.tolist() == [1, 1, 1]
    assert gb.tolist() == [10, 10, 10]
    assert nv.grad(lambda x: (x * x).sum())(nv.array([1, 2, 3])).tolist() == [2, 4, 6]
    # a boolean output has a zero gradient
    g = nv.grad(lambda x: (x > 1).sum())(nv.array([0.5, 1.5]))
    assert g.tolist() == [0.0, 0.0]
    # an integer round trip passes the cotangent through (astype's rule)
    g = nv.grad(lambda x: (x.astype(nv.int32) * 2).astype(nv.float32).sum())(nv.array([1.5, 2.0]))
    assert g.tolist() == [2.0, 2.0]
