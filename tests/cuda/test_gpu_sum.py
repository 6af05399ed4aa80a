"""Sums on the GPU (nuvec/backends/cuda/reduction.py): over leading or trailing axes of a
contiguous float32 / float64 array they are products with ones through nuvec's cuBLAS handle;
elsewhere CuPy's reduction. Both against a float64 NumPy reference, compiled against eager."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv
from devices import cuda_only

pytestmark = cuda_only
pytest.importorskip("cupy")


def _data(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape, axes",
    [
        ((8192, 512), (0,)),  # a bias gradient
        ((512, 300), (1,)),  # row sums
        ((4, 6, 5), (0, 1)),
        ((4, 6, 5), (1, 2)),
        ((4, 6, 5), (1,)),  # a middle axis: CuPy's reduction
        ((4, 6, 5), (0, 2)),
        ((3, 1, 7), (-1,)),
        ((7,), (0,)),
        ((0, 4), (0,)),
    ],
)
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_matches_reference(shape, axes, dtype, keepdims):
    x = _data(shape, dtype, len(shape) * 7 + sum(axes))
    with nv.stream(nv.gpu):
        a = nv.array(x, dtype=nv.float64 if dtype == np.float64 else nv.float32)
        got = nv.sum(a, axis=axes, keepdims=keepdims)
        nv.eval(got)
    ref = x.astype(np.float64).sum(axis=axes, keepdims=keepdims)
    out = np.array(got)
    assert out.shape == ref.shape and out.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * np.sqrt(max(x.size, 1)))


def test_sum_of_a_transposed_view_and_nan():
    x = _data((64, 33), np.float32, 3)
    x[5, 7] = np.nan
    with nv.stream(nv.gpu):
        a = nv.array(x)
        got = [nv.sum(a.T, axis=1), nv.sum(a, axis=0), nv.mean(a, axis=-1)]
        nv.eval(got)
    ref = [x.T.astype(np.float64).sum(1), x.astype(np.float64).sum(0), x.mean(-1)]
    for g, r in zip(got, ref):
        np.testing.assert_allclose(np.array(g), r, rtol=1e-5, atol=1e-5)
    assert np.isnan(np.array(got[1])[7]) and np.isnan(np.array(got[2])[5])


def test_compiled_sums_and_softmax_equal_eager():
    x = _data((256, 96), np.float32, 4)

    def f(a):
        return nv.sum(a, axis=0), nv.mean(a, axis=1), nv.softmax(a, axis=-1), nv.logsumexp(a, 1)

    with nv.stream(nv.gpu):
        a = nv.array(x)
        eager = f(a)
        g = nv.compile(f)
        for _ in range(4):  # past the warm calls: the recorded graph too
            comp = g(a)
            nv.eval(comp, eager)
            for c, e in zip(comp, eager):
                np.testing.assert_array_equal(np.array(c), np.array(e))
    sm = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(np.array(eager[2]), sm / sm.sum(1, keepdims=True), rtol=1e-5)


def test_the_ones_of_the_sums_are_kept_and_not_grown_while_a_graph_records():
    import cupy as cp

    from nuvec.backends.cuda import reduction

    first = reduction._ones(300, np.float32)
    again = reduction._ones(200, np.float32)
    assert again.data.ptr == first.data.ptr and again.size == 200
    assert cp.all(first == 1).item()
    kept = reduction._ONES[(cp.cuda.Device().id, np.dtype(np.float32))]
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            longer = reduction._ones(kept.size + 1, np.float32)
        finally:
            stream.end_capture()
    assert longer.size == kept.size + 1
    assert reduction._ONES[(cp.cuda.Device().id, np.dtype(np.float32))] is kept
    grown = reduction._ones(kept.size + 1, np.float32)
    assert grown.size == kept.size + 1 and cp.all(grown == 1).item()
