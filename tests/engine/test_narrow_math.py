"""The math library's variants that the GPU's kernels call for a result they round to bfloat16
(``nuvec.backends.cuda.source._ROUNDED_BF16``) or that only arithmetic reads
(``nuvec.codegen.dialects.cuda.nan_forms``), checked on the CPU over every bfloat16 input: built
from the same C as the CPU's kernels, where they compute what the GPU computes (IEEE operations
only; nv_div_normal's quotient is correctly rounded on both within its domain, nv_math.h). A NaN
input gives a NaN on the GPU (its clamps keep it) and the canonical NaN once rounded, which the
GPU tests check (tests/cuda/test_gpu_bf16_words.py); here NaN inputs are left out.
nv_tanh_bf16's quotient is one of the floats around the exact one (nv_div_faithful, whose
reciprocal depends on the GPU's estimate): each is checked.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from nuvec.backends.cpu import jit
from nuvec.codegen import generate
from nuvec.codegen.ir import KernelSpec

# (function the generator calls, the variant, whether the variant keeps the float32 bits)
PAIRS = [
    ("nv_exp_f32(x)", "nv_exp_value(x)", True),
    ("nv_exp_negabs_f32(-fabsf(x))", "nv_exp_nonpos(-fabsf(x))", True),
    ("nv_sigmoid_f32(x)", "nv_sigmoid_value(x)", True),
    ("nv_tanh_f32(x)", "nv_tanh_value(x)", True),
    ("nv_erf_f32(x)", "nv_erf_value(x)", True),
    # the same bits once rounded to bfloat16
    ("nv_tanh_f32(x)", "nv_tanh_bf16(x)", False),
    ("nv_exp_negabs_f32(-fabsf(x))", "nv_exp_nonpos_bf16(-fabsf(x))", False),
    ("nv_sigmoid_f32(x)", "nv_sigmoid_bf16(x)", False),
    ("nv_erf_f32(x)", "nv_erf_bf16(x)", False),
]


@pytest.fixture(scope="module", params=[0, -1, 1], ids=["nearest", "below", "above"])
def probe(request, tmp_path_factory):
    """A library of the C dialect's math plus ``probe(x, out, n)``: each pair's two values;
    nv_div_faithful's reciprocal the float nearest to 1/b, or the one below or above it (what
    the GPU's Newton step may give: nv_math.h)."""
    lines = [
        f"out[{2 * k} * n + i] = {ref}; out[{2 * k + 1} * n + i] = {var};"
        for k, (ref, var, _) in enumerate(PAIRS)
    ]
    src = generate(KernelSpec.single("exp", ("float32",), "float32"))
    if request.param:
        src = f"#define NV_DIV_FAITHFUL_TEST {request.param}\n" + src
    src += (
        "\nNV_EXPORT void probe(const float *xs, float *out, int64_t n)\n{\n"
        "    for (int64_t i = 0; i < n; i++) {\n        const float x = xs[i];\n"
        + "\n".join("        " + ln for ln in lines)
        + "\n    }\n}\n"
    )
    path = tmp_path_factory.mktemp("narrow") / f"probe{request.param}.so"
    jit.compile_shared(src, path)
    lib = ctypes.CDLL(str(path))
    lib.probe.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    return lib


def _round_bf16(v: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, to nearest even (finite and infinite values)."""
    u = v.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


@pytest.mark.parametrize("k", range(len(PAIRS)), ids=[var for _, var, _ in PAIRS])
def test_variants_round_as_the_function_for_every_bfloat16(probe, k):
    x = (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32)
    x = np.ascontiguousarray(x[~np.isnan(x)])
    out = np.empty((2 * len(PAIRS), len(x)), np.float32)
    probe.probe(x.ctypes.data, out.ctypes.data, len(x))
    ref, var = out[2 * k], out[2 * k + 1]
    assert not np.isnan(ref).any()
    assert (_round_bf16(ref) == _round_bf16(var)).all()
    same_bits = bool((ref.view(np.uint32) == var.view(np.uint32)).all())
    # the variants that leave out steps do change float32 bits: the rounding is what hides it
    assert same_bits == PAIRS[k][2]


@pytest.mark.parametrize("narrow", [0, 1], ids=["exp", "exp_bf16"])
def test_the_halved_exp_polynomial_is_the_polynomial_halved(tmp_path, narrow):
    """nv_exp_poly_half(r) = nv_exp_poly(2 r) / 2 bit for bit (tanh's steps; narrow: of
    nv_exp_poly_bf16), over every 64th float32 bit pattern of [-0.36, 0.36] (the reduced
    argument's range, subnormals among them) and the ends of every binade: the generated
    halved coefficients (nv_poly_exp_half, nv_poly_exp_bf16_half) must be the polynomial's."""
    poly = "nv_exp_poly_bf16" if narrow else "nv_exp_poly"
    src = generate(KernelSpec.single("exp", ("float32",), "float32"))
    src += (
        "\nNV_EXPORT void halves(const float *r, float *out, int64_t n)\n{\n"
        "    for (int64_t i = 0; i < n; i++) {\n"
        f"        out[2 * i] = 0.5f * {poly}(2.0f * r[i]);\n"
        f"        out[2 * i + 1] = nv_exp_poly_half(r[i], {narrow});\n    }}\n}}\n"
    )
    path = tmp_path / "halves.so"
    jit.compile_shared(src, path)
    lib = ctypes.CDLL(str(path))
    lib.halves.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    top = int(np.array([0.36], np.float32).view(np.uint32)[0])
    bits = np.concatenate([np.arange(0, top, 64, dtype=np.uint32), (np.arange(0, 128) << 23)])
    bits = bits[bits <= top]
    r = np.concatenate([bits, bits | 0x80000000]).view(np.float32)
    out = np.empty((len(r), 2), np.float32)
    lib.halves(r.ctypes.data, out.ctypes.data, len(r))
    assert (out[:, 0].view(np.uint32) == out[:, 1].view(np.uint32)).all()
