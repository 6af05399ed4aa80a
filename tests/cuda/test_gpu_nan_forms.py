"""Fused float32 chains whose functions the CUDA kernels take without their NaN select, and
whose extrema against a constant are one min.NaN / max.NaN (``cuda.nan_forms``): the same bits
as the unfused operations on the GPU, NaNs and their payloads included, and as the CPU (any
NaN equal to any NaN, as everywhere between the devices).

The claim behind them: the GPU's float32 arithmetic returns the canonical NaN for any NaN
operand, so where only arithmetic reads a function's value, or its argument's NaN is that
canonical one, the function may give any NaN. ``benchmarks/gpu/trig_sweep.py chain:10op``
and the like check every float32 input.
"""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv
from devices import cuda_only

pytestmark = cuda_only

CHAINS = {
    "10op": lambda x: nv.maximum(nv.exp(-nv.abs(nv.tanh(x * 1.5 + 0.25) * x - 0.5)) * 3, 0.1),
    "gelu": lambda x: x * 0.5 * (1 + nv.erf(x * 0.70710678)),
    "gelu_tanh": lambda x: 0.5 * x * (1 + nv.tanh(0.79788456 * (x + 0.044715 * x * x * x))),
    "swish": lambda x: x * nv.sigmoid(x),
    "of_arithmetic": lambda x: nv.exp(x * 0.5) + nv.tanh(x - 1.5),
    "extrema": lambda x: nv.minimum(nv.maximum(nv.sigmoid(x) * x, -0.125), 2.5) * nv.erf(x),
}

# NaNs of both signs with payloads, signaling ones, and the values around every function's
# range splits and clamps
SPECIAL = np.array(
    [0x7FC00000, 0xFFC00000, 0x7FC12345, 0xFFC54321, 0x7F800001, 0xFF800001, 0x7FFFFFFF]
    + [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x00000001, 0x807FFFFF, 0x7F7FFFFF],
    np.uint32,
).view(np.float32)
SPLITS = np.array([0.921875, 3.92, 9.5, 0.3466, -104.0, 89.0, 88.7, -87.3], np.float32)


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(23)
    near = np.concatenate([SPLITS, -SPLITS])
    near = np.concatenate([np.nextafter(near, np.inf), near, np.nextafter(near, -np.inf)])
    bits = rng.integers(0, 1 << 32, 1 << 16, dtype=np.uint64).astype(np.uint32)
    values = (rng.standard_normal(1 << 16) * 4).astype(np.float32)
    return np.concatenate([SPECIAL, near.astype(np.float32), bits.view(np.float32), values])


@pytest.mark.parametrize("name", list(CHAINS))
def test_fused_chains_give_the_unfused_bits_nans_included(name):
    x = _inputs()
    fn = CHAINS[name]
    with nv.stream(nv.gpu):
        fused = np.asarray(nv.compile(fn)(nv.array(x)))
        unfused = np.asarray(fn(nv.array(x)))
    with nv.stream(nv.cpu):
        cpu = np.asarray(nv.compile(fn)(nv.array(x)))
    bad = np.flatnonzero(fused.view(np.uint32) != unfused.view(np.uint32))
    assert bad.size == 0, (
        f"{bad.size} differ; first: x bits {x.view(np.uint32)[bad[0]]:#x}, fused "
        f"{fused.view(np.uint32)[bad[0]]:#x}, unfused {unfused.view(np.uint32)[bad[0]]:#x}"
    )
    nan = np.isnan(fused) & np.isnan(cpu)
    assert int(((fused.view(np.uint32) != cpu.view(np.uint32)) & ~nan).sum()) == 0
