"""Element-wise launches leave the cores of a spinning BLAS library alone for its spin window
(nuvec/backends/cpu/blas.py), and only after a BLAS product; results never depend on it."""

import subprocess
import sys
import time

import numpy as np
import pytest

import nuvec as nv
from nuvec.backends.cpu import _eltwise, blas, kernels


@pytest.fixture
def two_threads():
    prev = kernels.set_num_threads(2)
    _eltwise.share_cores(0.0, 1)  # no window open
    time.sleep(0.001)
    yield
    kernels.set_num_threads(prev)
    _eltwise.share_cores(0.0, 1)


def test_a_window_limits_threads_until_it_ends(two_threads):
    assert _eltwise.threads_now() == 2
    _eltwise.share_cores(0.05, 1)
    assert _eltwise.threads_now() == 1
    time.sleep(0.06)
    assert _eltwise.threads_now() == 2
    _eltwise.share_cores(1.0, 0)  # at least one thread is always left
    assert _eltwise.threads_now() == 1


def test_only_blas_products_open_the_window(two_threads, monkeypatch, cpu_device):
    monkeypatch.setattr(blas, "_WORKERS", 1)
    monkeypatch.setattr(blas, "_SECONDS", 10.0)
    monkeypatch.setattr(blas, "_LEFT", 1)
    i = nv.ones((8, 8), dtype=nv.int32)
    nv.eval(i @ i)  # NumPy's integer loops: no BLAS threads
    assert _eltwise.threads_now() == 2
    f = nv.ones((8, 8))
    nv.eval(f @ f)
    assert _eltwise.threads_now() == 1


def test_the_window_does_not_change_results(two_threads, cpu_device):
    x = np.random.default_rng(0).standard_normal(300_001).astype(np.float32)
    a = nv.exp(nv.array(x)) * 3.0
    nv.eval(a)
    _eltwise.share_cores(10.0, 1)
    b = nv.exp(nv.array(x)) * 3.0
    nv.eval(b)
    assert np.array_equal(np.array(a), np.array(b))


def test_spin_window_reads_the_blas_settings(monkeypatch):
    monkeypatch.setattr(blas, "_MKL", None)  # NumPy's BLAS multiplies
    monkeypatch.setattr(blas, "_TEAM", False)
    monkeypatch.setattr(blas, "_numpy_blas_name", lambda: "scipy-openblas")
    monkeypatch.setattr(blas, "_cpu_count", lambda: 4)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("GOTO_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "20")
    assert blas.spin_window() == (2**20 / blas._CYCLES_PER_S, 3)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    assert blas.spin_window() == (0.0, 0)  # one BLAS thread: nothing spins
    monkeypatch.setattr(blas, "_numpy_blas_name", lambda: "accelerate")
    assert blas.spin_window() == (0.0, 0)


def test_spin_window_of_mkl_follows_its_openmp(monkeypatch):
    monkeypatch.setattr(blas, "_cpu_count", lambda: 4)
    monkeypatch.setattr(blas, "_TEAM", False)
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(blas, "_MKL", ("gnu", 4))

    def pauses(n):
        return n * blas._PAUSE_CYCLES / blas._CYCLES_PER_S

    assert blas.spin_window() == (pauses(300_000), 3)
    monkeypatch.setenv("GOMP_SPINCOUNT", "1000")
    assert blas.spin_window() == (pauses(1000), 3)
    monkeypatch.setenv("GOMP_SPINCOUNT", "0")
    assert blas.spin_window() == (0.0, 0)
    monkeypatch.delenv("GOMP_SPINCOUNT")
    monkeypatch.setenv("OMP_WAIT_POLICY", "passive")
    assert blas.spin_window() == (0.0, 0)
    monkeypatch.setattr(blas, "_MKL", ("intel", 2))
    monkeypatch.setenv("KMP_BLOCKTIME", "50")
    assert blas.spin_window() == (0.05, 1)
    monkeypatch.setattr(blas, "_MKL", ("sequential", 1))
    assert blas.spin_window() == (0.0, 0)


def test_launches_on_the_blas_openmp_team_need_no_window(monkeypatch):
    monkeypatch.setattr(blas, "_TEAM", True)
    assert blas.spin_window() == (0.0, 0)


TEAM_PROBE = """
import os, numpy as np, nuvec as nv
from nuvec.backends.cpu import _eltwise, blas, kernels
kernels.set_num_threads(2)
if {own}:
    _eltwise.use_openmp(0, 0, 0)
a = nv.ones((64, 64))
nv.eval(a @ a)                                  # MKL's OpenMP team starts
before = len(os.listdir("/proc/self/task"))
x = nv.array(np.linspace(-3, 3, 1 << 21, dtype=np.float32))
y = nv.exp(x) * 2.0 + x
nv.eval(y)
after = len(os.listdir("/proc/self/task"))
print(after - before, np.asarray(y).view(np.int32).sum(dtype=np.int64))
"""


@pytest.mark.skipif(
    not blas._TEAM or blas._cpu_count() < 2, reason="needs MKL on GNU OpenMP and two CPUs"
)
def test_element_wise_launches_join_the_matmuls_threads():
    def probe(own: bool):
        out = subprocess.run(
            [sys.executable, "-c", TEAM_PROBE.format(own=own)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        return int(out[0]), out[1]

    on_team, bits_team = probe(False)
    own_pool, bits_own = probe(True)
    assert on_team == 0  # no thread of nuvec's own: the launch ran on the team
    assert own_pool == 1  # nuvec's pool starts its worker
    assert bits_team == bits_own
