"""The default thread count: the affinity mask bounded by the cgroup's CPU quota, and fewer
threads while other processes keep cores busy; results never depend on it."""

import subprocess
import sys
import time

import numpy as np
import pytest

import nuvec as nv
from nuvec.backends.cpu import _eltwise, cores, kernels


def _cgroup(tmp_path, lines):
    f = tmp_path / "cgroup"
    f.write_text("\n".join(lines) + "\n")
    return f


def test_v2_quota_is_read_from_the_group_and_its_ancestors(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "cpu.max").write_text("max 100000\n")
    (tmp_path / "a" / "cpu.max").write_text("250000 100000\n")
    (tmp_path / "a" / "b" / "cpu.max").write_text("max 100000\n")
    f = _cgroup(tmp_path, ["0::/a/b"])
    assert cores.cgroup_quota(tmp_path, f) == 2.5


def test_v1_quota(tmp_path):
    group = tmp_path / "cpu,cpuacct" / "job"
    group.mkdir(parents=True)
    (group / "cpu.cfs_quota_us").write_text("150000\n")
    (group / "cpu.cfs_period_us").write_text("100000\n")
    (tmp_path / "cpu,cpuacct" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "cpu,cpuacct" / "cpu.cfs_period_us").write_text("100000\n")
    f = _cgroup(tmp_path, ["4:memory:/job", "2:cpu,cpuacct:/job"])
    assert cores.cgroup_quota(tmp_path, f) == 1.5


def test_no_quota(tmp_path):
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cores.cgroup_quota(tmp_path, _cgroup(tmp_path, ["0::/"])) is None
    assert cores.cgroup_quota(tmp_path, tmp_path / "missing") is None


def test_usable_cpus_rounds_the_quota_up_within_the_mask(monkeypatch):
    monkeypatch.setattr(cores, "affinity_cpus", lambda: 8)
    monkeypatch.setattr(cores, "cgroup_quota", lambda: 1.5)
    assert cores.usable_cpus() == 2
    monkeypatch.setattr(cores, "cgroup_quota", lambda: 0.2)
    assert cores.usable_cpus() == 1
    monkeypatch.setattr(cores, "cgroup_quota", lambda: 32.0)
    assert cores.usable_cpus() == 8
    monkeypatch.setattr(cores, "cgroup_quota", lambda: None)
    assert cores.usable_cpus() == 8


def test_set_num_threads_fixes_the_count_and_none_restores_the_default():
    prev = kernels.set_num_threads(3)
    _eltwise.share_cores(0.0, 1)  # no BLAS spin window open (test_blas_sharing.py)
    try:
        assert kernels.get_num_threads() == 3
        assert _eltwise.threads_now() == 3  # a chosen count does not follow the load
        assert kernels.set_num_threads(None) == 3
        assert kernels.get_num_threads() == cores.usable_cpus()
        assert 1 <= _eltwise.threads_now() <= kernels.get_num_threads()
        assert kernels.set_num_threads(2) is None
    finally:
        kernels.set_num_threads(prev)
    with pytest.raises(ValueError, match="set_num_threads"):
        kernels.set_num_threads(0)


def test_results_do_not_depend_on_the_thread_count(cpu_device):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(300_001).astype(np.float32)
    a = rng.standard_normal((300, 400)).astype(np.float32)
    b = rng.standard_normal((400, 500)).astype(np.float32)
    results = []
    prev = kernels.set_num_threads(1)
    try:
        for n in (1, 2, None):
            kernels.set_num_threads(n)
            y = nv.tanh(nv.array(x)) * 3.0
            p = nv.array(a) @ nv.array(b)
            results.append((np.array(y), np.array(p)))
    finally:
        kernels.set_num_threads(prev)
    for y, p in results[1:]:
        assert np.array_equal(y, results[0][0])
        assert np.array_equal(p, results[0][1])


def test_a_child_that_has_ended_does_not_hold_the_count_down():
    """CPU time of this process's own children (the C compiler building kernels) is this
    process's once they end: the window after a build still gets every thread."""
    if cores.usable_cpus() < 2:
        pytest.skip("one usable CPU")
    prev = kernels.set_num_threads(None)
    _eltwise.share_cores(0.0, 1)  # no BLAS spin window open (test_blas_sharing.py)
    full = kernels.get_num_threads()
    try:
        _eltwise.threads_now()
        time.sleep(0.15)
        if _eltwise.threads_now() < full:
            pytest.skip("other processes keep this machine's cores busy")
        spin = "import time\nt = time.perf_counter()\nwhile time.perf_counter() - t < 0.4: pass"
        subprocess.run([sys.executable, "-c", spin], check=True)
        time.sleep(0.02)
        assert _eltwise.threads_now() == full
    finally:
        kernels.set_num_threads(prev)
