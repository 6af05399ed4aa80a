"""logsumexp and softmax over trailing axes on the GPU (nuvec/backends/cuda/rows.py): one
kernel per call, a warp per row up to 1024 elements and a block per longer row; against a
float64 NumPy reference, with rows of non-finite values, compiled against eager."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv
from devices import cuda_only

pytestmark = cuda_only
pytest.importorskip("cupy")

SHAPES = [
    ((256, 10), (-1,)),
    ((13, 3), (1,)),
    ((5, 2000), (-1,)),
    ((3, 4, 700), (1, 2)),
    ((9, 1), (-1,)),
    ((2, 3, 5), (-1,)),
    ((1, 5000), (-1,)),
]


def _ref_lse(x: np.ndarray, axes) -> np.ndarray:
    x = x.astype(np.float64)
    m = np.max(x, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(all="ignore"):
        return (np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m).squeeze(axes)


def _ref_softmax(x: np.ndarray, axes) -> np.ndarray:
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        e = np.exp(x - np.max(x, axis=axes, keepdims=True))
        return e / np.sum(e, axis=axes, keepdims=True)


def _data(shape, dtype) -> np.ndarray:
    x = (np.random.default_rng(sum(shape)).standard_normal(shape) * 4).astype(dtype)
    flat = x.reshape(-1, x.shape[-1])
    if flat.shape[0] >= 4:  # rows of -inf, with a +inf, with a NaN, and a -inf among values
        flat[0] = -np.inf
        flat[1, 0] = np.inf
        flat[2, -1] = np.nan
        flat[3, 0] = -np.inf
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, axes", SHAPES)
def test_logsumexp_and_softmax_match_reference(shape, axes, dtype) -> None:
    x = _data(shape, dtype)
    nd = nv.float64 if dtype == np.float64 else nv.float32
    tol = 1e-12 if dtype == np.float64 else 2e-6
    with nv.stream(nv.gpu):
        a = nv.array(x, dtype=nd)
        lse = np.array(nv.logsumexp(a, axis=axes))
        sm = np.array(nv.softmax(a, axis=axes))
        lse_c = np.array(nv.compile(lambda v: nv.logsumexp(v, axis=axes))(a))
        sm_c = np.array(nv.compile(lambda v: nv.softmax(v, axis=axes))(a))
    np.testing.assert_allclose(lse, _ref_lse(x, axes), rtol=tol, atol=tol)
    np.testing.assert_allclose(sm, _ref_softmax(x, axes), rtol=tol, atol=tol)
    assert lse.dtype == dtype and sm.dtype == dtype and sm.shape == shape
    np.testing.assert_array_equal(lse_c.view(np.uint8), lse.view(np.uint8))
    np.testing.assert_array_equal(sm_c.view(np.uint8), sm.view(np.uint8))


def test_bfloat16_rows_round_once_and_keepdims() -> None:
    x = _data((64, 33), np.float32)
    with nv.stream(nv.gpu):
        a = nv.array(x).astype(nv.bfloat16)
        got = nv.logsumexp(a, axis=-1, keepdims=True)
        want = nv.logsumexp(a.astype(nv.float32), axis=-1, keepdims=True).astype(nv.bfloat16)
        assert got.shape == (64, 1) and got.dtype == nv.bfloat16
        np.testing.assert_array_equal(np.array(got.view(nv.uint16)), np.array(want.view(nv.uint16)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(256, 10), (4, 1024), (3, 2000), (2, 3, 5)])
def test_softmax_vjp_is_one_row_kernel(shape, dtype) -> None:
    from nuvec.primitives.reduction import SoftmaxProduct

    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    nd = nv.float64 if dtype == np.float64 else nv.float32

    def vjp(a, ct):
        return nv.vjp(lambda v: nv.softmax(v, axis=-1), [a], [ct])[1][0]

    with nv.stream(nv.gpu):
        a, ct = nv.array(x, dtype=nd), nv.array(g, dtype=nd)
        got = vjp(a, ct)
        assert isinstance(got._prim, SoftmaxProduct)
        got = np.array(got)
        f = nv.compile(vjp)
        f(a, ct)
        again = np.array(f(a, ct))
    y = _ref_softmax(x, -1)
    want = g * y - y * np.sum(g * y, axis=-1, keepdims=True)
    tol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    np.testing.assert_array_equal(again.view(np.uint8), got.view(np.uint8))
