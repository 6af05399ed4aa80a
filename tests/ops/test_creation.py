"""Creation operations against NumPy: constants, ranges, eye/tri, tril/triu, meshgrid; dtypes
(MLX's defaults), 0-size and scalar shapes, errors."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nuvec as nv
from _helpers import ALL, exact, npdtype, same

FEW = settings(max_examples=int(os.environ.get("NV_EXAMPLES", 30)), deadline=None)
shapes = st.lists(st.integers(0, 4), max_size=3).map(tuple)


@FEW
@given(shapes, st.sampled_from(ALL))
def test_constants(shape, dtype):
    d = npdtype(dtype)
    same(nv.zeros(shape, dtype), np.zeros(shape, d))
    same(nv.ones(shape, dtype), np.ones(shape, d))
    same(nv.full(shape, 3, dtype), np.full(shape, 3, d))
    src = exact(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    same(nv.zeros_like(src), np.zeros(shape, np.float32))
    same(nv.ones_like(nv.astype(src, dtype)), np.ones(shape, d))
    same(nv.full_like(src, 2, dtype=dtype), np.full(shape, 2, d))


def test_constant_defaults_follow_mlx():
    assert nv.zeros((2,)).dtype == nv.float32 and nv.ones(3).shape == (3,)
    assert nv.full((2,), 1).dtype == nv.int32 and nv.full((2,), 1.0).dtype == nv.float32
    assert nv.full((2,), True).dtype == nv.bool_
    same(nv.full((2, 3), exact([1, 2, 3])), np.tile(np.arange(1, 4, dtype=np.int32), (2, 1)))
    same(nv.full((2,), exact(1.5), nv.float16), np.full((2,), 1.5, np.float16))
    same(nv.full_like(nv.zeros((2,), nv.int8), 7), np.full((2,), 7, np.int8))
    with pytest.raises(ValueError, match="zeros: negative dimension"):
        nv.zeros((2, -1))
    with pytest.raises(ValueError, match="full"):
        nv.full((2, 2), exact([1, 2, 3]))


@FEW
@given(
    st.integers(-6, 6),
    st.integers(-8, 8),
    st.integers(-3, 3).filter(bool),
    st.sampled_from([None, "int32", "int64", "float32", "float16", "uint8"]),
)
def test_arange_ints(start, stop, step, dtype):
    want = npdtype(dtype or "int32")
    e = np.arange(start, stop, step)
    if dtype == "uint8":
        e = e[e >= 0] if step > 0 else e
        if (e < 0).any() or not len(e) or e[0] != start:
            return
    same(nv.arange(start, stop, step, dtype), e.astype(want))
    if stop >= 0:
        same(nv.arange(stop), np.arange(stop, dtype=np.int32))


@FEW
@given(
    st.floats(-5, 5),
    st.floats(-5, 5),
    st.sampled_from([0.25, 0.5, -0.75, 1.0, 1.5]),
    st.sampled_from([None, "float32", "float64", "bfloat16"]),
)
def test_arange_floats(start, stop, step, dtype):
    e = np.arange(start, stop, step)
    same(nv.arange(start, stop, step, dtype), e.astype(npdtype(dtype or "float32")))


@FEW
@given(
    st.floats(-10, 10),
    st.floats(-10, 10),
    st.integers(0, 9),
    st.sampled_from(["float32", "float64", "float16", "int32"]),
)
def test_linspace(start, stop, num, dtype):
    same(
        nv.linspace(start, stop, num, dtype=dtype),
        np.linspace(start, stop, num).astype(npdtype(dtype)),
    )


def test_range_errors():
    with pytest.raises(ValueError, match="arange: step"):
        nv.arange(0, 4, 0)
    with pytest.raises(ValueError, match="arange: cannot compute the length"):
        nv.arange(0, float("inf"))
    with pytest.raises(TypeError, match="arange: cannot make a range of bool"):
        nv.arange(3, dtype=nv.bool_)
    with pytest.raises(TypeError, match="arange: start"):
        nv.arange("a", 3)
    with pytest.raises(ValueError, match="linspace: num"):
        nv.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="linspace: num"):
        nv.linspace(0, 1, 2.5)


@FEW
@given(
    st.integers(0, 5),
    st.one_of(st.none(), st.integers(0, 5)),
    st.integers(-6, 6),
    st.sampled_from(ALL),
)
def test_eye_identity_tri(n, m, k, dtype):
    d = npdtype(dtype)
    same(nv.eye(n, m, k, dtype), np.eye(n, m, k, dtype=d))
    same(nv.tri(n, m, k, dtype), np.tri(n, m, k, dtype=d))
    same(nv.identity(n, dtype), np.identity(n, dtype=d))
    same(nv.eye(n), np.eye(n, dtype=np.float32))


@FEW
@given(
    st.lists(st.integers(0, 4), min_size=2, max_size=4),
    st.integers(-4, 4),
    st.sampled_from(ALL),
    st.sampled_from("cts"),
)
def test_tril_triu(shape, k, dtype, kind):
    x = (
        (np.random.default_rng(0).standard_normal(shape) * 5).astype(npdtype(dtype))
        if dtype != "bool"
        else np.random.default_rng(0).random(shape) < 0.5
    )
    if kind == "t":
        a = nv.swapaxes(exact(np.ascontiguousarray(np.swapaxes(x, -1, -2))), -1, -2)
    elif kind == "s":
        a = exact(np.repeat(x, 2, axis=0))[::2]
    else:
        a = exact(x)
    same(nv.tril(a, k), np.tril(x, k))
    same(nv.triu(a, k), np.triu(x, k))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("sizes", [(3,), (2, 3), (2, 0, 4), (1, 2, 3, 2)])
def test_meshgrid(indexing, sparse, sizes):
    xs = [np.arange(n, dtype=np.float32) * (i + 1) for i, n in enumerate(sizes)]
    outs = nv.meshgrid(*[exact(x) for x in xs], indexing=indexing, sparse=sparse)
    expected = np.meshgrid(*xs, indexing=indexing, sparse=sparse)
    assert len(outs) == len(expected)
    for o, e in zip(outs, expected):
        same(o, np.ascontiguousarray(e))


def test_creation_errors_name_the_op():
    with pytest.raises(ValueError, match="eye: n"):
        nv.eye(-1)
    with pytest.raises(TypeError, match="tri: m"):
        nv.tri(2, 1.5)
    with pytest.raises(ValueError, match="tril: the array must have at least 2"):
        nv.tril(nv.zeros((3,)))
    with pytest.raises(ValueError, match="triu"):
        nv.triu(exact(1.0))
    with pytest.raises(ValueError, match="meshgrid: indexing"):
        nv.meshgrid(nv.zeros(2), indexing="xz")


def test_tril_gradient_is_the_masked_cotangent():
    c = np.arange(1.0, 10.0).reshape(3, 3)
    _, (g,) = nv.vjp(lambda x: nv.tril(x, -1), [nv.zeros((3, 3))], [exact(c)])
    np.testing.assert_array_equal(np.asarray(g), np.tril(c, -1).astype(np.float32))


@pytest.mark.cpu_only("a writable NumPy view exists for host memory only")
@pytest.mark.parametrize("make", ["zeros", "ones", "full", "zeros_like", "full_array"])
def test_constant_fills_own_a_writable_buffer(make):
    """zeros / ones / full evaluate to a buffer of their own (as MLX's Full), not a read-only
    broadcast of one scalar: NumPy can view it writably, the allocator counts it, and a full
    of an array at its own shape is a copy."""
    from nuvec.backends.cpu import memory

    src = nv.array([[1.0, 2.0, 3.0]] * 4)
    nv.eval(src)
    made = {
        "zeros": lambda: nv.zeros((4, 3)),
        "ones": lambda: nv.ones((4, 3)),
        "full": lambda: nv.full((4, 3), 2.5),
        "zeros_like": lambda: nv.zeros_like(src),
        "full_array": lambda: nv.full((4, 3), src),
    }[make]
    before = memory.get_active_memory()
    a = made()
    nv.eval(a)
    assert memory.get_active_memory() >= before + 4 * 3 * 4
    view = np.array(a, copy=False)
    assert view.flags.writeable and view.strides == (12, 4)
    expected = np.array(a).copy()
    view[0, 0] = 7.0  # the array's own memory: the change shows, the source's does not
    assert a[0, 0].item() == 7.0 and np.array_equal(np.array(a)[1:], expected[1:])
    assert np.array_equal(np.array(src), [[1.0, 2.0, 3.0]] * 4)
    # broadcast_to stays a view (MLX's too)
    b = nv.broadcast_to(nv.array(1.0), (5, 2))
    assert np.array(b, copy=False).strides == (0, 0)


def test_constant_fills_stay_scalars_to_compile():
    """Inside a compiled function a zeros / full constant is still a broadcast of one value:
    equal results to the eager call, and the same values as a broadcast view."""

    def f(x):
        return x * nv.full(x.shape, 3.0) + nv.ones(x.shape) - nv.zeros_like(x)

    x = nv.arange(6, dtype=nv.float32).reshape(2, 3)
    cf = nv.compile(f)
    for _ in range(2):
        assert np.array_equal(np.array(cf(x)), np.array(f(x)))
    assert np.array_equal(np.array(f(x)), np.arange(6, dtype=np.float32).reshape(2, 3) * 3 + 1)
