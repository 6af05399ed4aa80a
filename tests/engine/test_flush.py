"""nv.set_flush_denormals: element-wise kernels (single and fused, every thread of a launch)
treat subnormal inputs as zero and flush subnormal results; off by default; the processor's
mode is restored after each launch (NumPy's arithmetic keeps subnormals)."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv
from nuvec.backends.cpu import _eltwise

pytestmark = pytest.mark.usefixtures("cpu_device")  # CPU kernels (see tests/conftest.py)

TINY = np.finfo(np.float32).tiny


@pytest.fixture
def flushing():
    assert nv.set_flush_denormals(True)  # x86: this test machine's processor
    try:
        yield
    finally:
        nv.set_flush_denormals(False)


def subnormal_data(n: int) -> np.ndarray:
    x = np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32)
    x[::3] *= TINY  # every third element subnormal
    return x


def test_subnormals_are_kept_by_default():
    assert not _eltwise.flush_denormals()
    x = subnormal_data(64)
    got = np.asarray(nv.array(x) * 1.0)
    assert got.tobytes() == (x * np.float32(1.0)).tobytes()
    assert (np.abs(got[::3]) < TINY).all() and (got[::3] != 0).any()


def test_flushing_zeroes_subnormal_inputs_and_results_eagerly_and_compiled(flushing):
    x = subnormal_data(64)
    a = nv.array(x)
    got = np.asarray(a * 1.0)
    assert (got[::3] == 0).all()  # inputs read as zero
    np.testing.assert_array_equal(np.delete(got, np.s_[::3]), np.delete(x, np.s_[::3]))
    big = nv.array(np.full(8, 1e-20, np.float32))
    assert (np.asarray(big * big) == 0).all()  # 1e-40: a result flushed

    def f(a):
        return nv.exp(a) * a + a * 0.5

    eager, compiled = np.asarray(f(a)), np.asarray(nv.compile(f)(a))
    assert eager.tobytes() == compiled.tobytes()


def test_every_thread_of_a_large_launch_flushes_and_the_mode_is_restored(flushing):
    n = 1 << 20  # above the one-thread size: the pool splits it
    x = subnormal_data(n)
    prev = _eltwise.set_num_threads(2)
    try:
        got = np.asarray(nv.array(x) * 1.0)
    finally:
        _eltwise.set_num_threads(prev)
    assert (got[::3] == 0).all()  # the first and the last part alike
    # the calling thread's mode was restored: NumPy still makes subnormals
    assert np.float32(1e-20) * np.float32(1e-20) != 0
