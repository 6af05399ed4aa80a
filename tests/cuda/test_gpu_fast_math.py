"""``nv.compile(..., fast_math=True)`` on a CUDA GPU: close to the exact results, not equal."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nuvec as nv
from devices import cuda_only

pytestmark = cuda_only
cp = pytest.importorskip("cupy")

CHAINS = {
    "gelu": lambda x: x * 0.5 * (1 + nv.erf(x * 0.70710678)),
    "gelu_tanh": lambda x: 0.5 * x * (1 + nv.tanh(0.79788456 * (x + 0.044715 * x * x * x))),
    "swish": lambda x: x * nv.sigmoid(x),
    "10op": lambda x: nv.maximum(nv.exp(-nv.abs(nv.tanh(x * 1.5 + 0.25) * x - 0.5)) * 3, 0.1),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_fast_chains_are_close_to_the_exact_ones(name, dtype):
    fn = CHAINS[name]
    x = np.random.default_rng(0).standard_normal(100_003).astype(np.float32) * 3
    with nv.stream(nv.gpu):
        xa = nv.array(x).astype(getattr(nv, dtype))
        nv.eval(xa)
        exact = np.asarray(nv.compile(fn)(xa).astype(nv.float32))
        f = nv.compile(fn, fast_math=True)
        fast = np.asarray(f(xa).astype(nv.float32))
        again = np.asarray(f(xa).astype(nv.float32))
        assert all(
            s.prim.spec.fast
            for s in f.lookup(f.key_of((xa,), {}, [], 0)).tape.steps
            if type(s.prim).__name__ == "Compiled"
        )
    np.testing.assert_array_equal(fast, again)
    if dtype == "float32":
        np.testing.assert_allclose(fast, exact, rtol=2e-6, atol=2e-6)
    else:  # float32 intermediates, one rounding: within a couple of ulps of the format
        eps = float(ml_dtypes.finfo(np.float16 if dtype == "float16" else ml_dtypes.bfloat16).eps)
        np.testing.assert_allclose(fast, exact, rtol=2 * eps, atol=2 * eps)


@pytest.mark.parametrize("op", ["tanh", "erf"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_fast_half_precision_functions_are_within_an_ulp_on_every_input(op, dtype):
    """The fast-math tanh and erf of float16 / bfloat16 (relative error below 2^-14 before
    the rounding): every finite input's result within one ulp of the exact one."""
    npdt = np.dtype(np.float16) if dtype == "float16" else np.dtype(ml_dtypes.bfloat16)
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(npdt)
    x = x[np.isfinite(x.astype(np.float32))]
    fn = getattr(nv, op)
    with nv.stream(nv.gpu):
        xa = nv.array(x)
        exact = np.asarray(fn(xa).astype(nv.float32))
        f = nv.compile(lambda v: fn(v) * 2, fast_math=True)  # two ops: one fused kernel
        fast = np.asarray(f(xa).astype(nv.float32)) / 2
        steps = f.lookup(f.key_of((xa,), {}, [], 0)).tape.steps
        assert any(type(s.prim).__name__ == "Compiled" and s.prim.spec.fast for s in steps)
    eps = float(ml_dtypes.finfo(npdt).eps)
    tiny = float(ml_dtypes.finfo(npdt).smallest_subnormal)
    np.testing.assert_allclose(fast, exact, rtol=eps, atol=tiny)
