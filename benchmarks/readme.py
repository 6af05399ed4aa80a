"""Write a run's results into benchmarks/README.md, between the results markers.

    python -m benchmarks.readme benchmarks/results/latest

Only a full run (not --quick, not a stand-in) is accepted: the README shows figures.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import report

START, END = "<!-- results:start -->", "<!-- results:end -->"
README = Path(__file__).resolve().parent / "README.md"


def section(run_dir: Path) -> str:
    doc = json.loads((run_dir / "results.json").read_text())
    if doc["mode"] != "full":
        raise SystemExit(
            "benchmarks.readme: only a full run goes into the README (this was --quick)"
        )
    if any(info.get("stand_in") for info in doc["libraries"].values()):
        raise SystemExit("benchmarks.readme: this run used a stand-in for nuvec; not figures")
    m = doc["machine"]
    mem = f"{m['memory_bytes'] / 2**30:.0f} GiB" if m.get("memory_bytes") else "?"
    caches = ", ".join(f"{k} {v}" for k, v in m.get("caches", {}).items())
    libs = doc["libraries"]
    present = [f"{k} {v['version']}" for k, v in libs.items() if v["status"] == "ok"]
    absent = [f"{k} ({v['status']})" for k, v in libs.items() if v["status"] != "ok"]
    rel = run_dir.resolve().relative_to(README.parent)
    try:  # redraw, so the plots follow the current plotting code
        from . import plots

        plots.write(
            doc["results"],
            doc["limits"],
            run_dir,
            f"{m['cpu']}, {m['cores']} cores, {doc['started'][:10]}, {doc['mode']}",
        )
    except ImportError:
        pass
    lines = [
        f"Run of {doc['started'][:10]} ({doc['started']}), `python -m benchmarks"
        + (" " + " ".join(doc["argv"]) if doc["argv"] else "")
        + f"`, {doc['duration_s']:.0f} s.",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {mem} memory ({caches}); {m['os']}, "
        f"Python {m['python']}, {m.get('cc') or 'no cc'}. Threads: "
        + (
            f"{doc['threads']} (pinned to CPUs {doc['pinned']})"
            if doc["threads"]
            else "each library's default"
        )
        + ".",
        "",
        "Libraries: " + ", ".join(present) + ".",
        "Missing: " + (", ".join(absent) if absent else "none") + ".",
        "",
        "```",
        report.summary_text(doc).strip(),
        "```",
        "",
        "nuvec against the issues' targets in this run (one noisy run; read with the spread):",
        "",
        *[f"- {t}" for t in report.targets(doc)],
        report.markdown(doc["results"], ["machine", *doc["groups"]]),
        "",
    ]
    for png in sorted(run_dir.glob("*.png")):
        lines.append(f"![{png.stem}]({rel / png.name})")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    run_dir = Path(argv[0]) if argv else README.parent / "results" / "latest"
    text = README.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"benchmarks.readme: {README} lacks the {START} / {END} markers")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    README.write_text(head + START + "\n" + section(run_dir) + "\n" + END + tail)
    print(f"updated {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
