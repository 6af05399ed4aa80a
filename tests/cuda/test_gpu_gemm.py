"""nuvec's own cuBLAS path (nuvec/backends/cuda/gemm.py) against CuPy's matmul and NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from devices import cuda_only

pytestmark = cuda_only
cp = pytest.importorskip("cupy")

RNG = np.random.default_rng(5)


def _views(shape_a, shape_b, ta, tb, dtype):
    """Operands of the given shapes; ``ta``/``tb``: made as the transpose of a contiguous array
    (F-contiguous matrices)."""

    def make(shape, t):
        if t:
            base = RNG.standard_normal(shape[:-2] + (shape[-1], shape[-2])).astype(dtype)
            return cp.asarray(base).swapaxes(-1, -2)
        return cp.asarray(RNG.standard_normal(shape).astype(dtype))

    return make(shape_a, ta), make(shape_b, tb)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize(
    "shapes",
    [
        ((5, 7), (7, 3)),
        ((1, 9), (9, 4)),
        ((6, 1), (1, 8)),
        ((3, 4, 5), (3, 5, 2)),
        ((2, 3, 4, 5), (5, 6)),
        ((256, 784), (784, 512)),
    ],
)
def test_layouts_match_numpy(dtype, ta, tb, shapes):
    from nuvec.backends.cuda import gemm

    a, b = _views(*shapes, ta, tb, dtype)
    got = gemm.matmul(a, b)
    assert got is not None, (shapes, ta, tb)
    want = np.matmul(cp.asnumpy(a).astype(np.float64), cp.asnumpy(b).astype(np.float64))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(cp.asnumpy(got), want, rtol=tol, atol=tol * 10)
    assert got.dtype == dtype and got.flags.c_contiguous


def test_other_cases_are_left_to_cupy():
    from nuvec.backends.cuda import gemm

    a = cp.ones((4, 6), np.float32)
    assert gemm.matmul(a.astype(np.int32), cp.ones((6, 2), np.int32)) is None
    assert gemm.matmul(a.astype(np.complex64), cp.ones((6, 2), np.complex64)) is None
    assert gemm.matmul(a, cp.ones((6, 0), np.float32)) is None  # empty
    assert gemm.matmul(cp.ones((2, 4, 6), np.float32), cp.ones((3, 6, 2), np.float32)) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_heads_of_one_sequence_are_used_in_place(dtype, monkeypatch):
    # q, k, v of one sequence as (1, heads, L, D) views of (1, L, heads, D): each head's matrix
    # has a leading dimension of heads * D, the heads one stride apart, so no copy is made
    from nuvec.backends.cuda import gemm

    def no_copy(*a, **k):
        raise AssertionError("copied")

    x = cp.asarray(RNG.standard_normal((1, 7, 4, 8)).astype(dtype))
    q = x.transpose(0, 2, 1, 3)  # (1, 4, 7, 8)
    kt = x.transpose(0, 2, 3, 1)  # (1, 4, 8, 7): transposed matrices, wide leading dimension
    monkeypatch.setattr(gemm.cp, "ascontiguousarray", no_copy)
    scores = gemm.matmul(q, kt)
    out = gemm.matmul(scores, q)
    monkeypatch.undo()
    qh = cp.asnumpy(q).astype(np.float64)
    want = qh @ qh.transpose(0, 1, 3, 2)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(cp.asnumpy(scores), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(cp.asnumpy(out), want @ qh, rtol=tol * 10, atol=tol * 10)
    rows = cp.asarray(RNG.standard_normal((6, 10)).astype(dtype))[:, 2:7]  # ld 10 > 5 columns
    got = gemm.matmul(rows, rows.T)
    np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(rows) @ cp.asnumpy(rows).T, rtol=tol)


def test_other_layouts_are_copied_into_contiguous_batches():
    from nuvec.backends.cuda import gemm

    a = cp.asarray(RNG.standard_normal((4, 6)).astype(np.float32))
    b = cp.asarray(RNG.standard_normal((3, 2)).astype(np.float32))
    got = gemm.matmul(a[:, ::2], b)  # strided columns
    np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(a[:, ::2]) @ cp.asnumpy(b), rtol=1e-5)
    q = cp.asarray(RNG.standard_normal((2, 5, 3, 4)).astype(np.float32)).transpose(0, 2, 1, 3)
    got = gemm.matmul(q, q.transpose(0, 1, 3, 2))  # heads split from a transposed view
    want = cp.asnumpy(q) @ cp.asnumpy(q).transpose(0, 1, 3, 2)
    np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-5, atol=1e-6)
    one = cp.asarray(RNG.standard_normal((1, 6, 2)).astype(np.float32))
    got = gemm.matmul(cp.stack([a, a, a]), one)  # a batch that broadcasts
    np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(cp.stack([a @ one[0]] * 3)), rtol=1e-5)


def test_gemm_can_be_recorded_in_a_graph():
    from nuvec.backends.cuda import gemm

    s = cp.cuda.Stream(non_blocking=True)
    a, b = (
        cp.asarray(RNG.standard_normal((64, 32)).astype(np.float32)),
        cp.asarray(RNG.standard_normal((32, 16)).astype(np.float32)),
    )
    with s:
        gemm.matmul(a, b)  # the handle and its workspace exist now
        s.synchronize()
        s.begin_capture()
        c = gemm.matmul(a, b)
        graph = s.end_capture()
        a[...] = a * 2  # the graph reads a's buffer when launched
        graph.launch(s)
        s.synchronize()
    np.testing.assert_allclose(cp.asnumpy(c), cp.asnumpy(a) @ cp.asnumpy(b), rtol=1e-5, atol=1e-4)
