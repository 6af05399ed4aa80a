"""Smoke test of ``python -m benchmarks.cached``: one tiny NumPy-only run, checking the rows'
structure (never the speed)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import cached


def test_numpy_rows_cover_every_case(tmp_path: Path) -> None:
    out = tmp_path / "cached.json"
    argv = ["--quick", "--libs", "numpy", "--threads", "1", "--sizes", "4096", "--json", str(out)]
    assert cached.main(argv) == 0
    doc = json.loads(out.read_text())
    rows = doc["rows"]
    assert {r["case"] for r in rows} == set(cached.CASES)
    assert all(r["status"] == "ok" and r["median_s"] > 0 for r in rows), rows
    assert {(r["n"], r["threads"], r["variant"]) for r in rows} == {(4096, 1, "numpy")}
    assert len(doc["load_before"]) == 3


def test_table_gives_nuvec_over_best_peer() -> None:
    rows = [
        {"status": "ok", "case": "tanh", "n": 2**16, "threads": 1, "variant": v, "median_s": t}
        for v, t in (("numpy", 2e-3), ("jax.jit", 1e-3), ("nuvec", 3e-3), ("nv.compile", 2e-3))
    ]
    line = cached.table(rows).splitlines()[2]
    assert line.startswith("| tanh | 64K | 1 |") and line.endswith("| 2.00 |")
