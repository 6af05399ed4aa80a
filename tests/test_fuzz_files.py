"""A short run of the damaged-file and kernel-cache fuzzer (`make fuzz` runs it for 300 s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_fuzz_files_short_run():
    r = subprocess.run(
        [sys.executable, "-m", "fuzz.files", "--seconds", "6", "--seed", "1"],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "crashes 0" in r.stdout and "bad_errors 0" in r.stdout, r.stdout
    cases = int(r.stdout.split("cases ")[1].split(",")[0])
    assert cases > 50, r.stdout
