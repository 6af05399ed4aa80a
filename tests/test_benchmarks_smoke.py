"""Smoke test of the benchmark harness: one cheap ``python -m benchmarks --quick`` run, checking
the JSON's structure (never the speed). Optional peers may be missing; nuvec may be incomplete:
both must be reported, not crash the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STATUSES = {"ok", "n/a", "not available", "error"}


def test_quick_overhead_run_writes_wellformed_json(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "--quick",
            "--only",
            "overhead",
            "--libs",
            "numpy,nuvec",
            "--n",
            str(2**20),
            "--case-timeout",
            "30",
            "--no-plots",
            "--keep-blas-env",
            "--out",
            str(out),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads((out / "results.json").read_text())

    assert doc["schema"] == "nuvec-bench/1" and doc["mode"] == "quick"
    assert set(doc["groups"]) == {"overhead"}
    assert doc["machine"]["cores"] >= 1 and doc["machine"]["cpu"]
    assert set(doc["libraries"]) == {"numpy", "nuvec"}
    assert doc["libraries"]["numpy"]["status"] == "ok"
    assert doc["libraries"]["nuvec"]["status"] in {"ok", "not available", "failed"}

    # the machine's limits and the noise probe ran, at the start and at the end
    assert doc["limits"]["bandwidth_gbs"] > 0
    assert doc["limits"]["c_call_10op_4_s"] > 0
    assert {"start", "end", "drift"} <= set(doc["noise"])

    rows = [r for r in doc["results"] if r["group"] == "overhead"]
    for r in doc["results"]:
        assert r["status"] in STATUSES, r
        if r["status"] != "ok":
            assert r.get("error"), r  # every gap says why
    numpy_row = next(r for r in rows if r["library"] == "numpy")
    assert numpy_row["status"] == "ok" and numpy_row["case"] == "eager_per_op_4"
    assert 0 < numpy_row["min"] <= numpy_row["median"]
    assert len(numpy_row["samples"]) >= 3
    for key in ("cpu_per_call", "minflt_per_call", "majflt_per_call"):
        assert numpy_row[key] >= 0
    # numpy is the only peer here, so it is its own best peer
    assert numpy_row["ratio_best_peer"] == 1.0 and numpy_row["best_peer"] == "numpy"
    assert numpy_row["ratio_limit"] > 0
    assert numpy_row["check"]["ok"] is True

    # nuvec is always attempted: its cases appear with a result or a reason
    if doc["libraries"]["nuvec"]["status"] == "ok":
        nv_cases = {r["case"] for r in rows if r["library"] == "nuvec"}
        assert nv_cases == {"eager_per_op_4", "compiled_10op_4"}

    table = proc.stdout
    assert "== overhead ==" in table and "== machine limits ==" in table
    assert (out / "table.md").read_text().count("|") > 10
