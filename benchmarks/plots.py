"""PNG plots of a report, one per workload group, written next to the JSON (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

COLORS = {
    "numpy": "#4c72b0",
    "numexpr": "#64b5cd",
    "jax": "#dd8452",
    "torch": "#c44e52",
    "mlx": "#8172b3",
    "nuvec": "#55a868",
    "machine": "#777777",
}


def _bars(ax: Any, rows: list[dict[str, Any]], value: Any, ylabel: str, log: bool = False) -> None:
    cases = list(dict.fromkeys(r["case"] for r in rows))
    variants = list(dict.fromkeys((r["library"], r["variant"]) for r in rows))
    width = 0.8 / max(1, len(variants))
    for j, (lib, var) in enumerate(variants):
        xs, ys = [], []
        for i, case in enumerate(cases):
            for r in rows:
                if r["case"] == case and r["variant"] == var and r["library"] == lib:
                    xs.append(i + (j - (len(variants) - 1) / 2) * width)
                    ys.append(value(r))
        shade = 0.55 if any(s in var for s in (".jit", "compile")) else 1.0
        ax.bar(
            xs,
            ys,
            width,
            label=var,
            color=COLORS.get(lib, "#999999"),
            alpha=shade,
            edgecolor="black",
            linewidth=0.4,
            hatch="//" if "sync" in var else None,
        )
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases, rotation=0, fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=7, ncol=min(4, len(variants)))
    ax.grid(axis="y", alpha=0.3)


SPECS = {  # group -> (value of a row, y label, log scale)
    "machine": (lambda r: r["gbs"], "GB/s (STREAM bytes)", False),
    "eager": (lambda r: r["gbs"], "effective GB/s (higher is better)", False),
    "fused": (lambda r: r["gbs"], "effective GB/s of an ideal fused kernel", False),
    "overhead": (lambda r: r["median"] * 1e6, "us per call (per op for eager)", True),
    "first_call": (lambda r: r["median"], "seconds, first call", True),
    "train": (lambda r: 1 / r["median"], "training steps per second", True),
    "memory": (lambda r: r["median"] / 2**20, "peak RSS of the process, MiB", False),
}


def write(
    rows: list[dict[str, Any]], limits: dict[str, Any], out_dir: Path, title: str
) -> list[Path]:
    """Write one PNG per group that has results; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for group, (value, ylabel, log) in SPECS.items():
        ok = [
            r
            for r in rows
            if r["group"] == group
            and r["status"] == "ok"
            and r.get("median")
            and (group not in ("machine", "eager", "fused") or r.get("gbs"))
        ]
        if not ok:
            continue
        fig, ax = plt.subplots(figsize=(10, 4.2))
        _bars(ax, ok, value, ylabel, log)
        if group in ("eager", "fused") and "bandwidth_gbs" in limits:
            ax.axhline(limits["bandwidth_gbs"], color="black", linestyle="--", linewidth=0.8)
            ax.text(
                0.99,
                limits["bandwidth_gbs"],
                f" machine limit {limits['bandwidth_gbs']:.1f} GB/s",
                transform=ax.get_yaxis_transform(),
                ha="right",
                va="bottom",
                fontsize=7,
            )
        ax.set_title(f"{group} - {title}", fontsize=9)
        fig.tight_layout()
        path = out_dir / f"{group}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)
    return paths
