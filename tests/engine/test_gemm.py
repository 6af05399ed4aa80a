"""The CPU's float32/float64 products through MKL (nuvec/backends/cpu/_gemm.pyx, blas.py):
every operand layout against NumPy, bits independent of alignment, the fallbacks, and the
choice of library."""

import os
import subprocess
import sys

import numpy as np
import pytest

import nuvec as nv
from nuvec.backends.cpu import _gemm, blas

needs_mkl = pytest.mark.skipif(
    not _gemm.installed(), reason="MKL is not installed (the mkl wheel is x86-64 only)"
)
RNG = np.random.default_rng(0)


def _rand(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _product(a, b):
    out = np.empty(
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]), a.dtype
    )
    assert _gemm.product(a, b, out)
    return out


def _close(got, a, b):
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    tol = 1e-5 if a.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(a.shape[-1]) * 4)


LAYOUTS = {
    "contiguous": lambda m, k: _rand((m, k)),
    "transposed": lambda m, k: _rand((k, m)).T,
    "row slice": lambda m, k: _rand((m, k + 3))[:, 1 : k + 1],  # lda > k
    "slice of a transpose": lambda m, k: _rand((k, m + 5))[:, 3 : m + 3].T,  # lda > m
    "every other row and column": lambda m, k: _rand((2 * m, 2 * k))[::2, ::2],  # copied
    "reversed": lambda m, k: _rand((m, k))[::-1],  # negative stride
}


@needs_mkl
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_every_layout_of_either_operand(la, lb):
    # (40, 9, 5) and (64, 33, 15): few columns, many rows: run as the transposed product
    for m, k, n in [
        (7, 5, 3),
        (1, 9, 4),
        (6, 1, 5),
        (5, 4, 1),
        (33, 70, 17),
        (40, 9, 5),
        (64, 33, 15),
    ]:
        a, b = LAYOUTS[la](m, k), LAYOUTS[lb](k, n)
        _close(_product(a, b), a, b)


@needs_mkl
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_product_of_few_columns_fills_rows_of_any_stride(dtype):
    for m, k, n in [(12, 7, 3), (256, 512, 10), (100, 3, 15), (64, 16, 16), (64, 16, 2)]:
        a, b = _rand((m, k), dtype), _rand((n, k), dtype).T
        wide = np.full((m, n + 4), 7.0, dtype)  # rows of n + 4 elements: ldc > n
        assert _gemm.product(a, b, wide[:, 2 : n + 2])
        _close(wide[:, 2 : n + 2], a, b)
        assert (wide[:, :2] == 7).all() and (wide[:, n + 2 :] == 7).all()
        assert np.array_equal(wide[:, 2 : n + 2], _product(a, b))


@needs_mkl
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_dimensions_broadcast(dtype):
    a = _rand((3, 1, 4, 6), dtype)
    b = _rand((5, 6, 2), dtype)
    _close(_product(a, b), np.broadcast_to(a, (3, 5, 4, 6)), np.broadcast_to(b, (3, 5, 6, 2)))
    bt = _rand((2, 3, 6), dtype).transpose(0, 2, 1)[None]  # (1, 2, 6, 3)
    at = _rand((4, 1, 7, 6), dtype)
    _close(_product(at, bt), np.broadcast_to(at, (4, 2, 7, 6)), np.broadcast_to(bt, (4, 2, 6, 3)))


@needs_mkl
def test_bits_do_not_depend_on_alignment_or_threads():
    a, b = _rand((96, 300)), _rand((300, 80))
    want = _product(a, b)
    shifted = np.empty(a.size + 1, np.float32)[1:].reshape(a.shape)  # 4 bytes off alignment
    shifted[...] = a
    np.testing.assert_array_equal(_product(shifted, b).view(np.int32), want.view(np.int32))
    code = (
        "import numpy as np; from nuvec.backends.cpu import _gemm; "
        "r = np.random.default_rng(0); a = r.standard_normal((96, 300), dtype=np.float32); "
        "b = r.standard_normal((300, 80), dtype=np.float32); o = np.empty((96, 80), np.float32); "
        "_gemm.product(a, b, o); print(o.view(np.int32).sum(dtype=np.int64))"
    )
    sums = set()
    for threads in ("1", "2"):
        env = dict(os.environ, MKL_NUM_THREADS=threads)
        sums.add(
            subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            ).stdout
        )
    assert len(sums) == 1


def test_what_the_blas_path_does_not_take_is_refused():
    out = np.empty((2, 2), np.float32)
    a = np.ones((2, 2), np.float32)
    assert not _gemm.product(a.astype(np.float16), a.astype(np.float16), out)  # dtype
    assert not _gemm.product(a, a.astype(np.float64), out)  # mixed
    assert not _gemm.product(np.ones((2, 0), np.float32), np.ones((0, 2), np.float32), out)
    assert not _gemm.product(a, a, np.empty((2, 2), np.float32).T)  # out layout


@pytest.mark.parametrize("dtype", [nv.float32, nv.float64, nv.int32, nv.complex64, nv.float16])
def test_nuvec_products_of_every_dtype_and_empty_ones(dtype, cpu_device):
    a = _rand((3, 4, 5)).astype(dtype.np)
    b = _rand((5, 2)).astype(a.dtype)
    got = np.asarray(nv.array(a) @ nv.array(b))
    np.testing.assert_allclose(
        got.astype(np.complex128),
        a.astype(np.complex128) @ b.astype(np.complex128),
        rtol=2e-3,
        atol=2e-3,
    )
    empty = np.asarray(nv.zeros((3, 0)) @ nv.zeros((0, 4)))
    np.testing.assert_array_equal(empty, np.zeros((3, 4), np.float32))


def test_the_library_can_be_chosen_and_is_named():
    code = "from nuvec.backends.cpu import blas; print(blas.provider())"
    env = dict(os.environ, NUVEC_BLAS="numpy")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "numpy"
    assert blas.provider() == ("mkl" if _gemm.installed() else "numpy")


@needs_mkl
def test_compiled_and_eager_products_are_equal_bit_for_bit(cpu_device):
    x, w, bias = _rand((64, 300)), _rand((200, 300)), _rand((200,))

    def layer(x, w, bias):
        return nv.maximum(x @ w.T + bias, 0.0) @ w

    args = [nv.array(v) for v in (x, w, bias)]
    eager = np.asarray(layer(*args))
    compiled = np.asarray(nv.compile(layer)(*args))
    np.testing.assert_array_equal(eager.view(np.int32), compiled.view(np.int32))


@needs_mkl
def test_a_batch_in_one_call_has_the_bits_of_one_product_at_a_time():
    # heads of attention: batch strides that no single stride describes, transposed matrices
    qkv = _rand((6, 20, 4 * 12))
    q = qkv.reshape(6, 20, 4, 12).transpose(0, 2, 1, 3)  # (6, 4, 20, 12)
    k_t = q.transpose(0, 1, 3, 2)
    got = _product(q, k_t)
    for i in range(6):
        for h in range(4):
            one = _product(q[i, h], k_t[i, h])
            np.testing.assert_array_equal(got[i, h].view(np.int32), one.view(np.int32))
    _close(got, q, k_t)


@needs_mkl
def test_products_written_into_a_permuted_layout_keep_their_bits():
    # out a transposed view that keeps rows of unit stride (heads merged back: (B, L, H, D)
    # memory seen as (B, H, L, D)), batched and single, float32 and float64
    for dtype in (np.float32, np.float64):
        a, b = _rand((3, 4, 20, 16), dtype), _rand((3, 4, 16, 8), dtype)
        merged = np.empty((3, 20, 4, 8), dtype)
        assert _gemm.product(a, b, merged.transpose(0, 2, 1, 3))
        assert merged.transpose(0, 2, 1, 3).tobytes() == _product(a, b).tobytes()
        wide = np.empty((5, 7 + 4), dtype)[:, 2:9]  # ldc > n
        x, y = _rand((5, 3), dtype), _rand((3, 7), dtype)
        assert _gemm.product(x, y, wide)
        assert wide.tobytes() == _product(x, y).tobytes()
    overlap = np.lib.stride_tricks.as_strided(np.empty((2, 2), np.float32), (3, 2, 2), (0, 8, 4))
    assert not _gemm.product(_rand((3, 2, 2)), _rand((3, 2, 2)), overlap)  # writes overlap


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_addmm_adds_the_bias_to_the_rounded_product(dtype, cpu_device):
    # the bias add runs through the element-wise kernel in place: the bits of product + c
    x, w = nv.array(_rand((300, 40), dtype)), nv.array(_rand((70, 40), dtype))
    for c in (nv.array(_rand((70,), dtype)), nv.array(_rand((300, 70), dtype))):
        want = np.asarray(x @ w.T) + np.asarray(c)
        assert np.asarray(nv.addmm(c, x, w.T)).tobytes() == want.tobytes()
        twice = np.asarray(x @ w.T) + np.asarray(c) * 2
        assert np.asarray(nv.addmm(c, x, w.T, beta=2.0)).tobytes() == twice.tobytes()
