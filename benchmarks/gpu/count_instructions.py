"""Instructions per element of the benchmark chains' fused CUDA kernels, counted in sm_90 machine
code (no GPU needed): NVRTC compiles each chain's ``vec`` kernel with nuvec's options and
``cuobjdump`` disassembles it. Needs libnvrtc, cuobjdump and nvdisasm (pip: nvidia-cuda-nvrtc,
nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm); set CUOBJDUMP to cuobjdump's path if needed.

    python benchmarks/gpu/count_instructions.py [--fast] [gelu gelu_tanh swiglu 10op exp ...]

``--fast``: the kernels of ``nv.compile(..., fast_math=True)``. Names pick chains and single ops
(the math library's functions, one kernel each: ``OPS``); none: all of them.

Per element = the kernel's static count / (V + 1): the body is unrolled V times, plus a tail
that does one element.
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

FP = {
    "FADD",
    "FMUL",
    "FFMA",
    "FSETP",
    "FSEL",
    "FMNMX",
    "FCHK",
    "MUFU",
    "FRND",
    "F2F",
    "F2I",
    "I2F",
    "F2FP",
    "HADD2",
    "HFMA2",
}
INT = {"IADD3", "IMAD", "LOP3", "SHF", "ISETP", "LEA", "IABS", "SEL", "PRMT", "IMNMX", "VIADD"}


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


def count(spec) -> collections.Counter:
    src, _ = source.module_source(spec, "vec", "i32", (0,) * len(spec.inputs))
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin(src))
    out = subprocess.run(
        [_cuobjdump(), "-sass", f.name], capture_output=True, text=True, check=True
    ).stdout
    os.unlink(f.name)
    ops: collections.Counter = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,5}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_]+)", line)
        if m and m.group(2) != "NOP":
            ops[m.group(2)] += 1
    return ops


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
    """One line: the kernel's instructions per element, float and integer ones apart."""
    if FAST[0]:
        spec = dataclasses.replace(spec, fast=True)
    V = source.vec_width(spec, (0,) * len(spec.inputs))
    ops = count(spec)
    total = sum(ops.values())
    fp = sum(v for k, v in ops.items() if k in FP)
    it = sum(v for k, v in ops.items() if k in INT)
    print(
        f"{dt_name:9s} {name:10s} V={V}  per element ~{total / (V + 1):.0f}  "
        f"(float {fp}, integer {it}, all {total})",
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
