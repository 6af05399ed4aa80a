"""Which generated element-wise loops the C compiler vectorizes, per kernel and per ISA.

    python -m benchmarks.vectorization                  # every single-op kernel and the chains
    python -m benchmarks.vectorization --quick          # float32 math ops and the chains
    python -m benchmarks.vectorization --isa avx2,avx512 --ops tanh,exp --json out.json

Each kernel of nuvec.codegen has a ``contig`` function (nuvec/codegen/dialects/c.py), the loop
run on contiguous operands and on operands broadcast along rows of at least 64 elements (the
launcher expands those into contiguous blocks; a kernel with split nodes, sin / cos / tan,
power, floor_divide, remainder and the logarithms, runs it by blocks in two loops, both of
which must vectorize), and a
``strided`` one, run on any other layout (transposed, sliced with a step, broadcast along short
rows): for a costly kernel (a transcendental, a division) its runs of 32 elements or more go
through ``blocks``, which copies the strided operands into blocks for the contiguous loop;
shorter runs, and every
run of a cheap kernel (where the strided loads are the cost), take a direct loop, built scalar.
The sources (the prebuilt single-op kernels, and the fused kernels nv.compile makes of
benchmarks.workloads' chains) are compiled with nuvec's own flags plus gcc's vectorization
report (``-fopt-info-vec-optimized-missed``, and ``-fno-ipa-icf`` so that GCC reports each
kernel's loop rather than fold kernels of identical code into one), for x86-64 (native,
baseline, AVX2, AVX-512: a
compile report, so the processor need not have them) and for aarch64 NEON where a cross gcc
(``aarch64-linux-gnu-gcc``) is installed or the machine is one. Each contiguous loop is then
vectorized (the widest vector it got), replaced by a libc call (memcpy/memset), or scalar with
the compiler's reason; a blocked strided function gets its contiguous loop's status (scalar if a
broadcast fill of it stays scalar, or if it calls math of its own), a cheap kernel's the direct
loop's; the element-by-element copies of strided operands (``gather``/``scatter``, one loop per
element size) are listed once per ISA.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import platform
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

# (compiler, -march) per ISA, on top of nuvec's flags without their own -march
ISAS: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "native": ("gcc", None),  # exactly nuvec's flags here (jit.flags())
    "baseline": ("gcc", ()),  # the wheels' build (NUVEC_MARCH=none): SSE2 on x86-64
    "avx2": ("gcc", ("-march=x86-64-v3",)),
    "avx512": ("gcc", ("-march=x86-64-v4",)),
    "neon": ("aarch64-linux-gnu-gcc", ("-march=armv8-a",)),
}
X86 = ("baseline", "avx2", "avx512")
QUICK_OPS = ("tanh", "exp", "erf", "sigmoid", "multiply", "add", "log", "sin")

_FUNC = re.compile(r"void (\w+)_(strided|contig|blocks|c\d+)\(")
_HELPER = re.compile(r"void (nv_gather|nv_scatter)\(")
_CASE = re.compile(r"^    (?:case (\d+)|default): NV_COPY_STEP")
# the loops of a split kernel's contiguous function (guard pass, split body, full body)
_PART = re.compile(r"^( +)for \(int64_t i = i0; i < e; i\+\+\) \{$")
_PARTS = ("split pass", "full body")
_FILL = re.compile(r"^    if \(s\[\d+\] == 0\) \{ .* for ")
_DIAG = re.compile(r"^[^:]*:(\d+):\d+: (optimized|missed): (.*)$")
_WIDTH = re.compile(r"loop vectorized using (\d+) byte vectors")
_LIBC_COPIES = {"memcpy", "memset", "memmove"}


@dataclass
class Loop:
    kernel: str  # kernel name (nv_tanh__float32__float32), "chain:<name>:<dtype>", or the
    # copy helper and element size ("nv_gather:4")
    loop: str  # "contig", "strided", "bcast" (kernel "<name>:in<k>": input k read once) or "copy"
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


def compiler_for(isa: str) -> str:
    """The gcc that builds ``isa``: the machine's own where it is of that architecture."""
    cc, _ = ISAS[isa]
    if isa == "neon" and platform.machine() in ("aarch64", "arm64"):
        return "gcc"
    return cc


def available_isas() -> list[str]:
    """The ISAs of ISAS whose report this machine can make: its own build and baseline, the
    other x86-64 levels on x86-64 (a compile report needs no such processor), NEON on aarch64
    or with a cross gcc."""
    out = ["native", "baseline"]
    machine = platform.machine()
    if machine in ("x86_64", "AMD64"):
        out += ["avx2", "avx512"]
        if shutil.which(ISAS["neon"][0]):
            out.append("neon")
    elif machine in ("aarch64", "arm64"):
        out = ["native", "neon"]
    return out


def _flags(isa: str) -> list[str]:
    from nuvec.backends.cpu import jit

    own = list(jit.flags())
    march = ISAS[isa][1]
    if march is None:
        return own
    if isa == "baseline":
        return [f for f in own if not f.startswith("-march=")]
    return [f for f in own if not f.startswith(("-march=", "-mcpu="))] + list(march)


def single_sources(
    ops: tuple[str, ...] | None, chunks: int, dtypes: tuple[str, ...] | None = None
) -> list[str]:
    """The prebuilt single-op kernels (of ``ops`` over inputs of ``dtypes``, else all), as
    ``chunks`` C sources."""
    from nuvec.codegen.source import generate_many
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
    """{line: (kernel, kind, line of the loop's end)} for each loop to classify: the ``for``
    loops of the contiguous and strided functions (a split kernel's contiguous function has
    two, kind "contig-part", which ``analyse`` reports as one); in a blocked form
    (``_blocks``) its call of the contiguous function (kind "strided-call") and its broadcast
    fills ("fill"); the loops of the copies of the contiguous function that read input k once
    (``_c<k>``, kind "bcast<k>", split like it, "bcast<k>-part"); the copy helpers' loops
    (kernel "nv_gather:<size>", kind "copy")."""
    lines = source.splitlines()
    found: dict[int, tuple[str, str, int]] = {}
    current: tuple[str, str] | None = None
    helper = None
    for i, text in enumerate(lines, 1):
        m = _FUNC.search(text)
        if m:
            kind = m.group(2)
            current, helper = (
                (m.group(1), "bcast" + kind[1:] if kind[0] == "c" and kind[1:].isdigit() else kind),
                None,
            )
            continue
        h = _HELPER.search(text)
        if h:
            current, helper = None, h.group(1)
            continue
        if helper and (c := _CASE.match(text)):
            found[i] = (f"{helper}:{c.group(1) or 8}", "copy", i)
        if current is None:
            continue
        kernel, kind = current
        if kind != "blocks" and text.startswith("    for (int64_t i = 0; i < n; i++)"):
            end = next(j for j in range(i, len(lines) + 1) if lines[j - 1] == "    }")
            found[i] = (kernel, kind, end)
            current = None
        elif kind == "contig" or kind.startswith("bcast"):
            if p := _PART.match(text):
                close = p.group(1) + "}"
                end = next(j for j in range(i, len(lines) + 1) if lines[j - 1] == close)
                found[i] = (kernel, f"{kind}-part", end)
            elif text == "}":
                current = None
        elif kind == "blocks" and _FILL.match(text):
            found[i] = (kernel, "fill", i)
        elif kind == "blocks" and text.strip().startswith(f"{kernel}_contig(m,"):
            found[i] = (kernel, "strided-call", i)
            current = None
    return found


def _calls(obj: Path, objdump: str = "objdump") -> dict[str, set[str]]:
    """{function: external functions it calls}, from the object's disassembly relocations.

    A function built as clones (the baseline build's ``target_clones``) appears under its own
    name for all of them and under ``name.default`` for the default clone alone (a key, with no
    calls perhaps, for every cloned function); the resolver that picks a clone at load time is
    left out."""
    text = subprocess.run([objdump, "-dr", str(obj)], capture_output=True, text=True).stdout
    out: dict[str, set[str]] = {}
    funcs: tuple[str, ...] = ()
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <([\w.]+)>:$", line)
        if m:
            name, _, clone = m.group(1).partition(".")
            funcs = () if clone == "resolver" else (name, f"{name}.{clone}") if clone else (name,)
            if clone == "default":
                out.setdefault(m.group(1), set())
            continue
        m = re.search(r"R_(?:X86_64_PLT32|AARCH64_CALL26|AARCH64_JUMP26)\s+(\w+)", line)
        if m and not m.group(1).startswith("nv_"):
            for func in funcs:
                out.setdefault(func, set()).add(m.group(1))
    return out


def _status(
    diags: list[tuple[str, str, str]], line: int, end: int, cloned: bool = False
) -> tuple[str, int, str]:
    """(status, widest vector, gcc's reason) of the loop at ``line`` (body up to ``end``).

    A loop that gcc copies before vectorizing (unswitching on an invariant such as a zero
    divisor or a unit stride) is reported once per copy; it counts as vectorized, or as a
    memset/memcpy, only if no copy was declined, since the copy that vectorized may be the one
    for the rare value. In a ``cloned`` function (target_clones) the declined copy may be the
    default clone instead, which ``analyse`` reports apart: there one vectorized copy counts."""
    widths = [
        int(w.group(1)) for ln, _, msg in diags if int(ln) == line if (w := _WIDTH.search(msg))
    ]
    declined = not cloned and any(
        int(ln) == line and "couldn't vectorize loop" in msg for ln, _, msg in diags
    )
    if widths and not declined:
        return "vector", max(widths), ""
    body = [msg for ln, _, msg in diags if line <= int(ln) <= end]
    if not declined and any("__builtin_memcpy" in m or "__builtin_memset" in m for m in body):
        return "libcall", 0, "memcpy/memset"
    why = ""
    for (ln, _, msg), (_, _, reason) in zip(diags, diags[1:]):
        # gcc gives its reason in the message right after "couldn't vectorize loop"
        if int(ln) == line and "couldn't vectorize loop" in msg:
            if "costings may not be worthwhile" in reason:
                why = "the cost model: not worthwhile"
            elif "not vectorized:" in reason:
                why = reason.split("not vectorized:", 1)[1].strip()
            break
    return "scalar", 0, ("one copy vectorized, another not: " if widths and why else "") + why


def analyse(source: str, isa: str, label: str | None = None) -> list[Loop]:
    """Compile one source for ``isa`` and classify each of its kernel loops."""
    cc = compiler_for(isa)
    objdump = cc[: -len("gcc")] + "objdump" if cc.endswith("gcc") else "objdump"
    with tempfile.TemporaryDirectory(prefix="nuvec-vec-") as d:
        c, report = Path(d) / "k.c", Path(d) / "vec.txt"
        c.write_text(source)
        # -fno-ipa-icf: GCC would fold kernels of identical code into one function, whose loop
        # alone it then reports (the folded one's loop is that same code)
        report_flags = [f"-fopt-info-vec-optimized-missed={report}", "-fno-ipa-icf"]
        cmd = [cc, *_flags(isa), *report_flags, "-c", str(c)]
        r = subprocess.run(cmd + ["-o", str(Path(d) / "k.o")], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{cc} failed for {isa}: {r.stderr[-2000:]}")
        diags = [m.groups() for m in map(_DIAG.match, report.read_text().splitlines()) if m]
        calls = _calls(Path(d) / "k.o", objdump)
    loops = sorted(_loops(source).items())
    contig: dict[str, Loop] = {}
    direct: dict[str, Loop] = {}
    fills: dict[str, list[str]] = {}
    parts: dict[str, list[tuple[str, int, str]]] = {}
    out = []
    for line, (kernel, kind, end) in loops:
        base = kind.removesuffix("-part")
        func = f"{kernel}_c{base[5:]}" if base.startswith("bcast") else f"{kernel}_{base}"
        status, width, why = _status(diags, line, end, cloned=f"{func}.default" in calls)
        if kind.endswith("-part"):  # one loop of a split kernel's contiguous function
            kind = kind[: -len("-part")]
            got = parts.setdefault(f"{kernel}/{kind}", [])
            got.append((status, width, why))
            if len(got) < len(_PARTS):
                continue
            # the function is as vectorized as its worst loop
            bad = [(_PARTS[k], w) for k, (st, _, w) in enumerate(got) if st != "vector"]
            if bad:
                status, width = "scalar", 0
                why = f"{bad[0][0]}: {bad[0][1] or 'no report'}"
            else:
                status, width = "vector", min(w for _, w, _ in got)
        name = kernel if kind == "copy" else (label or kernel)
        fname = f"{kernel}_{kind}"
        if kind.startswith("bcast"):
            name, fname, kind = f"{name}:in{kind[5:]}", f"{kernel}_c{kind[5:]}", "bcast"
        if kind == "fill":
            if status == "scalar":
                fills.setdefault(kernel, []).append(why or "no report")
            continue
        if kind == "strided-call":
            continue
        if status == "vector":
            # vectorized in a clone only: the default clone's calls say why it is not
            ext = sorted(calls.get(f"{fname}.default", ()))
            why = f"default clone calls {', '.join(ext)}" if ext else ""
        elif status == "scalar":
            if not why and kind == "strided":
                why = "direct loop, built with no-tree-vectorize"
            ext = sorted(set(calls.get(fname, ())) - _LIBC_COPIES)
            if ext:  # a library function without a vector variant keeps the loop scalar
                why = f"calls {', '.join(ext)}; gcc: {why or 'no reason'}"
            why = why or "no report"
        lp = Loop(name, kind, isa, status, width, why)
        if kind == "contig":
            contig[kernel] = lp
            out.append(lp)
        elif kind == "strided":
            direct[kernel] = lp
        else:
            out.append(lp)
    blocked = {k for _, (k, kind, _) in loops if kind == "strided-call"}
    for kernel, d in direct.items():
        c = contig.get(kernel)
        if kernel not in blocked or c is None:  # a cheap kernel: the direct loop alone
            why = d.why if d.status != "scalar" else f"cheap kernel, {d.why}"
            out.append(Loop(d.kernel, "strided", isa, d.status, d.vector_bytes, why))
            continue
        status, width = c.status, c.vector_bytes
        why = "blocks through the contiguous loop" + (f"; {c.why}" if c.why else "")
        if fills.get(kernel):
            status, width = "scalar", 0
            why = f"a broadcast fill is scalar: {fills[kernel][0]}"
        own = sorted(set(calls.get(f"{kernel}_blocks", ())) - _LIBC_COPIES)
        if own:  # math of its own, outside the contiguous loop (a copy or fill is no math)
            status, width, why = "scalar", 0, f"blocks call {', '.join(own)}"
        out.append(Loop(c.kernel, "strided", isa, status, width, why))
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
    out, copies = [], set()
    for loop in (loop for r in results for loop in r):
        if loop.loop == "copy":  # the same helpers in every source: once per ISA
            if (loop.isa, loop.kernel) in copies:
                continue
            copies.add((loop.isa, loop.kernel))
        out.append(loop)
    return out


def summary(loops: list[Loop]) -> str:
    """Counts per ISA and loop kind, then every contiguous or strided loop that stays scalar
    and the copies of strided operands."""
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
    for kind, what in (
        ("contig", "contiguous"),
        ("bcast", "broadcast-input"),
        ("strided", "strided"),
    ):
        scalar = [lp for lp in loops if lp.loop == kind and lp.status == "scalar"]
        lines.append("")
        lines.append(f"{what} loops left scalar: {len(scalar)}")
        if kind == "strided":  # the cheap kernels' direct loops, counted, not listed
            cheap = [lp for lp in scalar if lp.why.startswith("cheap kernel")]
            if cheap:
                lines.append(f"  {len(cheap)} cheap kernels' direct loops ({cheap[0].why})")
            scalar = [lp for lp in scalar if lp not in cheap]
        for lp in sorted(scalar, key=lambda lp: (lp.kernel, lp.isa)):
            lines.append(f"  {lp.isa:8s} {lp.kernel}: {lp.why}")
    copies = sorted((lp for lp in loops if lp.loop == "copy"), key=lambda lp: (lp.isa, lp.kernel))
    if copies:
        lines.append("")
        lines.append("copies of strided operands into and out of blocks (element by element):")
        for lp in copies:
            got = f"{lp.vector_bytes}-byte vectors" if lp.status == "vector" else lp.why
            lines.append(f"  {lp.isa:8s} {lp.kernel}: {lp.status} ({got or 'no report'})")
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
