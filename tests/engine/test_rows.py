"""The row max / min kernel (nv_rows.c) behind max, min, softmax and logsumexp over the last
axis of contiguous float32 / float64 arrays: every bit is that of NumPy's scalar rule (first
NaN of a row, first zero met when the extreme is zero), at every row length (vector body and
tail), with NaNs, signed zeros and infinities."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv
from nuvec.backends.cpu._rows import extreme_rows

RNG = np.random.default_rng(11)


def sequential(x: np.ndarray, want_max: bool) -> np.ndarray:
    out = np.empty(x.shape[0], x.dtype)
    for r, row in enumerate(x):
        m = row[0]
        for v in row[1:]:
            keep = m >= v if want_max else m <= v
            if not (keep or m != m):
                m = v
        out[r] = m
    return out


def rows(dtype, n: int, kind: str) -> np.ndarray:
    x = RNG.standard_normal((6, n)).astype(dtype)
    mask = RNG.random(x.shape)
    if kind == "nan":  # NaNs with distinct payloads: the first one must win
        u = np.uint32 if dtype == np.float32 else np.uint64
        x[mask < 0.15] = np.nan
        bits = x.view(u)
        bits[np.isnan(x)] |= RNG.integers(1, 999, int(np.isnan(x).sum())).astype(u)
    elif kind == "zeros":  # extremes of +0 and -0, which compare equal
        x = np.where(mask < 0.5, -0.0, 0.0).astype(dtype) - np.abs(x) * (mask < 0.2)
    elif kind == "inf":
        x[mask < 0.1] = np.inf
        x[mask > 0.9] = -np.inf
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["plain", "nan", "zeros", "inf"])
def test_rows_follow_numpys_scalar_rule_bit_for_bit(dtype, kind):
    for n in list(range(1, 20)) + [31, 32, 33, 64, 100]:
        x = rows(dtype, n, kind)
        for want_max in (True, False):
            out = np.empty((6, 1), dtype)
            extreme_rows(x, out, want_max)
            want = sequential(x, want_max)
            assert out.reshape(-1).tobytes() == want.tobytes(), (n, want_max, x)


def test_max_min_softmax_logsumexp_use_it_and_keep_numpys_values():
    x = RNG.standard_normal((3, 5, 37)).astype(np.float32)
    a = nv.array(x)
    np.testing.assert_array_equal(np.asarray(nv.max(a, axis=-1)), x.max(-1))
    np.testing.assert_array_equal(
        np.asarray(nv.min(a, axis=2, keepdims=True)), x.min(2, keepdims=True)
    )
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(
        np.asarray(nv.softmax(a, axis=-1)), e / e.sum(-1, keepdims=True), rtol=1e-6
    )
    np.testing.assert_allclose(
        np.asarray(nv.logsumexp(a, axis=-1)),
        np.log(np.exp(x.astype(np.float64)).sum(-1)),
        rtol=1e-6,
    )
    strided = a[:, :, ::2]  # not contiguous: NumPy's path, same values
    np.testing.assert_array_equal(np.asarray(nv.max(strided, axis=-1)), x[:, :, ::2].max(-1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_sums_have_numpys_pairwise_bits(dtype):
    # every length up to 300 (below 8, the 8-lane body with every tail, the halving above
    # 128), magnitudes over 12 decades so that the order of additions shows in the bits
    from nuvec.backends.cpu._rows import sum_rows

    for n in list(range(1, 300)) + [511, 1000, 4099]:
        for kind in ("plain", "zeros", "negative zeros", "specials"):
            x = (RNG.standard_normal((3, n)) * 10.0 ** RNG.integers(-6, 7, (3, n))).astype(dtype)
            if kind == "zeros":
                x[:, ::3] = -0.0
            elif kind == "negative zeros":
                x[:] = -0.0
            elif kind == "specials" and n > 2:
                x[0, 1], x[1, 0], x[2, :2] = np.nan, np.inf, (np.inf, -np.inf)
            out = np.empty(3, dtype)
            sum_rows(x, out)
            with np.errstate(invalid="ignore"):
                want = np.add.reduce(x, axis=1)
            assert out.tobytes() == want.tobytes(), (n, kind)


def test_sums_softmax_and_logsumexp_use_the_row_sums_with_numpys_bits(cpu_device):
    x = (RNG.standard_normal((40, 130)) * 30).astype(np.float32)
    assert np.asarray(nv.sum(nv.array(x), axis=-1)).tobytes() == x.sum(axis=-1).tobytes()
    got = np.asarray(nv.softmax(nv.array(x, dtype=nv.float64), axis=-1))
    e64 = np.exp(x.astype(np.float64) - x.astype(np.float64).max(axis=-1, keepdims=True))
    assert got.tobytes() == (e64 / e64.sum(axis=-1, keepdims=True)).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_sums_have_numpys_bits(dtype):
    # np.add.reduce over leading axes adds the rows in order from 0 (with one column it is the
    # pairwise sum instead: not this kernel's case). Column counts on both sides of a cache
    # line and of the kernel's 512-column block; rows over 12 decades so the order shows.
    from nuvec.backends.cpu._rows import sum_cols

    for rows in (1, 2, 7, 129, 2048):
        for cols in (2, 3, 15, 16, 17, 96, 128, 513, 1100):
            x = (
                RNG.standard_normal((rows, cols)) * 10.0 ** RNG.integers(-6, 7, (rows, cols))
            ).astype(dtype)
            x[0, 0], x[:, 1] = -0.0, -0.0
            if rows > 2:
                x[1, 2 % cols] = np.nan
            out = np.empty(cols, dtype)
            sum_cols(x, out)
            with np.errstate(invalid="ignore"):
                want = np.add.reduce(x, axis=0)
            assert out.tobytes() == want.tobytes(), (rows, cols)


def test_sums_over_leading_axes_use_the_column_kernel_on_any_thread_count(cpu_device):
    x = (RNG.standard_normal((32, 64, 128)) * 10.0 ** RNG.integers(-4, 5, (32, 64, 128))).astype(
        np.float32
    )
    from nuvec.backends.cpu import kernels

    a = nv.array(x)
    prev = kernels.set_num_threads(1)
    try:
        one = np.asarray(nv.sum(a, axis=(0, 1), keepdims=True))
        kernels.set_num_threads(2)
        two = np.asarray(nv.sum(a, axis=(0, 1), keepdims=True))
    finally:
        kernels.set_num_threads(prev)
    want = np.add.reduce(x, axis=(0, 1), keepdims=True)
    assert one.tobytes() == want.tobytes() and two.tobytes() == want.tobytes()
    assert np.asarray(nv.sum(a, axis=0)).tobytes() == np.add.reduce(x, axis=0).tobytes()
    col = x[:, :, :1].copy()  # one column: NumPy's pairwise
    assert (
        np.asarray(nv.sum(nv.array(col), axis=(0, 1))).tobytes()
        == np.add.reduce(col, axis=(0, 1)).tobytes()
    )


def _kernel_softmax(x: np.ndarray) -> np.ndarray:
    """Softmax in four passes: max, nuvec's shifted-exp kernel, NumPy's sum, its divide kernel."""
    from nuvec.backends.cpu import kernels
    from nuvec.backends.cpu.reduction import _DIVIDE, _SHIFTED_EXP

    m = x.max(axis=-1, keepdims=True)
    (e,) = kernels.run(_SHIFTED_EXP, [x, m], x.shape)
    with np.errstate(invalid="ignore"):
        s = np.add.reduce(e, axis=-1, keepdims=True)
    (out,) = kernels.run(_DIVIDE, [e, s], x.shape)
    return out


def _kernel_logsumexp(x: np.ndarray) -> np.ndarray:
    from nuvec.backends.cpu import kernels
    from nuvec.backends.cpu.reduction import _SHIFTED_EXP

    m = x.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, np.float32(0)).astype(np.float32)
    (e,) = kernels.run(_SHIFTED_EXP, [x, m], x.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.log(np.add.reduce(e, axis=-1, keepdims=True)) + m)[..., 0]


@pytest.mark.parametrize("kind", ["plain", "masked", "specials"])
def test_softmax_and_logsumexp_rows_equal_the_passes_they_fuse(cpu_device, kind):
    # one pass per row (nv_rows.c) against max, exp, sum and divide run one after another:
    # every row length up to 130 and several beyond the kernel's 512-element block
    for n in list(range(1, 131)) + [511, 512, 513, 1500]:
        x = (RNG.standard_normal((5, n)) * 20).astype(np.float32)
        if kind == "masked":  # an attention mask: -1e9 above a diagonal
            x[:, n // 2 + 1 :] = -1e9
            x[4] = np.float32(np.finfo(np.float32).min)
        elif kind == "specials":
            x[0, :] = -np.inf
            x[1, 0] = np.inf
            if n > 1:
                x[2, 1], x[3, :2] = np.nan, (np.inf, -np.inf)
        a = nv.array(x)
        got = np.asarray(nv.softmax(a, axis=-1))
        assert got.tobytes() == _kernel_softmax(x).tobytes(), (n, kind)
        got = np.asarray(nv.logsumexp(a, axis=-1))
        assert got.tobytes() == _kernel_logsumexp(x).tobytes(), (n, kind)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_gradient_rows_have_the_composite_bits(dtype, cpu_device):
    # the softmax's vjp and jvp as one pass per row (SoftmaxProduct) against multiply, sum,
    # multiply, subtract as separate operations; eager and compiled alike
    from nuvec.primitives.reduction import SoftmaxProduct
    from nuvec.transforms.rules.reduction import softmax_product_composite

    for n in (1, 5, 64, 129, 1000):
        x = nv.array((RNG.standard_normal((7, n)) * 5).astype(dtype))
        g = nv.array(RNG.standard_normal((7, n)).astype(dtype))
        y = nv.softmax(x, axis=-1)
        want = np.asarray(softmax_product_composite(y, g, (1,))).tobytes()
        (got,) = nv.vjp(lambda x: nv.softmax(x, axis=-1), [x], [g])[1]
        assert isinstance(got._prim, SoftmaxProduct) or got._prim is None
        assert np.asarray(got).tobytes() == want, n
        assert (
            np.asarray(nv.jvp(lambda x: nv.softmax(x, axis=-1), [x], [g])[1][0]).tobytes() == want
        )
        f = nv.compile(lambda x, g: nv.vjp(lambda x: nv.softmax(x, axis=-1), [x], [g])[1][0])
        assert np.asarray(f(x, g)).tobytes() == want
