"""Instructions per element of the benchmark chains' fused CUDA kernels, counted in sm_90 machine
code (no GPU needed): NVRTC compiles each chain's ``vec`` kernel with nuvec's options and
``cuobjdump`` disassembles it. Needs libnvrtc, cuobjdump and nvdisasm (pip: nvidia-cuda-nvrtc,
nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm); set CUOBJDUMP to cuobjdump's path if needed.

    python benchmarks/gpu/count_instructions.py [--fast] [gelu gelu_tanh swiglu 10op exp ...]

``--fast``: the kernels of ``nv.compile(..., fast_math=True)``. Names pick chains and single ops
(the math library's functions, one kernel each: ``OPS``); none: all of them.

Three figures per kernel:

* hot path, per element: the instructions one thread of the vector body issues, divided by V (the
  body does V elements): the body runs from the kernel's first branch (taken where the thread
  has a full vector) to its exit, less the blocks that a forward conditional branch skips over
  a subroutine call (the IEEE division's rarely taken slow path, when the quotient's fast
  estimate needs no correction: FCHK). This is what bounds a kernel at the issue rate;
* pipe cycles per element of that hot path on the ALU and the XU (see ``ALU``), which bound it
  where they exceed the issue count;
* static, per element: every instruction of the kernel / (V + 1): the body is unrolled V
  times, plus a tail that does one element (slow paths and subroutines included).
"""

from __future__ import annotations

import collections
import ctypes
import dataclasses
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "cuda"))
os.environ.setdefault("NUVEC_COMPILE_SYNC", "1")
import nuvec as nv  # noqa: E402
from nuvec.backends.cuda import source  # noqa: E402
from nuvec.codegen.ir import KernelSpec  # noqa: E402
from nuvec.primitives.compiled import Compiled  # noqa: E402
from test_source import NVRTC  # noqa: E402  (libnvrtc from CuPy's or NVIDIA's wheels)

# Execution pipes of an SM sub-partition (one warp instruction issued per cycle), in cycles per
# warp instruction: the ALU (16 lanes: logic, shifts, integer adds, compares, selects, min/max,
# moves and the packed conversion F2FP) takes 2; FP32 arithmetic goes to two 16-lane FMA pipes
# (1 cycle); IMAD to one of them (2); the XU (the MUFU functions and the unpacked conversions
# F2F, I2F, F2I, FRND: 16 results per cycle per SM) takes 8. A kernel's hot path is bound by
# the largest of its issue count and these pipe loads. Sources: Nsight Compute's pipe glossary
# (F2FP on the ALU), the CUDA guide's throughput table (16 per SM per cycle for the MUFU
# functions and for conversions other than integer widening); measured on the H200, exact
# bfloat16 chains with 5-10 F2F per element ran at the XU's bound, not the issue count's.
ALU = {
    "LOP3",
    "SHF",
    "FSETP",
    "FSEL",
    "FMNMX",
    "VIMNMX",
    "IMNMX",
    "PRMT",
    "SEL",
    "F2FP",
    "ISETP",
    "MOV",
    "IADD3",
    "LEA",
    "P2R",
    "R2P",
    "PLOP3",
    "IABS",
    "FSET",
    "VIADD",
}
XU = {"MUFU", "F2F", "I2F", "F2I", "FRND"}


FAST = [False]


def _cuobjdump() -> str:
    found = os.environ.get("CUOBJDUMP")
    if not found:
        hits = sorted(
            glob.glob(
                os.path.join(
                    sys.prefix,
                    "lib",
                    "python*",
                    "site-packages",
                    "nvidia",
                    "**",
                    "bin",
                    "cuobjdump",
                ),
                recursive=True,
            )
        )
        found = hits[0] if hits else "cuobjdump"
    os.environ["PATH"] += os.pathsep + os.path.dirname(found)  # it runs nvdisasm
    return found


def cubin(src: str) -> bytes:
    prog = ctypes.c_void_p()
    assert NVRTC.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"k.cu", 0, None, None) == 0
    opts = [o.encode() for o in source.nvrtc_options(FAST[0])] + [
        b"-ftz=false",
        b"--gpu-architecture=sm_90",
    ]
    if NVRTC.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts)):
        raise SystemExit("NVRTC rejected the kernel")
    n = ctypes.c_size_t()
    NVRTC.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    NVRTC.nvrtcGetCUBIN(prog, buf)
    return buf.raw


_SASS = re.compile(r"\s*/\*([0-9a-f]{4,5})\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_]+)([^;]*);")


def sass(spec) -> str:
    """cuobjdump's disassembly of the ``vec`` kernel of ``spec`` (32-bit indices)."""
    src, _ = source.module_source(spec, "vec", "i32", (0,) * len(spec.inputs))
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin(src))
    try:
        return subprocess.run(
            [_cuobjdump(), "-sass", f.name], capture_output=True, text=True, check=True
        ).stdout
    finally:
        os.unlink(f.name)


def instructions(text: str) -> list[tuple[int, str, str, str]]:
    """(address, predicate, opcode, operands) of each instruction in ``text``, NOPs left out."""
    out = []
    for line in text.splitlines():
        m = _SASS.match(line)
        if m and m.group(3) != "NOP":
            out.append((int(m.group(1), 16), m.group(2) or "", m.group(3), m.group(4)))
    return out


def hot_path(ins: list[tuple[int, str, str, str]]) -> list[tuple[int, str, str, str]]:
    """The instructions one thread of the vector body issues (see the module docstring)."""
    addr = [a for a, *_ in ins]
    first = next(i for i, x in enumerate(ins) if x[2] == "BRA")
    start = addr.index(int(ins[first][3].split()[-1], 16))
    end = next(i for i in range(start, len(ins)) if ins[i][2] == "EXIT" and not ins[i][1])
    cold: set[int] = set()
    for i in range(start, end):
        a, pred, op, rest = ins[i]
        if op == "BRA" and pred:
            t = int(rest.split()[-1], 16)
            if t > a and t in addr:
                j = addr.index(t)
                if any(ins[k][2] == "CALL" for k in range(i + 1, j)):
                    cold.update(range(i + 1, j))
    return [ins[i] for i in range(start, end + 1) if i not in cold]


def count(spec) -> tuple[collections.Counter, collections.Counter]:
    """Opcode counts of the whole ``vec`` kernel of ``spec`` and of its hot path."""
    ins = instructions(sass(spec))
    return (
        collections.Counter(op for _, _, op, _ in ins),
        collections.Counter(op for _, _, op, _ in hot_path(ins)),
    )


def chains(dt):
    x = nv.random.normal((1024,), key=nv.random.key(0)).astype(dt)
    y = nv.random.normal((1024,), key=nv.random.key(1)).astype(dt)
    return {
        "gelu": (lambda x: x * 0.5 * (1 + nv.erf(x * 0.70710678)), (x,)),
        "gelu_tanh": (
            lambda x: 0.5 * x * (1 + nv.tanh(0.79788456 * (x + 0.044715 * x * x * x))),
            (x,),
        ),
        "swiglu": (lambda a, b: a * nv.sigmoid(a) * b, (x, y)),
        "10op": (
            lambda x: nv.maximum(nv.exp(-nv.abs(nv.tanh(x * 1.5 + 0.25) * x - 0.5)) * 3, 0.1),
            (x,),
        ),
    }


# single ops of the math library, each its own kernel (an eager op's)
OPS = ("exp", "expm1", "sinh", "cosh", "tanh", "sigmoid", "erf", "log", "sin")


def report(dt_name: str, name: str, spec) -> None:
    """One line: the kernel's hot-path instructions per element, the cycles per element its
    ALU and XU instructions keep those pipes busy (see ``ALU``), its static count per element."""
    if FAST[0]:
        spec = dataclasses.replace(spec, fast=True)
    V = source.vec_width(spec, (0,) * len(spec.inputs))
    ops, hot = count(spec)
    total, nhot = sum(ops.values()), sum(hot.values())
    alu = 2 * sum(v for k, v in hot.items() if k in ALU)
    xu = 8 * sum(v for k, v in hot.items() if k in XU)
    print(
        f"{dt_name:9s} {name:10s} V={V}  hot path per element {nhot / V:5.1f} "
        f"(pipe cycles: alu {alu / V:4.1f}, xu {xu / V:4.1f})  static ~{total / (V + 1):.0f}",
        flush=True,
    )


def main(names: list[str]) -> None:
    for dt in (nv.float32, nv.bfloat16):
        for op in OPS:
            if not names or op in names:
                report(dt.name, op, KernelSpec.single(op, (dt.name,), dt.name))
        for name, (fn, args) in chains(dt).items():
            if names and name not in names:
                continue
            f = nv.compile(fn)
            nv.eval(f(*args))
            tape = f.lookup(f.key_of(args, {}, [], 0)).tape
            for st in tape.steps:
                if type(st.prim) is not Compiled:
                    continue
                report(dt.name, name, st.prim.spec)


if __name__ == "__main__":
    args = sys.argv[1:]
    FAST[0] = "--fast" in args
    main([a for a in args if a != "--fast"])
