"""Which generated element-wise loops the C compiler vectorizes, per kernel and per ISA.

    python -m benchmarks.vectorization                  # every single-op kernel and the chains
    python -m benchmarks.vectorization --quick          # float32 math ops and the chains
    python -m benchmarks.vectorization --isa avx2,avx512 --ops tanh,exp --json out.json

Each kernel of nuvec.codegen has two loops (nuvec/codegen/dialects/c.py): ``contig``, run on
contiguous operands and on operands broadcast along rows of at least 64 elements (the launcher
expands those into contiguous blocks), and ``strided``, run on any other layout (transposed,
sliced with a step, broadcast along short rows). The sources (the prebuilt single-op kernels,
and the fused kernels nv.compile makes of benchmarks.workloads' chains) are compiled with
nuvec's own flags plus gcc's vectorization report (``-fopt-info-vec-optimized-missed``); each
loop is then vectorized (the widest vector it got), replaced by a libc call (memcpy/memset),
or scalar with the compiler's reason. Needs gcc (clang has no such report).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

# -march per ISA, on top of nuvec's flags without its own -march
ISAS = {
    "native": None,  # exactly nuvec's flags here (jit.flags())
    "baseline": (),  # the wheels' build (NUVEC_MARCH=none): SSE2 on x86-64
    "avx2": ("-march=x86-64-v3",),
    "avx512": ("-march=x86-64-v4",),
}
QUICK_OPS = ("tanh", "exp", "erf", "sigmoid", "multiply", "add", "log", "sin")

_FUNC = re.compile(r"void (\w+)_(strided|contig)\(")
_DIAG = re.compile(r"^[^:]*:(\d+):\d+: (optimized|missed): (.*)$")
_WIDTH = re.compile(r"loop vectorized using (\d+) byte vectors")


@dataclass
class Loop:
    kernel: str  # kernel name (nv_tanh__float32__float32) or "chain:<name>:<dtype>"
    loop: str  # "contig" or "strided"
    isa: str
    status: str  # "vector", "libcall" or "scalar"
    vector_bytes: int  # widest vector the loop runs on (0 when scalar)
    why: str  # the compiler's reason when scalar; when vector, the calls of a scalar clone


def cpu_flags() -> set[str]:
    """The CPU's feature flags (x86 ``flags`` / arm ``Features`` in /proc/cpuinfo)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def available_isas() -> list[str]:
    """The ISAs of ISAS this machine can run (an AVX-512 build only where the CPU has it)."""
    have = cpu_flags()
    out = ["native", "baseline"]
    if {"avx2", "fma"} <= have:
        out.append("avx2")
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= have:
        out.append("avx512")
    return out


def _flags(isa: str) -> list[str]:
    from nuvec.backends.cpu import jit

    own = list(jit.flags())
    if ISAS[isa] is None:
        return own
    return [f for f in own if not f.startswith("-march=")] + list(ISAS[isa])


def single_sources(
    ops: tuple[str, ...] | None, chunks: int, dtypes: tuple[str, ...] | None = None
) -> list[str]:
    """The prebuilt single-op kernels (of ``ops`` over inputs of ``dtypes``, else all), as
    ``chunks`` C sources."""
    from nuvec.codegen.generator import generate_many
    from nuvec.codegen.prebuilt import prebuilt_specs

    specs = [
        (n, s)
        for n, s in prebuilt_specs()
        if (ops is None or s.nodes[0].op in ops) and (dtypes is None or s.inputs[-1] in dtypes)
    ]
    groups = [specs[i::chunks] for i in range(chunks)]
    return [generate_many(g, "c") for g in groups if g]


def chain_sources(dtypes: tuple[str, ...] = ("float32", "bfloat16", "float16")) -> dict[str, str]:
    """{label: C source} of the fused kernels nv.compile makes of each workload chain."""
    import numpy as np

    import nuvec as nv

    from . import workloads as W

    class F:  # the workloads' namespace over nuvec
        add, multiply, exp, tanh = nv.add, nv.multiply, nv.exp, nv.tanh
        erf, sigmoid = nv.erf, nv.sigmoid

    out = {}
    for name, chain in W.CHAINS.items():
        for dt in dtypes:
            xs = [nv.array(np.ones(256, np.float32)).astype(getattr(nv, dt))] * chain.n_inputs
            rep = nv.compile(lambda *a, c=chain: c.fn(F, *a)).inspect(*xs)
            for k, g in enumerate(rep.groups):
                out[f"chain:{name}:{dt}" + (f":{k}" if k else "")] = g.source
    return out


def _loops(source: str) -> dict[int, tuple[str, str, int]]:
    """{line of the loop's ``for``: (kernel, loop kind, line of its closing brace)}."""
    lines = source.splitlines()
    found, current = {}, None
    for i, text in enumerate(lines, 1):
        m = _FUNC.search(text)
        if m:
            current = (m.group(1), m.group(2))
        elif current and text.startswith("    for (int64_t i = 0; i < n; i++)"):
            end = next(j for j in range(i, len(lines) + 1) if lines[j - 1] == "    }")
            found[i] = (current[0], current[1], end)
            current = None
    return found


def _calls(obj: Path) -> dict[str, set[str]]:
    """{function: external functions it calls}, from the object's disassembly relocations.

    A function built as clones (the baseline build's ``target_clones``) appears under its own
    name for all of them and under ``name.default`` for the default clone alone; the resolver
    that picks a clone at load time is left out."""
    text = subprocess.run(["objdump", "-dr", str(obj)], capture_output=True, text=True).stdout
    out: dict[str, set[str]] = {}
    funcs: tuple[str, ...] = ()
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <([\w.]+)>:$", line)
        if m:
            name, _, clone = m.group(1).partition(".")
            funcs = () if clone == "resolver" else (name, f"{name}.{clone}") if clone else (name,)
            continue
        m = re.search(r"R_\w+_PLT32\s+(\w+)", line)
        if m and not m.group(1).startswith("nv_"):
            for func in funcs:
                out.setdefault(func, set()).add(m.group(1))
    return out


def analyse(source: str, isa: str, label: str | None = None) -> list[Loop]:
    """Compile one source for ``isa`` and classify each of its kernel loops."""
    with tempfile.TemporaryDirectory(prefix="nuvec-vec-") as d:
        c, report = Path(d) / "k.c", Path(d) / "vec.txt"
        c.write_text(source)
        cmd = ["gcc", *_flags(isa), f"-fopt-info-vec-optimized-missed={report}", "-c", str(c)]
        r = subprocess.run(cmd + ["-o", str(Path(d) / "k.o")], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"gcc failed for {isa}: {r.stderr[-2000:]}")
        diags = [m.groups() for m in map(_DIAG.match, report.read_text().splitlines()) if m]
        calls = _calls(Path(d) / "k.o")
    out = []
    for line, (kernel, kind, end) in sorted(_loops(source).items()):
        widths = [
            int(w.group(1))
            for ln, _, msg in diags
            if int(ln) == line
            for w in [_WIDTH.search(msg)]
            if w
        ]
        name = label or kernel
        if widths:
            # vectorized in a clone only: the default clone's calls say why it is not
            ext = sorted(calls.get(f"{kernel}_{kind}.default", ()))
            why = f"default clone calls {', '.join(ext)}" if ext else ""
            out.append(Loop(name, kind, isa, "vector", max(widths), why))
            continue
        body = [msg for ln, _, msg in diags if line < int(ln) <= end]
        if any("__builtin_memcpy" in m or "__builtin_memset" in m for m in body):
            out.append(Loop(name, kind, isa, "libcall", 0, "memcpy/memset"))
            continue
        why = ""
        after = False
        for ln, _, msg in diags:  # the first reason gcc gives after "couldn't vectorize"
            if int(ln) == line and "couldn't vectorize loop" in msg:
                after = True
            elif after and "not vectorized" in msg:
                why = msg.split("not vectorized:", 1)[1].strip()
                break
        if not why and kind == "strided":
            why = "not asked: strided loops are built with no-tree-vectorize"
        ext = sorted(calls.get(f"{kernel}_{kind}", ()))
        if ext:  # a library function without a vector variant keeps the loop scalar
            why = f"calls {', '.join(ext)}; gcc: {why or 'no reason'}"
        out.append(Loop(name, kind, isa, "scalar", 0, why or "no report"))
    return out


def run(
    isas: list[str], ops: tuple[str, ...] | None, chains: bool, jobs: int = 2, chunks: int = 16
) -> list[Loop]:
    """Every loop of the selected kernels, analysed for each ISA."""
    work = [(s, None) for s in single_sources(ops, chunks)]
    if chains:
        work += [(src, label) for label, src in chain_sources().items()]
    tasks = [(src, isa, label) for isa in isas for src, label in work]
    with ThreadPoolExecutor(jobs) as ex:
        results = ex.map(lambda t: analyse(*t), tasks)
    return [loop for r in results for loop in r]


def summary(loops: list[Loop]) -> str:
    """Counts per ISA and loop kind, then every contiguous loop that stays scalar."""
    lines = ["| ISA | loop | vectorized | libc call | scalar | widest vector (bytes) |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    keys = sorted({(lp.isa, lp.loop) for lp in loops})
    for isa, kind in keys:
        sel = [lp for lp in loops if lp.isa == isa and lp.loop == kind]
        n = {s: sum(lp.status == s for lp in sel) for s in ("vector", "libcall", "scalar")}
        widths = sorted({lp.vector_bytes for lp in sel if lp.vector_bytes})
        lines.append(
            f"| {isa} | {kind} | {n['vector']} | {n['libcall']} | {n['scalar']} | "
            f"{', '.join(map(str, widths)) or '-'} |"
        )
    scalar = [lp for lp in loops if lp.loop == "contig" and lp.status == "scalar"]
    lines.append("")
    lines.append(f"contiguous loops left scalar: {len(scalar)}")
    for lp in sorted(scalar, key=lambda lp: (lp.kernel, lp.isa)):
        lines.append(f"  {lp.isa:8s} {lp.kernel}: {lp.why}")
    cloned = [lp for lp in loops if lp.loop == "contig" and lp.status == "vector" and lp.why]
    if cloned:
        isas = ", ".join(sorted({lp.isa for lp in cloned}))
        lines.append(
            f"contiguous loops vectorized in their x86-64-v3 clone only ({isas}; the default "
            f"clone, run where the processor has no FMA, is scalar): {len(cloned)}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.vectorization", description=__doc__)
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_OPS)}")
    ap.add_argument("--ops", help="comma-separated ops (default: every op)")
    ap.add_argument("--isa", help=f"comma-separated, of {', '.join(ISAS)} (default: all here)")
    ap.add_argument("--no-chains", action="store_true", help="single-op kernels only")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", help="write every loop's result to this file")
    a = ap.parse_args(argv)
    isas = a.isa.split(",") if a.isa else available_isas()
    bad = [i for i in isas if i not in ISAS]
    if bad:
        ap.error(f"--isa: unknown {bad}; expected some of {list(ISAS)}")
    ops = tuple(a.ops.split(",")) if a.ops else (QUICK_OPS if a.quick else None)
    loops = run(isas, ops, not a.no_chains, jobs=a.jobs, chunks=4 if a.quick else 16)
    print(summary(loops))
    if a.json:
        Path(a.json).write_text(json.dumps([asdict(lp) for lp in loops], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
