"""nv.random: threefry bits, reproducibility, the global key, and the distributions
(moments and Kolmogorov-Smirnov / chi-square tests with fixed keys)."""

import numpy as np
import pytest
from scipy import stats

import nuvec as nv
from nuvec.backends.cpu.random import threefry2x32

N = 20000
P_MIN = 1e-3  # fixed keys: each test is deterministic; this only says "not implausible"


def K(i=0):
    return nv.random.key(i)


def test_threefry_known_answers():
    # the published Random123 known-answer vectors for threefry2x32, 20 rounds
    cases = [
        ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
        ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
    ]
    for (k0, k1), (x0, x1), expected in cases:
        with np.errstate(over="ignore"):
            y = threefry2x32(
                np.uint32(k0), np.uint32(k1), np.array([x0], np.uint32), np.array([x1], np.uint32)
            )
        assert (int(y[0][0]), int(y[1][0])) == expected


def test_key_and_split_shapes_and_values():
    assert nv.random.key(5).tolist() == [0, 5]
    assert nv.random.key(2**40 + 3).tolist() == [256, 3]
    s = nv.random.split(K(), 4)
    assert s.shape == (4, 2) and s.dtype == nv.uint32
    rows = {tuple(r) for r in np.array(s).tolist()}
    assert len(rows) == 4
    a, b = nv.random.split(K())
    assert a.tolist() != b.tolist()
    # split(k, 2) and split(k, 3) share nothing by construction except the key: both valid keys
    assert nv.random.uniform(key=a).item() != nv.random.uniform(key=b).item()


def test_same_key_same_numbers_and_bits_widths():
    for f in (
        lambda k: nv.random.uniform(shape=(7,), key=k),
        lambda k: nv.random.normal((7,), key=k),
        lambda k: nv.random.randint(0, 100, (7,), key=k),
        lambda k: nv.random.bits((7,), 2, key=k),
    ):
        assert f(K(3)).tolist() == f(K(3)).tolist()
        assert f(K(3)).tolist() != f(K(4)).tolist()
    b1 = nv.random.bits((5,), 1, key=K())
    b4 = np.array(nv.random.bits((2,), 4, key=K()))
    assert b1.dtype == nv.uint8
    # narrow widths are the little-endian bytes of the same words
    assert np.array(b1).tolist() == list(b4.astype("<u4").tobytes()[:5])


def test_global_state_seed_and_advance():
    st = nv.random.state
    nv.random.seed(11)
    k0 = st[0]
    x = nv.random.uniform(shape=(3,))
    assert nv.random.state is st and st[0] is not k0
    assert st[0].is_evaluated and st[0].primitive is None  # no graph grows across draws
    y = nv.random.uniform(shape=(3,))
    assert x.tolist() != y.tolist()
    nv.random.seed(11)
    assert nv.random.uniform(shape=(3,)).tolist() == x.tolist()
    assert nv.random.uniform(shape=(3,)).tolist() == y.tolist()
    # an explicit key leaves the global key alone
    before = st[0].tolist()
    nv.random.normal((2,), key=K())
    assert st[0].tolist() == before


def test_global_draws_are_stateful_primitives():
    nv.random.seed(0)
    x = nv.random.uniform(shape=(2,))
    prims = []
    stack = [x]
    while stack:
        a = stack.pop()
        if a.primitive is not None:
            prims.append(a.primitive)
            stack.extend(a.inputs)
    rb = [p for p in prims if p.name == "random_bits"]
    assert rb and all(p.effectful for p in rb) and rb[0].fixes_shape
    y = nv.random.uniform(shape=(2,), key=K())
    stack, found = [y], []
    while stack:
        a = stack.pop()
        if a.primitive is not None:
            found.append(a.primitive)
            stack.extend(a.inputs)
    assert not any(p.effectful for p in found if p.name == "random_bits")


def test_uniform_distribution_and_bounds():
    u = np.array(nv.random.uniform(-2.0, 3.0, (N,), key=K(1)))
    assert u.dtype == np.float32 and u.min() >= -2.0 and u.max() < 3.0
    assert stats.kstest(u, stats.uniform(-2, 5).cdf).pvalue > P_MIN
    assert abs(u.mean() - 0.5) < 4 * 5 / np.sqrt(12 * N)
    u64 = np.array(nv.random.uniform(shape=(N,), dtype=nv.float64, key=K(2)))
    assert u64.dtype == np.float64 and stats.kstest(u64, "uniform").pvalue > P_MIN
    # 53 random bits: the values are not float32-representable in general
    assert np.mean(u64.astype(np.float32).astype(np.float64) != u64) > 0.9
    lo = nv.array([0.0, 10.0])
    hi = nv.array([1.0, 20.0])
    b = np.array(nv.random.uniform(lo, hi, (N // 2, 2), key=K(3)))
    assert b[:, 0].max() < 1 and b[:, 1].min() >= 10 and abs(b[:, 1].mean() - 15) < 0.2
    assert nv.random.uniform(shape=(4,), dtype=nv.float16, key=K()).dtype == nv.float16
    assert nv.random.uniform(shape=(4,), dtype=nv.bfloat16, key=K()).dtype == nv.bfloat16
    with pytest.raises(ValueError, match="uniform: dtype must be a real floating-point"):
        nv.random.uniform(shape=(2,), dtype=nv.int32)
    with pytest.raises(ValueError, match="uniform"):
        nv.random.uniform(nv.zeros(3), 1.0, (2,))


def test_normal_distribution():
    z = np.array(nv.random.normal((N,), key=K(4)))
    assert stats.kstest(z, "norm").pvalue > P_MIN
    assert abs(z.mean()) < 4 / np.sqrt(N) and abs(z.var() - 1) < 0.05
    z = np.array(nv.random.normal((N,), dtype=nv.float64, loc=3.0, scale=0.5, key=K(5)))
    assert z.dtype == np.float64 and stats.kstest(z, stats.norm(3.0, 0.5).cdf).pvalue > P_MIN
    assert abs(stats.skew(z)) < 0.1 and abs(stats.kurtosis(z)) < 0.15
    assert nv.random.normal((3,), dtype=nv.float16, key=K()).dtype == nv.float16


def test_randint_distribution():
    r = np.array(nv.random.randint(-3, 4, (N,), key=K(6)))
    assert r.dtype == np.int32 and r.min() == -3 and r.max() == 3
    counts = np.bincount(r + 3, minlength=7)
    assert stats.chisquare(counts).pvalue > P_MIN
    r = np.array(
        nv.random.randint(
            nv.array([0, 100]), nv.array([2, 200]), (N // 2, 2), dtype=nv.int64, key=K(7)
        )
    )
    assert r.dtype == np.int64 and set(np.unique(r[:, 0])) == {0, 1}
    assert r[:, 1].min() >= 100 and r[:, 1].max() < 200
    big = np.array(nv.random.randint(0, 2**31 - 1, (N,), key=K(8)))
    assert stats.kstest(big / (2**31 - 1), "uniform").pvalue > P_MIN
    with pytest.raises(ValueError, match="randint: dtype must be an integer"):
        nv.random.randint(0, 3, (2,), dtype=nv.float32)


def test_bernoulli():
    b = np.array(nv.random.bernoulli(0.3, (N,), key=K(9)))
    assert b.dtype == np.bool_
    assert stats.binomtest(int(b.sum()), N, 0.3).pvalue > P_MIN
    p = nv.array([0.1, 0.9])
    b = np.array(nv.random.bernoulli(p, (N // 2, 2), key=K(10)))
    assert abs(b[:, 0].mean() - 0.1) < 0.02 and abs(b[:, 1].mean() - 0.9) < 0.02
    assert nv.random.bernoulli(p, key=K()).shape == (2,)


def test_truncated_normal():
    t = np.array(nv.random.truncated_normal(-0.5, 2.0, (N,), key=K(11)))
    assert t.min() >= -0.5 and t.max() <= 2.0
    assert stats.kstest(t, stats.truncnorm(-0.5, 2.0).cdf).pvalue > P_MIN
    t = nv.random.truncated_normal(nv.array([-1.0, 0.0]), nv.array([0.0, 1.0]), key=K())
    assert t.shape == (2,) and t.tolist()[0] <= 0 <= t.tolist()[1]


def test_gumbel_and_laplace():
    g = np.array(nv.random.gumbel((N,), key=K(12)))
    assert np.isfinite(g).all() and stats.kstest(g, "gumbel_r").pvalue > P_MIN
    lp = np.array(nv.random.laplace((N,), loc=1.0, scale=2.0, key=K(13)))
    assert stats.kstest(lp, stats.laplace(1.0, 2.0).cdf).pvalue > P_MIN
    assert abs(np.median(lp) - 1.0) < 0.1


def test_categorical():
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    c = np.array(nv.random.categorical(nv.array(logits), num_samples=N, key=K(14)))
    assert c.shape == (N,)
    counts = np.bincount(c.astype(np.int64), minlength=4)
    assert stats.chisquare(counts, N * np.exp(logits)).pvalue > P_MIN
    lg = nv.array(np.log(np.array([[0.5, 0.5], [0.99, 0.01]])).T)  # categories on axis 0
    c = nv.random.categorical(lg, axis=0, shape=(1000, 2), key=K(15))
    c = np.array(c)
    assert c.shape == (1000, 2) and abs(c[:, 0].mean() - 0.5) < 0.06 and c[:, 1].mean() < 0.05
    with pytest.raises(ValueError, match="at most one of shape and num_samples"):
        nv.random.categorical(lg, shape=(2,), num_samples=3)


def test_permutation():
    p = np.array(nv.random.permutation(50, key=K(16)))
    assert sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    x = nv.array(np.arange(12).reshape(3, 4))
    q = np.array(nv.random.permutation(x, axis=1, key=K(17)))
    assert sorted(q[0].tolist()) == [0, 1, 2, 3]
    np.testing.assert_array_equal(q - q[0:1], np.array([[0] * 4, [4] * 4, [8] * 4]))
    # every position equally likely: where element 0 lands over many keys
    keys = nv.random.split(K(18), 600)
    firsts = [
        int(np.argmax(np.array(nv.random.permutation(4, key=keys[i])) == 0)) for i in range(600)
    ]
    assert stats.chisquare(np.bincount(firsts, minlength=4)).pvalue > P_MIN


def test_multivariate_normal():
    mean = np.array([1.0, -2.0, 0.5])
    a = np.array([[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.2, -0.3, 0.7]])
    cov = a @ a.T
    s = np.array(
        nv.random.multivariate_normal(
            nv.array(mean), nv.array(cov), (N,), dtype=nv.float64, key=K(19)
        )
    )
    assert s.shape == (N, 3)
    np.testing.assert_allclose(s.mean(axis=0), mean, atol=0.05)
    np.testing.assert_allclose(np.cov(s.T), cov, atol=0.05)
    # a singular covariance is allowed: samples stay on its range
    sing = np.array([[1.0, 1.0], [1.0, 1.0]])
    # (in float64: a float32 factorisation leaves singular values near 1e-7, whose square
    # roots put 3e-4 between the two columns)
    t = np.array(
        nv.random.multivariate_normal(
            nv.zeros(2, dtype=nv.float64),
            nv.array(sing, dtype=nv.float64),
            (100,),
            dtype=nv.float64,
            key=K(20),
        )
    )
    np.testing.assert_allclose(t[:, 0], t[:, 1], atol=1e-4)
    # batched means: the result takes their batch shape
    m = nv.array(np.array([[0.0, 0.0], [100.0, 100.0]]))
    b = nv.random.multivariate_normal(m, nv.array(np.eye(2)), key=K(24))
    assert b.shape == (2, 2) and np.array(b)[1].min() > 90
    with pytest.raises(ValueError, match="multivariate_normal"):
        nv.random.multivariate_normal(nv.zeros(3), nv.array(np.eye(2)))


def test_split_keys_are_independent():
    keys = nv.random.split(K(21), 3)
    xs = [np.array(nv.random.uniform(shape=(N,), key=keys[i])) for i in range(3)]
    for i in range(3):
        for j in range(i + 1, 3):
            r = np.corrcoef(xs[i], xs[j])[0, 1]
            assert abs(r) < 4 / np.sqrt(N)
            assert stats.ks_2samp(xs[i], xs[j]).pvalue > P_MIN  # same law
    # consecutive values within one stream are uncorrelated too
    assert abs(np.corrcoef(xs[0][:-1], xs[0][1:])[0, 1]) < 4 / np.sqrt(N)
    # children of one parent differ from the parent's own stream
    parent = np.array(nv.random.uniform(shape=(N,), key=K(21)))
    assert abs(np.corrcoef(parent, xs[0])[0, 1]) < 4 / np.sqrt(N)


def test_vmap_over_keys_matches_loop_and_grad_through_sampler():
    keys = nv.random.split(K(22), 4)
    f = lambda k: nv.random.normal((3,), key=k)  # noqa: E731
    got = nv.vmap(f)(keys)
    ref = np.stack([np.array(f(keys[i])) for i in range(4)])
    np.testing.assert_array_equal(np.array(got), ref)
    got = nv.vmap(f, in_axes=1, out_axes=1)(nv.array(np.array(keys).T))
    np.testing.assert_array_equal(np.array(got), ref.T)
    # reparameterised sampling: d/dhigh of sum(uniform(low, high)) = sum(u)
    u = nv.random.uniform(shape=(5,), dtype=nv.float64, key=K(23))
    g = nv.grad(lambda hi: nv.sum(nv.random.uniform(0.0, hi, (5,), dtype=nv.float64, key=K(23))))(
        nv.array(1.0, dtype=nv.float64)
    )
    assert np.isclose(g.item(), float(np.sum(np.array(u))), rtol=1e-12)


def test_key_errors():
    with pytest.raises(ValueError, match="normal: a key is a uint32 array of shape"):
        nv.random.normal((2,), key=nv.array([1, 2]))
    with pytest.raises(TypeError, match="key: seed must be an int"):
        nv.random.key(1.5)
    with pytest.raises(ValueError, match="split: num must be a positive int"):
        nv.random.split(K(), 0)
