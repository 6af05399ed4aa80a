"""A fused multi-node kernel equals the chain of single-op kernels bit for bit (random specs).

Each random spec mixes dtypes (astype nodes join them), literal constants (NaN, inf, -0,
subnormals included), broadcast inputs and several outputs, and is compiled by the JIT; the
chain runs every node as its own prebuilt kernel, rounding each intermediate to its dtype.
"""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from engine_util import DTYPES, assert_bits_equal, npdtype, values
from nuvec.codegen.ir import ITEMSIZE, KernelSpec, Node
from nuvec.codegen.ops import ARITY, result_dtype, supports
from nuvec.backends.cpu import kernels

_SPECIAL_F32 = [
    0x7FC00000,
    0x7F800000,
    0xFF800000,
    0x80000000,
    0x00000001,
    0x3F800000,
    0x40490FDB,
    0xC0000000,
]


def _const_bits(dtype: str, rnd: random.Random) -> int:
    if dtype == "float32":
        return rnd.choice(
            _SPECIAL_F32 + [struct.unpack("<I", struct.pack("<f", rnd.uniform(-4, 4)))[0]]
        )
    if dtype in ("float16", "bfloat16"):
        return rnd.choice(
            [
                0x7E00 if dtype == "float16" else 0x7FC0,
                0x3C00 if dtype == "float16" else 0x3F80,
                0x8000,
                0x0001,
                rnd.getrandbits(14),
            ]
        )
    if dtype == "float64":
        return struct.unpack(
            "<Q",
            struct.pack("<d", rnd.choice([-0.0, 2.5, 1e-310, float("inf"), rnd.uniform(-3, 3)])),
        )[0]
    if dtype == "complex64":
        return rnd.choice(_SPECIAL_F32) | (rnd.choice(_SPECIAL_F32) << 32)
    if dtype == "bool":
        return rnd.getrandbits(1)
    return rnd.getrandbits(8 * ITEMSIZE[dtype])


def random_spec(seed: int) -> KernelSpec:
    rnd = random.Random(seed)
    dts = rnd.sample([d for d in DTYPES if d != "bool"], 3) + ["bool"]
    inputs = tuple(rnd.choice(dts) for _ in range(rnd.randint(1, 4)))
    constants = []
    nodes: list[Node] = []
    vals = [("in", i, d) for i, d in enumerate(inputs)]  # (kind, index, dtype)

    def pick(dtype: str):
        have = [v for v in vals if v[2] == dtype]
        if have and rnd.random() < 0.8:
            v = rnd.choice(have)
            return (v[0], v[1])
        if rnd.random() < 0.4:
            constants.append((dtype, _const_bits(dtype, rnd)))
            return ("const", len(constants) - 1)
        src = rnd.choice(vals)  # bring another value over
        nodes.append(Node("astype", ((src[0], src[1]),), dtype))
        vals.append(("node", len(nodes) - 1, dtype))
        return ("node", len(nodes) - 1)

    for _ in range(rnd.randint(3, 9)):
        d = rnd.choice(dts)
        ops = [o for o in ARITY if supports(o, d) and o != "astype"]
        op = rnd.choice(ops)
        if op == "select":
            args = (pick("bool"), pick(d), pick(d))
        else:
            args = tuple(pick(d) for _ in range(ARITY[op]))
        adt = tuple(
            {
                "in": lambda i: inputs[i],
                "node": lambda i: nodes[i].dtype,
                "const": lambda i: constants[i][0],
            }[k](i)
            for k, i in args
        )
        nodes.append(Node(op, args, result_dtype(op, adt)))
        vals.append(("node", len(nodes) - 1, nodes[-1].dtype))
    outs = sorted({len(nodes) - 1} | {rnd.randrange(len(nodes)) for _ in range(rnd.randint(0, 2))})
    return KernelSpec(inputs, tuple(constants), tuple(nodes), tuple(outs))


def _const_array(dtype: str, bits: int) -> np.ndarray:
    raw = bits.to_bytes(ITEMSIZE[dtype], "little")
    return np.frombuffer(raw, dtype=npdtype(dtype)).reshape(())


def run_chain(spec: KernelSpec, ins: list[np.ndarray], shape) -> list[np.ndarray]:
    """Each node as its own single-op kernel, intermediates stored in their dtypes."""
    got = []
    for node in spec.nodes:
        arrs, dts = [], []
        for kind, i in node.args:
            if kind == "in":
                arrs.append(ins[i])
            elif kind == "node":
                arrs.append(got[i])
            else:
                arrs.append(_const_array(*spec.constants[i]))
            dts.append(spec.arg_dtype((kind, i)))
        single = KernelSpec.single(node.op, tuple(dts), node.dtype)
        got.append(kernels.run(single, arrs, shape)[0])
    return [got[o] for o in spec.outputs]


@pytest.mark.parametrize("seed", range(24))
def test_fused_equals_chain(seed: int) -> None:
    spec = random_spec(seed)
    spec.validate()
    rng = np.random.default_rng(seed)
    shape = (3, 37)
    ins = []
    for k, d in enumerate(spec.inputs):
        x = values(d, 3 * 37, rng).reshape(shape)
        ins.append(x[:1] if k == 1 else x)  # one broadcast input
    fused = kernels.run(spec, ins, shape)
    chain = run_chain(spec, ins, shape)
    assert len(fused) == len(spec.outputs)
    for f, c, o in zip(fused, chain, spec.outputs):
        assert_bits_equal(f, c, f"seed {seed}, output node {o} ({spec.nodes[o].op})")


def test_fused_kernel_is_jit_and_cached() -> None:
    spec = random_spec(1000)
    k1 = kernels.get_kernel(spec)
    assert k1.source == "jit"
    assert kernels.get_kernel(spec) is k1
    single = KernelSpec.single("exp", ("float32",), "float32")
    assert kernels.get_kernel(single).source in ("prebuilt", "jit")


@pytest.mark.parametrize("fdt", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("idt", ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"])
def test_fused_float_int_float_keeps_zero_positive(fdt: str, idt: str) -> None:
    # GCC folds (float)(int)x into truncf(x) under -fno-trapping-math, which would give -0.0
    # for -1 < x < 0; a conversion from an integer gives +0.0 there
    spec = KernelSpec(
        inputs=(fdt,),
        constants=(),
        nodes=(Node("astype", (("in", 0),), idt), Node("astype", (("node", 0),), fdt)),
        outputs=(1,),
    )
    x = np.array([-0.3, -0.99, -0.0, 0.0, 0.7, -1.5] * 40, np.float64).astype(npdtype(fdt))
    (fused,) = kernels.run(spec, [x], x.shape)
    chain = run_chain(spec, [x], x.shape)[0]
    assert_bits_equal(fused, chain, f"{fdt} -> {idt} -> {fdt}")
    assert not np.signbit(fused.astype(np.float64)[:4]).any()


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_exp_of_minus_abs_takes_the_nonpositive_exp_with_the_same_bits(dt: str) -> None:
    from nuvec.codegen.dialects import DIALECTS
    from nuvec.codegen.generator import body

    spec = KernelSpec(
        inputs=(dt,),
        constants=(),
        nodes=(
            Node("abs", (("in", 0),), dt),
            Node("negative", (("node", 0),), dt),
            Node("exp", (("node", 1),), dt),
        ),
        outputs=(2,),
    )
    assert "nv_exp_negabs_f32(v1)" in body(spec, DIALECTS["c"]).lines[2]
    plain = KernelSpec(spec.inputs, (), (spec.nodes[0], Node("exp", (("node", 0),), dt)), (1,))
    assert "nv_exp_f32(v0)" in body(plain, DIALECTS["c"]).lines[1]
    rng = np.random.default_rng(5)
    x = values(dt, 4000, rng)
    edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 103.9, 104.0, 104.1, 87.3, 11.1])
    x = np.concatenate([x, edge.astype(npdtype(dt)), -edge.astype(npdtype(dt))])
    (fused,) = kernels.run(spec, [x], x.shape)
    assert_bits_equal(fused, run_chain(spec, [x], x.shape)[0], f"exp(-|x|) in {dt}")
