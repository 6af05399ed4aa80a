"""The array core: laziness, evaluation, detaching, promotion, errors."""

import numpy as np
import pytest

import nuvec as nv


def test_lazy_until_evaluated_then_detached():
    x = nv.array([1.0, 2.0])
    y = x * 2 + 1
    assert not y.is_evaluated and y.inputs
    nv.eval(y)
    assert y.is_evaluated and y.inputs == () and y.primitive is None
    assert y.tolist() == [3.0, 5.0]


def test_weak_scalars_keep_the_array_dtype():
    assert (nv.array([1, 2], dtype=nv.float16) * 2.0).dtype == nv.float16
    assert (nv.array([1, 2]) * 2.0).dtype == nv.float32
    assert (nv.array([True]) + 1).dtype == nv.int32


@pytest.mark.parametrize(
    "a,b,out",
    [
        (nv.int8, nv.uint8, nv.int16),
        (nv.uint32, nv.int32, nv.int64),
        (nv.uint64, nv.int8, nv.float32),
        (nv.float16, nv.bfloat16, nv.float32),
        (nv.int64, nv.float16, nv.float16),
        (nv.float64, nv.complex64, nv.complex64),
        (nv.bool_, nv.uint16, nv.uint16),
    ],
)
def test_promotion_table(a, b, out):
    assert nv.promote_types(a, b) == out == nv.promote_types(b, a)


def test_broadcast_error_names_op_and_shapes():
    with pytest.raises(ValueError, match=r"add: shapes \(2, 3\) and \(4,\)"):
        nv.add(nv.zeros((2, 3)), nv.zeros((4,)))


def test_a_million_op_chain_evaluates_without_recursion():
    a = nv.array(0.0)
    one = nv.array(1.0)
    for _ in range(1_000_000):
        a = a + one
    assert a.item() == 1_000_000.0


def test_repr_in_mlx_form():
    assert repr(nv.array([1, 2])) == "array([1, 2], dtype=int32)"
    assert repr(nv.array(True)) == "array(True, dtype=bool)"


def test_numpy_conversion_copies():
    a = nv.array(np.arange(3, dtype=np.float32))
    h = np.array(a)
    h[0] = 9
    assert a.tolist() == [0.0, 1.0, 2.0]


def test_setitem_rebinds_and_earlier_readers_keep_the_old_value():
    x = nv.array([1.0, 2.0, 3.0])
    y = x * 1.0
    x[0] = 5.0
    assert x.tolist() == [5.0, 2.0, 3.0]
    assert y.tolist() == [1.0, 2.0, 3.0]
    a = nv.arange(4)
    a[:2] = a[2:]
    assert a.tolist() == [2, 3, 2, 3]


def test_transforms_see_an_input_as_it_was_before_assignment():
    def f(w):
        w[0] = w[0] * 3
        return (w * w).sum()

    assert nv.grad(f)(nv.array([1.0, 2.0])).tolist() == [18.0, 4.0]

    def g(w):
        w[0] = 7.0
        return w * 2

    assert nv.vmap(g)(nv.array([[1.0, 2.0], [3.0, 4.0]])).tolist() == [[14.0, 4.0], [14.0, 8.0]]


def test_compile_sees_an_input_as_it_was_before_assignment():
    @nv.compile
    def f(w):
        w[0] = w[0] * 3
        return (w * w).sum()

    assert f(nv.array([1.0, 2.0])).item() == 13.0
    assert f(nv.array([2.0, 2.0])).item() == 40.0  # replayed


def test_a_multi_output_node_counts_as_one_reader_of_each_input():
    a = nv.array([[2.0, 3.0], [1.0, 2.0]])
    q, r = nv.linalg.qr(a)
    assert q.siblings == (q, r) and a._readers == 1
    nv.eval(q)
    assert a._readers == 0 and r.is_evaluated


def test_the_operators_fast_paths_equal_the_public_ops():
    # same dtype and shape, a weak float or int next to a floating array (both sides), and
    # the cases the fast path leaves to the ops: promotion, broadcasting, integer division
    x = nv.array(np.linspace(-2, 3, 6, dtype=np.float32).reshape(2, 3))
    h = x.astype(nv.float16)
    i = nv.array([[1, 2, 3], [4, 5, 6]])
    cases = [
        (x + x, nv.add(x, x)),
        (x - 1.5, nv.subtract(x, 1.5)),
        (2 * x, nv.multiply(2, x)),
        (1.0 / x, nv.divide(1.0, x)),
        (h * 3.0, nv.multiply(h, 3.0)),
        (x / i, nv.divide(x, i)),
        (i / i, nv.divide(i, i)),
        (i * 2, nv.multiply(i, 2)),
        (x + nv.array([1.0, 2.0, 3.0]), nv.add(x, nv.array([1.0, 2.0, 3.0]))),
        (x * np.float32(2), nv.multiply(x, np.float32(2))),
    ]
    for got, want in cases:
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(np.array(got), np.array(want), equal_nan=True)
    assert (i / i).dtype == nv.float32 and (h * 3.0).dtype == nv.float16
    with pytest.raises(ValueError, match="add"):
        x + [1.0]
