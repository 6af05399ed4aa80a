"""sort, argsort, partition, argpartition, topk against NumPy; errors; gradients against
finite differences; vmap against a loop."""

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nuvec as nv
from _helpers import REAL, arrays, host, fd_jvp_check, fd_vjp_check, vmap_check

FAST = settings(max_examples=int(os.environ.get("NUVEC_TEST_EXAMPLES", 40)), deadline=None)


def comparable(x: np.ndarray) -> np.ndarray:
    """Data NumPy can sort and compare (bfloat16 as float32, which is exact)."""
    return x.astype(np.float32) if x.dtype.name == "bfloat16" else x


@st.composite
def with_axis(draw, dtypes=REAL, min_side=0):
    x, a, name = draw(arrays(dtypes, min_side=min_side))
    if x.ndim == 0:
        return x.reshape(-1), a, name, None
    if draw(st.booleans()):
        return x.reshape(-1), a, name, None
    axis = draw(st.integers(-x.ndim, x.ndim - 1))
    return x, a, name, axis


@FAST
@given(data=with_axis())
def test_sort_matches_numpy(data):
    x, a, name, axis = data
    r = nv.sort(a, axis=axis)
    assert r.dtype.name == name
    want = np.sort(comparable(x), axis=-1 if axis is None else axis)
    np.testing.assert_array_equal(comparable(host(r)), want)


@FAST
@given(data=with_axis())
def test_argsort_is_numpys_stable_argsort(data):
    x, a, name, axis = data
    r = nv.argsort(a, axis=axis)
    assert r.dtype == nv.uint32
    want = np.argsort(comparable(x), axis=-1 if axis is None else axis, kind="stable")
    np.testing.assert_array_equal(np.asarray(r), want)


def _check_partitioned(p: np.ndarray, x: np.ndarray, kth: int, axis: int) -> None:
    p, x = np.moveaxis(p, axis, -1), np.moveaxis(x, axis, -1)
    s = np.sort(x, axis=-1)
    np.testing.assert_array_equal(np.sort(p, axis=-1), s)  # a permutation of each line
    np.testing.assert_array_equal(p[..., kth], s[..., kth])
    assert (p[..., :kth] <= p[..., kth : kth + 1]).all()
    assert (p[..., kth + 1 :] >= p[..., kth : kth + 1]).all()


@FAST
@given(data=with_axis(min_side=1), frac=st.floats(0, 0.999), negative=st.booleans())
def test_partition_and_argpartition(data, frac, negative):
    x, a, name, axis = data
    ax = -1 if axis is None else axis % x.ndim
    n = x.shape[ax]
    kth = int(frac * n)
    k_arg = kth - n if negative else kth
    p = nv.partition(a, k_arg, axis=axis)
    assert p.dtype.name == name
    _check_partitioned(comparable(host(p)), comparable(x), kth, ax)
    idx = nv.argpartition(a, k_arg, axis=axis)
    assert idx.dtype == nv.uint32
    taken = np.take_along_axis(comparable(x), np.asarray(idx).astype(np.int64), axis=ax)
    _check_partitioned(taken, comparable(x), kth, ax)


@FAST
@given(data=with_axis(), frac=st.floats(0, 1))
def test_topk_gives_the_k_largest(data, frac):
    x, a, name, axis = data
    ax = -1 if axis is None else axis % x.ndim
    n = x.shape[ax]
    k = int(round(frac * n))
    r = nv.topk(a, k, axis=axis)
    assert r.dtype.name == name
    want = np.take(np.sort(comparable(x), axis=ax), range(n - k, n), axis=ax)
    np.testing.assert_array_equal(np.sort(comparable(host(r)), axis=ax), want)


def test_nan_sorts_last_and_argsort_is_stable():
    x = nv.array([3.0, np.nan, 1.0, -np.inf, 1.0])
    r = np.asarray(nv.sort(x))
    assert r[:4].tolist() == [-np.inf, 1.0, 1.0, 3.0] and np.isnan(r[4])
    assert nv.argsort(x).tolist() == [3, 2, 4, 0, 1]
    assert nv.argsort(nv.array([1, 1, 1, 0])).tolist() == [3, 0, 1, 2]


def test_errors_name_the_op():
    with pytest.raises(
        ValueError, match="sort: axis 2 is out of bounds for an array of dimension 2"
    ):
        nv.sort(nv.ones((2, 3)), axis=2)
    with pytest.raises(ValueError, match="argsort: axis -1 is out of bounds"):
        nv.argsort(nv.array(1.0))
    with pytest.raises(ValueError, match="partition: kth=3 is out of range for axis 0 of size 3"):
        nv.partition(nv.ones(3), 3)
    with pytest.raises(ValueError, match="argpartition: kth=-4 is out of range"):
        nv.argpartition(nv.ones(3), -4)
    with pytest.raises(ValueError, match="topk: k=4 is out of range for axis 0 of size 3"):
        nv.topk(nv.ones(3), 4)
    with pytest.raises(ValueError, match="topk: k=-1"):
        nv.topk(nv.ones(3), -1)
    with pytest.raises(TypeError, match="topk: k must be an int"):
        nv.topk(nv.ones(3), 1.5)


# -- gradients and vmap ---------------------------------------------------------------------

RNG = np.random.default_rng(3)
X = RNG.standard_normal((3, 5))


@pytest.mark.parametrize(
    "f",
    [
        lambda x: nv.sort(x, axis=1),
        lambda x: nv.sort(x, axis=0),
        lambda x: nv.sort(x, axis=None),
        lambda x: nv.partition(x, 2, axis=1),
        lambda x: nv.partition(x, -1, axis=0),
        lambda x: nv.topk(x, 2, axis=1),
        lambda x: nv.topk(x, 3, axis=None),
    ],
    ids=["sort1", "sort0", "sort_flat", "partition", "partition_neg", "topk", "topk_flat"],
)
def test_sort_gradients(f):
    fd_vjp_check(f, [X])
    fd_jvp_check(f, [X])


def test_sort_gradient_follows_the_permutation():
    x = nv.array([3.0, 1.0, 2.0])
    _, (g,) = nv.vjp(nv.sort, [x], [nv.array([1.0, 10.0, 100.0])])
    assert g.tolist() == [100.0, 1.0, 10.0]


def test_index_outputs_are_not_differentiable():
    g = nv.grad(lambda v: nv.sum(v * nv.argsort(v).astype(nv.float64)))(nv.array(X[0]))
    np.testing.assert_allclose(np.asarray(g), np.argsort(X[0], kind="stable"))


@pytest.mark.parametrize(
    "f",
    [
        lambda x: nv.sort(x, axis=0),
        lambda x: nv.argsort(x, axis=1),
        lambda x: nv.sort(nv.partition(x, 1, axis=1), axis=1),  # each line permuted...
        lambda x: nv.partition(x, 1, axis=1)[:, 1],  # ...with its kth element in place
        lambda x: nv.take_along_axis(x, nv.argpartition(x, 0, axis=0), axis=0)[0],
        lambda x: nv.sort(nv.topk(x, 2, axis=-1), axis=-1),
    ],
    ids=["sort", "argsort", "partition", "partition_kth", "argpartition", "topk"],
)
@pytest.mark.parametrize("in_axis", [0, 1, 2])
def test_sort_vmap(f, in_axis):
    vmap_check(f, [RNG.standard_normal((3, 4, 5))], (in_axis,))
