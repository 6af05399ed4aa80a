"""gather_mm, block_masked_mm, segmented_mm and hadamard_transform against NumPy/SciPy."""

import numpy as np
import pytest
from scipy.linalg import hadamard

import nuvec as nv
from tests.ops._helpers import fd_vjp_check, vmap_check

RNG = np.random.default_rng(11)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize(
    "li,ri", [(None, [[1, 0], [2, 2]]), ([0, 2, 1], None), ([[0], [1]], [2, 0, 1]), ([3], [0])]
)
def test_gather_mm(li, ri):
    a, b = f32(2, 2, 3, 4), f32(3, 4, 5)
    got = nv.gather_mm(
        nv.array(a),
        nv.array(b),
        None if li is None else nv.array(li, dtype=nv.uint32),
        None if ri is None else nv.array(ri, dtype=nv.uint32),
    )
    af, bf = a.reshape(-1, 3, 4), b.reshape(-1, 4, 5)
    lidx = np.arange(4).reshape(2, 2) if li is None else np.array(li)
    ridx = np.arange(3) if ri is None else np.array(ri)
    lidx, ridx = np.broadcast_arrays(lidx, ridx)
    want = af[lidx] @ bf[ridx]
    assert got.shape == want.shape
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-5)


def test_gather_mm_vectors_gradient_errors():
    a, b = f32(4), f32(3, 4, 2)
    got = nv.gather_mm(nv.array(a), nv.array(b), None, nv.array([2, 0]))
    np.testing.assert_allclose(np.array(got), np.stack([a @ b[2], a @ b[0]]), rtol=1e-5)
    assert nv.gather_mm(nv.ones((2, 3)), nv.ones((3, 4))).shape == (2, 4)
    fd_vjp_check(
        lambda x, w: nv.gather_mm(x, w, None, nv.array([1, 1, 0])),
        [np.arange(6.0).reshape(2, 3) / 5, np.arange(12.0).reshape(2, 3, 2) / 7],
    )
    with pytest.raises(ValueError, match="gather_mm"):
        nv.gather_mm(
            nv.ones((2, 3), dtype=nv.int32), nv.ones((3, 2), dtype=nv.int32), nv.array([0]), None
        )
    with pytest.raises(ValueError, match="gather_mm"):
        nv.gather_mm(nv.ones((2, 3)), nv.ones((4, 2)), nv.array([0]), None)


def expand(mask, rows, cols, block):
    return np.repeat(np.repeat(mask, block, -2), block, -1)[..., :rows, :cols]


@pytest.mark.parametrize("block", [32, 64])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_block_masked_mm(block, kind):
    m, k, n = 70, 40, 100
    a, b = f32(2, m, k), f32(2, k, n)
    tm, tk, tn = -(-m // block), -(-k // block), -(-n // block)

    def mask(*s):
        r = RNG.random(s)
        return (r > 0.4) if kind == "bool" else r.astype(np.float32)

    mo, ml, mr = mask(2, tm, tn), mask(2, tm, tk), mask(2, tk, tn)
    a[0, :block, :block] = np.inf if kind == "bool" and not ml[0, 0, 0] else a[0, :block, :block]
    got = nv.block_masked_mm(
        nv.array(a), nv.array(b), block, nv.array(mo), nv.array(ml), nv.array(mr)
    )
    aa = np.where(expand(ml, m, k, block), a, 0) if kind == "bool" else a * expand(ml, m, k, block)
    bb = np.where(expand(mr, k, n, block), b, 0) if kind == "bool" else b * expand(mr, k, n, block)
    want = aa.astype(np.float64) @ bb
    want = (
        np.where(expand(mo, m, n, block), want, 0)
        if kind == "bool"
        else want * expand(mo, m, n, block)
    )
    np.testing.assert_allclose(np.array(got), want, rtol=1e-4, atol=1e-4)


def test_block_masked_mm_errors():
    with pytest.raises(ValueError, match="block_size"):
        nv.block_masked_mm(nv.ones((4, 4)), nv.ones((4, 4)), 16, mask_out=nv.ones((1, 1)))
    with pytest.raises(ValueError, match="mask_lhs"):
        nv.block_masked_mm(nv.ones((40, 4)), nv.ones((4, 4)), 32, mask_lhs=nv.ones((1, 1)))
    assert nv.block_masked_mm(nv.ones((2, 3)), nv.ones((3, 2))).tolist() == [[3.0, 3.0]] * 2


def test_segmented_mm():
    a, b = f32(3, 10), f32(10, 4)
    segs = np.array([[0, 3], [3, 10], [2, 2], [5, 8]], dtype=np.int32)
    got = nv.segmented_mm(nv.array(a), nv.array(b), nv.array(segs))
    want = np.stack([a[:, s:e] @ b[s:e] for s, e in segs])
    assert got.shape == (4, 3, 4)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-5)
    got2 = nv.segmented_mm(nv.array(a), nv.array(b), nv.array(segs.reshape(2, 2, 2)))
    assert got2.shape == (2, 2, 3, 4)
    with pytest.raises(ValueError, match="segments"):
        nv.segmented_mm(nv.array(a), nv.array(b), nv.array([0, 3, 5]))
    with pytest.raises(ValueError, match="segmented_mm"):
        nv.segmented_mm(nv.ones((2, 2, 2)), nv.ones((2, 2)), nv.array([[0, 1]]))


@pytest.mark.parametrize("n", [1, 2, 8, 64, 256])
def test_hadamard_transform(n):
    x = f32(3, n)
    got = nv.hadamard_transform(nv.array(x))
    want = (x.astype(np.float64) @ hadamard(n).T) / np.sqrt(n)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-5)
    got = nv.hadamard_transform(nv.array(x), scale=2.0)
    np.testing.assert_allclose(
        np.array(got), 2.0 * x.astype(np.float64) @ hadamard(n).T, rtol=1e-5, atol=1e-4
    )


def test_hadamard_dtypes_gradient_vmap_errors():
    assert nv.hadamard_transform(nv.array([1, 2])).dtype == nv.float32
    assert nv.hadamard_transform(nv.array([1, 2], dtype=nv.float16)).dtype == nv.float16
    fd_vjp_check(lambda x: nv.hadamard_transform(x), [np.arange(8.0) / 3])
    vmap_check(lambda x: nv.hadamard_transform(x), [np.arange(16.0).reshape(4, 4)], in_axes=(1,))
    with pytest.raises(ValueError, match=r"m \* 2\*\*k with m in 1, 12, 20 or 28, got 36"):
        nv.hadamard_transform(nv.ones((36,)))
    with pytest.raises(ValueError, match="empty"):
        nv.hadamard_transform(nv.ones((0,)))


@pytest.mark.parametrize("m, k", [(12, 0), (12, 3), (20, 1), (28, 2)])
def test_hadamard_transform_of_m_times_a_power_of_two(m, k):
    from nuvec.ops.hadamard_matrices import hadamard_matrix

    hm = hadamard_matrix(m).astype(np.float64)
    assert (hm @ hm.T == m * np.eye(m)).all()  # a Hadamard matrix
    n = m * 2**k
    x = f32(3, n)
    want = x.astype(np.float64) @ np.kron(hm, hadamard(2**k)).T * 0.5
    got = nv.hadamard_transform(nv.array(x), scale=0.5)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-4)
    default = nv.hadamard_transform(nv.array(x, nv.float64))
    assert default.dtype == nv.float64
    np.testing.assert_allclose(np.array(default), want * 2 / np.sqrt(n), rtol=1e-12)
    half = nv.hadamard_transform(nv.array(x, nv.float16), scale=0.5)
    assert half.dtype == nv.float16
    np.testing.assert_allclose(np.array(half).astype(np.float64), want, atol=0.05 * (k + 1))
    fd_vjp_check(lambda v: nv.hadamard_transform(v), [x[:1].astype(np.float64)])
