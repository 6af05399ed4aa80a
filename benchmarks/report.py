"""Turn worker outputs into one report: rows with ratios, the machine's limits, the noise, a table.

Both ratios are "higher is better":
- ``ratio_best_peer``: best peer's figure / this figure (time or memory), so 2.0 means twice as
  fast (or half the memory) as the best of NumPy, numexpr, JAX, PyTorch and MLX on that case;
- ``ratio_limit``: the fraction of the machine's limit reached: bandwidth for element-wise work,
  a bare ctypes call for per-call overhead, one cc run (cold) or one dlopen (warm) for
  first-call latency, BLAS sgemm FLOP/s for the training step, ideal bytes for memory.
"""

from __future__ import annotations

import statistics
from typing import Any

PEERLESS = {"nuvec"}


def rows_from(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flatten worker documents into rows; the end-of-run machine pass gets cases "...@end"."""
    rows = []
    for doc in docs:
        for rec in doc.get("results", []):
            if doc["lib"] == "machine":
                rec = dict(rec, case=rec["case"] + ("@end" if doc["group"] == "noise" else ""))
                rows.append({"group": "machine", "library": "machine", **rec})
            else:
                rows.append({"group": doc["group"], "library": doc["lib"], **rec})
    return rows


def limits_from(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The machine's limits: the best (minimum-time) figure of each machine case over the run's
    start and end passes, so that a burst of load from elsewhere does not lower the bar."""
    best: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["group"] != "machine" or r["status"] != "ok":
            continue
        key = r["case"].removesuffix("@end") + (f"_{r['threads']}t" if "threads" in r else "")
        if key not in best or r["min"] < best[key]["min"]:
            best[key] = r
    lim: dict[str, Any] = {}
    bw = {k: r["bytes"] / r["min"] / 1e9 for k, r in best.items() if r.get("bytes")}
    if bw:
        top = max(bw, key=bw.get)
        lim.update(bandwidth_gbs=bw[top], bandwidth_basis=top, bandwidth_all=bw)
    if "sgemm_1024" in best:
        lim["sgemm_gflops"] = best["sgemm_1024"]["flops"] / best["sgemm_1024"]["min"] / 1e9
    for key in ("c_call_10op_4", "c_call_1op_4", "ufunc_call_1op_4", "cc_200op", "dlopen_200op"):
        if key in best:
            lim[key + "_s"] = best[key]["min"]
    return lim


def noise_from(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """Spread of the repeated NumPy copy at the start and end of the run, and the drift between."""
    probes = {}
    for doc in docs:
        if doc["lib"] == "machine":
            for r in doc.get("results", []):
                if r["case"] == "numpy_copy" and r["status"] == "ok":
                    probes[doc["group"]] = r["samples"]
    out: dict[str, Any] = {}
    for when, key in (("start", "machine"), ("end", "noise")):
        s = probes.get(key)
        if s:
            med = statistics.median(s)
            q = statistics.quantiles(s, n=10) if len(s) >= 2 else [med, med]
            out[when] = {
                "median_s": med,
                "spread": (max(s) - min(s)) / med,
                "p10_p90": (q[-1] - q[0]) / med,
                "n": len(s),
            }
    if "start" in out and "end" in out:
        out["drift"] = out["end"]["median_s"] / out["start"]["median_s"] - 1
    return out


def _limit_ratio(r: dict[str, Any], lim: dict[str, Any]) -> tuple[float | None, str | None]:
    med, g, case = r["median"], r["group"], r["case"]
    if not med:
        return None, None
    if r.get("bytes") and "bandwidth_gbs" in lim:
        return r["bytes"] / med / 1e9 / lim["bandwidth_gbs"], "bandwidth"
    if g == "overhead":
        # compiled: one ctypes call into a C kernel doing all 10 ops; eager: one ufunc call, out=
        key = "c_call_10op_4_s" if case == "compiled_10op_4" else "ufunc_call_1op_4_s"
        return (lim[key] / med, key[:-2]) if key in lim else (None, None)
    if g == "first_call":
        key = "cc_200op_s" if case.endswith("cold") else "dlopen_200op_s"
        return (lim[key] / med, key[:-2]) if key in lim else (None, None)
    if g == "train" and "sgemm_gflops" in lim:
        return r["flops"] / med / 1e9 / lim["sgemm_gflops"], "sgemm"
    if g == "memory" and r.get("ideal_bytes"):
        return (r["baseline_rss"] + r["ideal_bytes"]) / med, "baseline + ideal bytes"
    return None, None


def annotate(rows: list[dict[str, Any]], lim: dict[str, Any]) -> None:
    """Add GB/s, best peer and both ratios to every successful row, in place."""
    best: dict[tuple[str, str], tuple[float, str]] = {}
    for r in rows:
        if (
            r["status"] == "ok"
            and r["library"] not in PEERLESS
            and r["group"] != "machine"
            and r.get("median")
            and r.get("check", {}).get("ok", True)
        ):
            k = (r["group"], r["case"])
            if k not in best or r["median"] < best[k][0]:
                best[k] = (r["median"], r["variant"])
    for r in rows:
        if r["status"] != "ok" or not r.get("median"):
            continue
        if r.get("bytes"):
            r["gbs"] = r["bytes"] / r["median"] / 1e9
        if r.get("flops"):
            r["gflops"] = r["flops"] / r["median"] / 1e9
        k = (r["group"], r["case"])
        if k in best:
            r["best_peer"] = best[k][1]
            r["ratio_best_peer"] = best[k][0] / r["median"]
        r["ratio_limit"], r["limit_basis"] = _limit_ratio(r, lim)


# --- terminal table ---


def fmt_value(v: float | None, unit: str) -> str:
    """Seconds as s/ms/us with 3 significant digits; bytes as MiB."""
    if v is None:
        return "-"
    if unit == "bytes":
        return f"{v / 2**20:.1f} MiB"
    if v >= 1:
        return f"{v:.3g} s"
    if v >= 1e-3:
        return f"{v * 1e3:.3g} ms"
    return f"{v * 1e6:.3g} us"


def _pct(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.0f}%" if v >= 0.095 else f"{100 * v:.2g}%"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


COLUMNS = (
    "case",
    "variant",
    "median",
    "min",
    "GB/s",
    "vs best peer",
    "of limit",
    "cpu/wall",
    "minflt/call",
    "status",
)


def table(rows: list[dict[str, Any]], group: str) -> list[list[str]]:
    out = []
    for r in rows:
        if r["group"] != group:
            continue
        if r["status"] != "ok":
            out.append(
                [
                    r["case"],
                    r["variant"],
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    f"{r['status']}: {r.get('error', '')}"[:70],
                ]
            )
            continue
        unit = r.get("unit", "s")
        extra = r.get("gbs")
        cpu = r.get("cpu_per_call")
        status = "ok" if r.get("check", {}).get("ok", True) else "WRONG RESULT"
        if group == "train":
            status += f"  {1 / r['median']:.1f} steps/s"
            if r.get("slowdown") is not None:
                status += f"  slowdown x{r['slowdown']:.2f}"
        if group == "first_call" and r.get("second_call_s") is not None:
            status += f"  2nd call {fmt_value(r['second_call_s'], 's')}"
        split = {
            k: v
            for k, v in (r.get("compile_info") or {}).items()
            if (k.endswith("_s") or "_s_" in k) and "cpu" not in k and isinstance(v, (int, float))
        }
        if split:  # the library's own account of a first call (nuvec: CompiledFunction.stats())
            status += "  " + ", ".join(
                f"{k.removesuffix('_s').replace('_s_', ' ')} {fmt_value(v, 's')}"
                for k, v in split.items()
            )
        out.append(
            [
                r["case"],
                r["variant"],
                fmt_value(r["median"], unit),
                fmt_value(r["min"], unit),
                "-" if extra is None else f"{extra:.1f}",
                _x(r.get("ratio_best_peer")),
                _pct(r.get("ratio_limit")),
                "-"
                if cpu is None or unit != "s"
                else f"{(cpu + r.get('child_cpu', 0)) / r['median']:.2f}",
                "-" if r.get("minflt_per_call") is None else f"{r['minflt_per_call']:.0f}",
                status,
            ]
        )
    return out


def render(rows: list[dict[str, Any]], groups: list[str]) -> str:
    lines = []
    for g in groups:
        body = table(rows, g)
        if not body:
            continue
        widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(COLUMNS)]
        lines.append(f"\n== {g} ==")
        lines.append("  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths)).rstrip())
        for b in body:
            lines.append("  ".join(c.ljust(w) for c, w in zip(b, widths)).rstrip())
    return "\n".join(lines)


def markdown(rows: list[dict[str, Any]], groups: list[str]) -> str:
    """The same table as Markdown, for benchmarks/README.md."""
    parts = []
    for g in groups:
        body = table(rows, g)
        if not body:
            continue
        parts.append(f"\n**{g}**\n")
        parts.append("| " + " | ".join(COLUMNS) + " |")
        parts.append("|" + "---|" * len(COLUMNS))
        for b in body:
            parts.append("| " + " | ".join(c.replace("|", "/") for c in b) + " |")
    return "\n".join(parts)


def summary_text(doc: dict[str, Any]) -> str:
    """The footer: limits, noise, and which libraries did not take part."""
    lim, noise = doc["limits"], doc["noise"]
    lines = ["", "== machine limits =="]
    if "bandwidth_gbs" in lim:
        lines.append(f"memory bandwidth {lim['bandwidth_gbs']:.1f} GB/s ({lim['bandwidth_basis']})")
    if "sgemm_gflops" in lim:
        lines.append(f"sgemm 1024^3 {lim['sgemm_gflops']:.0f} GFLOP/s")
    for key, label in (
        ("c_call_10op_4_s", "ctypes call, 10 ops on 4 elements"),
        ("c_call_1op_4_s", "ctypes call, 1 op on 4 elements"),
        ("ufunc_call_1op_4_s", "np.add(x, y, z) on 4 elements"),
        ("cc_200op_s", "cc -O2 on the fused 200-op kernel"),
        ("dlopen_200op_s", "dlopen of that kernel"),
    ):
        if key in lim:
            lines.append(f"{label}: {fmt_value(lim[key], 's')}")
    if "start" in noise:
        s = noise["start"]
        msg = (
            f"noise: {s['n']} identical 64 MiB copies spread {100 * s['spread']:.0f}% "
            f"(p10-p90 {100 * s['p10_p90']:.0f}%)"
        )
        if "drift" in noise:
            msg += f"; start->end of run drift {100 * noise['drift']:+.0f}%"
        lines.append(msg)
    if doc.get("lean_from"):
        lines.append(f"the run fell behind schedule: from {doc['lean_from']} on, 3 samples a case")
    m = doc["machine"]
    lines.append(f"load average {m['loadavg'][0]:.2f} -> {m['loadavg_end'][0]:.2f}")
    for lib, info in doc["libraries"].items():
        if info["status"] != "ok":
            lines.append(f"{lib}: {info['status']}: {info.get('note')}")
        else:
            lines.append(f"{lib} {info.get('version')}")
    return "\n".join(lines)


def _row(rows: list[dict[str, Any]], group: str, case: str, variant: str) -> dict[str, Any] | None:
    for r in rows:
        if (r["group"], r["case"], r["variant"]) == (group, case, variant) and r["status"] == "ok":
            return r
    return None


def targets(doc: dict[str, Any]) -> list[str]:
    """nuvec against the issues' performance targets, in this run (one line each: met or not)."""
    rows, lim, out = doc["results"], doc["limits"], []

    def line(ok: bool | None, text: str) -> None:
        out.append(f"[{'met' if ok else 'NOT met' if ok is not None else 'n/a'}] {text}")

    ratios = []
    for op in ("add", "multiply", "exp", "tanh", "erf", "sigmoid"):
        nv, np_ = _row(rows, "eager", op, "nuvec"), _row(rows, "eager", op, "numpy")
        if nv and np_:
            ratios.append((op, np_["median"] / nv["median"]))
    if ratios:
        worst = min(ratios, key=lambda t: t[1])
        line(
            worst[1] >= 1.5,
            "issue 2: eager 16M ops >= 1.5x NumPy's throughput: "
            + ", ".join(f"{op} {x:.2f}x" for op, x in ratios),
        )
    nv, np_ = (_row(rows, "overhead", "eager_per_op_4", v) for v in ("nuvec", "numpy"))
    if nv and np_:
        line(
            nv["median"] <= np_["median"],
            f"issue 2: eager per-op overhead on 4 elements "
            f"<= NumPy's: {fmt_value(nv['median'], 's')} vs {fmt_value(np_['median'], 's')}",
        )
    r = _row(rows, "overhead", "compiled_10op_4", "nv.compile")
    if r:
        line(
            r["median"] < 5e-6,
            f"issue 4: compiled 10-op call on 4 elements < 5 us: {fmt_value(r['median'], 's')}",
        )
    r = _row(rows, "fused", "chain10", "nv.compile")
    if r and "bandwidth_gbs" in lim:
        line(
            r["gbs"] / lim["bandwidth_gbs"] >= 0.6,
            f"issue 4: compiled chain10 >= 60% of the "
            f"measured bandwidth: {100 * r['gbs'] / lim['bandwidth_gbs']:.0f}%",
        )
    behind = []
    for chain in ("gelu_erf", "gelu_tanh", "swiglu", "chain10"):
        nv = _row(rows, "fused", chain, "nv.compile")
        peers = [
            p for p in (_row(rows, "fused", chain, v) for v in ("jax.jit", "torch.compile")) if p
        ]
        if nv and peers and nv["median"] >= min(p["median"] for p in peers):
            behind.append(chain)
    if any(_row(rows, "fused", c, "nv.compile") for c in ("chain10", "gelu_tanh")):
        line(
            not behind,
            "issue 4: compiled chains ahead of jax.jit and torch.compile (those "
            "present)" + (f"; behind on {', '.join(behind)}" if behind else ""),
        )
    r = _row(rows, "first_call", "first_call_200_cold", "nv.compile sync")
    if r:
        line(
            r["median"] < 0.13,
            f"issue 4: cold first call of a 200-op function < 0.13 s with "
            f"the C compiler: {fmt_value(r['median'], 's')}",
        )
        before = (r.get("compile_info") or {}).get("first_call_s_before_compiler")
        if isinstance(before, (int, float)):
            line(
                before < 0.05,
                f"issue 4: ... < 50 ms before the C compiler: {fmt_value(before, 's')}",
            )
    r = _row(rows, "first_call", "first_call_200_warm", "nv.compile sync")
    if r:
        kc = (r.get("compile_info") or {}).get("kernel_compile_s")
        if isinstance(kc, (int, float)):
            line(
                kc < 0.005,
                f"issue 4: a kernel in the disk cache loads in < 5 ms: "
                f"{fmt_value(kc, 's')} (kernel_compile_s of the warm first call)",
            )
    for case, what in (("mlp_step", "MLP"), ("transformer_step", "transformer")):
        nv = _row(rows, "train", case, "nv.compile")
        peers = [
            r
            for r in rows
            if r["group"] == "train"
            and r["case"] == case
            and r["status"] == "ok"
            and r["library"] != "nuvec"
        ]
        if nv and peers:
            best = min(peers, key=lambda p: p["median"])
            line(
                nv["median"] < best["median"],
                f"issue 6: compiled {what} step ahead of every "
                f"peer: {fmt_value(nv['median'], 's')} vs {best['variant']} "
                f"{fmt_value(best['median'], 's')}",
            )
        nv = _row(rows, "train", f"{case}_contended", "nv.compile")
        peers = [
            r
            for r in rows
            if r["group"] == "train"
            and r["case"] == f"{case}_contended"
            and r["status"] == "ok"
            and r["library"] != "nuvec"
            and r.get("slowdown") is not None
        ]
        if nv and nv.get("slowdown") is not None and peers:
            best = min(peers, key=lambda p: p["slowdown"])
            line(
                nv["slowdown"] <= best["slowdown"],
                f"issue 20: {what} step's slowdown with one core busy no worse than the best "
                f"peer's: nv.compile x{nv['slowdown']:.2f} vs {best['variant']} "
                f"x{best['slowdown']:.2f}",
            )
    return out
