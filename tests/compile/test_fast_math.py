"""``nv.compile(..., fast_math=True)`` changes only CUDA kernels: elsewhere the results stay
equal to the uncompiled ones bit for bit (GPU behaviour: tests/cuda/test_gpu_fast_math.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import nuvec as nv
from nuvec.backends.cuda import source
from nuvec.codegen.ir import KernelSpec, Node


def _gelu(x):
    return x * 0.5 * (1 + nv.erf(x * 0.70710678)) + nv.tanh(x) * nv.exp(-x * x)


@pytest.mark.usefixtures("cpu_device")
@pytest.mark.parametrize("dtype", [nv.float32, nv.bfloat16])
def test_fast_math_is_ignored_on_the_cpu(dtype):
    x = nv.array(np.linspace(-4, 4, 1001, dtype=np.float32)).astype(dtype)
    want = np.asarray(_gelu(x).astype(nv.float32))
    for f in (nv.compile(_gelu, fast_math=True), nv.compile(fast_math=True)(_gelu)):
        for _ in range(2):
            got = np.asarray(f(x).astype(nv.float32))
            np.testing.assert_array_equal(got, want)


BF16_CHAIN = KernelSpec(
    inputs=("bfloat16",),
    constants=(("bfloat16", 0x3F00),),
    nodes=(
        Node("exp", (("in", 0),), "bfloat16"),
        Node("multiply", (("node", 0), ("const", 0)), "bfloat16"),
        Node("tanh", (("node", 1),), "bfloat16"),
    ),
    outputs=(2,),
)


def test_fast_kernels_use_the_gpu_functions_and_round_only_when_storing():
    fast = dataclasses.replace(BF16_CHAIN, fast=True)
    assert fast != BF16_CHAIN and hash(fast) != hash(BF16_CHAIN)
    exact, _ = source.kernel_source(BF16_CHAIN, "vec", "i32", (0,))
    quick, _ = source.kernel_source(fast, "vec", "i32", (0,))
    assert "nv_round_bf16" in exact and "nv_exp_f32" in exact
    # a half-precision output: the GPU's approximate functions, no rounding between the ops,
    # one conversion where the result is stored
    assert "nv_round_bf16" not in quick and "__expf(" in quick
    assert "nv_fast_tanh_narrow(" in quick and "nv_fast_f32_to_bf16(" in quick
    # a float32 chain keeps libdevice's tanhf under fast_math
    f32 = dataclasses.replace(
        fast,
        inputs=("float32",),
        constants=(("float32", 0x3F000000),),
        nodes=tuple(dataclasses.replace(n, dtype="float32") for n in fast.nodes),
    )
    quick32, _ = source.kernel_source(f32, "vec", "i32", (0,))
    assert "tanhf(" in quick32 and "nv_fast_tanh_narrow(" not in quick32
    assert "--fmad=true" in source.nvrtc_options(True)
    assert "--fmad=false" in source.nvrtc_options(False)
