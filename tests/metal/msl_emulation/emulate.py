"""Compile Metal Shading Language as C++ and run its kernels on the CPU, thread by thread.

Test support (tests/metal/test_msl_emulation.py). The MSL source is compiled unchanged with
g++ against ``include/metal_stdlib`` (an emulation of the few standard-library pieces nuvec's
kernels use); a generated table binds each kernel's ``[[buffer(i)]]`` parameters to argument
slots, and ``runner.cpp`` executes the jobs under AddressSanitizer and UBSan::

    mod = build(source, cache_dir)                      # one g++ run per distinct source
    a = np.arange(8, dtype=np.float32); o = np.empty_like(a)
    run(mod, [Job("scale_contig", {0: a, 1: o, 2: struct.pack("<I", 8)}, grid=(8, 1, 1),
                  writes={1})])                          # o now holds the kernel's results

Arrays are passed by their owning NumPy allocation (copied whole into an exact-size malloc in
the runner) plus the byte offset of the view's first element, so views, negative strides and
broadcasts address memory exactly as on a GPU. After the run the owning arrays of the
``writes`` slots receive the runner's bytes; any other buffer that changed is an error.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

HERE = Path(__file__).resolve().parent
INCLUDE = HERE / "include"
RUNNER = HERE / "runner.cpp"

# C++17 (MSL 2+ is C++14-based), -O0 (compiles twice as fast; x86-64 SSE arithmetic is the
# same at every level), IEEE arithmetic as the dialect asks of Metal: no contraction,
# no fast math. Float -> double promotions and lossy double -> float conversions are errors:
# MSL has no double, so C++ must not compute in double where Metal would use float.
# Sanitizers: out-of-bounds memory access, signed overflow, bad shifts, out-of-range
# float -> int conversions abort the runner (the shared headers promise none of them).
FLAGS = (
    "-std=c++17",
    "-O0",
    "-ffp-contract=off",
    "-fno-fast-math",
    "-fsigned-char",
    "-fno-strict-aliasing",
    "-Wno-attributes",
    "-Werror=double-promotion",
    "-Werror=float-conversion",
    "-fsanitize=address,undefined,float-cast-overflow",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    "-pthread",
)

_SCALAR_SIZE = {
    "uint": 4,
    "int": 4,
    "long": 8,
    "ulong": 8,
    "float": 4,
    "ushort": 2,
    "short": 2,
    "uchar": 1,
    "char": 1,
}
_THREAD_ATTRS = (
    "thread_position_in_grid",
    "threadgroup_position_in_grid",
    "thread_position_in_threadgroup",
)


def compiler() -> str | None:
    """The C++ compiler used (g++; ``NUVEC_EMU_CXX`` overrides), or None."""
    return os.environ.get("NUVEC_EMU_CXX") or shutil.which("g++")


@dataclass(frozen=True)
class Param:
    """One kernel parameter: ``type`` as written, ``kind`` "*", "&" or "" (by value)."""

    type: str
    kind: str
    name: str
    attr: str
    index: int | None

    @property
    def base_type(self) -> str:
        """The scalar type without address space or const (``uint`` of ``constant uint``)."""
        words = [w for w in self.type.split() if w not in ("device", "constant", "const", "thread")]
        return words[-1] if words else ""


# MSL spells the qualifier `kernel` or `[[kernel]]`
_KERNEL = re.compile(r"\bkernel(?:\]\])?\s+void\s+(\w+)\s*\(")
_PARAM = re.compile(
    r"^(?P<type>.*?)\s*(?P<kind>[*&]?)\s*(?P<name>\w+)\s*"
    r"\[\[\s*(?P<attr>\w+)\s*(?:\(\s*(?P<index>\d+)\s*\))?\s*\]\]$",
    re.S,
)


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_kernels(source: str) -> dict[str, list[Param]]:
    """Every ``kernel void NAME(...)`` of ``source`` with its parameters (in order).

    >>> src = "kernel void k(device float *o [[buffer(0)]], uint i [[thread_position_in_grid]])"
    >>> parse_kernels(src + " {}")["k"][0]
    Param(type='device float', kind='*', name='o', attr='buffer', index=0)
    >>> parse_kernels(src + " {}")["k"][1]
    Param(type='uint', kind='', name='i', attr='thread_position_in_grid', index=None)
    """
    out: dict[str, list[Param]] = {}
    for m in _KERNEL.finditer(source):
        depth, j = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(source[j], 0)
            j += 1
        params = []
        for text in _split_top(source[m.end() : j - 1]):
            pm = _PARAM.match(text)
            if pm is None:
                raise ValueError(f"kernel {m.group(1)}: cannot read the parameter {text!r}")
            idx = pm.group("index")
            params.append(
                Param(
                    " ".join(pm.group("type").split()),
                    pm.group("kind"),
                    pm.group("name"),
                    pm.group("attr"),
                    int(idx) if idx is not None else None,
                )
            )
        out[m.group(1)] = params
    return out


def _thread_expr(p: Param, kernel: str) -> str:
    if p.attr == "thread_position_in_grid":
        xyz = "tg.x * sz.x + lt.x", "tg.y * sz.y + lt.y", "tg.z * sz.z + lt.z"
    elif p.attr == "threadgroup_position_in_grid":
        xyz = "tg.x", "tg.y", "tg.z"
    elif p.attr == "thread_position_in_threadgroup":
        xyz = "lt.x", "lt.y", "lt.z"
    else:
        raise ValueError(f"kernel {kernel}: the emulation has no attribute [[{p.attr}]]")
    if p.base_type == "uint":
        return f"(uint)({xyz[0]})"
    if p.base_type == "uint3":
        return "uint3{" + ", ".join(f"(uint)({e})" for e in xyz) + "}"
    raise ValueError(f"kernel {kernel}: [[{p.attr}]] of type {p.type} is not emulated")


_INSTANCE = re.compile(
    r'\[\[\s*host_name\(\s*"(\w+)"\s*\)\s*\]\]\s*\[\[\s*kernel\s*\]\]\s*'
    r"decltype\(\s*(\w+)\s*(<[^>]*>)\s*\)"
)


def instances(source: str) -> dict[str, str]:
    """The template arguments of each explicitly instantiated kernel, by its host name
    (``template [[host_name("k")]] [[kernel]] decltype(k<float, 3>) k<float, 3>;``)."""
    return {m.group(1): m.group(3) for m in _INSTANCE.finditer(source) if m.group(1) == m.group(2)}


def wrappers(kernels: Mapping[str, list[Param]], targs: Mapping[str, str] | None = None) -> str:
    """C++ appended to the source: one body per kernel binding slots to parameters (a
    template kernel called with its instantiation's arguments, ``targs``), and the table the
    runner looks kernels up in."""
    targs = targs or {}
    lines = [
        "",
        "/* ---- emulation entry points (tests/metal/msl_emulation/emulate.py) ---- */",
        "struct nv_emu_uint3 { unsigned x, y, z; };",
        "typedef void (*nv_emu_body)(void *const *, nv_emu_uint3, nv_emu_uint3, nv_emu_uint3);",
        "struct nv_emu_entry { const char *name; nv_emu_body body; };",
    ]
    for name, params in kernels.items():
        args = []
        for p in params:
            if p.attr == "buffer":
                if p.kind == "*":
                    args.append(f"({p.type} *)s[{p.index}]")
                elif p.kind == "&":
                    args.append(f"*({p.type} *)s[{p.index}]")
                else:
                    raise ValueError(
                        f"kernel {name}: buffer parameter {p.name} must be a pointer or a reference"
                    )
            else:
                args.append(_thread_expr(p, name))
        lines.append(
            f"static void nv_emu_body_{name}(void *const *s, nv_emu_uint3 tg, "
            f"nv_emu_uint3 lt, nv_emu_uint3 sz)"
        )
        lines.append("{")
        lines.append("    (void)tg; (void)lt; (void)sz;")
        lines.append(f"    {name}{targs.get(name, '')}(" + ",\n        ".join(args) + ");")
        lines.append("}")
    table = ",\n    ".join(f'{{"{n}", nv_emu_body_{n}}}' for n in kernels)
    lines.append(f'extern "C" const nv_emu_entry nv_emu_entries[] = {{\n    {table}}};')
    lines.append(f'extern "C" const unsigned nv_emu_entry_count = {len(kernels)}u;')
    return "\n".join(lines) + "\n"


@dataclass
class Module:
    """A built runner: the executable and the kernels it holds."""

    path: Path
    kernels: dict[str, list[Param]]
    uses_barriers: dict[str, bool]


def _kernel_bodies(source: str, names) -> dict[str, bool]:
    """Whether each kernel calls threadgroup_barrier (it then needs real threads)."""
    out = {}
    for name in names:
        start = source.index(f"void {name}(")
        body_start = source.index("{", source.index(")", start))
        depth, j = 1, body_start + 1
        while depth:
            depth += {"{": 1, "}": -1}.get(source[j], 0)
            j += 1
        out[name] = "threadgroup_barrier" in source[body_start:j]
    return out


def build(source: str, cache_dir: Path) -> Module:
    """Compiles ``source`` (MSL) with the emulation header into a runner (cached by hash)."""
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler (g++) for the MSL emulation")
    kernels = parse_kernels(source)
    if not kernels:
        raise ValueError("build: the source has no kernel functions")
    full = source + wrappers(kernels, instances(source))
    key = hashlib.sha256(
        "\0".join(
            [
                full,
                (INCLUDE / "metal_stdlib").read_text(),
                (INCLUDE / "metal_atomic").read_text(),
                RUNNER.read_text(),
                cxx,
                *FLAGS,
            ]
        ).encode()
    ).hexdigest()[:24]
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    exe = cache_dir / f"msl_emu_{key}"
    if not exe.exists():
        src = cache_dir / f"msl_emu_{key}.cpp"
        src.write_text(full)
        tmp = cache_dir / f"msl_emu_{key}.{os.getpid()}.tmp"
        cmd = [
            cxx,
            *FLAGS,
            f"-I{INCLUDE}",
            "-x",
            "c++",
            str(src),
            "-x",
            "c++",
            str(RUNNER),
            "-o",
            str(tmp),
        ]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise CompileError(f"g++ rejected the MSL as C++ ({src}):\n{r.stderr[-6000:]}")
        os.replace(tmp, exe)
    return Module(exe, kernels, _kernel_bodies(source, kernels))


class CompileError(RuntimeError):
    """The MSL did not compile as C++ against the emulation header."""


class RunError(RuntimeError):
    """The runner failed (sanitizer report, bad job) or a kernel broke a rule."""


@dataclass
class Job:
    """One dispatch: ``args`` maps [[buffer(i)]] to a NumPy array (bound at its first
    element) or constant bytes; ``writes`` are the slots the kernel may write.
    ``mode`` "threads" counts ``grid`` in threads, "threadgroups" in threadgroups."""

    kernel: str
    args: dict[int, Any]
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int] = (0, 0, 0)
    mode: str = "threads"
    writes: set[int] = field(default_factory=set)


def resolve_grid(job: Job, simd: int = 32, cap: int = 1024) -> tuple[tuple, tuple]:
    """(threadgroups, threads per threadgroup) as the shim plans them on a device without
    non-uniform threadgroups: a "threads" grid is rounded up to whole threadgroups, so the
    kernel also runs for positions past the grid and must bounds-check (as on such GPUs)."""
    tg = tuple(job.threadgroup)
    if tg == (0, 0, 0):
        if job.mode == "threadgroups":
            tg = (cap, 1, 1)
        else:
            w = -(-job.grid[0] // simd) * simd
            tg = (max(1, min(cap, w)), 1, 1)
    if job.mode == "threadgroups":
        return tuple(job.grid), tg
    return tuple(-(-g // t) for g, t in zip(job.grid, tg)), tg


def _owner(a: np.ndarray) -> np.ndarray:
    o = a
    while isinstance(o.base, np.ndarray):
        o = o.base
    if not (o.flags.c_contiguous or o.flags.f_contiguous):
        raise ValueError("emulation: an argument's owning array is not one contiguous block")
    return o


def _flat(o: np.ndarray) -> np.ndarray:
    """The bytes of a contiguous array, as a writable-through uint8 view in memory order."""
    return (o if o.flags.c_contiguous else o.T).reshape(-1).view(np.uint8)


def run(module: Module, jobs: list[Job]) -> None:
    """Runs ``jobs`` in order in one runner process; see the module docstring."""
    owners: list[np.ndarray] = []
    ids: dict[int, int] = {}
    encoded: list[bytes] = []
    written: set[int] = set()
    for job in jobs:
        params = module.kernels.get(job.kernel)
        if params is None:
            raise RunError(f"no kernel {job.kernel} in the module")
        slots = {p.index: p for p in params if p.attr == "buffer"}
        if set(job.args) != set(slots):
            raise RunError(
                f"{job.kernel}: bound slots {sorted(job.args)}, the kernel declares {sorted(slots)}"
            )
        groups, size = resolve_grid(job)
        if any(g < 1 for g in groups):
            raise RunError(f"{job.kernel}: empty grid {job.grid}")
        parts = [
            struct.pack("<I", len(job.kernel)),
            job.kernel.encode(),
            struct.pack("<3I", *groups),
            struct.pack("<3I", *size),
            struct.pack("<I", int(module.uses_barriers[job.kernel])),
            struct.pack("<I", len(job.args)),
        ]
        for slot, value in sorted(job.args.items()):
            p = slots[slot]
            if isinstance(value, np.ndarray):
                if p.kind not in ("*", "&"):  # Metal binds a buffer to a reference too
                    raise RunError(f"{job.kernel}: slot {slot} ({p.name}) takes constant bytes")
                o = _owner(value)
                bid = ids.setdefault(id(o), len(owners))
                if bid == len(owners):
                    owners.append(o)
                off = value.ctypes.data - o.ctypes.data
                if not 0 <= off < o.nbytes:
                    raise RunError(f"{job.kernel}: slot {slot} starts outside its array")
                if off % value.itemsize or value.ctypes.data % value.itemsize:
                    raise RunError(f"{job.kernel}: slot {slot} is misaligned")
                if slot in job.writes:
                    written.add(bid)
                parts += [struct.pack("<II", slot, 0), struct.pack("<IQ", bid, off)]
            else:
                raw = bytes(value)
                if p.kind == "&":
                    need = _SCALAR_SIZE.get(p.base_type)
                    if need is not None and len(raw) != need:
                        raise RunError(
                            f"{job.kernel}: slot {slot} ({p.type} &{p.name}) needs "
                            f"{need} bytes, got {len(raw)}"
                        )
                parts += [struct.pack("<II", slot, 1), struct.pack("<Q", len(raw)), raw]
        encoded.append(b"".join(parts))
    sent = [_flat(o).tobytes() for o in owners]
    blob = [b"NVEMU1\0\0", struct.pack("<I", len(owners))]
    for raw in sent:
        blob += [struct.pack("<Q", len(raw)), raw]
    blob += [struct.pack("<I", len(jobs)), *encoded]
    job_path = module.path.with_name(f"{module.path.name}.{os.getpid()}.jobs")
    out_path = module.path.with_name(f"{module.path.name}.{os.getpid()}.out")
    job_path.write_bytes(b"".join(blob))
    env = dict(
        os.environ,
        ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
        UBSAN_OPTIONS="print_stacktrace=1",
    )
    r = subprocess.run(
        [str(module.path), str(job_path), str(out_path)], capture_output=True, text=True, env=env
    )
    if r.returncode != 0:
        raise RunError(f"runner failed (rc {r.returncode}):\n{r.stderr[-6000:]}")
    data = out_path.read_bytes()
    pos = 4
    (count,) = struct.unpack_from("<I", data, 0)
    assert count == len(owners)
    for bid, o in enumerate(owners):
        (n,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        raw = data[pos : pos + n]
        pos += n
        if bid in written:
            _flat(o)[:] = np.frombuffer(raw, np.uint8)
        elif raw != sent[bid]:
            raise RunError(f"a kernel wrote into buffer {bid}, which no job lists as written")
    job_path.unlink()
    out_path.unlink()
