"""The CUDA and Metal dialects: generated, compiled as C++ against small emulation shims, run,
and compared bit for bit with the C kernels, for every entry point (contiguous, scalar,
strided; 32- and 64-bit indices).

What this does not show: that NVRTC and the Metal compiler accept the source (no GPU here);
the shims only stand in for the handful of names each dialect documents.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from engine_util import assert_bits_equal, npdtype, values
from nuvec.codegen import generate, generate_many
from nuvec.codegen.generator import STYPE
from nuvec.codegen.ir import KernelSpec
from nuvec.codegen.ops import ARITY, result_dtype, supports
from nuvec.backends.cpu import kernels
from test_fusion import random_spec

CXX = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
pytestmark = pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")

CUDA_SHIM = r"""
#include <cmath>
#include <cstring>
struct nv_dim3 { unsigned int x, y, z; };
static nv_dim3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
static inline unsigned int __float_as_uint(float f)
{ unsigned int u; std::memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned int u)
{ float f; std::memcpy(&f, &u, 4); return f; }
static inline long long __double_as_longlong(double d)
{ long long u; std::memcpy(&u, &d, 8); return u; }
static inline double __longlong_as_double(long long u)
{ double d; std::memcpy(&d, &u, 8); return d; }
namespace gen {
"""

METAL_STDLIB = r"""
#include <cmath>
#include <cstring>
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
#define kernel
#define device
#define constant const
namespace metal {
template <typename T, typename U> inline T as_type(U u)
{ T t; std::memcpy(&t, &u, sizeof(T)); return t; }
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
inline float sqrt(float x) { return std::sqrt(x); }
inline float fabs(float x) { return std::fabs(x); }
inline float copysign(float x, float y) { return std::copysign(x, y); }
inline float floor(float x) { return std::floor(x); }
inline float ceil(float x) { return std::ceil(x); }
inline float rint(float x) { return std::rint(x); }
inline float fmod(float x, float y) { return std::fmod(x, y); }
}
"""


def _specs(dialect: str) -> list[tuple[str, KernelSpec]]:
    out = []
    pick = ["float32", "bfloat16", "int16", "uint64", "complex64", "bool"]
    if dialect == "cuda":
        pick.append("float64")
    for op, ar in ARITY.items():
        for d in pick:
            if not supports(op, d, dialect):
                continue
            if op == "astype":
                for dst in pick:
                    out.append(KernelSpec.single("astype", (d,), dst))
                continue
            ins = ("bool", d, d) if op == "select" else (d,) * ar
            out.append(KernelSpec.single(op, ins, result_dtype(op, ins)))
    for seed in range(6):
        s = random_spec(500 + seed)
        if dialect == "metal" and "float64" in (
            list(s.inputs) + [n.dtype for n in s.nodes] + [c[0] for c in s.constants]
        ):
            continue
        out.append(s)
    return [(f"g{i}", s) for i, s in enumerate(out)]


def _cxx_type(dtype: str) -> str:
    t = STYPE[dtype]
    return t if t in ("float", "double") else f"gen::{t}"


def _driver_cuda(name: str, spec: KernelSpec) -> str:
    """extern "C" drv_<name>_<variant>_<idx>(long long n, char **p, const long long *meta,
    int ndim, const long long *scal, int grid, int block): runs every (block, thread)."""
    outs = [spec.nodes[o].dtype for o in spec.outputs]
    src = []
    for variant in ("contig", "scalar", "strided"):
        for idx, I in (("i32", "int"), ("i64", "long long")):
            args = ["(" + I + ")n"]
            if variant == "strided":
                args += ["ndim", "meta"]
            for i, d in enumerate(spec.inputs):
                args.append(f"(const {_cxx_type(d)} *)p[{i}]")
                if variant == "scalar":
                    args.append(f"({I})scal[{i}]")
            for k, d in enumerate(outs):
                args.append(f"({_cxx_type(d)} *)p[{len(spec.inputs) + k}]")
            src.append(f"""
extern "C" void drv_{name}_{variant}_{idx}(long long n, char **p, const long long *meta,
                                          int ndim, const long long *scal, int grid, int block)
{{
    blockDim.x = block; gridDim.x = grid;
    for (unsigned b = 0; b < (unsigned)grid; b++)
        for (unsigned t = 0; t < (unsigned)block; t++) {{
            blockIdx.x = b; threadIdx.x = t;
            gen::{name}_{variant}_{idx}({", ".join(args)});
        }}
}}""")
    return "\n".join(src)


def _driver_metal(name: str, spec: KernelSpec) -> str:
    outs = [spec.nodes[o].dtype for o in spec.outputs]
    src = []
    for variant in ("contig", "scalar", "strided"):
        args = []
        for i, d in enumerate(spec.inputs):
            args.append(f"(const {_mtype(d)} *)p[{i}]")
        for k, d in enumerate(outs):
            args.append(f"({_mtype(d)} *)p[{len(spec.inputs) + k}]")
        args.append("nn")
        if variant == "scalar":
            args.append("s")
        elif variant == "strided":
            args += ["nd", "meta"]
        args.append("i")
        src.append(f"""
extern "C" void drv_{name}_{variant}(long long n, char **p, const long *meta, unsigned nd,
                                     const unsigned *s)
{{
    const unsigned nn = (unsigned)n;
    for (unsigned i = 0; i < nn + 3; i++)      /* a few threads past n: they must return */
        {name}_{variant}({", ".join(args)});
}}""")
    return "\n".join(src)


def _mtype(dtype: str) -> str:
    return {
        "bool": "uchar",
        "uint8": "uchar",
        "int8": "char",
        "int16": "short",
        "uint16": "ushort",
        "int32": "int",
        "uint32": "uint",
        "int64": "long",
        "uint64": "ulong",
        "float16": "ushort",
        "bfloat16": "ushort",
        "float32": "float",
        "complex64": "nv_c64",
    }[dtype]


def _build(tmp: Path, dialect: str, specs) -> ctypes.CDLL:
    src = generate_many(specs, dialect)
    if dialect == "cuda":
        text = CUDA_SHIM + src + "\n}\n" + "\n".join(_driver_cuda(n, s) for n, s in specs)
    else:
        inc = tmp / "inc"
        inc.mkdir()
        (inc / "metal_stdlib").write_text(METAL_STDLIB)
        text = src + "\n" + "\n".join(_driver_metal(n, s) for n, s in specs)
    f = tmp / f"k_{dialect}.cpp"
    f.write_text(text)
    so = tmp / f"k_{dialect}.so"
    cmd = [
        CXX,
        "-std=c++17",
        "-O0",
        "-ffp-contract=off",
        "-fno-math-errno",
        "-fPIC",
        "-shared",
        "-w",
        "-o",
        str(so),
        str(f),
    ]
    if dialect == "metal":
        cmd.insert(1, f"-I{tmp / 'inc'}")
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:4000]
    return ctypes.CDLL(str(so))


def _inputs(spec: KernelSpec, shape, rng):
    n = int(np.prod(shape))
    return [values(d, n, rng).reshape(shape) for d in spec.inputs]


def _ptrs(arrs):
    return (ctypes.c_void_p * len(arrs))(*[a.ctypes.data for a in arrs])


def _outs(spec: KernelSpec, shape):
    return [np.zeros(shape, npdtype(spec.nodes[o].dtype)) for o in spec.outputs]


@pytest.mark.parametrize("dialect", ["cuda", "metal"])
def test_dialect_matches_c(tmp_path, dialect) -> None:
    specs = _specs(dialect)
    lib = _build(tmp_path, dialect, specs)
    rng = np.random.default_rng(5)
    shape = (3, 41)
    for name, spec in specs:
        ins = _inputs(spec, shape, rng)
        want = kernels.run(spec, ins, shape)
        # contiguous
        for variant, _extra in _variants(dialect):
            outs = _outs(spec, shape)
            if variant == "scalar":
                # input 0 as a broadcast scalar (element 0), others contiguous
                ins_v = [ins[0].reshape(-1)[:1].copy()] + ins[1:]
                ref = kernels.run(spec, [ins_v[0].reshape(())] + ins[1:], shape)
                scal = [0] + [1] * (len(ins) - 1)
            elif variant == "strided":
                # every input read transposed from a (41, 3) base
                ins_v = [np.ascontiguousarray(x.T) for x in ins]
                ref = want
            else:
                ins_v, ref, scal = ins, want, None
            p = _ptrs(ins_v + outs)
            n = int(np.prod(shape))
            if dialect == "cuda":
                meta = _meta_cuda(spec, ins_v, outs, variant)
                sc = (ctypes.c_longlong * len(ins))(*(scal or [1] * len(ins)))
                for idx in ("i32", "i64"):
                    for o in outs:
                        o[...] = 0
                    fn = getattr(lib, f"drv_{name}_{variant}_{idx}")
                    fn(
                        ctypes.c_longlong(n),
                        p,
                        meta,
                        ctypes.c_int(2),
                        sc,
                        ctypes.c_int(3),
                        ctypes.c_int(5),
                    )
                    for o, w in zip(outs, ref):
                        assert_bits_equal(o, w, f"{dialect} {name} {variant}_{idx} {spec}")
            else:
                meta = _meta_metal(spec, ins_v, outs, variant)
                sc = (ctypes.c_uint * len(ins))(*(scal or [1] * len(ins)))
                fn = getattr(lib, f"drv_{name}_{variant}")
                fn(ctypes.c_longlong(n), p, meta, ctypes.c_uint(2), sc)
                for o, w in zip(outs, ref):
                    assert_bits_equal(o, w, f"{dialect} {name} {variant} {spec}")


def _variants(dialect):
    return [("contig", None), ("scalar", None), ("strided", None)]


def _meta_values(ins_v, outs, variant):
    # shape (3, 41); strided inputs are transposed (41, 3) contiguous arrays
    shape = [3, 41]
    strides = []
    for _ in ins_v:
        strides += [1, 3] if variant == "strided" else [41, 1]
    for _ in outs:
        strides += [41, 1]
    return shape + strides


def _meta_cuda(spec, ins_v, outs, variant):
    v = _meta_values(ins_v, outs, variant)
    return (ctypes.c_longlong * len(v))(*v)


def _meta_metal(spec, ins_v, outs, variant):
    v = _meta_values(ins_v, outs, variant)
    return (ctypes.c_long * len(v))(*v)


def test_generated_sources_shape() -> None:
    spec = KernelSpec.single("exp", ("float32",), "float32")
    cu = generate(spec, "cuda", "k")
    for v in ("contig", "scalar", "strided"):
        for i in ("i32", "i64"):
            assert f'extern "C" __global__ void k_{v}_{i}(' in cu
    assert "#include" not in cu  # NVRTC needs no headers
    msl = generate(spec, "metal", "k")
    assert "#include <metal_stdlib>" in msl and "kernel void k_strided(" in msl
    import re

    assert not re.search(r"0x[0-9a-f]+\.[0-9a-f]*p", msl), "hex float literal left in MSL"
    with pytest.raises(ValueError, match="float64 is not available in the metal dialect"):
        generate(KernelSpec.single("exp", ("float64",), "float64"), "metal")
    with pytest.raises(ValueError, match="unknown dialect"):
        generate(spec, "opencl")
