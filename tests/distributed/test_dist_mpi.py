"""Every collective on 2 and 4 MPI processes of this machine, started by nuvec.launch.

One launch per process count runs all the checks of dist_worker.py (starting MPI costs more
than the checks); each check is reported here as its own test, failing with the traceback
of every process where it failed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import dist_worker  # noqa: E402

MISSING = [
    what
    for what, ok in (
        ("mpirun", shutil.which("mpirun") or shutil.which("mpiexec")),
        ("mpi4py", importlib.util.find_spec("mpi4py")),
    )
    if not ok
]
pytestmark = pytest.mark.skipif(
    bool(MISSING),
    reason=f"{' and '.join(MISSING)} not installed (.ci/run installs Open MPI and mpi4py)",
)

SIZES = (2, 4)
_results: dict[int, list[dict]] = {}


def launch(
    n: int, script: str, args: list[str], timeout: float = 120, env: dict | None = None
) -> subprocess.CompletedProcess:
    """Runs ``python -m nuvec.launch -n N script args`` from the project root."""
    full_env = {
        **os.environ,
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **(env or {}),
    }
    cmd = [sys.executable, "-m", "nuvec.launch", "-n", str(n), script, *args]
    return subprocess.run(
        cmd, cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=timeout
    )


def results(n: int, tmp_path_factory) -> list[dict]:
    if n not in _results:
        out = tmp_path_factory.mktemp(f"mpi{n}")
        try:
            p = launch(n, str(HERE / "dist_worker.py"), [str(out)])
        except subprocess.TimeoutExpired as e:
            pytest.fail(
                f"the {n}-process run did not finish in {e.timeout} s (a collective "
                f"waiting forever?)\n{e.stderr or ''}"
            )
        files = [out / f"rank{r}.json" for r in range(n)]
        if p.returncode != 0 or not all(f.exists() for f in files):
            pytest.fail(
                f"the {n}-process run failed (status {p.returncode}):\n"
                f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
            )
        _results[n] = [json.loads(f.read_text()) for f in files]
    return _results[n]


@pytest.mark.parametrize("n", SIZES)
def test_world(n, tmp_path_factory):
    res = results(n, tmp_path_factory)
    assert [r["size"] for r in res] == [n] * n
    assert {r["backend"] for r in res} == {"mpi"}


@pytest.mark.parametrize("name", [fn.__name__ for fn in dist_worker.CHECKS])
@pytest.mark.parametrize("n", SIZES)
def test_check(n, name, tmp_path_factory):
    res = results(n, tmp_path_factory)
    failed = {r: out[name] for r, out in enumerate(res) if out.get(name) != "ok"}
    assert not failed, "\n".join(f"rank {r}:\n{tb}" for r, tb in failed.items())


def test_launcher_runs_a_script_and_passes_arguments(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text(
        "import sys, nuvec as nv\n"
        "g = nv.distributed.init()\n"
        "x = nv.distributed.all_sum(nv.array([g.rank()]))\n"
        "with open(sys.argv[1] + str(g.rank()), 'w') as f:\n"
        "    print('rank', g.rank(), 'of', g.size(), x.tolist(), sys.argv[2:], "
        "file=f)\n"
    )
    out = str(tmp_path / "rank")
    p = launch(2, str(script), [out, "--flag", "7"], timeout=60)
    assert p.returncode == 0, p.stderr
    lines = [Path(out + str(r)).read_text().strip() for r in range(2)]
    assert lines == ["rank 0 of 2 [1] ['--flag', '7']", "rank 1 of 2 [1] ['--flag', '7']"]


def test_launcher_returns_the_failing_status(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(
        "import sys, nuvec as nv\nsys.exit(3 if nv.distributed.init().rank() == 1 else 0)\n"
    )
    p = launch(2, str(script), [], timeout=60)
    assert p.returncode != 0
