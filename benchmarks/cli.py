"""``python -m benchmarks``: plan the workers, run them one by one, report.

    python -m benchmarks [--quick] [--only NAME[,NAME]] [--libs a,b] [--threads N] [--out DIR]

NAME is a group (eager, fused, overhead, first_call, train, memory), a case (exp, gelu_tanh,
compiled_10op_4, mlp_step, ...) or group/case. The machine-limit worker always runs first and a
noise probe last: every ratio needs the first, and the spread between them says how noisy the
run was. Writes DIR/results.json, DIR/table.md and DIR/<group>.png.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import report, sysinfo
from . import workloads as W
from .libs import IMPORT_NAME, LIBRARIES, load
from .runner import REPO, Settings, Task, cleanup, run_task

CASES = {
    "eager": list(W.ELEMENTWISE),
    "fused": list(W.CHAINS),
    "overhead": ["compiled_10op_4", "eager_per_op_4"],
    "first_call": ["first_call_200_cold", "first_call_200_warm"],
    "train": ["mlp_step", "transformer_step"],
    "memory": ["gelu_tanh", "mlp_step"],
}

# share of a run's time each group takes (measured here), for the schedule guard below
GROUP_WEIGHT = {
    "machine": 0.01,
    "eager": 0.2,
    "fused": 0.38,
    "overhead": 0.03,
    "first_call": 0.1,
    "train": 0.1,
    "memory": 0.16,
    "noise": 0.01,
}
BUDGET_S = {"full": 540.0, "quick": 160.0}
"""What a run should take; a run behind that pace (a busy shared machine) samples less."""
LEAN = dict(
    samples=3,
    budget_s=1.0,
    min_sample_s=0.02,
    small_sample_s=0.01,
    train_sample_s=0.05,
    memory_steps=3,
)

# nuvec builds new fused kernels on a worker thread and runs the first call unfused; its
# documented NUVEC_COMPILE_SYNC=1 makes the call wait for the C compiler: both are reported
FIRST_CALL_EXTRA = {"nuvec": [({"NUVEC_COMPILE_SYNC": "1"}, "nv.compile sync")]}

N16M = 16 * 2**20
FULL = dict(
    n=N16M,
    samples=7,
    warmup=2,
    min_sample_s=0.05,
    budget_s=5.0,
    small_sample_s=0.05,
    first_call_n=4096,
    train_warmup=3,
    train_sample_s=0.25,
    memory_steps=5,
    noise_samples=15,
    case_timeout_s=60.0,
    first_call_timeout_s=300.0,
)
QUICK = dict(
    FULL,
    n=8 * 2**20,
    samples=3,
    warmup=1,
    min_sample_s=0.02,
    budget_s=1.0,
    small_sample_s=0.01,
    train_warmup=3,  # the BLAS's first products with new shapes are slow
    train_sample_s=0.05,
    memory_steps=3,
    noise_samples=9,
    case_timeout_s=15.0,
    first_call_timeout_s=60.0,
)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="fewer repeats and shorter samples")
    p.add_argument("--only", default="", help="comma-separated groups, cases or group/case")
    p.add_argument("--libs", default=",".join(LIBRARIES), help="comma-separated libraries")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="limit every library to N threads (and pin to N CPUs); default: their own",
    )
    p.add_argument("--out", default=None, help="output folder (default benchmarks/results/<mode>)")
    p.add_argument("--n", type=int, default=None, help="override the array size (elements)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per worker process")
    p.add_argument(
        "--case-timeout",
        type=float,
        default=None,
        help="seconds one case may run before its worker is stopped and restarted",
    )
    p.add_argument("--no-pin", action="store_true", help="with --threads, do not pin CPUs")
    p.add_argument(
        "--keep-blas-env",
        action="store_true",
        help="keep OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE for the workers",
    )
    p.add_argument("--keep-tmp", action="store_true", help="keep the workers' temporary folders")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument(
        "--nuvec-stand-in",
        choices=["mlx"],
        default=None,
        help="drive MLX through the nuvec adapter: tests the harness only; the results "
        "are labelled as a stand-in and are not nuvec's figures",
    )
    args = p.parse_args(argv)
    if args.threads is not None and args.threads < 1:
        p.error("--threads must be >= 1")
    unknown = [lib for lib in args.libs.split(",") if lib and lib not in LIBRARIES]
    if unknown:
        p.error(f"unknown libraries {unknown}; choose from {', '.join(LIBRARIES)}")
    return args


QUICK_SKIPS = {"memory": ["mlp_step"]}
"""Cases --quick leaves out unless named: each needs its own process and a slow compile."""


def select(only: str, quick: bool = False) -> dict[str, list[str]]:
    """Groups -> cases chosen by ``--only`` (everything when empty)."""

    def whole(g: str) -> list[str]:
        return [c for c in CASES[g] if not (quick and c in QUICK_SKIPS.get(g, []))]

    if not only.strip():
        return {g: whole(g) for g in CASES}
    chosen: dict[str, list[str]] = {}
    for token in (t.strip() for t in only.split(",") if t.strip()):
        if token == "machine":
            continue
        group, _, case = token.partition("/")
        if group in CASES and not case:
            chosen[group] = whole(group)
            continue
        hits = [
            (g, c)
            for g, cs in CASES.items()
            for c in cs
            if (c == token) or (g == group and c == case)
        ]
        if not hits:
            cases = sorted({c for v in CASES.values() for c in v})
            raise SystemExit(
                f"benchmarks: --only: no group or case named {token!r}; groups: "
                f"{', '.join(CASES)}; cases: {', '.join(cases)}"
            )
        for g, c in hits:
            chosen.setdefault(g, [])
            if c not in chosen[g]:
                chosen[g].append(c)
    if "first_call" in chosen:  # a warm figure needs its cold twin to fill the cache
        chosen["first_call"] = list(CASES["first_call"])
    return {g: chosen[g] for g in CASES if g in chosen}


def installed(lib: str) -> bool:
    try:
        return importlib.util.find_spec(IMPORT_NAME[lib]) is not None
    except (ImportError, ValueError):
        return False


def plan(groups: dict[str, list[str]], libs: list[str], options: dict[str, Any]) -> list[Task]:
    tasks = [Task("machine", "machine")]
    for group, cases in groups.items():
        for lib in libs:
            adapter = load(lib, **(options if lib == "nuvec" else {}))
            variants = adapter.variants(group)
            if group == "first_call":
                for v in variants:
                    for env, label in [({}, None), *FIRST_CALL_EXTRA.get(lib, [])]:
                        cold = Task(lib, group, variant=v, phase="cold", env=env, label=label)
                        tasks += [
                            cold,
                            Task(
                                lib,
                                group,
                                variant=v,
                                phase="warm",
                                env=env,
                                label=label,
                                reuse_dir_of=cold.key,
                            ),
                        ]
            elif group == "memory":
                for case in cases:
                    for v in adapter.variants("train") if case == "mlp_step" else variants:
                        tasks.append(Task(lib, group, case=case, variant=v))
            elif variants:
                tasks.append(Task(lib, group, cases=cases))
    tasks.append(Task("machine", "noise"))
    return tasks


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    mode = "quick" if args.quick else "full"
    cfg = dict(QUICK if args.quick else FULL)
    if args.n:
        cfg["n"] = args.n
    if args.case_timeout:
        cfg["case_timeout_s"] = args.case_timeout
    cfg["threads"] = args.threads or os.cpu_count() or 1
    out_dir = Path(args.out) if args.out else REPO / "benchmarks" / "results" / mode
    out_dir.mkdir(parents=True, exist_ok=True)
    groups = select(args.only, args.quick)
    wanted = [lib for lib in LIBRARIES if lib in args.libs.split(",")]
    libraries: dict[str, dict[str, Any]] = {}
    runnable = []
    for lib in wanted:
        if lib == "nuvec" or installed(lib):  # nuvec always runs: its gaps are part of the report
            runnable.append(lib)
        else:
            libraries[lib] = {
                "status": "not installed",
                "version": None,
                "note": f"{IMPORT_NAME[lib]} is not importable here; skipped",
            }
    options = {"stand_in": args.nuvec_stand_in} if args.nuvec_stand_in else {}
    tasks = plan(groups, runnable, options)
    scratch = Path(tempfile.mkdtemp(prefix="nvbench-"))
    settings = Settings(
        cfg=cfg,
        threads=args.threads,
        pin=not args.no_pin,
        keep_blas_env=args.keep_blas_env,
        timeout_s=args.timeout or (150.0 if args.quick else 300.0),
        scratch=scratch,
        adapter_options=options,
        keep_tmp=args.keep_tmp,
    )
    started = dt.datetime.now().astimezone()
    machine = sysinfo.describe()
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    say(
        f"nuvec benchmarks ({mode}) on {machine['cpu']}, {machine['cores']} cores; "
        f"{len(tasks)} worker processes; libraries: {', '.join(runnable)}"
        + (f"; skipped (not installed): {', '.join(k for k in libraries)}" if libraries else "")
    )
    docs, dirs = [], {}
    t_run = time.perf_counter()
    per_group = {g: sum(t.group == g for t in tasks) for g in {t.group for t in tasks}}
    weights = {t.key: GROUP_WEIGHT.get(t.group, 0.1) / per_group[t.group] for t in tasks}
    total_w, done_w, lean_from = sum(weights.values()), 0.0, None
    try:
        for i, task in enumerate(tasks, 1):
            elapsed = time.perf_counter() - t_run
            if (
                lean_from is None
                and not args.quick
                and elapsed / BUDGET_S[mode] > done_w / total_w + 0.15
            ):
                lean_from = task.key
                settings.cfg = dict(settings.cfg, **LEAN)
                say(
                    f"behind schedule after {elapsed:.0f}s (load average "
                    f"{os.getloadavg()[0]:.1f}): the remaining workers take 3 samples"
                )
            doc = run_task(task, settings, dirs)
            done_w += weights[task.key]
            docs.append(doc)
            bad = sum(r["status"] != "ok" for r in doc.get("results", []))
            state = (
                "unavailable: " + str(doc.get("error"))[:60]
                if doc.get("available") is False
                else f"{len(doc.get('results', []))} results" + (f", {bad} not ok" if bad else "")
            )
            if doc.get("worker_error"):
                state += " | " + doc["worker_error"][:80].replace("\n", " ")
            say(
                f"[{i:>2}/{len(tasks)}] {task.key:<40} {doc['wall_s']:6.1f}s  "
                f"load {os.getloadavg()[0]:4.1f}  {state}"
            )
    finally:
        cleanup(dirs, settings.keep_tmp)
        if not settings.keep_tmp:
            try:
                scratch.rmdir()
            except OSError:
                pass
    duration = time.perf_counter() - t_run

    for doc in docs:
        lib = doc["lib"]
        if lib == "machine":
            continue
        entry = libraries.setdefault(lib, {"status": "ok", "version": doc.get("version")})
        if doc.get("available") is False:
            entry.update(status="not available", note=doc.get("error"))
        elif doc.get("available") is None or (doc.get("worker_error") and not doc.get("version")):
            entry.update(status="failed", note=(doc.get("worker_error") or "")[:300])
        elif doc.get("version"):
            entry["version"] = doc["version"]
        if lib == "nuvec" and options:
            entry["stand_in"] = options["stand_in"]
    rows = report.rows_from(docs)
    limits = report.limits_from(rows)
    report.annotate(rows, limits)
    noise = report.noise_from(docs)
    machine["cc"] = next((d.get("version") for d in docs if d["lib"] == "machine"), None)
    machine["loadavg_end"] = list(os.getloadavg())
    doc = {
        "schema": "nuvec-bench/1",
        "mode": mode,
        "argv": sys.argv[1:] if argv is None else argv,
        "started": started.isoformat(timespec="seconds"),
        "duration_s": duration,
        "threads": args.threads,
        "pinned": settings.cpus,
        "blas_env_kept": args.keep_blas_env,
        "config": cfg,
        "machine": machine,
        "lean_from": lean_from,
        "libraries": libraries,
        "limits": limits,
        "noise": noise,
        "groups": {g: c for g, c in groups.items()},
        "results": rows,
        "workers": [
            {
                k: d.get(k)
                for k in (
                    "task",
                    "lib",
                    "group",
                    "phase",
                    "exit_code",
                    "wall_s",
                    "import_s",
                    "worker_error",
                    "env",
                )
            }
            for d in docs
        ],
    }
    (out_dir / "results.json").write_text(json.dumps(doc, indent=1, default=float))
    shown = ["machine", *groups]
    text = report.render(rows, shown)
    (out_dir / "table.md").write_text(report.markdown(rows, shown) + "\n")
    print(text)
    print(report.summary_text(doc))
    goals = report.targets(doc)
    if goals:
        print("\n== nuvec against the issues' targets (this run; noisy machine) ==")
        print("\n".join(goals))
    if options:
        print(
            f"\nWARNING: 'nuvec' rows are the stand-in {options['stand_in']!r}, not nuvec: "
            "harness test only, never figures."
        )
    if not args.no_plots:
        try:
            from . import plots

            title = f"{machine['cpu']}, {machine['cores']} cores, {started:%Y-%m-%d}, {mode}"
            paths = plots.write(rows, limits, out_dir, title)
            print(f"plots: {', '.join(p.name for p in paths)}")
        except ImportError as exc:
            print(f"plots skipped: {exc} (pip install matplotlib)")
    print(f"wrote {out_dir / 'results.json'} in {duration:.0f}s")
    return 0
