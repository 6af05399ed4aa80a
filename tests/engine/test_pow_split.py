"""power runs split (ElementwiseOp.split; nuvec/codegen/dialects/c.py): over blocks where every
x is positive, normal and finite and every y log2 x, as rounded, is below 126 in magnitude, the
C kernels take nv_pow_regular_f32, which skips the limits and the three-step scaling; elsewhere
nv_pow_f32. An element's bits must not depend on which, most of all near the guard's bound,
where the result approaches overflow or the subnormals, nor on whether the output is written
over an input."""

from __future__ import annotations

import numpy as np

from engine_util import assert_bits_equal, run1
from nuvec.backends.cpu import kernels
from nuvec.codegen.ir import KernelSpec

RNG = np.random.default_rng(29)
BLOCK = 256  # NV_GBLOCK in the C dialect's prelude


def _arguments(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Positive normal x of every exponent and y with y log2 x spread over [-140, 140]: most
    clear the guard, those near and past +-126 do not."""
    x = np.exp2(RNG.uniform(-126, 128, n)).astype(np.float32)
    x = np.maximum(x, np.float32(2.0**-126))
    x[: n // 8] = RNG.uniform(0.5, 2.0, n // 8)  # log2 x near 0: large y
    target = RNG.uniform(-140, 140, n)
    near = RNG.choice(n, n // 4, replace=False)  # crowd the bound
    target[near] = np.sign(target[near]) * RNG.uniform(124, 127, near.size)
    lx = np.log2(x.astype(np.float64))
    lx = np.where(np.abs(lx) < 2.0**-20, 2.0**-20, lx)
    y = np.clip(target / lx, -3e38, 3e38).astype(np.float32)
    return x, y


def test_regular_blocks_give_the_bits_of_the_full_function() -> None:
    x, y = _arguments(400 * BLOCK)
    alone = run1("power", x, y)  # blocks split where all their elements clear the guard
    mixed_x = x.copy()
    irregular = np.arange(0, x.size, BLOCK // 2)  # a negative x in every block
    mixed_x[irregular] = np.float32(-2.0)
    beside = run1("power", mixed_x, y)  # the full function throughout
    keep = np.ones(x.size, bool)
    keep[irregular] = False
    assert_bits_equal(beside[keep], alone[keep], "power: split and full blocks")
    # in place: the output over either input, as buffer donation runs it
    spec = KernelSpec.single("power", ("float32", "float32"), "float32")
    for src, want in ((x, alone), (mixed_x, beside)):
        for k in (0, 1):
            args = [src.copy(), y.copy()]
            kernels.run(spec, args, src.shape, [args[k]])
            assert_bits_equal(args[k], want, f"power: in place over input {k}")
    # the strided direct loop (runs shorter than 32 elements) runs the full function
    wx, wy = np.zeros(62, np.float32), np.zeros(62, np.float32)
    for start in range(0, 31 * 40, 31):
        wx[::2], wy[::2] = x[start : start + 31], y[start : start + 31]
        got = kernels.run(spec, [wx[::2], wy[::2]], (31,))[0]
        assert_bits_equal(got, alone[start : start + 31], "power: strided direct loop")


def test_the_special_cases_in_a_block_of_regular_ones() -> None:
    """Zeros, infinities, NaNs, negative and subnormal x and y of 0 and +-inf among regular
    arguments: the block takes the full function and each keeps its IEEE value."""
    x, y = _arguments(8 * BLOCK)
    xs = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -8.0, 1e-40, 1.0, 2.0, 2.0], np.float32)
    ys = np.array([-1.0, 3.0, -2.0, 3.0, 2.0, 1 / 3, 2.0, np.nan, np.inf, 0.0], np.float32)
    at = RNG.choice(x.size, xs.size, replace=False)
    x[at], y[at] = xs, ys
    got = run1("power", x, y)
    one_by_one = np.concatenate([run1("power", x[i : i + 1], y[i : i + 1]) for i in at])
    assert_bits_equal(got[at], one_by_one, "power: special cases")
    with np.errstate(all="ignore"):
        want = np.power(xs.astype(np.float64), ys.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got[at], want)
