"""The CUDA C dialect: self-contained source for NVRTC (no headers needed).

Compile with NVRTC and ``NVRTC_OPTIONS`` (no contraction, subnormals kept, IEEE division and
square root; never --use_fast_math). Results then equal the CPU's bit for bit (NaN payloads
aside: GPUs return the canonical NaN; the float64 functions are nuvec's own, nv_math64.h).
Note: CuPy's ``RawModule`` appends ``-ftz=true`` after the caller's options (cupy issue 9576),
which flushes subnormals; compile with
``cuda.bindings.nvrtc`` and load the cubin instead (tests/engine/test_cuda_nvrtc.py does)::

    mod = cupy.cuda.function.Module(); mod.load(cubin)
    mod.get_function("k_contig_i64")((blocks,), (256,), (n, a0, a1, out0))

Each spec gives six ``extern "C" __global__`` entry points, NAME_<variant>_<index>:

* ``contig``  (IDX n, const T0 *a0, ..., U0 *o0, ...): every array contiguous.
* ``scalar``  (IDX n, const T0 *a0, IDX s0, ..., U0 *o0, ...): input k is read at
  ``a_k[i * s_k]`` with s_k = 1 (contiguous) or 0 (a broadcast scalar); outputs contiguous.
* ``strided`` (IDX n, int ndim, const long long *meta, const T0 *a0, ..., U0 *o0, ...):
  n-d, with ``meta`` in device memory holding ``shape[ndim]`` then, for every array (inputs
  then outputs), its ``ndim`` strides in elements (0 on broadcast axes, negative allowed).
  Element i is the C-order i-th element of ``shape``.

``IDX`` is ``int`` for the ``_i32`` variants (n and every offset below 2^31, and
n + gridDim.x * blockDim.x < 2^31) and ``long long`` for ``_i64``. All loops are grid-stride
loops, so any launch configuration covers n. float16 / bfloat16 are stored as 16-bit patterns
and converted by nuvec's own code (bit-identical to the CPU); complex64 is ``nv_c64``
(float re, im), the memory layout of NumPy / CuPy complex64.
"""

from __future__ import annotations

import os

from ..ir import KernelSpec
from ..optable import fast_functions
from .base import Dialect, indent

NVRTC_OPTIONS: tuple[str, ...] = (
    "--fmad=false",
    "--ftz=false",
    "--prec-div=true",
    "--prec-sqrt=true",
)
# fast-math kernels (KernelSpec.fast, ``nv.compile(..., fast_math=True)``): contraction and the
# GPU's approximate division and square root; subnormals still kept
FAST_NVRTC_OPTIONS: tuple[str, ...] = (
    "--fmad=true",
    "--ftz=false",
    "--prec-div=false",
    "--prec-sqrt=false",
)

# float32 functions of a fast-math kernel (each op's ``fast["cuda"]`` in the op table): the
# SFU's approximations (__expf, __logf, __sinf, __cosf: a few ulp near zero, worse for large
# arguments) and CUDA's libdevice (erff, tanhf, expm1f, log1pf: within 2 ulp), in place of
# nuvec's exact library
FAST_FUNCTIONS: dict[str | tuple[str, str], str] = {
    **fast_functions("cuda"),
    # nodes of a half-precision dtype (generator.node_expr looks up (op, dtype) first)
    ("tanh", "bfloat16"): "nv_fast_tanh_narrow",
    ("tanh", "float16"): "nv_fast_tanh_narrow",
    ("erf", "bfloat16"): "nv_fast_erf_narrow",
    ("erf", "float16"): "nv_fast_erf_narrow",
}

# nv_fast_tanh_narrow: tanh |x| = 1 - 2 / (e^(2|x|) + 1) with the SFU's 2^x and reciprocal,
# |x| itself below 2^-7: relative error below 2^-14 (the two approximations' 2^-22 and 1 ulp,
# times the cancellation of 1 - 2 r, at most 2^7; x^2 / 3 below 2^-14), absolute error below
# 2^-22 near 1, so 1 + tanh stays about as accurate as float32 allows (tanh.approx.f32, one
# instruction, has 2^-11 relative error: 1 + tanh(-4) would be off by 40%). Figures from a
# float64 model of the steps with those errors over 500001 points of [0, 10]. Two SFU
# instructions and about seven others where libdevice's tanhf takes about seventeen.
# nv_fast_erf_narrow: below |x| = 1, |x| P(x^2) (degree 3, relative error 2^-14.5); above,
# 1 - 2^Q(|x|) with Q (degree 4 in min(|x|, 4) - 2.5) fitting log2 erfc, relative error of
# erfc 2^-12 (erf's 2^-14.5): one SFU instruction and about fourteen others, where libdevice's
# erff takes about twenty. Coefficients: iteratively reweighted least squares towards the
# minimax polynomial over 20001 points of [0, 1] and [1, 4] in float64, rounded to float32;
# the errors above are those of the float32 evaluation (2^x taken exact; ex2.approx adds
# 2^-22) over 600001 points of [0, 6].
FAST_PRELUDE = r"""
#if defined(__CUDA_ARCH__)
NV_FN float nv_fast_sigmoid(float x) { return __fdividef(1.0f, 1.0f + __expf(-x)); }
/* fast-math loads of float16 and stores of float16 / bfloat16: the conversion instruction
 * alone, stores two elements at a time where the kernel has a pair (a NaN becomes the
 * canonical one, whatever its payload) */
NV_FN uint32_t nv_fast_pack_bf16(float lo, float hi)
{
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
NV_FN uint32_t nv_fast_pack_f16(float lo, float hi)
{
    uint32_t r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
NV_FN float nv_fast_f16_to_f32(uint16_t h)
{
    float r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
    return r;
}
NV_FN uint16_t nv_fast_f32_to_bf16(float f) { return (uint16_t)nv_fast_pack_bf16(f, 0.0f); }
NV_FN uint16_t nv_fast_f32_to_f16(float f) { return (uint16_t)nv_fast_pack_f16(f, 0.0f); }
NV_FN float nv_fast_tanh_narrow(float x)
{
    float a = fabsf(x), e, r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(a * 2.885390081777927f));
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(e + 1.0f));
    float t = fmaf(-2.0f, r, 1.0f);
    return copysignf(a < 0x1p-7f ? a : t, x);
}
NV_FN float nv_fast_erf_narrow(float x)
{
    float a = fabsf(x), z = a * a;
    float p = fmaf(fmaf(fmaf(-0x1.2cf3a0p-6f, z, 0x1.b9b166p-4f), z, -0x1.8023ecp-2f), z,
                   0x1.20db60p+0f);
    float u = fminf(a, 4.0f) - 2.5f;
    float q = fmaf(fmaf(fmaf(fmaf(0x1.d6a2eep-9f, u, -0x1.1ea814p-6f), u, -0x1.5cbc4ep+0f), u,
                        -0x1.ee28b2p+2f), u, -0x1.686896p+3f);
    float e;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(q));
    return copysignf(a >= 1.0f ? 1.0f - e : a * p, x);   /* NaN: a * p */
}
#endif
"""

# float16 / bfloat16 <-> float32 through the conversion instructions (sm_80 and later) instead
# of nv_ops.h's integer code: the same bits (round to nearest even, subnormals kept). Loads and
# stores keep a NaN's sign and payload (quietened) as the integer code does; the rounding after
# each operation of a chain returns the canonical NaN instead, as the GPU's float32 arithmetic
# does anyway (fused and unfused GPU results stay equal bit for bit; NaN payloads may differ
# from the CPU's, as the module docstring says). About a fifth fewer instructions per element
# in bfloat16 chains (sm_90 SASS). The bfloat16 rounding converts the value into the high half
# of a packed pair (cvt.rn.bf16x2.f32, the low half 0), which is the rounded float32 itself: one
# F2FP on the ALU pipe, where cvt.rn.bf16.f32 is an F2F on the XU (16 per cycle per SM, the
# bound of exact bfloat16 chains with a rounding after each operation) and a shift.
# NUVEC_CUDA_SOFT_HALF=1 generates the integer code instead.
HALF_CONVERSIONS = (
    ""
    if os.environ.get("NUVEC_CUDA_SOFT_HALF") == "1"
    else r"""
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define NV_HALF_CONVERSIONS
NV_FN float nv_bf16_to_f32(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }
NV_FN uint16_t nv_f32_to_bf16(float f)
{
    uint16_t r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return f == f ? r : (uint16_t)((__float_as_uint(f) >> 16) | 0x0040u);
}
NV_FN float nv_f16_to_f32(uint16_t h)
{
    float r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
    uint32_t nan = ((uint32_t)(h & 0x8000u) << 16) | 0x7f800000u | ((uint32_t)(h & 0x3ffu) << 13);
    return (h & 0x7fffu) > 0x7c00u ? __uint_as_float(nan) : r;
}
NV_FN uint16_t nv_f32_to_f16(float f)
{
    uint16_t r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
    uint32_t x = __float_as_uint(f);
    uint32_t nan = ((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x3ffu);
    return f == f ? r : (uint16_t)nan;
}
#define NV_HALF_ROUNDING
NV_FN float nv_round_bf16(float f)
{
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(f), "f"(0.0f));
    return __uint_as_float(r);
}
NV_FN float nv_round_f16(float f)
{
    uint16_t h;
    float r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
    return r;
}
#endif
"""
)

PRELUDE = (
    r"""/* generated by nuvec.codegen (CUDA dialect); NVRTC options: --fmad=false */
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#define NV_FN static __device__ __forceinline__
#define NV_NOFUSE(x) (x)
NV_FN uint32_t nv_f2u(float f) { return __float_as_uint(f); }
NV_FN float nv_u2f(uint32_t u) { return __uint_as_float(u); }
NV_FN uint64_t nv_d2u(double d) { return (uint64_t)__double_as_longlong(d); }
NV_FN double nv_u2d(uint64_t u) { return __longlong_as_double((long long)u); }
"""
    + HALF_CONVERSIONS
)


_FAST_STORE = {"bfloat16": "nv_fast_f32_to_bf16", "float16": "nv_fast_f32_to_f16"}

# Float32 nodes whose code the CUDA kernels shorten without changing a bit, NaNs included
# (``nan_forms``). The GPU's float32 arithmetic returns the canonical NaN (0x7fffffff) for any
# NaN operand, so a value read only by such arithmetic may be any NaN where it is one:
# * a function read only so (and no output) leaves out its final NaN select (which returns x
#   itself) for its form without it (nv_math.h), which gives a NaN for a NaN x on the GPU;
# * a function whose argument is the canonical NaN where it is a NaN (an arithmetic result)
#   leaves it out too where that form then returns the canonical NaN itself (VALUE_CANONICAL:
#   its last step is arithmetic on a NaN, or a sign bit or-ed in from x, clear for that NaN);
# * maximum / minimum of such an argument and a constant that is neither +-0 nor NaN is one
#   min.NaN / max.NaN instruction (nv_fmax_nan / nv_fmin_nan): it picks what nv_maximum_f32 /
#   nv_minimum_f32 pick (their order differs only between +0 and -0) and returns the
#   canonical NaN, which is that argument's NaN.
# Arithmetic that the compiler may fold to its operand or its negation, which keeps a NaN's
# payload (x + -0, x - 0, -0 - x, x * 1, x * -1), is not "arithmetic" here (_IDENTITIES).
VALUE_FORMS = {
    "nv_exp_f32": "nv_exp_value",
    "nv_exp_negabs_f32": "nv_exp_nonpos",
    "nv_tanh_f32": "nv_tanh_value",
    "nv_sigmoid_f32": "nv_sigmoid_value",
    "nv_erf_f32": "nv_erf_value",
}
VALUE_CANONICAL = frozenset(("nv_exp_f32", "nv_tanh_f32", "nv_sigmoid_f32", "nv_erf_f32"))
_EXTREMA_NAN = {
    "maximum": ("nv_maximum_f32", "nv_fmax_nan"),
    "minimum": ("nv_minimum_f32", "nv_fmin_nan"),
}
# per arithmetic op, the float32 constants (bits) that may make it an identity (see above)
_IDENTITIES = {
    "add": frozenset((0x00000000, 0x80000000)),
    "subtract": frozenset((0x00000000, 0x80000000)),
    "multiply": frozenset((0x3F800000, 0xBF800000)),
    "square": frozenset(),
}


def _f32_const(spec: KernelSpec, arg: tuple[str, int]) -> int | None:
    """The bits of ``arg`` if it is a float32 constant."""
    if arg[0] != "const" or spec.constants[arg[1]][0] != "float32":
        return None
    return spec.constants[arg[1]][1]


def nan_forms(spec: KernelSpec, lines: list[str]) -> dict[int, tuple[str, str]]:
    """{node: (function, its replacement)} for the float32 nodes of ``spec`` whose NaN select or
    NaN rule the CUDA kernels leave out (see VALUE_FORMS); ``lines``: the generator's body."""
    nodes = spec.nodes
    f32 = [
        nd.dtype == "float32" and all(spec.arg_dtype(a) == "float32" for a in nd.args)
        for nd in nodes
    ]

    def fn_of(j: int) -> str:
        return lines[j].split(" = ", 1)[1].split("(", 1)[0]

    def arith(j: int) -> bool:
        """Whether node j is float32 arithmetic that the compiler keeps (see VALUE_FORMS)."""
        nd = nodes[j]
        if not f32[j] or nd.op not in _IDENTITIES:
            return False
        return all(_f32_const(spec, a) not in _IDENTITIES[nd.op] for a in nd.args)

    extrema: dict[int, tuple[str, str]] = {}
    canonical = set()  # nodes whose NaN is the canonical one
    for j, nd in enumerate(nodes):
        if not f32[j]:
            continue
        if arith(j):
            canonical.add(j)
        elif nd.op in _EXTREMA_NAN and fn_of(j) == _EXTREMA_NAN[nd.op][0]:
            consts = [_f32_const(spec, a) for a in nd.args]
            var = [a for a, c in zip(nd.args, consts) if c is None]
            plain = [c for c in consts if c is not None and 0 < c & 0x7FFFFFFF <= 0x7F800000]
            if len(var) == 1 and plain and var[0][0] == "node" and var[0][1] in canonical:
                extrema[j] = _EXTREMA_NAN[nd.op]
                canonical.add(j)
    readers: dict[int, list[int]] = {}
    for j, nd in enumerate(nodes):
        for kind, i in nd.args:
            if kind == "node":
                readers.setdefault(i, []).append(j)
    out = dict(extrema)
    for j, nd in enumerate(nodes):
        fn = fn_of(j) if f32[j] else ""
        if fn not in VALUE_FORMS:
            continue
        read_by_arith = j not in spec.outputs and all(
            arith(r) or r in extrema for r in readers.get(j, [])
        )
        kind, i = nd.args[0]
        of_canonical = fn in VALUE_CANONICAL and kind == "node" and i in canonical
        if read_by_arith or of_canonical:
            out[j] = (fn, VALUE_FORMS[fn])
    return out


class CudaDialect(Dialect):
    name = "cuda"
    FAST_FUNCTIONS = FAST_FUNCTIONS

    def prelude(self) -> str:
        return PRELUDE + FAST_PRELUDE

    def spec_load(self, spec: KernelSpec, dtype: str, ref: str) -> str:
        """The load of ``ref`` as ``dtype`` in ``spec``'s kernels: a fast-math kernel converts
        float16 with the conversion instruction alone (a NaN becomes the canonical one), every
        other kernel as ``load`` does (a NaN keeps its payload)."""
        if spec.fast and dtype == "float16":
            return f"nv_fast_f16_to_f32({ref})"
        return self.load(dtype, ref)

    def spec_store(self, spec: KernelSpec, dtype: str, value: str) -> str:
        """The store of ``value`` as ``dtype`` in ``spec``'s kernels: a fast-math kernel converts
        float16 / bfloat16 with the conversion instruction alone (a NaN becomes the canonical
        one), every other kernel as ``store`` does (a NaN keeps its payload, quietened)."""
        if spec.fast and dtype in _FAST_STORE:
            return f"{_FAST_STORE[dtype]}({value})"
        return self.store(dtype, value)

    def body(self, spec: KernelSpec):
        """The generator's body, with the float32 nodes of ``nan_forms`` in their shorter
        forms (the same bits on the GPU)."""
        b = super().body(spec)
        if spec.fast:
            return b
        for j, (fn, form) in nan_forms(spec, b.lines).items():
            b.lines[j] = b.lines[j].replace(f" = {fn}(", f" = {form}(", 1)
        return b

    def kernel(self, name: str, spec: KernelSpec) -> str:
        return "\n".join(
            self._variant(name, spec, v, idx)
            for v in ("contig", "scalar", "strided")
            for idx in ("i32", "i64")
        )

    def _variant(self, name: str, spec: KernelSpec, variant: str, idx: str) -> str:
        b = self.body(spec)
        I = "int" if idx == "i32" else "long long"
        nin = len(spec.inputs)
        outs = [spec.nodes[o].dtype for o in spec.outputs]
        params = [f"{I} n"]
        if variant == "strided":
            params += ["int ndim", "const long long *__restrict__ meta"]
        loads, stores = [], []
        for i, d in enumerate(spec.inputs):
            st = self.stype(d)
            params.append(f"const {st} *__restrict__ a{i}")
            if variant == "scalar":
                params.append(f"{I} s{i}")
            if i not in b.used_inputs:
                continue
            ref = {"contig": f"a{i}[i]", "scalar": f"a{i}[i * s{i}]", "strided": f"a{i}[off{i}]"}[
                variant
            ]
            loads.append(f"const {self.ctype(d)} x{i} = {self.spec_load(spec, d, ref)};")
        for k, d in enumerate(outs):
            st = self.stype(d)
            params.append(f"{st} *__restrict__ o{k}")
            ref = f"o{k}[off{nin + k}]" if variant == "strided" else f"o{k}[i]"
            stores.append(f"{ref} = {self.spec_store(spec, d, b.outputs[k])};")
        pre: list[str] = []
        if variant == "strided":
            narr = nin + len(outs)
            pre.append(f"{I} rem = i;")
            pre += [f"{I} off{a} = 0;" for a in range(narr)]
            pre.append("for (int d = ndim - 1; d >= 0; d--) {")
            pre.append(f"    const {I} sz = ({I})meta[d];")
            pre.append(f"    const {I} c = rem % sz;")
            pre.append("    rem /= sz;")
            pre += [f"    off{a} += c * ({I})meta[ndim * {a + 1} + d];" for a in range(narr)]
            pre.append("}")
        loop = pre + loads + b.lines + stores
        start = f"({I})blockIdx.x * blockDim.x + threadIdx.x"  # a grid-stride loop
        step = f"({I})blockDim.x * gridDim.x"
        return f"""
extern "C" __global__ void {name}_{variant}_{idx}({", ".join(params)})
{{
{indent(b.consts, 4)}
    for ({I} i = {start}; i < n; i += {step}) {{
{indent(loop, 8)}
    }}
}}
"""
