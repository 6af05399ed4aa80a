"""The CUDA kernel sources (pure Python: these run on every machine, GPU or not).

Where NVRTC can be loaded (CuPy, or the nvidia-cuda-nvrtc wheel) the sources are also
compiled for sm_90, which needs no GPU.
"""

from __future__ import annotations

import ctypes
import dataclasses
import glob
import os
import random
import re

import numpy as np
import pytest

from nuvec.codegen.ir import KernelSpec, Node
from nuvec.backends.cuda import source
from nuvec.codegen.dialects import cuda as cuda_dialect

F32 = KernelSpec.single("exp", ("float32",), "float32")
BF16_ADD = KernelSpec.single("add", ("bfloat16", "bfloat16"), "bfloat16")
BF16_ATAN2 = KernelSpec.single("arctan2", ("bfloat16", "bfloat16"), "bfloat16")
F64_LESS = KernelSpec.single("less", ("float64", "float64"), "bool")
SELECT = KernelSpec.single("select", ("bool", "float16", "float16"), "float16")
# exp(x) * 2 with both nodes as outputs (a fused group of two)
FUSED = KernelSpec(
    inputs=("float32",),
    constants=(("float32", 0x40000000),),
    nodes=(
        Node("exp", (("in", 0),), "float32"),
        Node("multiply", (("node", 0), ("const", 0)), "float32"),
    ),
    outputs=(0, 1),
)


def test_vec_width_is_32_bytes_of_the_widest_array_at_most_8_elements():
    assert source.vec_width(F32, (0,)) == 8
    assert source.vec_width(F32, (0,), cap=4) == 4
    assert source.vec_width(BF16_ADD, (0, 0)) == 8
    assert source.vec_width(F64_LESS, (0, 0)) == 4
    # a scalar input does not count: bf16 + scalar bf16 still moves 8 elements a thread
    assert source.vec_width(BF16_ADD, (0, 1)) == 8
    assert source.vec_width(KernelSpec.single("astype", ("float64",), "bfloat16"), (0,)) == 4
    # the arrays need the alignment of their vectors, 16 bytes at most
    assert source.vec_align(8, 4) == 16 and source.vec_align(8, 2) == 16
    assert source.vec_align(4, 8) == 16 and source.vec_align(2, 4) == 8


def test_vec_kernel_loads_vectors_and_hoists_scalars(monkeypatch):
    monkeypatch.setattr(source, "PACKED_BF16", False)  # element by element
    src, entry = source.module_source(BF16_ATAN2, "vec", "i32", (0, 1))
    assert entry == "nvk_vec_i32"
    m = re.search(r'extern "C" __global__ void nvk_vec_i32\(([^)]*)\)', src)
    assert m is not None
    assert m.group(1).startswith("int nvec, int n, const uint16_t *__restrict__ a0")
    body = src.split("nvk_vec_i32")[1]
    # the full input: one vector load, as 32-bit words of two bfloat16 each
    assert "nv_vec<uint32_t, 4> r0" in body
    assert "nv_bf16_lane(r0.v[j >> 1], j & 1)" in body
    assert "r1" not in body  # the scalar input: no vector
    assert "const float x1 = nv_bf16_to_f32(a1[0]);" in body
    # the sum is rounded to bfloat16 already: its high half is stored as it is
    assert "w0.v[j] = nv_bf16_bits(v0);" in body
    assert "o0[e] = nv_f32_to_bf16(v0);" in body  # the tail: the full conversion


def test_vec_kernel_computes_bfloat16_arithmetic_on_pairs():
    """bfloat16 +, -, *, abs, negative and extrema against a constant (word nodes) compute two
    elements in one 32-bit word; the other nodes twice, on the words' halves; a pair of rounded
    results becomes a word by one packed rounding."""
    src, _ = source.module_source(BF16_ADD, "vec", "i32", (0, 1))
    body = src.split("nvk_vec_i32")[1]
    assert "const uint32_t px1 = (uint32_t)a1[0] * 0x10001u;" in body  # the scalar, twice
    assert "for (int j = 0; j < 4; j++)" in body  # four pairs of the eight elements
    assert "const uint32_t p0 = nv_bf16x2_add(px0, px1);" in body
    assert "w0.v[j] = p0;" in body and "nv_vec<uint32_t, 4> w0;" in body
    assert "o0[e] = nv_f32_to_bf16(v0);" in body  # the tail: one element as before
    # x * 1.5 + 0.25 -> tanh -> * x -> -|.|: tanh on the halves, the rest on words
    consts = (("bfloat16", 0x3FC0), ("bfloat16", 0x3E80))
    nodes = (
        Node("multiply", (("in", 0), ("const", 0)), "bfloat16"),
        Node("add", (("node", 0), ("const", 1)), "bfloat16"),
        Node("tanh", (("node", 1),), "bfloat16"),
        Node("multiply", (("node", 2), ("in", 0)), "bfloat16"),
        Node("abs", (("node", 3),), "bfloat16"),
        Node("negative", (("node", 4),), "bfloat16"),
    )
    spec = KernelSpec(("bfloat16",), consts, nodes, (5,))
    body = source.module_source(spec, "vec", "i32", (0,))[0].split("nvk_vec_i32")[1]
    assert "const uint32_t p0 = nv_bf16x2_mul(px0, 0x3fc03fc0u);" in body
    assert "const uint32_t p1 = nv_bf16x2_add(p0, 0x3e803e80u);" in body
    assert "const float u2_1 = nv_tanh_bf16(v1_1);" in body  # see _ROUNDED_BF16
    assert "const float v1_1 = nv_bf16_lane(p1, 1);" in body
    assert "const uint32_t p2 = nv_bf16x2_rn(u2_0, u2_1);" in body  # rounded once, packed
    assert "nv_round_bf16(u2" not in body  # the rounded halves are not needed
    assert "const uint32_t p5 = (p4 ^ 0x80008000u);" in body
    assert "w0.v[j] = p5;" in body


@pytest.mark.parametrize(
    ("op", "const", "word"),
    [
        ("maximum", 0x3F80, True),
        ("minimum", 0xBF80, True),
        ("maximum", 0x0000, False),  # nv_maximum_f32(-0, +0) is +0, the packed one's may not be
        ("minimum", 0x8000, False),
        ("maximum", 0x7FC0, False),  # NaN
        ("multiply", 0x0000, True),
    ],
)
def test_extrema_take_the_packed_instruction_against_a_plain_constant(op, const, word):
    spec = KernelSpec(
        ("bfloat16",),
        (("bfloat16", const),),
        (Node(op, (("in", 0), ("const", 0)), "bfloat16"),),
        (0,),
    )
    assert (source._word_nodes(spec) == {0}) == word


def test_word_nodes_are_bfloat16_ops_of_bfloat16_values_only():
    f32 = KernelSpec.single("add", ("float32", "float32"), "float32")
    assert source._word_nodes(f32) == set()
    assert source._word_nodes(dataclasses.replace(BF16_ADD, fast=True)) == set()
    mixed = KernelSpec(
        ("bfloat16", "float32"),
        (),
        (
            Node("astype", (("in", 0),), "float32"),
            Node("add", (("node", 0), ("in", 1)), "float32"),
            Node("astype", (("node", 1),), "bfloat16"),
            Node("multiply", (("node", 2), ("in", 0)), "bfloat16"),
        ),
        (3,),
    )
    assert source._word_nodes(mixed) == {3}
    body = source.module_source(mixed, "vec", "i32", (0, 0))[0].split("nvk_vec_i32")[1]
    # the float32 input, element by element; the rounded sum packed for the product
    assert "const float x1_1 = r1.v[2 * j + 1];" in body
    assert "const uint32_t p2 = nv_bf16x2_rn(u2_0, u2_1);" in body
    assert "const uint32_t p3 = nv_bf16x2_mul(p2, px0);" in body


def test_vec_kernel_packs_rounded_float16_results():
    spec = KernelSpec.single("exp", ("float16",), "float16")
    body = source.module_source(spec, "vec", "i32", (0,))[0].split("nvk_vec_i32")[1]
    assert "nv_fast_pack_f16(s0[2 * j], s0[2 * j + 1])" in body
    # a value passed through from an input keeps the full conversion (its NaN payload)
    spec = KernelSpec.single("abs", ("float16",), "float16")
    body = source.module_source(spec, "vec", "i32", (0,))[0].split("nvk_vec_i32")[1]
    assert "w0.v[j] = nv_f32_to_f16(v0);" in body


def test_vec_kernel_converts_stored_values_that_may_be_signaling_nans():
    """Only values whose high half is what nv_f32_to_bf16 gives are stored as bits: a rounded
    result and what maximum, abs, ... pass through of such values and constants; an input
    passed through may be a signaling NaN, which the store quietens."""

    def store(nodes, constants=()):
        spec = KernelSpec(("bfloat16",), tuple(constants), tuple(nodes), (len(nodes) - 1,))
        src, _ = source.module_source(spec, "vec", "i32", (0,))
        return re.search(r"w0\.v\[j\] = (?:\(uint32_t\))?(\w+)", src).group(1)

    one = ("bfloat16", 0x3F80)
    exp = Node("exp", (("in", 0),), "bfloat16")
    relu = Node("maximum", (("node", 0), ("const", 0)), "bfloat16")
    assert store([exp]) == "p0"  # a rounded result: packed, two at a time
    assert store([exp, relu], [("bfloat16", 0)]) == "nv_bf16_bits"
    assert store([Node("maximum", (("in", 0), ("const", 0)), "bfloat16")], [("bfloat16", 0)]) == (
        "nv_f32_to_bf16"
    )
    snan = ("bfloat16", 0x7F81)
    assert store([exp, relu], [snan]) == "nv_f32_to_bf16"
    # words: a packed operation's result is quiet (p1); abs of an input is stored through the
    # conversion of each half, abs of a rounded value as its word
    assert store([exp, relu], [one]) == "p1"
    assert store([Node("maximum", (("in", 0), ("const", 0)), "bfloat16")], [one]) == "p0"
    assert store([exp, Node("abs", (("node", 0),), "bfloat16")]) == "p1"
    assert store([Node("abs", (("in", 0),), "bfloat16")]) == "nv_f32_to_bf16"


def _keys(spec) -> list:
    """Every (spec, variant, index width, mask) the kernels module may build for ``spec``
    (the nd variant: 32-bit indices, one key per number of axes)."""
    keys = []
    for v in source.VARIANTS:
        for i in source.INDEX:
            if v == "nd":
                if i == "i32":
                    keys += [(spec, v, i, (k,)) for k in range(1, source.ND_MAX + 1)]
            else:
                keys.append((spec, v, i, (0,) * len(spec.inputs) if v == "vec" else ()))
    return keys


def test_index_width_and_variants_name_their_entry_points():
    for variant in source.VARIANTS:
        for idx, ctype in source.INDEX.items():
            if variant == "nd" and idx == "i64":
                continue
            mask = (0,) if variant == "vec" else ((3,) if variant == "nd" else ())
            src, entry = source.module_source(F32, variant, idx, mask)
            assert entry == f"nvk_{variant}_{idx}"
            assert f"void {entry}({ctype} " in src
            assert src.count('extern "C" __global__') == 1


def test_fused_spec_writes_every_output():
    src, entry = source.module_source(FUSED, "vec", "i64", (0,))
    assert "long long nvec, long long n" in src
    assert "float *__restrict__ o0" in src and "float *__restrict__ o1" in src
    assert "w1.v[j] = v1;" in src


def test_batch_source_names_each_kernel_once():
    keys = [
        (F32, "vec", "i32", (0,)),
        (BF16_ADD, "strided", "i64", ()),
        (SELECT, "scalar", "i32", ()),
    ]
    src, names = source.batch_source(keys)
    assert names == ["nvk0_vec_i32", "nvk1_strided_i64", "nvk2_scalar_i32"]
    for n in names:
        assert src.count(f"void {n}(") == 1
    assert src.count("struct __align__") == 1


def test_bad_requests_name_the_problem():
    with pytest.raises(ValueError, match="unknown variant"):
        source.module_source(F32, "tiled", "i32")
    with pytest.raises(ValueError, match="index width"):
        source.module_source(F32, "vec", "i16", (0,))
    with pytest.raises(ValueError, match="scalar mask"):
        source.module_source(BF16_ADD, "vec", "i32", (0,))


def test_divisor_gives_the_quotient_by_multiply_high_and_shift():
    rng = random.Random(5)
    divisors = list(range(1, 300)) + [2**k + e for k in range(9, 31) for e in (-1, 0, 1)]
    divisors += [rng.randrange(1, 2**31) for _ in range(300)]
    for d in divisors:
        if d >= 2**31:
            continue
        m, ln = source.divisor(d)
        assert 0 <= m < 2**32 and 0 <= ln <= 31
        ns = [0, 1, d - 1, d, d + 1, 2 * d - 1, 2**31 - 1, 2**31 - 2, (2**31 - 1) // d * d]
        ns += [rng.randrange(0, 2**31) for _ in range(200)]
        for n in ns:
            if 0 <= n < 2**31:
                assert ((n * m >> 32) + n) >> ln == n // d, (n, d)
    with pytest.raises(ValueError, match="divisor"):
        source.divisor(0)


def test_nd_kernel_takes_its_layout_as_arguments():
    src, entry = source.module_source(FUSED, "nd", "i32", (3,))
    assert entry == "nvk_nd_i32"
    m = re.search(r"void nvk_nd_i32\(([^)]*)\)", src)
    assert m is not None
    params = [p.strip() for p in m.group(1).split(",")]
    # n, 2 sizes, 2 multipliers, 2 shifts, 3 strides for each of 3 arrays, then the arrays
    assert params[:7] == ["int n", "int d1", "int d2", "unsigned m1", "unsigned m2"] + [
        "int l1",
        "int l2",
    ]
    assert params[7:16] == [f"int s{a}_{k}" for a in range(3) for k in range(3)]
    assert params[16:] == [
        "const float *__restrict__ a0",
        "float *__restrict__ o0",
        "float *__restrict__ o1",
    ]
    assert src.count("__umulhi") == 2 and "meta" not in src.split("nvk_nd_i32")[1]
    with pytest.raises(ValueError, match="nd variant"):
        source.module_source(FUSED, "nd", "i64", (3,))
    with pytest.raises(ValueError, match="nd variant"):
        source.module_source(FUSED, "nd", "i32", (source.ND_MAX + 1,))


def test_options_forbid_contraction():
    opts = source.nvrtc_options()
    assert "--fmad=false" in opts
    assert not any("fast" in o for o in opts)


def _nvrtc():
    """libnvrtc from CuPy's or NVIDIA's wheels, or the system's, if any."""
    pats = []
    for mod in ("nvidia", "cupy"):
        try:
            m = __import__(mod)
            for p in getattr(m, "__path__", []):
                pats.append(os.path.join(p, "**", "libnvrtc.so*"))
        except ImportError:
            pass
    pats += ["/usr/local/cuda*/lib64/libnvrtc.so*", "/usr/lib/x86_64-linux-gnu/libnvrtc.so*"]
    for pat in pats:
        for path in sorted(glob.glob(pat, recursive=True)):
            if "builtins" in path or "alt" in path:
                continue
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    return None


NVRTC = _nvrtc()


# gelu in bfloat16 with fast math: the half-precision fast functions and the packed stores
GELU_BF16_FAST = KernelSpec(
    inputs=("bfloat16",),
    constants=(("bfloat16", 0x3F35), ("bfloat16", 0x3F80)),
    nodes=(
        Node("multiply", (("in", 0), ("const", 0)), "bfloat16"),
        Node("erf", (("node", 0),), "bfloat16"),
        Node("add", (("node", 1), ("const", 1)), "bfloat16"),
        Node("tanh", (("node", 2),), "bfloat16"),
        Node("multiply", (("in", 0), ("node", 3)), "bfloat16"),
    ),
    outputs=(4,),
    fast=True,
)


def test_fast_half_precision_nodes_use_their_own_functions():
    src, _ = source.module_source(GELU_BF16_FAST, "vec", "i32", (0,))
    body = src.split("nvk_vec_i32")[1]
    assert "nv_fast_erf_narrow(v0)" in body and "nv_fast_tanh_narrow(v2)" in body
    assert "nv_fast_pack_bf16(s0[2 * j], s0[2 * j + 1])" in body  # two outputs a conversion
    assert "o0[e] = nv_fast_f32_to_bf16(v4);" in body  # the tail: the same conversion
    # float32 nodes keep the float32 fast functions; each half-precision one is defined
    f32 = dataclasses.replace(KernelSpec.single("tanh", ("float32",), "float32"), fast=True)
    assert "tanhf(x0)" in source.module_source(f32, "vec", "i32", (0,))[0]
    for key, fn in cuda_dialect.FAST_FUNCTIONS.items():
        if isinstance(key, tuple):
            assert f"NV_FN float {fn}(float x)" in src, key


@pytest.mark.skipif(NVRTC is None, reason="NVRTC is not installed here (CuPy or nvidia-cuda-nvrtc)")
@pytest.mark.parametrize(
    "spec",
    [F32, BF16_ADD, F64_LESS, SELECT, FUSED, dataclasses.replace(FUSED, fast=True), GELU_BF16_FAST],
    ids=["exp_f32", "add_bf16", "less_f64", "select_f16", "fused", "fused_fast", "bf16_fast"],
)
def test_sources_compile_with_nvrtc(spec):
    _compile_all_variants(spec)


def _ptx(src: str, fast: bool = False) -> bytes:
    """The PTX of ``src`` for sm_90 with nuvec's NVRTC options (asserts that NVRTC accepts
    it, with its log as the message)."""
    prog = ctypes.c_void_p()
    assert NVRTC.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"k.cu", 0, None, None) == 0
    opts = [o.encode() for o in source.nvrtc_options(fast)] + [b"--gpu-architecture=compute_90"]
    rc = NVRTC.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    n = ctypes.c_size_t()
    NVRTC.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    NVRTC.nvrtcGetProgramLog(prog, log)
    ptx = b""
    if rc == 0:
        NVRTC.nvrtcGetPTXSize(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        NVRTC.nvrtcGetPTX(prog, buf)
        ptx = buf.value
    NVRTC.nvrtcDestroyProgram(ctypes.byref(prog))
    assert rc == 0, log.value.decode(errors="replace")[-3000:]
    return ptx


def _compile_all_variants(spec) -> bytes:
    """The PTX of every variant of ``spec`` in one module (asserts that NVRTC accepts it)."""
    src, names = source.batch_source(_keys(spec))
    ptx = _ptx(src, spec.fast)
    for name in names:
        assert f".entry {name}(".encode() in ptx
    return ptx


MUL_ADD = KernelSpec(
    inputs=("float32",) * 3,
    constants=(),
    nodes=(
        Node("multiply", (("in", 0), ("in", 1)), "float32"),
        Node("add", (("node", 0), ("in", 2)), "float32"),
    ),
    outputs=(1,),
)


@pytest.mark.skipif(NVRTC is None, reason="NVRTC is not installed here (CuPy or nvidia-cuda-nvrtc)")
def test_no_contraction_of_multiply_then_add():
    ptx = _compile_all_variants(MUL_ADD)
    assert b"mul.rn.f32" in ptx and b"add.rn.f32" in ptx
    assert b"fma.rn.f32" not in ptx  # a * b + c stays two roundings, as on the CPU


GROUP = ((FUSED, (0,)), (BF16_ADD, (1, 0)), (SELECT, (0, 0, 1)))


def _thread_code(src: str) -> str:
    """A ``vec`` kernel's code for one thread: from its vector branch to its last brace."""
    return src[src.index("    if (t < nvec) {") : src.rindex("}")]


def test_a_group_kernel_runs_each_members_vec_code_over_its_own_blocks():
    src = source.group_kernel(GROUP)
    for j, (spec, mask) in enumerate(GROUP):
        assert _thread_code(source.vec_kernel(spec, "i32", mask)) in src  # the same text
        first = "0" if j == 0 else f"b{j}"
        assert f"nvk_part{j}((blk - {first}) * (int)blockDim.x + (int)threadIdx.x" in src
    entry = src[src.index('extern "C"') :]
    assert entry.startswith('extern "C" __global__ void nvk_group_i32(int b1, int b2, int m0_nvec')
    assert "if (blk < b1)" in entry and "if (blk < b2)" in entry and "b3" not in entry


@pytest.mark.skipif(NVRTC is None, reason="NVRTC is not installed here (CuPy or nvidia-cuda-nvrtc)")
def test_a_group_kernel_compiles_with_nvrtc():
    src, entry = source.group_source(GROUP)
    assert f".entry {entry}(".encode() in _ptx(src)


def _bf16_of_fraction(q) -> int:
    """The bfloat16 bits of the exact value ``q`` (a Fraction) rounded once, to nearest even
    (an exact zero is +0, as x - x is in IEEE 754's rounding to nearest)."""
    from fractions import Fraction

    sign = 0x8000 if q < 0 else 0
    q = abs(q)
    if q == 0:
        return sign
    e = max(q.numerator.bit_length() - q.denominator.bit_length(), -126)
    while Fraction(2) ** e > q:
        e -= 1
    while Fraction(2) ** (e + 1) <= q:
        e += 1
    e = max(e, -126)
    ulp = Fraction(2) ** (e - 7)
    m = round(q / ulp)  # Python rounds a Fraction half to even
    v = m * ulp
    if v >= Fraction(2) ** 128:
        return sign | 0x7F80
    v32 = np.array([float(v)], np.float32)  # exact: 8 bits within float32's range
    return sign | int(v32.view(np.uint32)[0] >> 16)


def test_float32_then_bfloat16_rounding_is_the_exact_result_rounded_once():
    """The word nodes' premise on the CPU: nuvec's bfloat16 +, -, * (float32, then rounded)
    equal the exact result rounded once to bfloat16, checked with exact rational arithmetic on
    pairs of values chosen to stress it: subnormals, the largest values, operands whose exponents
    differ by up to 40 (long exact sums), every sign."""
    from fractions import Fraction

    import ml_dtypes

    import nuvec as nv

    rng = np.random.default_rng(23)
    bits = [0x0001, 0x007F, 0x0080, 0x00FF, 0x3F80, 0x3F81, 0x3FFF, 0x7F7F, 0x7F00, 0x0100]
    bits += list(rng.integers(0x0001, 0x7F80, 40))  # anywhere in the finite range
    exps = rng.integers(100, 150, 60)  # near one another: long exact sums and differences
    bits += list((exps << 7) | rng.integers(0, 128, 60))
    bits += [b | 0x8000 for b in bits]
    a_bits = np.repeat(np.array(bits, np.uint16), len(bits))
    b_bits = np.tile(np.array(bits, np.uint16), len(bits))
    bf16 = np.dtype(ml_dtypes.bfloat16)
    a, b = a_bits.view(bf16), b_bits.view(bf16)

    def exact(x) -> Fraction:
        return Fraction(float(np.array([x], np.uint32).view(np.float32)[0]))

    fa = [exact(int(x) << 16) for x in a_bits]
    fb = [exact(int(x) << 16) for x in b_bits]
    with nv.stream(nv.cpu):
        for op, f in (
            ("add", Fraction.__add__),
            ("subtract", Fraction.__sub__),
            ("multiply", Fraction.__mul__),
        ):
            got = np.asarray(getattr(nv, op)(nv.array(a), nv.array(b))).view(np.uint16)
            want = [_bf16_of_fraction(f(x, y)) for x, y in zip(fa, fb)]
            assert [int(g) for g in got] == want, op


def random_bf16_spec(seed: int) -> KernelSpec:
    """A random fused spec of bfloat16 values: word nodes (+, -, *, abs, negative, square,
    extrema against constants, zeros and NaN among them), functions (exp, tanh, sigmoid, erf),
    compares and selects, a trip through float32, one to three outputs."""
    rnd = random.Random(seed)
    inputs = tuple(rnd.choice(["bfloat16"] * 3 + ["float32"]) for _ in range(rnd.randint(1, 3)))
    constants: list[tuple[str, int]] = []
    nodes: list[Node] = []
    bf16 = [("in", i) for i, d in enumerate(inputs) if d == "bfloat16"]
    if not bf16:
        nodes.append(Node("astype", (("in", 0),), "bfloat16"))
        bf16.append(("node", 0))

    def const() -> tuple[str, int]:
        constants.append(("bfloat16", rnd.choice([0x0000, 0x8000, 0x7FC0, 0x3F80, 0xC040, 0x0001])))
        return ("const", len(constants) - 1)

    def arg() -> tuple[str, int]:
        return const() if rnd.random() < 0.25 else rnd.choice(bf16)

    for _ in range(rnd.randint(3, 10)):
        op = rnd.choice(
            ["add", "subtract", "multiply", "maximum", "minimum", "abs", "negative", "square"]
            + ["exp", "tanh", "sigmoid", "erf", "select", "float32"]
        )
        if op == "select":
            nodes.append(Node("less", (arg(), arg()), "bool"))
            nodes.append(Node("select", (("node", len(nodes) - 1), arg(), arg()), "bfloat16"))
        elif op == "float32":
            nodes.append(Node("astype", (rnd.choice(bf16),), "float32"))
            nodes.append(Node("multiply", (("node", len(nodes) - 1),) * 2, "float32"))
            nodes.append(Node("astype", (("node", len(nodes) - 1),), "bfloat16"))
        elif op in ("abs", "negative", "square", "exp", "tanh", "sigmoid", "erf"):
            nodes.append(Node(op, (rnd.choice(bf16),), "bfloat16"))
        else:
            nodes.append(Node(op, (rnd.choice(bf16), arg()), "bfloat16"))
        bf16.append(("node", len(nodes) - 1))
    outs = sorted({i for kind, i in rnd.sample(bf16, min(3, len(bf16))) if kind == "node"})
    outs = outs or [len(nodes) - 1]
    if nodes[-1].dtype == "bfloat16" and rnd.random() < 0.3:
        nodes.append(Node("astype", (("node", len(nodes) - 1),), "float32"))
        outs.append(len(nodes) - 1)
    return KernelSpec(inputs, tuple(constants), tuple(nodes), tuple(outs))


BF16_RANDOM = [random_bf16_spec(s) for s in range(40)]


@pytest.mark.skipif(NVRTC is None, reason="NVRTC is not installed here (CuPy or nvidia-cuda-nvrtc)")
def test_random_bfloat16_vec_kernels_compile_with_nvrtc():
    keys = []
    for spec in BF16_RANDOM:
        spec.validate()
        keys.append((spec, "vec", "i32", (0,) * len(spec.inputs)))
        keys.append((spec, "vec", "i32", (1,) + (0,) * (len(spec.inputs) - 1)))
    assert sum(bool(source._word_nodes(s)) for s in BF16_RANDOM) > 30
    src, names = source.batch_source(keys)
    ptx = _ptx(src)
    assert all(f".entry {name}(".encode() in ptx for name in names)


def _chain(*nodes, consts=(), outputs=None, inputs=("float32",)) -> KernelSpec:
    """A float32 spec of ``nodes`` ((op, args) each; args as in Node) over ``consts``
    (float32 values), the last node its output unless ``outputs`` says."""
    bits = [int(np.array([c], np.float32).view(np.uint32)[0]) for c in consts]
    return KernelSpec(
        inputs=inputs,
        constants=tuple(("float32", b) for b in bits),
        nodes=tuple(Node(op, args, "float32") for op, args in nodes),
        outputs=outputs or (len(nodes) - 1,),
    )


def _forms(spec) -> dict[int, str]:
    """{node: the function the CUDA body calls in its place} (cuda_dialect.nan_forms)."""
    b = source.dialect().body(spec)
    return {j: b.lines[j].split(" = ", 1)[1].split("(")[0] for j in range(len(spec.nodes))}


X, N0, N1, K0, K1 = ("in", 0), ("node", 0), ("node", 1), ("const", 0), ("const", 1)


def test_functions_read_only_by_arithmetic_leave_out_their_nan_select():
    # max(exp(-|tanh(x * 1.5 + 0.25) * x - 0.5|) * 3, 0.1), the benchmark's 10op
    ten = _chain(
        ("multiply", (X, K0)),
        ("add", (N0, K1)),
        ("tanh", (N1,)),
        ("multiply", (("node", 2), X)),
        ("subtract", (("node", 3), ("const", 2))),
        ("abs", (("node", 4),)),
        ("negative", (("node", 5),)),
        ("exp", (("node", 6),)),
        ("multiply", (("node", 7), ("const", 3))),
        ("maximum", (("node", 8), ("const", 4))),
        consts=(1.5, 0.25, 0.5, 3.0, 0.1),
    )
    forms = _forms(ten)
    assert forms[2] == "nv_tanh_value" and forms[7] == "nv_exp_nonpos"
    assert forms[9] == "nv_fmax_nan"
    # read by arithmetic: sigmoid(x) * x, 1 + erf(x) (an input's NaN may have any payload)
    assert _forms(_chain(("sigmoid", (X,)), ("multiply", (N0, X))))[0] == "nv_sigmoid_value"
    assert _forms(_chain(("erf", (X,)), ("add", (N0, K0)), consts=(1.0,)))[0] == "nv_erf_value"
    # of an arithmetic result, whose NaN is the canonical one: an output too
    assert _forms(_chain(("multiply", (X, X)), ("exp", (N0,))))[1] == "nv_exp_value"


def test_nan_selects_stay_where_a_nan_could_reach_the_result_otherwise():
    # an output, of an input (whose NaN the select returns with its payload)
    assert _forms(_chain(("tanh", (X,)), ("multiply", (N0, X)), outputs=(0, 1)))[0] == (
        "nv_tanh_f32"
    )
    # read by a function (which returns its own argument for a NaN), or by a compare
    assert _forms(_chain(("tanh", (X,)), ("exp", (N0,))))[0] == "nv_tanh_f32"
    spec = KernelSpec(
        ("float32",),
        (("float32", 0),),
        (Node("tanh", (X,), "float32"), Node("less", (N0, K0), "bool")),
        (1,),
    )
    assert _forms(spec)[0] == "nv_tanh_f32"
    # arithmetic that the compiler may fold to its operand: x * 1, x - 0, -0 - x, x * -1
    for op, c, first in (("multiply", 1.0, 0), ("subtract", 0.0, 0), ("subtract", -0.0, 1)):
        args = (K0, N0) if first else (N0, K0)
        assert _forms(_chain(("sigmoid", (X,)), (op, args), consts=(c,)))[0] == "nv_sigmoid_f32"
    assert _forms(_chain(("multiply", (X, K0)), ("tanh", (N0,)), consts=(-1.0,)))[1] == (
        "nv_tanh_f32"
    )
    # a maximum of an input, or against 0 (the order of +0 and -0) or NaN
    assert _forms(_chain(("maximum", (X, K0)), consts=(0.5,)))[0] == "nv_maximum_f32"
    for c in (0.0, -0.0, float("nan")):
        got = _forms(_chain(("multiply", (X, X)), ("minimum", (N0, K0)), consts=(c,)))
        assert got[1] == "nv_minimum_f32"
    # fast math keeps its own functions
    fast = dataclasses.replace(_chain(("tanh", (X,)), ("multiply", (N0, X))), fast=True)
    assert "value" not in _forms(fast)[0]


@pytest.mark.skipif(NVRTC is None, reason="NVRTC is not installed here (CuPy or nvidia-cuda-nvrtc)")
def test_shortened_forms_compile_in_every_variant():
    spec = _chain(
        ("multiply", (X, K0)),
        ("erf", (N0,)),
        ("add", (N1, K0)),
        ("minimum", (("node", 2), K1)),
        consts=(0.75, -0.25),
    )
    assert set(_forms(spec).values()) >= {"nv_erf_value", "nv_fmin_nan"}
    _compile_all_variants(spec)


@pytest.mark.skipif(NVRTC is None, reason="NVRTC is not installed here (CuPy or nvidia-cuda-nvrtc)")
def test_a_32_byte_vector_is_two_16_byte_loads():
    src, _ = source.module_source(F32, "vec", "i32", (0,))
    ptx = _ptx(src)
    assert ptx.count(b"ld.global.nc.v4.f32") + ptx.count(b"ld.global.nc.v4.u32") == 2
    assert ptx.count(b"st.global.v4.f32") + ptx.count(b"st.global.v4.u32") == 2
