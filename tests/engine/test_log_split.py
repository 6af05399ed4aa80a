"""log, log2, log10 and log1p run split (ElementwiseOp.split; nuvec/codegen/dialects/c.py):
over blocks where every argument is regular (positive, normal and finite; for log1p, in
(-1, 2^100) and not zero) the C kernels take the regular functions, which skip the subnormal
scaling and the limits; elsewhere the full ones. An element's bits must not depend on which,
nor on whether the output is written over its input, and the special values keep their IEEE
results inside a block of regular ones."""

from __future__ import annotations

import numpy as np
import pytest

from engine_util import assert_bits_equal, run1
from nuvec.backends.cpu import kernels
from nuvec.codegen.ir import KernelSpec

RNG = np.random.default_rng(31)
BLOCK = 256  # NV_GBLOCK in the C dialect's prelude
OPS = ("log", "log2", "log10", "log1p")
IRREGULAR = {op: np.float32(0.0) for op in OPS}  # an argument that takes the full function


def _regular(op: str, n: int) -> np.ndarray:
    """Regular arguments of every exponent, crowding the ends of the regular range."""
    if op == "log1p":
        x = np.exp2(RNG.uniform(-126, 99.9, n)).astype(np.float32)
        x[: n // 3] *= -1  # into (-1, 0): -x below 1
        x[: n // 3] = np.maximum(x[: n // 3], np.nextafter(np.float32(-1), np.float32(0)))
        x[n // 3 : n // 2] = np.nextafter(np.float32(-1), np.float32(0))
        x[n // 2 : n // 2 + 64] = np.nextafter(np.float32(2.0**100), np.float32(0))
    else:
        x = np.exp2(RNG.uniform(-126, 128, n)).astype(np.float32)
        x[: n // 8] = np.float32(2.0**-126)  # the smallest normal
        x[n // 8 : n // 4] = RNG.uniform(0.5, 2.0, n // 8)  # near 1
        x[n // 4 : n // 4 + 64] = np.finfo(np.float32).max
    return RNG.permutation(x)


@pytest.mark.parametrize("op", OPS)
def test_regular_blocks_give_the_bits_of_the_full_function(op: str) -> None:
    x = _regular(op, 400 * BLOCK)
    alone = run1(op, x)  # every block split
    mixed = x.copy()
    at = np.arange(0, x.size, BLOCK // 2)  # an irregular argument in every block
    mixed[at] = IRREGULAR[op]
    beside = run1(op, mixed)  # the full function throughout
    keep = np.ones(x.size, bool)
    keep[at] = False
    assert_bits_equal(beside[keep], alone[keep], f"{op}: split and full blocks")
    spec = KernelSpec.single(op, ("float32",), "float32")
    for src, want in ((x, alone), (mixed, beside)):
        buf = src.copy()
        kernels.run(spec, [buf], buf.shape, [buf])
        assert_bits_equal(buf, want, f"{op}: in place")
    # the strided direct loop (runs shorter than 32 elements) runs the full function
    wide = np.zeros(2 * 31, np.float32)
    for start in range(0, 31 * 20, 31):
        wide[::2] = x[start : start + 31]
        got = kernels.run(spec, [wide[::2]], (31,))[0]
        assert_bits_equal(got, alone[start : start + 31], f"{op}: strided direct loop")


@pytest.mark.parametrize("op", OPS)
def test_the_special_cases_in_a_block_of_regular_ones(op: str) -> None:
    x = _regular(op, 8 * BLOCK)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -2.0, 1e-40, -1e-40, 1.0, -1.0, 2.0**100]
    xs = np.array(specials, np.float32)
    at = RNG.choice(x.size, xs.size, replace=False)
    x[at] = xs
    got = run1(op, x)
    one_by_one = np.concatenate([run1(op, x[i : i + 1]) for i in at])
    assert_bits_equal(got[at], one_by_one, f"{op}: special cases")
    with np.errstate(all="ignore"):
        want = getattr(np, op)(xs.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got[at]), np.isnan(want))
    num = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[at][num]), np.signbit(want[num]))
    np.testing.assert_allclose(got[at][num], want[num], rtol=2e-7, atol=0)
