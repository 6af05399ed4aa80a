"""One library, one workload group, in its own process: ``python -m benchmarks.worker SPEC OUT``.

SPEC is a JSON file written by the runner (library, group, cases, sizes, phase); OUT receives the
results, rewritten after every case so that a crash or a timeout loses only what was left.
Failures never propagate: a missing piece of a library (ImportError, AttributeError,
NotImplementedError) is recorded as "not available", anything else as "error", each with its
message, and the worker goes on with the next case.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import resource
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import machine
from . import workloads as W
from .libs import load
from .libs.base import NotApplicable
from .timing import measure, once

MISSING = (ImportError, AttributeError, NotImplementedError)


class Output:
    """The worker's result file, rewritten atomically after each case."""

    def __init__(self, path: Path, spec: dict[str, Any]) -> None:
        self.path = path
        self.doc: dict[str, Any] = {
            "lib": spec["lib"],
            "group": spec["group"],
            "phase": spec.get("phase"),
            "available": True,
            "version": None,
            "error": None,
            "results": [],
            "env": env_info(),
        }

    def add(self, rec: dict[str, Any]) -> None:
        rec.pop("last", None)  # a result array, if one was left in, is not JSON
        self.doc["results"].append(rec)
        self.flush()

    def flush(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.doc, default=float))
        os.replace(tmp, self.path)


def env_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "pid": os.getpid(),
        "affinity": sorted(os.sched_getaffinity(0)),
        "loadavg_start": os.getloadavg()[0],
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
    }
    try:
        from threadpoolctl import threadpool_info

        info["threadpools"] = [
            {k: p.get(k) for k in ("internal_api", "num_threads", "architecture")}
            for p in threadpool_info()
        ]
    except ImportError:
        pass
    return info


def failure(case: str, variant: str, exc: BaseException) -> dict[str, Any]:
    """A result record for a case that could not run, classified as described in the module doc."""
    if isinstance(exc, NotApplicable):
        status = "n/a"
    elif isinstance(exc, MISSING):
        status = "not available"
    else:
        status = "error"
    rec = {
        "case": case,
        "variant": variant,
        "status": status,
        "error": f"{type(exc).__name__}: {exc}"[:500],
    }
    if status == "error":
        rec["traceback"] = traceback.format_exc()[-2000:]
    return rec


class Watchdog:
    """Ends the worker, with every thread's stack in the log, when one case runs too long.

    faulthandler's timer is a C thread: it fires even while C code holds the GIL. The runner
    then records the case named in ``current`` as hung and restarts the worker without it.
    """

    timeout_s = 60.0
    skip: set[str] = set()
    dead_variants: set[str] = set()

    @staticmethod
    def arm(seconds: float) -> None:
        """Restarts the timer: the case now has ``seconds`` more."""
        faulthandler.dump_traceback_later(seconds, exit=True)


def guarded(out: Output, case: str, variant: str, body: Callable[[], dict[str, Any]]) -> None:
    key = f"{case}|{variant}"
    if key in Watchdog.skip:  # done (or hung) in an earlier process of this task
        return
    if variant in Watchdog.dead_variants:
        out.add(
            {
                "case": case,
                "variant": variant,
                "status": "error",
                "error": "skipped: this variant killed its worker repeatedly earlier in this run",
            }
        )
        return
    out.doc["current"] = key
    out.flush()
    Watchdog.arm(Watchdog.timeout_s)
    try:
        rec = body()
        out.doc["current"] = None
        out.add({"case": case, "variant": variant, "status": "ok", **rec})
    except Exception as exc:  # noqa: BLE001 -- recorded, never fatal: see module doc
        out.doc["current"] = None
        out.add(failure(case, variant, exc))
    finally:
        faulthandler.cancel_dump_traceback_later()


def timed(thunk: Callable[[], Any], cfg: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """``measure`` with the run's settings; the last result is returned under ``"last"``."""
    opts = dict(
        samples=cfg["samples"],
        warmup=cfg["warmup"],
        min_sample_s=cfg["min_sample_s"],
        budget_s=cfg["budget_s"],
    )
    opts.update(kw)
    return measure(thunk, **opts)


def checked_last(adapter: Any, m: dict[str, Any], expected: np.ndarray) -> dict[str, Any]:
    """Check the last timed call's result (no extra call of a slow workload)."""
    return W.check(adapter.to_numpy(m.pop("last")), expected)


def checked(adapter: Any, result: Any, expected: np.ndarray) -> dict[str, Any]:
    return W.check(adapter.to_numpy(result), expected)


def ref_inputs(xs: list[np.ndarray]) -> list[np.ndarray]:
    return [x[: W.CHECK_N].astype(np.float64) for x in xs]


# --- groups ---


def run_eager(adapter: Any, cfg: dict[str, Any], cases: list[str], out: Output) -> None:
    n = cfg["n"]
    for op in cases:
        xs = W.inputs(n, W.ELEMENTWISE[op])
        expected = getattr(W.RefF, op)(*ref_inputs(xs))
        for variant in adapter.variants("eager"):

            def body(op=op, xs=xs, variant=variant, expected=expected) -> dict[str, Any]:
                thunk = adapter.elementwise(op, xs, variant)
                m = timed(thunk, cfg)  # its calibration call is one more warm-up
                check = checked_last(adapter, m, expected)
                rec = {"unit": "s", "bytes": (len(xs) + 1) * 4 * n, **m, "check": check}
                note = getattr(adapter, "NOTES", {}).get(op)
                return {**rec, "note": note} if note else rec

            guarded(out, op, variant, body)


def run_fused(adapter: Any, cfg: dict[str, Any], cases: list[str], out: Output) -> None:
    n = cfg["n"]
    for name in cases:
        chain = W.CHAINS[name]
        xs = W.inputs(n, chain.n_inputs)
        expected = chain.fn(W.RefF, *ref_inputs(xs))
        for variant in adapter.variants("fused"):

            def body(
                name=name, xs=xs, variant=variant, chain=chain, expected=expected
            ) -> dict[str, Any]:
                thunk = adapter.chain(name, xs, variant)
                t_first = once(thunk)["median"]  # includes compiling; also the first warm-up
                adapter.settle()
                m = timed(thunk, cfg, warmup=max(0, cfg["warmup"] - 1))
                check = checked_last(adapter, m, expected)
                return {
                    "unit": "s",
                    "bytes": chain.ideal_bytes(n),
                    "first_call_s": t_first,
                    **m,
                    "check": check,
                }

            guarded(out, name, variant, body)


def overhead_cases(adapter: Any) -> list[tuple[str, str]]:
    if adapter.name == "numexpr":  # one evaluate of the whole expression: numexpr's "compiled" form
        return [("compiled_10op_4", "numexpr")]
    pairs = [("eager_per_op_4", adapter.eager)] if adapter.eager else []
    return pairs + ([("compiled_10op_4", adapter.compiled)] if adapter.compiled else [])


def run_overhead(adapter: Any, cfg: dict[str, Any], cases: list[str], out: Output) -> None:
    xs = W.inputs(4, 1)
    expected = W.chain10(W.RefF, *ref_inputs(xs))
    for case, variant in overhead_cases(adapter):
        if case not in cases:
            continue
        per = 10 if case == "eager_per_op_4" else 1  # eager: report per op of the 10-op chain

        def body(variant=variant, per=per) -> dict[str, Any]:
            thunk = adapter.chain("chain10", xs, variant)
            m = timed(thunk, cfg, warmup=max(cfg["warmup"], 20), min_sample_s=cfg["small_sample_s"])
            check = checked_last(adapter, m, expected)
            for key in ("samples",):
                m[key] = [t / per for t in m[key]]
            for key in ("median", "min", "cpu_per_call", "minflt_per_call", "majflt_per_call"):
                m[key] /= per
            return {"unit": "s", "ops_per_call": 10, **m, "check": check}

        guarded(out, case, variant, body)


def run_first_call(adapter: Any, cfg: dict[str, Any], spec: dict[str, Any], out: Output) -> None:
    variant, phase = spec["variant"], spec["phase"]
    Watchdog.timeout_s = cfg.get("first_call_timeout_s", Watchdog.timeout_s)
    x = W.inputs(cfg["first_call_n"], 1)[0]
    expected = W.ops200(W.RefF, *ref_inputs([x]))

    def body() -> dict[str, Any]:
        adapter.warm_runtime()
        thunk = adapter.first_call(x, variant)
        result: list[Any] = []
        m = once(lambda: result.append(thunk()))
        compiled = adapter._last_compiled
        (arg,) = adapter._args([x])
        again = once(lambda: adapter.sync(compiled(arg)))["median"]  # replay, for contrast
        rec = {
            "unit": "s",
            **m,
            "second_call_s": again,
            "ops": 200,
            "check": checked(adapter, result[0], expected),
        }
        info = adapter.compile_split(compiled)
        if info:
            rec["compile_info"] = info
        return rec

    guarded(out, f"first_call_200_{phase}", spec.get("variant_label") or variant, body)


def run_train(adapter: Any, cfg: dict[str, Any], cases: list[str], out: Output) -> None:
    for case in cases:
        for variant in adapter.variants("train"):
            _train_case(adapter, cfg, case, variant, out)


#: steps a training case has run, at least, when its loss is compared with the first step's
TRAIN_CHECK_STEPS = 20


def _train_case(adapter: Any, cfg: dict[str, Any], case: str, variant: str, out: Output) -> None:
    """The step alone, then (``cfg["contention"]``) the same step while a second process keeps
    one core busy: the ``<case>_contended`` row, with its slowdown against the first."""
    made: dict[str, Any] = {}

    def body() -> dict[str, Any]:
        step, to_float = adapter.train(variant, case)
        calls = [0]

        def thunk() -> Any:
            calls[0] += 1
            return step()

        losses: list[Any] = []
        # the first step compiles (torch.compile's inductor takes minutes on two busy cores):
        # it gets the first-call allowance, the timed steps the case's
        Watchdog.arm(cfg.get("first_call_timeout_s", Watchdog.timeout_s))
        first = once(lambda: losses.append(thunk()))
        adapter.settle()
        Watchdog.arm(Watchdog.timeout_s)
        loss0 = to_float(losses[0])
        m = timed(thunk, cfg, warmup=cfg["train_warmup"], min_sample_s=cfg["train_sample_s"])
        last = m.pop("last")
        # one batch's loss against another's is noise over a few steps: check after enough
        while calls[0] < TRAIN_CHECK_STEPS:
            last = thunk()
        loss1 = to_float(last)
        made.update(thunk=thunk, to_float=to_float, median=m["median"])
        return {
            "unit": "s",
            **m,
            "first_step_s": first["median"],
            "flops": W.TRAIN_FLOPS[case](),
            "loss_start": loss0,
            "loss_end": loss1,
            "check": {"ok": bool(np.isfinite(loss1) and loss1 < loss0), "why": "loss falls"},
        }

    def contended() -> dict[str, Any]:
        with one_core_busy(cfg.get("case_timeout_s", 60.0)):
            m = timed(made["thunk"], cfg, warmup=1, min_sample_s=cfg["train_sample_s"])
        loss = made["to_float"](m.pop("last"))
        return {
            "unit": "s",
            **m,
            "slowdown": m["median"] / made["median"],
            "flops": W.TRAIN_FLOPS[case](),
            "check": {"ok": bool(np.isfinite(loss)), "why": "finite loss"},
        }

    guarded(out, case, variant, body)
    if cfg.get("contention", True) and "thunk" in made:
        guarded(out, f"{case}_contended", variant, contended)


# the second process of the contended rows: one core busy, until it is killed or its deadline
_BUSY = (
    "import time\n"
    "end = time.monotonic() + {s}\n"
    "print(flush=True)\n"
    "while time.monotonic() < end: pass\n"
)


@contextlib.contextmanager
def one_core_busy(seconds: float) -> Any:
    """Runs the body while another process spins on one core (for at most ``seconds``)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _BUSY.format(s=float(seconds))],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    try:
        proc.stdout.readline()  # it is running
        yield
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (Linux >= 4.0), so ru_maxrss covers the workload only."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def run_memory(adapter: Any, cfg: dict[str, Any], spec: dict[str, Any], out: Output) -> None:
    """Peak resident memory (ru_maxrss) of a few calls in this fresh process.

    The figure is the whole process's peak, imports included: that is what a user's machine
    holds. ``baseline_rss`` (after imports and inputs) and ``ideal_bytes`` (what the work must
    add) give the limit: baseline + ideal.
    """
    case, variant = spec["case"], spec["variant"]

    def body() -> dict[str, Any]:
        if case == "mlp_step":
            thunk, _ = adapter.train(variant)
            ideal, calls = W.train_ideal_bytes(), cfg["memory_steps"]
        else:
            n = cfg["n"]
            thunk = adapter.chain(case, W.inputs(n, W.CHAINS[case].n_inputs), variant)
            ideal, calls = 4 * n, 3
        base = rss_now()
        reset = reset_peak()  # setup transients (input generation) are not the workload's
        for _ in range(calls):
            thunk()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return {
            "unit": "bytes",
            "median": peak,
            "min": peak,
            "peak_rss": peak,
            "baseline_rss": base,
            "above_baseline": peak - base,
            "peak_reset": reset,
            "ideal_bytes": ideal,
            "calls": calls,
        }

    guarded(out, case, variant, body)


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    out = Output(Path(argv[1]), spec)
    pin = spec.get("pin_cpus")
    if pin:
        os.sched_setaffinity(0, pin)
        out.doc["env"]["affinity"] = sorted(os.sched_getaffinity(0))
    out.flush()
    cfg, group = spec["cfg"], spec["group"]
    Watchdog.timeout_s = cfg.get("case_timeout_s", 60.0)
    Watchdog.skip = set(spec.get("skip") or [])
    Watchdog.dead_variants = set(spec.get("dead_variants") or [])
    if spec["lib"] == "machine":
        out.doc["version"] = machine.compiler_version()
        try:
            for rec in machine.run(
                cfg, Path(os.environ.get("TMPDIR", "/tmp")), noise_only=group == "noise"
            ):
                out.add(rec)
        except Exception as exc:  # noqa: BLE001 -- a missing cc must not end the run
            out.add(failure(group, "machine", exc))
        return 0
    out.doc["current"] = "load"
    out.flush()
    faulthandler.dump_traceback_later(Watchdog.timeout_s, exit=True)
    try:
        adapter = load(spec["lib"], **spec.get("adapter_options", {}))
        t0 = time.perf_counter()
        out.doc["version"] = adapter.load()
        out.doc["import_s"] = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001
        out.doc.update(available=False, error=f"{type(exc).__name__}: {exc}"[:500], current=None)
        out.flush()
        return 0
    finally:
        faulthandler.cancel_dump_traceback_later()
    out.doc["current"] = None
    out.flush()
    cases = spec.get("cases") or []
    if group == "eager":
        run_eager(adapter, cfg, cases, out)
    elif group == "fused":
        run_fused(adapter, cfg, cases, out)
    elif group == "overhead":
        run_overhead(adapter, cfg, cases, out)
    elif group == "first_call":
        run_first_call(adapter, cfg, spec, out)
    elif group == "train":
        run_train(adapter, cfg, cases, out)
    elif group == "memory":
        run_memory(adapter, cfg, spec, out)
    else:
        raise ValueError(f"benchmarks.worker: unknown group {group!r}")
    out.doc["done"] = True
    out.doc["env"]["loadavg_end"] = os.getloadavg()[0]
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
