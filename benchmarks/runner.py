"""Run workers one at a time, each in a fresh process with a fresh temporary directory.

The directory holds every cache a library keeps (nuvec's kernels, JAX's compilation cache,
TorchInductor's, and TMPDIR, where MLX writes its CPU kernels), so nothing compiled by an
earlier worker or an earlier run makes a cold figure warm. The one deliberate exception is the
"warm" first-call worker, which gets the directory its "cold" twin filled.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUVEC_NUM_THREADS",
    "BENCH_THREADS",
)
BLAS_CORE_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


@dataclass
class Task:
    """One worker process: a library, a group, and what the worker needs to know."""

    lib: str
    group: str
    cases: list[str] = field(default_factory=list)
    variant: str | None = None
    case: str | None = None
    phase: str | None = None
    reuse_dir_of: str | None = None  # key of the task whose directory this one reuses
    env: dict[str, str] = field(default_factory=dict)  # a library's own documented switches
    label: str | None = None  # the variant's name in the report, when env makes it another one

    @property
    def key(self) -> str:
        parts = (self.lib, self.group, self.case, self.label or self.variant, self.phase)
        return "-".join(p.replace(" ", "_") for p in parts if p)


@dataclass
class Settings:
    cfg: dict[str, Any]
    threads: int | None  # None: each library's default
    pin: bool
    keep_blas_env: bool
    timeout_s: float
    scratch: Path
    adapter_options: dict[str, Any] = field(default_factory=dict)
    keep_tmp: bool = False
    deaths: dict[str, int] = field(default_factory=dict)  # "lib|variant" -> workers it killed
    cpus: list[int] | None = None  # chosen once per run, with --threads


RUN_DEATHS = 3  # a variant that killed this many workers in the run is not tried again
TASK_DEATHS = 2  # ... or this many in one task


def worker_env(settings: Settings, tmp: Path) -> dict[str, str]:
    """The environment of one worker: caches in ``tmp``, thread limits, fair BLAS settings."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    caches = {
        "TMPDIR": tmp,
        "NUVEC_CACHE_DIR": tmp / "nuvec-cache",
        "BENCH_JAX_CACHE_DIR": tmp / "jax-cache",
        "TORCHINDUCTOR_CACHE_DIR": tmp / "inductor",
        "TRITON_CACHE_DIR": tmp / "triton",
        "XDG_CACHE_HOME": tmp / "xdg",
        "MPLCONFIGDIR": tmp / "mpl",
    }
    for var, path in caches.items():
        path.mkdir(parents=True, exist_ok=True)
        env[var] = str(path)
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONHASHSEED"] = "0"
    env.pop("NUVEC_DISABLE_COMPILE", None)
    if not settings.keep_blas_env:
        # OpenBLAS core-type overrides (set on some machines for old builds) slow a current NumPy
        for var in BLAS_CORE_VARS:
            env.pop(var, None)
    if settings.threads:
        for var in THREAD_VARS:
            env[var] = str(settings.threads)
        if settings.threads == 1:
            flags = env.get("XLA_FLAGS", "")
            env["XLA_FLAGS"] = (
                flags + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
            ).strip()
    return env


def _idle_ticks() -> dict[int, int]:
    ticks = {}
    with open("/proc/stat") as f:
        for line in f:
            name, *fields = line.split()
            if name.startswith("cpu") and name != "cpu":
                ticks[int(name[3:])] = int(fields[3]) + int(fields[4])  # idle + iowait
    return ticks


def idlest_cpus(count: int, window_s: float = 0.5) -> list[int]:
    """The ``count`` allowed CPUs that were idle the most over ``window_s`` (a shared machine's
    other work is rarely spread evenly)."""
    allowed = sorted(os.sched_getaffinity(0))
    try:
        before = _idle_ticks()
        time.sleep(window_s)
        after = _idle_ticks()
        allowed.sort(key=lambda c: -(after.get(c, 0) - before.get(c, 0)))
    except (OSError, ValueError, IndexError):
        pass
    return sorted(allowed[:count])


def pin_cpus(settings: Settings) -> list[int] | None:
    if not (settings.threads and settings.pin):
        return None
    if settings.cpus is None:
        settings.cpus = idlest_cpus(settings.threads)
    return settings.cpus


def _run_once(
    task: Task,
    settings: Settings,
    tmp: Path,
    skip: list[str],
    dead_variants: list[str],
    attempt: int,
) -> dict[str, Any]:
    spec = {
        "lib": task.lib,
        "group": task.group,
        "cases": task.cases,
        "variant": task.variant,
        "case": task.case,
        "phase": task.phase,
        "cfg": settings.cfg,
        "skip": skip,
        "dead_variants": dead_variants,
        "variant_label": task.label,
        "pin_cpus": pin_cpus(settings),
        "adapter_options": settings.adapter_options if task.lib == "nuvec" else {},
    }
    spec_path, out_path = tmp / f"{task.key}.spec.json", tmp / f"{task.key}.{attempt}.out.json"
    spec_path.write_text(json.dumps(spec))
    log_path = tmp / f"{task.key}.{attempt}.log"
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.worker", str(spec_path), str(out_path)],
            cwd=REPO,
            env={**worker_env(settings, tmp), **task.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code: int | None = proc.wait(timeout=settings.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the worker's own process group, started above
            proc.wait()
            code = None
        except BaseException:  # Ctrl-C: its own session does not get the signal, so end it here
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    try:
        doc = json.loads(out_path.read_text())
    except (OSError, json.JSONDecodeError):
        doc = {
            "lib": task.lib,
            "group": task.group,
            "phase": task.phase,
            "available": None,
            "version": None,
            "results": [],
        }
    doc.update(exit_code=code, wall_s=time.perf_counter() - t0)
    if code != 0:
        tail = log_path.read_text(errors="replace")[-2500:] if log_path.exists() else ""
        why = "timed out" if code is None else f"exited with code {code}"
        doc["worker_error"] = f"worker {why} after {doc['wall_s']:.1f}s; log tail:\n{tail}"
    return doc


def run_task(task: Task, settings: Settings, dirs: dict[str, Path]) -> dict[str, Any]:
    """Run one task's worker; if it dies inside a case (crash, hang), record that case as an
    error with the log's tail and start a fresh worker for the remaining cases. A variant that
    has died twice is not tried again in this task: its remaining cases are recorded as skipped,
    so a library that hangs everywhere costs a few time-outs, not one per case."""
    if task.reuse_dir_of and task.reuse_dir_of in dirs:
        tmp = dirs[task.reuse_dir_of]
    else:
        tmp = Path(tempfile.mkdtemp(prefix=f"{task.key}-", dir=settings.scratch))
    dirs[task.key] = tmp
    skip: list[str] = []
    dead_variants = [
        k.split("|", 1)[1]
        for k, n in settings.deaths.items()
        if n >= RUN_DEATHS and k.startswith(task.lib + "|")
    ]
    deaths: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    wall, attempt = 0.0, 0
    while True:
        doc = _run_once(task, settings, tmp, skip, dead_variants, attempt)
        wall += doc["wall_s"]
        results += doc.get("results", [])
        current = doc.get("current")
        if (
            doc.get("done")
            or doc.get("available") is False
            or not current
            or current == "load"
            or attempt >= 20
        ):
            break
        case, _, variant = current.partition("|")
        results.append(
            {
                "case": case,
                "variant": variant,
                "status": "error",
                "error": "worker died in this case: " + doc.get("worker_error", "").split(";")[0],
                "traceback": doc.get("worker_error", "")[-2000:],
            }
        )
        skip += [f"{r['case']}|{r['variant']}" for r in results]
        deaths[variant] = deaths.get(variant, 0) + 1
        run_key = f"{task.lib}|{variant}"
        settings.deaths[run_key] = settings.deaths.get(run_key, 0) + 1
        if deaths[variant] >= TASK_DEATHS or settings.deaths[run_key] >= RUN_DEATHS:
            dead_variants.append(variant)
        attempt += 1
        doc.pop("worker_error", None)
    doc.update(task=task.key, results=results, wall_s=wall, restarts=attempt)
    return doc


def cleanup(dirs: dict[str, Path], keep: bool) -> None:
    if keep:
        return
    for path in set(dirs.values()):
        shutil.rmtree(path, ignore_errors=True)
