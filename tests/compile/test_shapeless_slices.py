"""Shapeless replays of slices, slice updates and gradients: the slice bounds (ints, negative
ones, Python slices) are normalised again on each replay's shapes, as the uncompiled call
normalises them; the gradients of broadcasts, reductions, reshapes and products sum over the
axes that each replay's shapes broadcast. Compiled equals uncompiled bit for bit on every
shape, or both raise; what cannot be replayed is refused by name."""

import numpy as np
import pytest

import nuvec as nv

from conftest import assert_same


def arange(*shape):
    n = int(np.prod(shape))
    return nv.array((np.arange(n, dtype=np.float32) - n / 3).reshape(shape))


def same_as_uncompiled(fn, *shapes, traces=1):
    g = nv.compile(fn, shapeless=True)
    for s in shapes:
        x = arange(*s)
        try:
            want = fn(x)
            nv.eval(want)
        except ValueError:  # IndexError of an index out of bounds is one too
            with pytest.raises(ValueError):
                nv.eval(g(x))
            continue
        got = g(x)
        want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
        for w, o in zip(want, got):
            assert o.shape == w.shape
            assert_same(np.asarray(o), np.asarray(w))
    assert g.stats()["traces"] == traces
    return g


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x[:2],
        lambda x: x[-1],
        lambda x: x[1:-1] * 2,
        lambda x: x[::-1] + 1,
        lambda x: x[2:0:-1],
        lambda x: x[::2],
    ],
)
def test_slices_of_a_vector_follow_the_replayed_length(fn):
    same_as_uncompiled(fn, (3,), (5,), (1,), (0,), (2,))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x[:, -1, :],
        lambda x: x[1:, None, ::2],
        lambda x: x[..., 1],
        lambda x: x[0, ..., -2:],
        lambda x: x[-1] - x[0],
    ],
)
def test_slices_of_a_3d_array_follow_the_replayed_shape(fn):
    same_as_uncompiled(fn, (1, 1, 32), (2, 3, 4), (4, 2, 3), (3, 1, 1), (2, 0, 3))


def _set_int(x):
    x[2] = nv.array([3.0])
    return x


def _set_slice(x):
    x[1:, None, -1] = 7
    return x * 1


def _set_rows(x):
    x[-1, 1:3] = nv.array([[1.0, 2.0]])
    return x


@pytest.mark.parametrize(
    "fn",
    [
        _set_int,
        lambda x: x.at[1:].add(2.0),
        lambda x: x.at[::2].multiply(x[::2]),
        lambda x: x.at[-1].maximum(0.5),
    ],
)
def test_slice_updates_of_a_vector(fn):
    same_as_uncompiled(fn, (4,), (5,), (2,), (1,), (0,))


@pytest.mark.parametrize("fn", [_set_slice, _set_rows])
def test_slice_updates_of_a_matrix(fn):
    same_as_uncompiled(fn, (2, 4), (3, 5), (3, 2), (1, 1), (0, 2))


@pytest.mark.parametrize(
    "fn",
    [
        nv.grad(lambda x: (x[1:, -1] ** 2).sum()),
        nv.grad(lambda x: nv.transpose(x)[1:].sum()),
        nv.grad(lambda x: (x * x[:1]).sum()),
        nv.grad(lambda x: (x @ x.T).sum()),
        nv.grad(lambda x: nv.mean(x.reshape(-1)) + nv.var(x, axis=0).sum()),
        nv.grad(lambda x: nv.max(x, axis=1).sum() + nv.prod(x, axis=0).sum()),
        nv.grad(lambda x: nv.logsumexp(x, axis=1).sum() + nv.sum(x, axis=1).sum()),
        nv.grad(lambda x: nv.flatten(x).sum() + nv.squeeze(nv.expand_dims(x, 0), 0).sum()),
        lambda x: nv.grad(lambda a, b: (a * b).sum())(x[:1], x),
        lambda x: nv.grad(lambda a, b: (a @ b).sum(), argnums=(0, 1))(x[:, None], x.T),
    ],
)
def test_gradients_sum_over_the_replayed_broadcast_axes(fn):
    same_as_uncompiled(fn, (4, 3), (1, 3), (6, 2), (1, 1), (3, 1))


def test_gradient_of_a_slice_update():
    def f(x):
        x[0] = 2.0
        return (x * x).sum()

    same_as_uncompiled(nv.grad(f), (3,), (5,), (1,))


def test_forward_derivatives_and_vmap_of_slices():
    same_as_uncompiled(lambda x: nv.jvp(lambda r: r[1:] * 2, (x,), (x,))[1][0], (3, 4), (5, 2))
    same_as_uncompiled(lambda x: nv.vmap(lambda r: r[1:] * 2)(x), (3, 4), (5, 2), (2, 1))


def test_forward_derivative_of_a_scalar_broadcast_against_the_input():
    # the Python scalar is broadcast against r: only r's tangent reaches the product
    same_as_uncompiled(lambda x: nv.jvp(lambda r: r * 2, (x,), (x,))[1][0], (3, 4), (2, 2))


_I = nv.array([0, 1])


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, i: x[:, _I],
        lambda x, i: x[_I, 1:],
        lambda x, i: x[i, 1:],
        lambda x, i: x[1:, i],
        lambda x, i: x[i, ::2] * 2.0,
    ],
)
def test_an_index_array_with_slices_is_refused_by_name(fn):
    # the slice's bounds are the traced sizes: refused, never replayed on the traced shape
    g = nv.compile(fn, shapeless=True)
    for shape in ((3, 4), (5, 6)):
        with pytest.raises(ValueError, match=r"'slice' \(at .*test_shapeless_slices.py"):
            g(arange(*shape), nv.array([0, 1]))


def test_a_constant_of_a_literal_shape_keeps_broadcasting():
    # its elements are all equal, but it is the user's (4, 3), not a traced shape's
    w = nv.full((4, 3), 2.0)
    same_as_uncompiled(lambda x: x * nv.ones((4, 3)), (4, 3), (1, 3), (1, 1))
    same_as_uncompiled(lambda x: x + w, (4, 3), (1, 3), (4, 1))
    same_as_uncompiled(lambda x: x - nv.zeros_like(w), (4, 3), (1, 3))
    same_as_uncompiled(nv.grad(lambda x: (x * nv.ones((4, 3))).sum()), (4, 3), (1, 3), (1, 1))


def test_gradients_of_operands_equal_at_the_trace_but_broadcast_at_a_replay():
    w = nv.array(np.arange(12, dtype=np.float32).reshape(4, 3))
    same_as_uncompiled(nv.grad(lambda x: (x * w).sum()), (4, 3), (1, 3), (4, 1), (1, 1))
    same_as_uncompiled(nv.grad(lambda x: nv.where(w > 3, x, 0.0).sum()), (4, 3), (1, 3))
    same_as_uncompiled(lambda x: x * x + x, (4, 3), (1, 3), (0, 2))
