"""sin, cos and tan run split (ElementwiseOp.split; nuvec/codegen/dialects/c.py): the C kernels
take the Cody-Waite functions alone over blocks whose arguments are all below NV_TRIG_SMALL (or
not finite) and the full functions, which pick a reduction per element, over the other blocks.
An element's bits must not depend on which: the same small arguments give the same bits in a
block of their own, in a block beside a large argument, one by one through the strided direct
loop, in place, and inside a fused chain; and arguments either side of the bound stay within
the ulp bounds."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from engine_util import BF16, assert_bits_equal, run1, ulp_distance
from nuvec.backends.cpu import kernels
from nuvec.codegen.ir import KernelSpec, Node

RNG = np.random.default_rng(23)
BOUND = np.float32(2.0**22)  # NV_TRIG_SMALL in nv_math.h
BLOCK = 256  # NV_GBLOCK in the C dialect's prelude


def _small(n: int) -> np.ndarray:
    """Arguments below the bound: every exponent, near multiples of pi/2, inf and NaN."""
    mag = np.exp2(RNG.uniform(-24, 22, n)).astype(np.float32)
    mag[: n // 16] = np.exp2(RNG.uniform(-149, -24, n // 16))
    mag = np.minimum(mag, np.nextafter(BOUND, np.float32(0)))
    near = (RNG.integers(1, 1 << 21, n // 4) * (np.pi / 2)).astype(np.float32)
    x = np.concatenate([mag, near, [np.inf, -np.inf, np.nan, 0.0, -0.0]]).astype(np.float32)
    x[: x.size // 2] *= -1
    return RNG.permutation(x)


@pytest.mark.parametrize("op", ["sin", "cos", "tan"])
def test_small_arguments_give_the_same_bits_on_either_path(op: str) -> None:
    x = _small(400 * BLOCK)
    alone = run1(op, x)  # no block holds a large argument: the split path throughout
    mixed = x.copy()
    big = np.arange(0, x.size, BLOCK // 2)  # a large argument in every block
    mixed[big] = np.float32(1e30)
    beside = run1(op, mixed)  # the full path throughout
    keep = np.ones(x.size, bool)
    keep[big] = False
    assert_bits_equal(beside[keep], alone[keep], f"{op}: split and full blocks")
    # the strided direct loop (runs shorter than 32 elements) runs the full function
    spec = KernelSpec.single(op, ("float32",), "float32")
    wide = np.zeros(2 * 31, np.float32)
    for start in range(0, 31 * 20, 31):
        wide[::2] = x[start : start + 31]
        got = kernels.run(spec, [wide[::2]], (31,))[0]
        assert_bits_equal(got, alone[start : start + 31], f"{op}: strided direct loop")
    # in place: the output over its input, as buffer donation runs it
    for src, want in ((x, alone), (mixed, beside)):
        buf = src.copy()
        kernels.run(spec, [buf], buf.shape, [buf])
        assert_bits_equal(buf, want, f"{op}: in place")


def test_fused_chain_guards_an_inner_argument() -> None:
    """sin(x * k) in one kernel: the guard reads the product, which crosses the bound for some
    elements though x does not; the chain equals the two single ops."""
    x = _small(20 * BLOCK)
    k = np.float32(3.0)
    spec = KernelSpec(
        inputs=("float32", "float32"),
        constants=(),
        nodes=(
            Node("multiply", (("in", 0), ("in", 1)), "float32"),
            Node("sin", (("node", 0),), "float32"),
        ),
        outputs=(1,),
    )
    x[::300] = np.float32(2.0**21)  # times 3: above the bound
    got = kernels.run(spec, [x, np.full_like(x, k)], x.shape)[0]
    want = run1("sin", run1("multiply", x, np.full_like(x, k)))
    assert_bits_equal(got, want, "sin(x * 3)")


@pytest.mark.parametrize("op,bound", [("sin", 2), ("cos", 2), ("tan", 4)])
def test_arguments_around_the_bound(op: str, bound: int) -> None:
    below = BOUND.view(np.uint32) - np.arange(1, 1 << 16, dtype=np.uint32)
    above = BOUND.view(np.uint32) + np.arange(0, 1 << 16, dtype=np.uint32)
    x = np.concatenate([below, above]).view(np.float32)
    x = np.concatenate([x, -x])
    got = run1(op, x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = getattr(np, op)(x.astype(np.float64)).astype(np.float32)
    d = ulp_distance(got, want)
    assert d.max() <= bound, f"{op}: {d.max()} ulp at {x[np.argmax(d)]!r}"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_inputs_take_the_split_path_too(dtype: str) -> None:
    dt = np.dtype(np.float16) if dtype == "float16" else BF16
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(dt)
    got = run1("sin", x)
    # each element alone: the contiguous loop on one element (split below the bound)
    for i in RNG.integers(0, x.size, 64):
        assert_bits_equal(run1("sin", x[i : i + 1]), got[i : i + 1], f"sin[{dtype}]")
