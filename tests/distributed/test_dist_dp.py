"""The data-parallel digits example gives the one-process loss curve on 2 and 4 processes.

Tolerance: each process computes its share's mean loss and gradient, and the shares are
summed by MPI, so every step's float32 sums run in another order than in the one-process run
(64 rows at once vs 2 x 32 or 4 x 16, then added). That changes a step's loss by a few float32
ulps (measured: at most 1.3e-6 relative over 66 steps), and AdamW's normalised updates carry
such differences forward without amplifying them much in 44 steps. ``RTOL = 1e-4`` is about
100 times what was measured, yet 800 times smaller than the median change of the loss from one
step to the next (~8%): a run that skips the gradient average (checked below) or feeds a
process the wrong share of the batch misses it by orders of magnitude.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from test_dist_mpi import MISSING, launch

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "digits_mlp_dp.py"
RTOL = 1e-4
EPOCHS = "2"

pytest.importorskip("sklearn", reason="the digits data set ships with scikit-learn")
needs_mpi = pytest.mark.skipif(
    bool(MISSING),
    reason=f"{' and '.join(MISSING)} not installed (.ci/run installs Open MPI and mpi4py)",
)
_runs: dict = {}


def run(n: int, tmp_path_factory, *flags: str) -> dict:
    key = (n, flags)
    if key not in _runs:
        out = tmp_path_factory.mktemp("dp") / "losses.json"
        args = ["--epochs", EPOCHS, "--quiet", "--losses-out", str(out), *flags]
        if n == 1:
            env = {
                **os.environ,
                "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            }
            p = subprocess.run(
                [sys.executable, str(EXAMPLE), *args],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
        else:
            p = launch(n, str(EXAMPLE), args, timeout=120)
        assert p.returncode == 0, f"{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
        _runs[key] = json.loads(out.read_text())
    return _runs[key]


def test_one_process_learns(tmp_path_factory):
    r = run(1, tmp_path_factory)
    losses = np.array(r["losses"])
    assert r["size"] == 1 and len(losses) == 2 * (1438 // 64)
    assert losses[-5:].mean() < 0.5 * losses[:5].mean()
    assert r["accuracy"] > 0.85


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_same_loss_curve_on_n_processes(n, tmp_path_factory):
    one, many = run(1, tmp_path_factory), run(n, tmp_path_factory)
    assert many["size"] == n
    np.testing.assert_allclose(many["losses"], one["losses"], rtol=RTOL)
    assert many["parameter_spread"] == 0.0  # every process holds the same model
    assert abs(many["accuracy"] - one["accuracy"]) <= 1 / 359  # at most one test image


@needs_mpi
def test_without_the_gradient_average_the_curve_differs(tmp_path_factory):
    """The control: the comparison above can fail."""
    one = run(1, tmp_path_factory)
    alone = run(2, tmp_path_factory, "--no-average")
    rel = np.abs(np.array(alone["losses"]) - one["losses"]) / np.abs(one["losses"])
    assert rel.max() > 100 * RTOL
    assert alone["parameter_spread"] > 0.0
