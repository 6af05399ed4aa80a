"""CUDA C sources of element-wise kernels, one small module per (spec, variant, index width).

Pure Python (no CuPy): it only arranges text from the generator's CUDA dialect
(``nuvec.codegen.dialects.cuda``), so it can be checked on machines without a GPU.

Variants (every one computes each element with the generator's per-element body, so they
all give the same bits):

* ``contig``, ``scalar``, ``strided``: the dialect's own entry points (see its docstring);
* ``nd`` (32-bit indices only): the strided layout of exactly ``ndim`` axes (the ``mask``
  slot of the key holds ``(ndim,)``), passed by value: ``(int n, int d1, ..., int d{K-1},
  unsigned m1, ..., unsigned m{K-1}, int l1, ..., int l{K-1}, then per array (inputs, then
  outputs) its K strides in elements, a0, ..., o0, ...)``, where ``d_k`` is axis k's size
  and ``(m_k, l_k) = divisor(d_k)``: the coordinates come from a multiply-high and a shift
  per axis (``divisor``) instead of an integer division and a layout read from memory;
* ``vec``: this backend's entry point for the common case, every array contiguous or a
  broadcast scalar: each thread loads VEC consecutive elements of each full input with
  aligned vector loads (``VEC_BYTES``, 32 bytes, for the widest array, as vectors of at most
  16), computes them, and stores them the same way; scalar inputs (``mask``) are loaded once.
  Arguments: ``(IDX nvec, IDX n, a0, ..., o0, ...)``; threads ``t < nvec`` do elements
  ``t*VEC .. t*VEC+VEC-1``, the next ``n % VEC`` threads one element each. Every full array
  must be aligned to VEC times its item size, at most 16 bytes (``vec_align``).
  bfloat16 inputs are read as 32-bit words of two elements (a shift or a mask each); outputs
  that are float16 / bfloat16 values already (rounded results: ``_bf16_bits_suffice``,
  ``_rounded``) skip the full conversion, with the same bits, and fast-math float16 /
  bfloat16 outputs are converted two at a time.

A module holds one entry point (compiling only what is launched keeps NVRTC's time per kernel
low); its name is ``entry_name(variant, idx)``.

    src, entry = module_source(spec, "vec", "i32", mask=(0, 1))
"""

from __future__ import annotations

import os
import re

from ...codegen.dialects import DIALECTS
from ...codegen.dialects import cuda as cuda_dialect
from ...codegen.ir import ITEMSIZE, KernelSpec

VARIANTS = ("vec", "contig", "scalar", "strided", "nd")
#: the most axes (after merging) that the ``nd`` variant takes; more go to ``strided``
ND_MAX = 6
INDEX = {"i32": "int", "i64": "long long"}
NAME = "nvk"

_VEC_HELPER = r"""
/* N elements of T, loaded and stored as vectors of at most 16 bytes (source.VEC_ALIGN) */
template <typename T, int N> struct __align__(sizeof(T) * N < 16 ? sizeof(T) * N : 16) nv_vec
{
    T v[N];
};
/* element hi (0 or 1) of a pair of bfloat16 in one 32-bit word, as float32: one shift or mask
 * (extracting the 16-bit half first would take a permute and a shift) */
NV_FN float nv_bf16_lane(uint32_t w, int hi)
{
    return __uint_as_float(hi ? w & 0xffff0000u : w << 16);
}
/* the bfloat16 bits of a value that is a bfloat16 already, a NaN a quiet one (see
 * _bf16_bits_suffice): nv_f32_to_bf16's, without its conversion and NaN test */
NV_FN uint16_t nv_bf16_bits(float f) { return (uint16_t)(__float_as_uint(f) >> 16); }
/* Pairs of bfloat16 in one 32-bit word (element 2j in the low half), for the ``vec`` kernels'
 * word nodes (_word_nodes): one instruction computes two elements, rounded once to bfloat16,
 * which is the float32 operation rounded to bfloat16 (see _word_nodes). fma.rn.bf16x2 and
 * max/min.NaN.bf16x2 exist from sm_80 on (subnormals kept, a NaN result the canonical one);
 * elsewhere each half goes through the float32 operation and nv_f32_to_bf16. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
NV_FN uint32_t nv_bf16x2_fma(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t r;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
NV_FN uint32_t nv_bf16x2_max(uint32_t a, uint32_t b)
{
    uint32_t r;
    asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
NV_FN uint32_t nv_bf16x2_min(uint32_t a, uint32_t b)
{
    uint32_t r;
    asm("min.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
/* two float32 values rounded to bfloat16 (nearest even, a NaN the canonical one), packed: the
 * dialect's packed conversion (cvt.rn.bf16x2.f32) */
NV_FN uint32_t nv_bf16x2_rn(float lo, float hi) { return nv_fast_pack_bf16(lo, hi); }
#else
NV_FN uint32_t nv_bf16x2_rn(float lo, float hi)
{
    return (uint32_t)nv_f32_to_bf16(lo) | ((uint32_t)nv_f32_to_bf16(hi) << 16);
}
NV_FN uint32_t nv_bf16x2_fma(uint32_t a, uint32_t b, uint32_t c)
{
    return nv_bf16x2_rn(fmaf(nv_bf16_lane(a, 0), nv_bf16_lane(b, 0), nv_bf16_lane(c, 0)),
                        fmaf(nv_bf16_lane(a, 1), nv_bf16_lane(b, 1), nv_bf16_lane(c, 1)));
}
NV_FN uint32_t nv_bf16x2_max(uint32_t a, uint32_t b)
{
    return nv_bf16x2_rn(nv_maximum_f32(nv_bf16_lane(a, 0), nv_bf16_lane(b, 0)),
                        nv_maximum_f32(nv_bf16_lane(a, 1), nv_bf16_lane(b, 1)));
}
NV_FN uint32_t nv_bf16x2_min(uint32_t a, uint32_t b)
{
    return nv_bf16x2_rn(nv_minimum_f32(nv_bf16_lane(a, 0), nv_bf16_lane(b, 0)),
                        nv_minimum_f32(nv_bf16_lane(a, 1), nv_bf16_lane(b, 1)));
}
#endif
/* a + b = a 1 + b, a - b = b (-1) + a, a b = a b + (-0) (an exact zero keeps the product's
 * sign), each rounded once */
NV_FN uint32_t nv_bf16x2_add(uint32_t a, uint32_t b) { return nv_bf16x2_fma(a, 0x3f803f80u, b); }
NV_FN uint32_t nv_bf16x2_sub(uint32_t a, uint32_t b) { return nv_bf16x2_fma(b, 0xbf80bf80u, a); }
NV_FN uint32_t nv_bf16x2_mul(uint32_t a, uint32_t b) { return nv_bf16x2_fma(a, b, 0x80008000u); }
"""


# the packed conversion of a fast-math kernel's float16 / bfloat16 output (cuda.FAST_PRELUDE)
_PACK = {"bfloat16": "nv_fast_pack_bf16", "float16": "nv_fast_pack_f16"}

# ops whose bfloat16 result is one of their operands, its sign maybe changed, or the GPU's
# canonical NaN (0x7fffffff, whose high half is the quiet NaN nv_f32_to_bf16 gives it)
_PASSING = frozenset(("abs", "negative", "copy", "maximum", "minimum", "select"))


# Word nodes (``_word_nodes``): bfloat16 ops computed two elements at a time on pairs of
# bfloat16 in 32-bit words, with the bits of the float32 operation rounded to bfloat16. For +,
# -, * of two bfloat16 values the float32 result rounded to bfloat16 is the exact result
# rounded once (a double rounding through p' >= 2p + 2 bits is innocuous for these operations:
# Figueroa, "When is double rounding innocuous?", 1995; float32 has 24 bits, bfloat16 8, and the
# same exponent range, its subnormals on a grid 2^16 times finer), which is what the packed fma
# gives; checked exhaustively against the float32 path on the GPU (tests/cuda). abs and
# negative are bit operations either way. maximum / minimum take the packed instruction only
# against a constant that is neither zero nor NaN, where it picks the same value as
# nv_maximum_f32 / nv_minimum_f32 (their order differs only between +0 and -0).
_WORD_ARITH = {"add": "nv_bf16x2_add", "subtract": "nv_bf16x2_sub", "multiply": "nv_bf16x2_mul"}
_WORD_EXTREMA = {"maximum": "nv_bf16x2_max", "minimum": "nv_bf16x2_min"}
_WORD_BITS = {"abs": "({0} & 0x7fff7fffu)", "negative": "({0} ^ 0x80008000u)"}
# functions of a bfloat16 argument whose result the pair loop rounds to bfloat16, and what it
# calls instead (nv_math.h): their values without the final NaN select (which returns x), a
# NaN for a NaN x on the GPU, any NaN rounding to the canonical one (cvt.rn.bf16x2) as x does;
# the _bf16 ones also leave out steps or take a shorter approximation (erf) that change no
# rounded result (every bfloat16 input: tests/engine/test_narrow_math.py)
_ROUNDED_BF16 = {
    "nv_exp_f32": "nv_exp_value",
    "nv_exp_negabs_f32": "nv_exp_nonpos_bf16",
    "nv_tanh_f32": "nv_tanh_bf16",
    "nv_sigmoid_f32": "nv_sigmoid_bf16",
    "nv_erf_f32": "nv_erf_bf16",
}
# set to 0 to compute every node as float32 (the same bits but NaN payloads), for comparisons
PACKED_BF16 = os.environ.get("NUVEC_CUDA_PACKED_BF16", "1") != "0"


def _plain_const(spec: KernelSpec, arg: tuple[str, int]) -> bool:
    """Whether ``arg`` is a bfloat16 constant that is neither +-0 nor NaN."""
    if arg[0] != "const":
        return False
    dt, bits = spec.constants[arg[1]]
    return dt == "bfloat16" and bits & 0x7FFF != 0 and bits & 0x7FFF <= 0x7F80


def _word_nodes(spec: KernelSpec) -> set[int]:
    """The nodes the ``vec`` kernel computes on words of two bfloat16 (see _WORD_ARITH)."""
    if spec.fast or not PACKED_BF16:
        return set()
    out = set()
    for j, nd in enumerate(spec.nodes):
        if nd.dtype != "bfloat16" or any(spec.arg_dtype(a) != "bfloat16" for a in nd.args):
            continue
        if nd.op in _WORD_ARITH or nd.op in _WORD_BITS or nd.op == "square":
            out.add(j)
        elif nd.op in _WORD_EXTREMA and any(_plain_const(spec, a) for a in nd.args):
            out.add(j)
    return out


def _word_expr(spec: KernelSpec, j: int, args: list[str]) -> str:
    """The expression of word node ``j`` over its arguments' words."""
    op = spec.nodes[j].op
    if op in _WORD_BITS:
        return _WORD_BITS[op].format(args[0])
    if op == "square":
        return f"nv_bf16x2_mul({args[0]}, {args[0]})"
    fn = {**_WORD_ARITH, **_WORD_EXTREMA}[op]
    return f"{fn}({', '.join(args)})"


def _word_bits_suffice(spec: KernelSpec, b, words: set[int], node: int) -> bool:
    """Whether the word of bfloat16 ``node`` holds nv_f32_to_bf16's bits of both its values
    (NaN payloads aside): an arithmetic word node's (a NaN the canonical one) or a rounded
    node's, or abs / negative of such a value (a loaded input may be a signaling NaN, which the
    store must quieten)."""
    if node not in words:
        return _rounded(b, node, "nv_round_bf16")
    nd = spec.nodes[node]
    if nd.op not in _WORD_BITS:
        return True
    kind, i = nd.args[0]
    if kind == "node":
        return _word_bits_suffice(spec, b, words, i)
    return kind == "const" and _plain_const(spec, nd.args[0])


def _rounded(b, node: int, fn: str) -> bool:
    """Whether the body's value of ``node`` is a result of the rounding function ``fn``."""
    return b.lines[node].split(" = ", 1)[1].startswith(fn + "(")


def _bf16_bits_suffice(spec: KernelSpec, b, node: int) -> bool:
    """Whether ``nv_bf16_bits`` stores the body's value of bfloat16 ``node`` with
    nv_f32_to_bf16's bits: an ``nv_round_bf16`` result (a bfloat16, NaN the quiet one), or one
    of the _PASSING ops over such values and constants that are no signaling NaN. A loaded
    input may be a signaling NaN, which the store must quieten."""
    if _rounded(b, node, "nv_round_bf16"):
        return True
    nd = spec.nodes[node]
    if nd.op not in _PASSING:
        return False
    args = nd.args[1:] if nd.op == "select" else nd.args
    for kind, i in args:
        if kind == "in":
            return False
        if kind == "const":
            dt, bits = spec.constants[i]
            if dt != "bfloat16" or ((bits & 0x7FFF) > 0x7F80 and not bits & 0x40):
                return False
        elif not _bf16_bits_suffice(spec, b, i):
            return False
    return True


def dialect():
    """The generator's CUDA dialect."""
    return DIALECTS["cuda"]


def nvrtc_options(fast: bool = False) -> tuple[str, ...]:
    """NVRTC options of a kernel: no contraction, IEEE division and square root; or, for a
    fast-math kernel (``KernelSpec.fast``), contraction and approximate division."""
    return cuda_dialect.FAST_NVRTC_OPTIONS if fast else cuda_dialect.NVRTC_OPTIONS


def entry_name(variant: str, idx: str, name: str = NAME) -> str:
    return f"{name}_{variant}_{idx}"


#: bytes of the widest full array a ``vec`` thread loads: two 16-byte vectors, so that the
#: per-thread steps (its index, addresses, the math library's constants in registers) are
#: shared by 8 float32 elements (about 1.7 instructions an element fewer than with one vector
#: in the float32 10op, sm_90)
VEC_BYTES = 32
#: the alignment a ``vec`` kernel needs of each full array, in bytes at most (``vec_align``)
VEC_ALIGN = 16


def vec_width(spec: KernelSpec, mask: tuple[int, ...], cap: int = 8) -> int:
    """Elements per thread of the ``vec`` variant: ``VEC_BYTES`` of the widest full array (at
    most ``cap``)."""
    used = set(dialect().body(spec).used_inputs)
    sizes = [ITEMSIZE[d] for i, d in enumerate(spec.inputs) if i in used and not mask[i]]
    sizes += [ITEMSIZE[spec.nodes[o].dtype] for o in spec.outputs]
    return max(1, min(cap, VEC_BYTES // max(sizes)))


def vec_align(V: int, itemsize: int) -> int:
    """The alignment in bytes that a ``vec`` kernel of ``V`` elements per thread needs of a full
    array of ``itemsize`` bytes: its vector, at most ``VEC_ALIGN`` (a wider one is loaded as
    vectors of that many bytes, nv_vec)."""
    return min(V * itemsize, VEC_ALIGN)


def divisor(d: int) -> tuple[int, int]:
    """(m, l) such that ``n // d == (umulhi(n, m) + n) >> l`` for every 0 <= n < 2**31
    (``umulhi``: the high 32 bits of the 64-bit product), for 1 <= d < 2**31: l is
    ceil(log2(d)) and m = floor(2**32 * (2**l - d) / d) + 1 (Granlund and Montgomery's
    division by invariant integers; n < 2**31 keeps the sum within 32 bits)."""
    if not 1 <= d < (1 << 31):
        raise ValueError(f"cuda kernels: divisor {d} out of range")
    ln = (d - 1).bit_length()
    m = ((1 << 32) * ((1 << ln) - d)) // d + 1
    return m & 0xFFFFFFFF, ln


def nd_kernel(spec: KernelSpec, ndim: int, name: str = NAME) -> str:
    """The ``nd`` entry point of ``spec`` over ``ndim`` axes (see the module docstring)."""
    d = dialect()
    b = d.body(spec)
    nin = len(spec.inputs)
    outs = [spec.nodes[o].dtype for o in spec.outputs]
    narr = nin + len(outs)
    K = ndim
    params = ["int n"]
    params += [f"int d{k}" for k in range(1, K)]
    params += [f"unsigned m{k}" for k in range(1, K)]
    params += [f"int l{k}" for k in range(1, K)]
    params += [f"int s{a}_{k}" for a in range(narr) for k in range(K)]
    params += [f"const {d.stype(t)} *__restrict__ a{i}" for i, t in enumerate(spec.inputs)]
    params += [f"{d.stype(t)} *__restrict__ o{k}" for k, t in enumerate(outs)]
    index = ["unsigned r = (unsigned)i;"]
    index += [f"int off{a} = 0;" for a in range(narr)]
    for k in range(K - 1, 0, -1):  # innermost axis first
        index.append(f"{{ const unsigned q = (__umulhi(r, m{k}) + r) >> l{k};")
        index.append(f"  const int c = (int)(r - q * (unsigned)d{k});")
        index += [f"  off{a} += c * s{a}_{k};" for a in range(narr)]
        index.append("  r = q; }")
    index += [f"off{a} += (int)r * s{a}_0;" for a in range(narr)]
    used = set(b.used_inputs)
    loads = [
        f"const {d.ctype(t)} x{i} = {d.spec_load(spec, t, f'a{i}[off{i}]')};"
        for i, t in enumerate(spec.inputs)
        if i in used
    ]
    stores = [
        f"o{k}[off{nin + k}] = {d.spec_store(spec, t, b.outputs[k])};" for k, t in enumerate(outs)
    ]
    loop = index + loads + b.lines + stores
    return f"""
extern "C" __global__ void {entry_name("nd", "i32", name)}({", ".join(params)})
{{
{_indent(b.consts, 4)}
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {{
{_indent(loop, 8)}
    }}
}}
"""


def _vec_parts(
    spec: KernelSpec, idx: str, mask: tuple[int, ...], cap: int
) -> tuple[list[tuple[str, str]], str, str]:
    """The ``vec`` variant's parts: its parameters as (type, name), the code before the
    thread's index (constants, scalar inputs loaded once) and the code of thread ``t``."""
    d = dialect()
    b = d.body(spec)
    I = INDEX[idx]
    V = vec_width(spec, mask, cap)
    nin = len(spec.inputs)
    outs = [spec.nodes[o].dtype for o in spec.outputs]
    used = set(b.used_inputs)
    params = [(I, "nvec"), (I, "n")]
    params += [(f"const {d.stype(t)} *__restrict__", f"a{i}") for i, t in enumerate(spec.inputs)]
    params += [(f"{d.stype(t)} *__restrict__", f"o{k}") for k, t in enumerate(outs)]
    hoisted = [
        f"const {d.ctype(t)} x{i} = {d.spec_load(spec, t, f'a{i}[0]')};"
        for i, t in enumerate(spec.inputs)
        if i in used and mask[i]
    ]
    full = [i for i in range(nin) if i in used and not mask[i]]
    # bfloat16 inputs as 32-bit words, two elements each
    pairs = {i for i in full if spec.inputs[i] == "bfloat16" and V % 2 == 0}
    vload = [
        f"const nv_vec<uint32_t, {V // 2}> r{i} = "
        f"*reinterpret_cast<const nv_vec<uint32_t, {V // 2}> *>(a{i} + base);"
        if i in pairs
        else f"const nv_vec<{d.stype(spec.inputs[i])}, {V}> r{i} = "
        f"*reinterpret_cast<const nv_vec<{d.stype(spec.inputs[i])}, {V}> *>(a{i} + base);"
        for i in full
    ]
    vdecl = [f"nv_vec<{d.stype(t)}, {V}> w{k};" for k, t in enumerate(outs)]
    # fast-math float16 / bfloat16 outputs: kept as float32, converted two at a time
    # and float16 results of nv_round_f16, already float16 values, whose NaN is the canonical
    # one: the conversion instruction gives nv_f32_to_f16's bits for them
    packed = {
        k: _PACK[t]
        for k, t in enumerate(outs)
        if t in _PACK
        and V % 2 == 0
        and (spec.fast or (t == "float16" and _rounded(b, spec.outputs[k], "nv_round_f16")))
    }
    vdecl = [f"float s{k}[{V}];" if k in packed else ln for k, ln in enumerate(vdecl)]
    lane = [
        f"const float x{i} = nv_bf16_lane(r{i}.v[j >> 1], j & 1);"
        if i in pairs
        else f"const {d.ctype(spec.inputs[i])} x{i} = "
        f"{d.spec_load(spec, spec.inputs[i], f'r{i}.v[j]')};"
        for i in full
    ]
    lane += b.lines
    lane += [
        f"s{k}[j] = {b.outputs[k]};"
        if k in packed
        else f"w{k}.v[j] = nv_bf16_bits({b.outputs[k]});"
        if t == "bfloat16" and not spec.fast and _bf16_bits_suffice(spec, b, spec.outputs[k])
        else f"w{k}.v[j] = {d.spec_store(spec, t, b.outputs[k])};"
        for k, t in enumerate(outs)
    ]
    vstore = []
    for k, t in enumerate(outs):
        if k in packed:
            vstore += [
                f"nv_vec<uint32_t, {V // 2}> w{k};",
                "#pragma unroll",
                f"for (int j = 0; j < {V // 2}; j++) "
                f"w{k}.v[j] = {packed[k]}(s{k}[2 * j], s{k}[2 * j + 1]);",
                f"*reinterpret_cast<nv_vec<uint32_t, {V // 2}> *>(o{k} + base) = w{k};",
            ]
        else:
            vstore.append(f"*reinterpret_cast<nv_vec<{d.stype(t)}, {V}> *>(o{k} + base) = w{k};")
    steps = V
    words = _word_nodes(spec) if V % 2 == 0 else set()
    # the loop goes over pairs of elements where some node is a word node or a rounded
    # bfloat16 result (two of which take one packed rounding)
    if (
        V % 2 == 0
        and not spec.fast
        and PACKED_BF16
        and (words or any(_rounded(b, j, "nv_round_bf16") for j in range(len(spec.nodes))))
    ):
        hoisted += [
            f"const uint32_t px{i} = (uint32_t)a{i}[0] * 0x10001u;"
            for i in range(nin)
            if i in used and mask[i] and spec.inputs[i] == "bfloat16"
        ]
        vdecl, lane, vstore = _pair_parts(spec, b, V, full, set(full) - pairs, words, packed)
        steps = V // 2
    one = [
        f"const {d.ctype(spec.inputs[i])} x{i} = {d.spec_load(spec, spec.inputs[i], f'a{i}[e]')};"
        for i in full
    ]
    one += b.lines
    one += [f"o{k}[e] = {d.spec_store(spec, t, b.outputs[k])};" for k, t in enumerate(outs)]
    ind = _indent
    code = f"""    if (t < nvec) {{
        const {I} base = t * {V};
{ind(vload, 8)}
{ind(vdecl, 8)}
#pragma unroll
        for (int j = 0; j < {steps}; j++) {{
{ind(lane, 12)}
        }}
{ind(vstore, 8)}
    }} else {{
        const {I} e = nvec * {V} + (t - nvec);
        if (e < n) {{
{ind(one, 12)}
        }}
    }}"""
    return params, f"{ind(b.consts, 4)}\n{ind(hoisted, 4)}", code


_NAME = re.compile(r"\b([xv])(\d+)\b")


def _pair_parts(
    spec: KernelSpec,
    b,
    V: int,
    full: list[int],
    unpaired: set[int],
    words: set[int],
    packed: dict[int, str],
) -> tuple[list[str], list[str], list[str]]:
    """The ``vec`` kernel's output declarations, loop body and stores when its loop goes over
    pairs of elements (j, elements 2j and 2j + 1): word nodes (``words``) compute on words of
    two bfloat16 (``p<node>``), the other nodes twice on float32 values (``v<node>_0``,
    ``v<node>_1``); a value is converted between the two forms only where a reader needs the
    other one: a word's halves by a shift and a mask, a pair of rounded values by one packed
    rounding of the two unrounded ones. Bfloat16 outputs are stored as words: a word node's
    or a rounded node's as it is (``_word_bits_suffice``), any other value through the store
    conversion of each element. ``unpaired``: the full inputs loaded element by element (not
    bfloat16); ``packed``: the outputs converted two at a time (as the element loop does)."""
    d = dialect()
    nodes = spec.nodes
    outs = [nodes[o].dtype for o in spec.outputs]
    full_set = set(full)

    def lane(text: str, h: int) -> str:
        def sub(m: re.Match) -> str:
            if m.group(1) == "x" and int(m.group(2)) not in full_set:
                return m.group(0)  # a scalar input, loaded once
            return f"{m.group(0)}_{h}"

        return _NAME.sub(sub, text)

    word_store = {
        k
        for k, t in enumerate(outs)
        if t == "bfloat16" and _word_bits_suffice(spec, b, words, spec.outputs[k])
    }
    need_word = {i for j in words for kind, i in nodes[j].args if kind == "node"}
    need_word |= {spec.outputs[k] for k in word_store}
    need_float = {
        i for j, nd in enumerate(nodes) if j not in words for kind, i in nd.args if kind == "node"
    }
    need_float |= {o for k, o in enumerate(spec.outputs) if k not in word_store}
    # abs and negative read as float32 are taken from their argument's float32 values: both
    # are free as operand modifiers there, where the halves of their word take two instructions
    for j in reversed(range(len(nodes))):
        if j in words and j in need_float and nodes[j].op in _WORD_BITS:
            need_float |= {i for kind, i in nodes[j].args if kind == "node"}

    def word_arg(arg: tuple[str, int]) -> str:
        kind, i = arg
        if kind == "in":
            return f"px{i}"
        if kind == "node":
            return f"p{i}"
        bits = spec.constants[i][1]
        return f"0x{bits:04x}{bits:04x}u"

    body = [f"const uint32_t px{i} = r{i}.v[j];" for i in full if i not in unpaired]
    body += [
        f"const float x{i}_{h} = nv_bf16_lane(px{i}, {h});"
        for i in full
        if i not in unpaired
        for h in (0, 1)
    ]
    body += [
        f"const {d.ctype(spec.inputs[i])} x{i}_{h} = "
        f"{d.spec_load(spec, spec.inputs[i], f'r{i}.v[2 * j + {h}]')};"
        for i in sorted(unpaired)
        for h in (0, 1)
    ]
    for j, nd in enumerate(nodes):
        if j in words:
            body.append(
                f"const uint32_t p{j} = {_word_expr(spec, j, [word_arg(a) for a in nd.args])};"
            )
            if j in need_float and nd.op in _WORD_BITS:
                expr = b.lines[j].rstrip(";").split(" = ", 1)[1]
                body += [f"const float v{j}_{h} = {lane(expr, h)};" for h in (0, 1)]
            elif j in need_float:
                body += [f"const float v{j}_{h} = nv_bf16_lane(p{j}, {h});" for h in (0, 1)]
            continue
        head, expr = b.lines[j].rstrip(";").split(" = ", 1)
        ctype = head.split()[1]
        if _rounded(b, j, "nv_round_bf16"):  # keep the unrounded values for a packed rounding
            inner = expr[len("nv_round_bf16(") : -1]
            fn = inner.split("(", 1)[0]
            if fn in _ROUNDED_BF16 and all(spec.arg_dtype(a) == "bfloat16" for a in nd.args):
                inner = _ROUNDED_BF16[fn] + inner[len(fn) :]
            body += [f"const float u{j}_{h} = {lane(inner, h)};" for h in (0, 1)]
            if j in need_float:
                body += [f"const float v{j}_{h} = nv_round_bf16(u{j}_{h});" for h in (0, 1)]
            if j in need_word:
                body.append(f"const uint32_t p{j} = nv_bf16x2_rn(u{j}_0, u{j}_1);")
            continue
        body += [f"const {ctype} v{j}_{h} = {lane(expr, h)};" for h in (0, 1)]
        if j in need_word:  # a bfloat16 value already: the packed rounding is exact
            body.append(f"const uint32_t p{j} = nv_bf16x2_rn(v{j}_0, v{j}_1);")
    vdecl, vstore = [], []
    for k, t in enumerate(outs):
        o = spec.outputs[k]
        if k in word_store or k in packed or t == "bfloat16":
            vdecl.append(f"nv_vec<uint32_t, {V // 2}> w{k};")
            vstore.append(f"*reinterpret_cast<nv_vec<uint32_t, {V // 2}> *>(o{k} + base) = w{k};")
            if k in word_store:
                body.append(f"w{k}.v[j] = p{o};")
            elif k in packed:
                body.append(f"w{k}.v[j] = {packed[k]}(v{o}_0, v{o}_1);")
            else:
                store = (
                    "nv_bf16_bits({})"
                    if _bf16_bits_suffice(spec, b, o)
                    else d.spec_store(spec, t, "{}")
                )
                lo, hi = (store.format(f"v{o}_{h}") for h in (0, 1))
                body.append(f"w{k}.v[j] = (uint32_t){lo} | ((uint32_t){hi} << 16);")
        else:
            vdecl.append(f"nv_vec<{d.stype(t)}, {V}> w{k};")
            vstore.append(f"*reinterpret_cast<nv_vec<{d.stype(t)}, {V}> *>(o{k} + base) = w{k};")
            body += [f"w{k}.v[2 * j + {h}] = {d.spec_store(spec, t, f'v{o}_{h}')};" for h in (0, 1)]
    return vdecl, body, vstore


def vec_kernel(
    spec: KernelSpec, idx: str, mask: tuple[int, ...], name: str = NAME, cap: int = 8
) -> str:
    """The ``vec`` entry point of ``spec`` (see the module docstring)."""
    params, head, code = _vec_parts(spec, idx, mask, cap)
    I = INDEX[idx]
    decl = ", ".join(f"{t} {n}" for t, n in params)
    return f"""
extern "C" __global__ void {entry_name("vec", idx, name)}({decl})
{{
{head}
    const {I} t = ({I})blockIdx.x * ({I})blockDim.x + ({I})threadIdx.x;
{code}
}}
"""


def group_kernel(members: tuple, name: str = NAME, cap: int = 8) -> str:
    """One entry point running the ``vec`` kernels (32-bit indices) of several specs, each
    over blocks of its own: ``members`` is ((spec, mask), ...). Arguments: the first block of
    each member after the first (``int b1, ..., int b{M-1}``), then each member's ``vec``
    arguments in turn. Each member's thread runs that member's ``vec`` code (a device function
    of the same text), so its elements get the bits its own kernel gives them."""
    fns, params, calls = [], [], []
    bounds = [f"b{j}" for j in range(1, len(members))]
    for j, (spec, mask) in enumerate(members):
        spec.validate()
        dialect().check(spec)
        ps, head, code = _vec_parts(spec, "i32", tuple(mask), cap)
        fn = f"{name}_part{j}"
        decl = ", ".join(["int t"] + [f"{t} {n}" for t, n in ps])
        fns.append(f"static __device__ __forceinline__ void {fn}({decl})\n{{\n{head}\n{code}\n}}")
        params += [f"{t} m{j}_{n}" for t, n in ps]
        first = "0" if j == 0 else f"b{j}"
        args = ", ".join(
            [f"(blk - {first}) * (int)blockDim.x + (int)threadIdx.x"] + [f"m{j}_{n}" for _, n in ps]
        )
        test = f"if (blk < b{j + 1}) " if j + 1 < len(members) else ""
        calls.append(f"{test}{{ {fn}({args}); return; }}")
    entry = entry_name("group", "i32", name)
    return (
        "\n".join(fns)
        + f"""
extern "C" __global__ void {entry}({", ".join([f"int {b}" for b in bounds] + params)})
{{
    const int blk = (int)blockIdx.x;
{_indent(calls, 4)}
}}
"""
    )


def group_source(members: tuple, cap: int = 8) -> tuple[str, str]:
    """(CUDA C source, entry point name) of a module holding ``group_kernel(members)``."""
    d = dialect()
    body = group_kernel(members, cap=cap)
    return "\n".join((d.prelude(), d.library(), _VEC_HELPER, body)), entry_name("group", "i32")


def _indent(lines: list[str], n: int) -> str:
    pad = " " * n
    return "\n".join(pad + ln for ln in lines)


def _dialect_variant(spec: KernelSpec, variant: str, idx: str, name: str) -> str:
    d = dialect()
    one = getattr(d, "_variant", None)  # one entry point: a quarter of NVRTC's time
    if one is not None:
        return one(name, spec, variant, idx)
    return d.kernel(name, spec)


def kernel_source(
    spec: KernelSpec,
    variant: str,
    idx: str,
    mask: tuple[int, ...] = (),
    name: str = NAME,
    cap: int = 8,
) -> tuple[str, str]:
    """(CUDA C of one entry point, without prelude and library; its name)."""
    if variant not in VARIANTS:
        raise ValueError(f"cuda kernels: unknown variant {variant!r}; expected one of {VARIANTS}")
    if idx not in INDEX:
        raise ValueError(f"cuda kernels: unknown index width {idx!r}; expected i32 or i64")
    spec.validate()
    d = dialect()
    d.check(spec)
    if variant == "vec":
        if len(mask) != len(spec.inputs):
            raise ValueError(
                f"cuda kernels: the scalar mask has {len(mask)} entries for "
                f"{len(spec.inputs)} inputs"
            )
        body = vec_kernel(spec, idx, tuple(mask), name, cap)
    elif variant == "nd":
        if idx != "i32" or len(mask) != 1 or not 1 <= mask[0] <= ND_MAX:
            raise ValueError(
                f"cuda kernels: the nd variant takes 32-bit indices and (ndim,) with ndim "
                f"in 1..{ND_MAX}, got {idx!r} and {mask!r}"
            )
        body = nd_kernel(spec, mask[0], name)
    else:
        body = _dialect_variant(spec, variant, idx, name)
    return body, entry_name(variant, idx, name)


def module_source(
    spec: KernelSpec, variant: str, idx: str, mask: tuple[int, ...] = (), cap: int = 8
) -> tuple[str, str]:
    """(CUDA C source, entry point name) of a module holding one kernel."""
    body, entry = kernel_source(spec, variant, idx, mask, cap=cap)
    d = dialect()
    return "\n".join((d.prelude(), d.library(), _VEC_HELPER, body)), entry


def batch_source(keys: list[tuple]) -> tuple[str, list[str]]:
    """One module holding the kernels of ``keys`` ((spec, variant, idx, mask[, cap]) each):
    the library is parsed once for all of them. Returns the source and each key's entry name."""
    d = dialect()
    parts, names = [d.prelude(), d.library(), _VEC_HELPER], []
    for j, key in enumerate(keys):
        spec, variant, idx, mask = key[:4]
        cap = key[4] if len(key) > 4 and key[4] else 8
        body, entry = kernel_source(spec, variant, idx, mask, f"{NAME}{j}", cap)
        parts.append(body)
        names.append(entry)
    return "\n".join(parts), names
