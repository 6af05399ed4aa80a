"""Batched and gathered quantized products on a CUDA GPU against the CPU, and
nv.fast.cuda_kernel (run on the GPU machine; skipped elsewhere). The quantized op suite
(tests/quantized) runs with the GPU as the default device too (``--device gpu``)."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv
from devices import cuda_only

pytest.importorskip("cupy")
pytestmark = cuda_only
RNG = np.random.default_rng(3)


@pytest.mark.parametrize("transpose", [True, False])
def test_batched_weights_and_gather_qmm_match_the_cpu(transpose):
    w = RNG.standard_normal((3, 32, 64) if transpose else (3, 64, 64)).astype(np.float32)
    x = RNG.standard_normal((2, 1, 5, 64)).astype(np.float32)
    wq, s, b = nv.quantize(nv.array(w), 32, 4, stream=nv.cpu)
    lhs, rhs = nv.array([[0], [1]], nv.uint32), nv.array([[2], [0]], nv.uint32)

    def run():
        batched = nv.quantized_matmul(nv.array(x), wq, s, b, transpose, 32, 4)
        gathered = nv.gather_qmm(
            nv.array(x), wq, s, b, lhs, rhs, transpose=transpose, group_size=32, bits=4
        )
        return np.asarray(batched), np.asarray(gathered)

    with nv.stream(nv.cpu):
        want = run()
    with nv.stream(nv.gpu):
        got = run()
    for g, c in zip(got, want):
        assert g.shape == c.shape
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-4)


def test_cuda_kernel_runs_a_user_kernel():
    k = nv.fast.cuda_kernel(
        "nv_test_exp",
        ["inp"],
        ["out"],
        """
        auto i = cg::this_grid().thread_rank();
        if (i < inp_shape[0]) out[i] = exp(inp[i]) * (T)N;""",
    )
    x = RNG.standard_normal(100).astype(np.float32)
    with nv.stream(nv.gpu):
        (y,) = k(
            inputs=[nv.array(x)],
            output_shapes=[(100,)],
            output_dtypes=[nv.float32],
            grid=(100, 1, 1),
            threadgroup=(64, 1, 1),
            template=[("T", nv.float32), ("N", 2)],
        )
    np.testing.assert_allclose(np.asarray(y), np.exp(x) * 2, rtol=1e-6)
