"""Compare the C kernels of two versions of the generator bit for bit (developer tool).

A change to the generator or its headers that is meant to keep every result (a faster form of
an op, a form the compiler vectorizes) is checked by building the single-op kernels of both
versions into one program (compare_kernels.c) and running each pair on the same inputs:
special values and their neighbours (zeros, infinities, NaNs with payloads, subnormals, the
bounds of every conversion), random bit patterns, moderate values, and for binary ops first
operands near multiples of the second; in every layout the launcher uses (contiguous, strided
in blocks and in short runs, one input broadcast through the strided entry and through the
``_bcast`` loops, the output over input 0), and over every input of one and two bytes (every
pair of one byte; every input of four bytes with ``--exhaustive``). Each ISA build is run
where it can be: x86-64 levels the processor has, aarch64 under qemu-aarch64 with the cross
gcc.

    python -m nuvec.codegen.tools.compare_kernels --base main              # every kernel
    python -m nuvec.codegen.tools.compare_kernels --ops power,astype --isa native,neon
    python -m nuvec.codegen.tools.compare_kernels --ops astype --exhaustive --only float32__

``--base`` is a git revision of this repository (or ``--base-dir``, a folder holding a copy of
its ``nuvec/codegen``); the candidate is the working tree. The tool imports the generator
alone, not nuvec, so it also runs as ``python3 nuvec/codegen/tools/compare_kernels.py`` where
nuvec's extensions are not built.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CODEGEN = Path(__file__).resolve().parents[1]
REPO = CODEGEN.parents[1]

# dtype codes of compare_kernels.c
CODES = {
    "bool": "T_B",
    "uint8": "T_U8",
    "uint16": "T_U16",
    "uint32": "T_U32",
    "uint64": "T_U64",
    "int8": "T_I8",
    "int16": "T_I16",
    "int32": "T_I32",
    "int64": "T_I64",
    "float16": "T_F16",
    "bfloat16": "T_BF16",
    "float32": "T_F32",
    "float64": "T_F64",
    "complex64": "T_C64",
}

# (compiler, extra flags, how to run the program) per ISA, on top of the dialect's FLAGS
ISAS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "native": ("gcc", ("-march=native",), ()),
    "baseline": ("gcc", (), ()),  # the wheels' build: x86-64-v3 and default clones
    "default-clone": ("gcc", ("-DNV_NO_CLONES",), ()),  # the baseline without FMA
    "avx2": ("gcc", ("-march=x86-64-v3",), ()),
    "avx512": ("gcc", ("-march=x86-64-v4",), ()),
    "neon": (
        "aarch64-linux-gnu-gcc",
        ("-march=armv8-a",),
        ("qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"),
    ),
}

# generates the sources of one generator version in a separate interpreter, where that
# version's codegen folder is imported as the top-level package ``codegen``
_GENERATE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from codegen.ir import KernelSpec
from codegen.source import generate_many
specs = json.load(sys.stdin)
prefix, chunks = sys.argv[2], int(sys.argv[3])
named = [(f"{prefix}{i}", KernelSpec.single(op, tuple(ins), out))
         for i, (op, ins, out) in enumerate(specs)]
json.dump([generate_many(named[c::chunks], "c") for c in range(chunks)], sys.stdout)
"""


def _codegen():
    """The working tree's generator, imported as the top-level package ``codegen``."""
    if str(CODEGEN.parent) not in sys.path:
        sys.path.insert(0, str(CODEGEN.parent))
    import codegen.dialects.c
    import codegen.prebuilt

    return codegen


def _codegen_parent(rev: str | None, tmp: Path) -> Path:
    """The folder holding the ``codegen`` package of revision ``rev`` (None: the worktree)."""
    if rev is None:
        return CODEGEN.parent
    out = tmp / "base"
    out.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "nuvec/codegen"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out / "nuvec"


def _sources(parent: Path, specs: list, prefix: str, chunks: int) -> list[str]:
    r = subprocess.run(
        [sys.executable, "-c", _GENERATE, str(parent), prefix, str(chunks)],
        input=json.dumps(specs),
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        raise RuntimeError(f"generating the {prefix} kernels failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout)


def _table(specs: list, base_src: str, cand_src: str) -> str:
    rows = []
    for i, (op, ins, out) in enumerate(specs):
        bc = f"int base_k{i}_bcast(" in base_src
        if bc != (f"int cand_k{i}_bcast(" in cand_src):
            raise RuntimeError(f"kernel {i} ({op}) has a _bcast entry in one version only")
        b = (f"base_k{i}_bcast", f"cand_k{i}_bcast") if bc else ("0", "0")
        codes = [CODES[d] for d in ins] + ["0"] * (3 - len(ins))
        name = f"nv_{op}__{'_'.join(ins)}__{out}"
        rows.append(
            f'    {{"{name}", base_k{i}, cand_k{i}, {b[0]}, {b[1]}, {len(ins)}, '
            f"{{{', '.join(codes)}}}, {CODES[out]}}},"
        )
    decls = []
    for i in range(len(specs)):
        for v in ("base", "cand"):
            decls.append(f"void {v}_k{i}(int64_t, char **, const int64_t *);")
            decls.append(f"int {v}_k{i}_bcast(int64_t, char **, uint32_t);")
    return (
        "\n".join(decls)
        + "\nconst kernel KERNELS[] = {\n"
        + "\n".join(rows)
        + "\n};\nconst int NKERNELS = (int)(sizeof KERNELS / sizeof KERNELS[0]);\n"
    )


def can_run(isa: str) -> str | None:
    """Why this machine cannot run the ``isa`` build, or None."""
    cc, _, runner = ISAS[isa]
    if shutil.which(cc) is None:
        return f"no {cc}"
    if runner and shutil.which(runner[0]) is None:
        return f"no {runner[0]}"
    x86 = platform.machine() in ("x86_64", "AMD64")
    if isa == "neon":
        return None
    if not x86:
        return "not an x86-64 machine"
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    need = {"avx2": {"avx2", "fma"}, "avx512": {"avx512f", "avx512dq", "avx512bw", "avx512vl"}}
    missing = need.get(isa, set()) - flags
    return f"the processor lacks {', '.join(sorted(missing))}" if missing else None


def build(isa: str, work: Path, sources: dict[str, list[str]], table: str, jobs: int) -> Path:
    """Compile both versions' sources and the driver for ``isa``; the program's path."""
    flags = [f for f in _codegen().dialects.c.FLAGS if f != "-fvisibility=hidden"]
    cc, extra, _ = ISAS[isa]
    d = work / isa
    d.mkdir(exist_ok=True)
    driver = (Path(__file__).with_name("compare_kernels.c").read_text()) + "\n" + table
    units = [("driver", driver)] + [
        (f"{v}{c}", src) for v, srcs in sources.items() for c, src in enumerate(srcs)
    ]

    def compile_one(unit: tuple[str, str]) -> Path:
        name, text = unit
        c, o = d / f"{name}.c", d / f"{name}.o"
        c.write_text(text)
        r = subprocess.run([cc, *flags, *extra, "-c", str(c), "-o", str(o)], capture_output=True)
        if r.returncode != 0:
            raise RuntimeError(f"{cc} {name} for {isa}:\n{r.stderr.decode()[-3000:]}")
        return o

    with ThreadPoolExecutor(jobs) as ex:
        objs = list(ex.map(compile_one, units))
    exe = d / "compare"
    subprocess.run([cc, *map(str, objs), "-o", str(exe), "-lm"], check=True)
    return exe


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nuvec.codegen.tools.compare_kernels")
    ap.add_argument("--base", default="main", help="git revision to compare against")
    ap.add_argument("--base-dir", help="a folder holding the base's nuvec/codegen instead")
    ap.add_argument("--ops", help="comma-separated ops (default: every op)")
    ap.add_argument("--only", help="only kernels whose name contains this")
    ap.add_argument("--isa", default="native", help=f"comma-separated, of {', '.join(ISAS)}")
    ap.add_argument("--n", type=int, default=1 << 18, help="random elements per kernel")
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--exhaustive", action="store_true", help="every 4-byte input of unary ops")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args(argv)

    prebuilt_specs = _codegen().prebuilt.prebuilt_specs  # the candidate's list of kernels
    ops = set(a.ops.split(",")) if a.ops else None
    specs = [
        (s.nodes[0].op, list(s.inputs), s.nodes[0].dtype)
        for _, s in prebuilt_specs()
        if ops is None or s.nodes[0].op in ops
    ]
    if a.only:
        specs = [s for s in specs if a.only in f"nv_{s[0]}__{'_'.join(s[1])}__{s[2]}"]
    if not specs:
        ap.error("no kernel selected")
    failed = False
    with tempfile.TemporaryDirectory(prefix="nuvec-compare-") as t:
        tmp = Path(t)
        chunks = max(1, min(a.jobs * 2, len(specs) // 8 or 1))
        sources = {
            "base": _sources(
                Path(a.base_dir) / "nuvec" if a.base_dir else _codegen_parent(a.base, tmp),
                specs,
                "base_k",
                chunks,
            ),
            "cand": _sources(_codegen_parent(None, tmp), specs, "cand_k", chunks),
        }
        table = _table(specs, "".join(sources["base"]), "".join(sources["cand"]))
        for isa in a.isa.split(","):
            why = can_run(isa)
            if why:
                print(f"{isa}: skipped ({why})")
                continue
            exe = build(isa, tmp, sources, table, a.jobs)
            cmd = [*ISAS[isa][2], str(exe), str(a.n), str(a.seed), str(int(a.exhaustive))]
            r = subprocess.run(cmd, capture_output=True, text=True)
            lines = r.stdout.strip().splitlines()
            print(f"{isa}: {lines[-1] if lines else r.stderr[-2000:]}")
            for line in lines[:-1]:
                print(f"  {line}")
            failed |= r.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
