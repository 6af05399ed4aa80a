"""nv.random where MLX defines the exact behaviour: its bit stream (the expected words are
MLX's, which were generated from JAX's threefry), default dtypes, and the edge cases of
bernoulli, truncated_normal, randint, categorical and multivariate_normal."""

import numpy as np
import pytest

import nuvec as nv


def test_bits_equal_mlx_stream_for_odd_and_even_lengths():
    k = nv.random.key(0)
    assert nv.random.bits((3, 1), key=k).tolist() == [[4146024105], [1351547692], [2718843009]]
    expected = {
        5: [20137, 63263, 64300, 20622, 16513],
        6: [20137, 63263, 64300, 20622, 16513, 41486],
        7: [20137, 63263, 1497, 14756, 16513, 41486, 44591],
        8: [20137, 63263, 1497, 14756, 16513, 41486, 44591, 19423],
    }
    for n, words in expected.items():
        assert nv.random.bits((n,), 2, key=k).tolist() == words
    assert nv.random.bits((), key=k).item() == 1797259609
    assert nv.random.bits((), 1, key=nv.random.key(1)).item() == 53


def test_bits_of_many_keys_equal_one_key_at_a_time():
    keys = nv.random.split(nv.random.key(3), 4)
    both = np.asarray(nv.vmap(lambda k: nv.random.bits((7,), key=k))(keys))
    for i in range(4):
        assert both[i].tolist() == nv.random.bits((7,), key=keys[i]).tolist()


@pytest.mark.parametrize(
    "sampler",
    [
        lambda **kw: nv.random.uniform(shape=(2,), **kw),
        lambda **kw: nv.random.normal((2,), **kw),
        lambda **kw: nv.random.gumbel((2,), **kw),
        lambda **kw: nv.random.laplace((2,), **kw),
        lambda **kw: nv.random.truncated_normal(-1.0, 1.0, (2,), **kw),
    ],
)
def test_dtype_none_is_float32(sampler):
    assert sampler(dtype=None).dtype == nv.float32


def test_randint_dtype_none_bool_and_wide_bounds():
    assert nv.random.randint(0, 1, dtype=None).dtype == nv.int32
    k = nv.random.key(0)
    a = nv.random.randint(0, 2, (1000,), dtype=nv.bool_, key=k)
    assert sorted(set(a.tolist())) == [False, True]
    lo = 2**40
    r = np.asarray(nv.random.randint(lo, lo + 1024, (10000,), dtype=nv.int64, key=k))
    assert r.min() >= lo and r.max() < lo + 1024 and len(set(r.tolist())) > 900


def test_complex_normal():
    z = np.asarray(nv.random.normal((20000,), dtype=nv.complex64, key=nv.random.key(2)))
    assert z.dtype == np.complex64
    # standard complex normal: each part of variance 1/2, independent
    assert abs(z.real.var() - 0.5) < 0.03 and abs(z.imag.var() - 0.5) < 0.03
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 0.05
    k = nv.random.key(5)
    base = np.asarray(nv.random.normal((3,), dtype=nv.complex64, key=k))
    s = nv.random.normal((3,), dtype=nv.complex64, scale=2.0, loc=3.0 + 1j, key=k)
    np.testing.assert_allclose(np.asarray(s), 2.0 * base + (3.0 + 1j), rtol=1e-6)


def test_truncated_normal_with_crossed_bounds_gives_lower():
    assert nv.all(nv.random.truncated_normal(2.0, -2.0, (5,)) == 2.0).item()


def test_bernoulli_needs_float_p():
    with pytest.raises(ValueError, match="bernoulli: p"):
        nv.random.bernoulli(0, [2])
    assert nv.random.bernoulli(nv.array([2.0, -2.0])).tolist() == [True, False]


def test_categorical_zero_samples():
    assert nv.random.categorical(nv.zeros((20,)), num_samples=0).shape == (0,)
    with pytest.raises(ValueError, match="num_samples"):
        nv.random.categorical(nv.zeros((20,)), num_samples=-1)


@pytest.mark.parametrize("dtype", [nv.int32, nv.uint8, nv.float16, nv.bfloat16])
def test_multivariate_normal_rejects_dtypes(dtype):
    with pytest.raises(ValueError, match="multivariate_normal: dtype"):
        nv.random.multivariate_normal(nv.zeros((2,)), nv.eye(2), dtype=dtype)


def test_laplace_scales_in_the_sample_dtype():
    k = nv.random.key(0)
    a = nv.random.laplace((3, 2), nv.float16, loc=1.0, scale=2.0, key=k)
    b = 2.0 * nv.random.laplace((3, 2), nv.float16, key=k) + 1.0
    assert a.dtype == nv.float16 and nv.array_equal(a, b).item()
