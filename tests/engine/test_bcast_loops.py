"""A run that is contiguous but for one broadcast (step 0) input goes through the kernel's loop
that reads that input once (``NAME_bcast``, nuvec/codegen/dialects/c.py): it gives the bits of
the same kernel on the operand materialized, for the operand in either place, a value
broadcast along rows of any length (each row its own value), several broadcast inputs (the
launcher's blocks) and fused kernels."""

from __future__ import annotations

import numpy as np
import pytest

from engine_util import assert_bits_equal, values
from nuvec.backends.cpu import kernels
from nuvec.codegen.ir import KernelSpec, Node

RNG = np.random.default_rng(23)

CASES = [
    ("multiply", "float32"),
    ("add", "float32"),
    ("divide", "float32"),
    ("maximum", "float32"),
    ("less", "float32"),
    ("power", "float32"),
    ("subtract", "float16"),
    ("multiply", "bfloat16"),
    ("divide", "float64"),
    ("add", "int32"),
    ("right_shift", "uint8"),
    ("multiply", "complex64"),
]


def _materialized(spec: KernelSpec, ins: list[np.ndarray], shape) -> list[np.ndarray]:
    full = [np.array(np.broadcast_to(x, shape), order="C") for x in ins]
    return kernels.run(spec, full, shape)


def _single(op: str, d: str) -> KernelSpec:
    from nuvec.codegen.ops import result_dtype

    return KernelSpec.single(op, (d, d), result_dtype(op, (d, d)))


@pytest.mark.parametrize("op,d", CASES)
@pytest.mark.parametrize("n", [2, 63, 64, 513, 2000])
def test_one_broadcast_input_matches_materialized(op, d, n) -> None:
    spec = _single(op, d)
    k = kernels.get_kernel(spec)
    assert k.bcast_address != 0, f"{k.name} has no broadcast loops"
    kind = "shift" if op.endswith("shift") else "any"
    a = values(d, 3 * n, RNG, kind).reshape(3, n)
    s = values(d, 7, RNG, kind)
    layouts = [
        [a, s[3:4].reshape(())],  # a 0-d scalar: every row reads the same value
        [s[2:3].reshape(()), a],  # the scalar first
        [a, s[:3].reshape(3, 1)],  # one value per row
        [s[4:7].reshape(3, 1), a],
        [a[:, ::-1], s[5:6].reshape(())],  # a reversed operand: the direct loop, same bits
    ]
    for arrs in layouts:
        shape = np.broadcast_shapes(*[x.shape for x in arrs])
        got = kernels.run(spec, arrs, shape)
        want = _materialized(spec, arrs, shape)
        # Where two NaNs meet, which payload survives follows the operand order the C compiler
        # picks for a commutative operation in each loop (IEEE 754 leaves it open); every
        # other value, and where the NaNs are, must agree bit for bit.
        for g, w in zip(got, want):
            assert_bits_equal(g, w, f"{op} {d} n={n} {[x.shape for x in arrs]}", nan_payloads=False)


@pytest.mark.parametrize("d", ["float32", "bfloat16", "int16"])
def test_select_and_two_broadcast_inputs(d) -> None:
    """select reads three inputs: one broadcast goes through its loop, two through blocks."""
    spec = KernelSpec.single("select", ("bool", d, d), d)
    n = 1000
    c = RNG.integers(0, 2, (4, n)).astype(bool)
    a = values(d, 4 * n, RNG).reshape(4, n)
    s = values(d, 8, RNG)
    layouts = [
        [c, a, s[0:1].reshape(())],
        [c, s[1:5].reshape(4, 1), a],
        [c, s[5:6].reshape(()), s[6:7].reshape(())],
        [c[:1, :1], a, s[7:8].reshape(())],
    ]
    for arrs in layouts:
        shape = np.broadcast_shapes(*[x.shape for x in arrs])
        got = kernels.run(spec, arrs, shape)
        want = _materialized(spec, arrs, shape)
        assert_bits_equal(got[0], want[0], f"select {d} {[x.shape for x in arrs]}")


@pytest.mark.parametrize("d", ["float32", "float16"])
def test_fused_kernel_with_a_broadcast_input(d) -> None:
    """A fused group of two inputs gets the loops too: tanh(x) * y + y with y broadcast."""
    spec = KernelSpec(
        inputs=(d, d),
        constants=(),
        nodes=(
            Node("tanh", (("in", 0),), d),
            Node("multiply", (("node", 0), ("in", 1)), d),
            Node("add", (("node", 1), ("in", 1)), d),
        ),
        outputs=(2,),
    )
    k = kernels.get_kernel(spec)
    assert k.bcast_address != 0
    x = values(d, 5 * 777, RNG).reshape(5, 777)
    y = values(d, 5, RNG)
    for arrs in ([x, y[:1].reshape(())], [x, y.reshape(5, 1)]):
        got = kernels.run(spec, arrs, x.shape)
        want = _materialized(spec, arrs, x.shape)
        assert_bits_equal(got[0], want[0], f"fused {d}", nan_payloads=False)


def test_unary_and_wide_kernels_have_no_broadcast_loops() -> None:
    """One input broadcast is a constant, and kernels of more than three inputs keep the
    launcher's blocks (their code is not multiplied)."""
    assert kernels.get_kernel(KernelSpec.single("exp", ("float32",), "float32")).bcast_address == 0
    spec = KernelSpec(
        inputs=("float32",) * 4,
        constants=(),
        nodes=(
            Node("add", (("in", 0), ("in", 1)), "float32"),
            Node("add", (("in", 2), ("in", 3)), "float32"),
            Node("multiply", (("node", 0), ("node", 1)), "float32"),
        ),
        outputs=(2,),
    )
    assert kernels.get_kernel(spec).bcast_address == 0
    x = values("float32", 4 * 600, RNG).reshape(4, 600)
    arrs = [x, np.float32(1.5).reshape(()), x[::-1], np.arange(4, dtype=np.float32).reshape(4, 1)]
    got = kernels.run(spec, arrs, x.shape)
    want = _materialized(spec, arrs, x.shape)
    assert_bits_equal(got[0], want[0], "four inputs, two broadcast")
