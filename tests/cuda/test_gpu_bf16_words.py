"""bfloat16 operations computed on words of two elements (the ``vec`` kernels' word nodes,
``nuvec.backends.cuda.source._word_nodes``) against the float32 path, bit for bit (any NaN
equals any NaN: the packed instructions return the canonical NaN).

The claim behind them: for +, - and * of two bfloat16 values the float32 result rounded to
bfloat16 is the exact result rounded once, which the packed fma gives (subnormals kept); and
the packed maximum / minimum against a constant that is neither zero nor NaN pick what
nv_maximum_f32 / nv_minimum_f32 pick. These tests check it on the GPU over every pair of
bfloat16 values (2^32), and every value against a few constants.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nuvec as nv
from devices import cuda_only

pytestmark = cuda_only

BF16 = np.dtype(ml_dtypes.bfloat16)
EVERY = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(BF16)
ROWS = 1024  # a chunk: ROWS first operands against every second operand


def _differ(got, ref) -> int:
    """How many elements of two bfloat16 arrays differ in their bits, NaNs aside."""
    bits = nv.view(got, nv.uint16) != nv.view(ref, nv.uint16)
    bad = bits & ~(nv.isnan(got) & nv.isnan(ref))
    return int(nv.sum(bad.astype(nv.int32)).item())


@pytest.mark.parametrize("op", ["add", "subtract", "multiply"])
def test_packed_arithmetic_is_float32_then_rounding_for_every_pair(op):
    fn = getattr(nv, op)
    with nv.stream(nv.gpu):
        every = nv.array(EVERY)
        wrong = 0
        for first in range(0, 1 << 16, ROWS):
            # contiguous operands, so that the vec kernel (word nodes) runs
            a = nv.reshape(
                nv.broadcast_to(every[first : first + ROWS, None], (ROWS, 1 << 16)), (-1,)
            )
            b = nv.reshape(nv.broadcast_to(every[None, :], (ROWS, 1 << 16)), (-1,))
            got = fn(a, b)
            ref = fn(a.astype(nv.float32), b.astype(nv.float32)).astype(nv.bfloat16)
            wrong += _differ(got, ref)
    assert wrong == 0


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize("c", [1.0, -1.5, 0.1, 3.0e38, -1.0e-40, float("inf"), 0.0])
def test_a_scalar_operand_gives_the_cpus_bits(op, c):
    """A broadcast scalar (loaded once, both halves of a word) and a constant (in the kernel's
    code), against the CPU."""
    fn = getattr(nv, op)
    out = {}
    for dev in (nv.cpu, nv.gpu):
        with nv.stream(dev):
            x = nv.array(EVERY)
            s = nv.array(np.array(c, dtype=BF16))
            const = nv.compile(lambda x: fn(x, c))(x)
            out[dev] = [fn(x, s), fn(s, x), const]
    with nv.stream(nv.cpu):
        for g, r in zip(out[nv.gpu], out[nv.cpu]):
            assert _differ(nv.array(np.asarray(g)), r) == 0


CHAINS = {
    "10op": lambda x: nv.maximum(nv.exp(-nv.abs(nv.tanh(x * 1.5 + 0.25) * x - 0.5)) * 3, 0.1),
    "gelu_tanh": lambda x: 0.5 * x * (1 + nv.tanh(0.79788456 * (x + 0.044715 * x * x * x))),
    "words_only": lambda x: nv.minimum(nv.square(x - 0.75) * -x, -2.0) + nv.abs(x),
    "relu_of_rounded": lambda x: nv.maximum(nv.sigmoid(x) * x, 0.0) - x,
}


@pytest.mark.parametrize("name", list(CHAINS))
def test_compiled_chains_give_the_cpus_bits_for_every_input(name):
    out = []
    for dev in (nv.cpu, nv.gpu):
        with nv.stream(dev):
            out.append(np.asarray(nv.compile(CHAINS[name])(nv.array(EVERY))))
    got, ref = (o.view(np.uint16) for o in out)
    nan = np.isnan(out[0].astype(np.float32)) & np.isnan(out[1].astype(np.float32))
    assert int(((got != ref) & ~nan).sum()) == 0


@pytest.mark.parametrize("seed", range(40))
def test_random_bfloat16_specs_give_the_cpus_bits(seed):
    """Random fused bfloat16 specs (tests/cuda/test_source.py): every bfloat16 value in the first
    input, shuffled ones in the others, float32 inputs at random with specials; through the
    ``vec`` kernel (aligned, contiguous), then with the first input a broadcast scalar."""
    cp = pytest.importorskip("cupy")
    from test_source import BF16_RANDOM

    from nuvec.backends.cpu import kernels as cpu_kernels
    from nuvec.backends.cuda import kernels as gpu_kernels

    spec = BF16_RANDOM[seed]
    rng = np.random.default_rng(seed)
    shape = (1 << 16,)
    xs = []
    for i, d in enumerate(spec.inputs):
        if d == "bfloat16":
            xs.append(EVERY.copy() if i == 0 else rng.permutation(EVERY))
        else:
            x = rng.standard_normal(shape).astype(np.float32) * 4
            x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40]
            xs.append(x)
    for scalar in (None, xs[0][7:8].copy()):
        ins = xs if scalar is None else [scalar] + xs[1:]
        want = cpu_kernels.run(spec, ins, shape)
        dev = [cp.asarray(x.view(np.uint16) if x.dtype == BF16 else x) for x in ins]
        got = gpu_kernels.run(spec, dev, shape)
        for g, w in zip(got, want):
            g = g.get()
            bits = np.uint16 if g.itemsize == 2 else np.uint32
            g_f, w_f = (a.view(BF16) if a.itemsize == 2 else a for a in (g, w))
            nan = np.isnan(g_f.astype(np.float32)) & np.isnan(w_f.astype(np.float32))
            bad = (g.view(bits) != w.view(bits)) & ~nan
            assert int(bad.sum()) == 0, (seed, scalar is not None, np.flatnonzero(bad)[:5])
