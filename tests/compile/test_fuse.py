"""Chains of element-wise steps become one generated kernel on the CPU: a step joins
a group when every consumer of it is in the group or comes after it; at most 32 steps and 24
arrays per kernel; an inner value the function returns or a later step reads becomes another
kernel output; a bias add after a matmul fuses with its activation (CPU); float scalar constants
are literals; groups never make the graph cyclic; results equal the uncompiled function's bit
for bit; kernels are cached on disk across processes."""

import os
import subprocess
import sys

import ml_dtypes
import numpy as np

import pytest

import nuvec as nv

from conftest import assert_same, assert_topological, entry_of, fused_specs, step_names


def test_a_chain_becomes_one_kernel_with_literal_constants():
    f = nv.compile(lambda x, y: nv.exp(x) * y + 1.0)
    x, y = nv.array([0.5, 1.5]), nv.array([2.0, 3.0])
    assert_same(np.asarray(f(x, y)), np.asarray(nv.exp(x) * y + 1.0))
    (spec,) = fused_specs(f)
    assert [n.op for n in spec.nodes] == ["exp", "multiply", "add"]
    assert spec.inputs == ("float32", "float32")  # the 1.0 is not an input ...
    assert spec.constants == (("float32", 0x3F800000),)  # ... but a literal
    assert step_names(f, x, y) == ["compiled[exp multiply add]"]


def test_fused_results_equal_uncompiled_bit_for_bit_over_dtypes():
    rng = np.random.default_rng(0)
    floats = [
        nv.array(rng.standard_normal(64).astype(d))
        for d in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64)
    ]
    ints = nv.array(rng.integers(-50, 50, 64).astype(np.int32))
    u8 = nv.array(rng.integers(0, 255, 64).astype(np.uint8))
    cplx = nv.array((rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(np.complex64))
    flags = nv.array(rng.integers(0, 2, 64).astype(bool))

    def f(fs, i, u, c, b):
        out = []
        for x in fs:
            y = nv.sigmoid(x * 1.7 - 0.3) * nv.tanh(x) + nv.exp(-nv.abs(x)) / (1.0 + x * x)
            out.append(nv.where(x > 0.1, y, nv.erf(x) - nv.sqrt(nv.abs(x))))
        out.append((i * 3 - 7) // 4 + nv.maximum(i, -i) % 5)
        out.append((u ^ 0x5A) + (u >> 2) * 3)
        out.append(nv.exp(c) * c - c * (1 + 2j))
        out.append(nv.logical_and(b, i > 0) | (u < 100))
        out.append(nv.astype(fs[0] * 3.5, nv.int16) + nv.astype(i, nv.int16))
        return out

    g = nv.compile(f)
    got = g(floats, ints, u8, cplx, flags)
    want = f(floats, ints, u8, cplx, flags)
    for a, b in zip(got, want):
        assert_same(np.asarray(a), np.asarray(b))
    assert len(fused_specs(g)) >= 8
    assert_topological(entry_of(g).tape)


def test_a_value_used_outside_the_group_stays_outside():
    def f(x):
        t = nv.exp(x)
        s = nv.sum(t, axis=1, keepdims=True)  # reads t: t cannot be inside the chain
        return t * 3.0 + s

    g = nv.compile(f)
    x = nv.array(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    assert_same(np.asarray(g(x)), np.asarray(f(x)))
    names = step_names(g, x)
    assert names == ["exp", "sum", "compiled[multiply add]"], names
    assert_topological(entry_of(g).tape)


def test_kernels_hold_at_most_32_steps_and_24_arrays():
    def chain(x):
        for i in range(70):
            x = x * 1.01 + 0.01 * (i % 7)
        return x

    g = nv.compile(chain)
    x = nv.array(np.linspace(0, 1, 8, dtype=np.float32))
    assert_same(np.asarray(g(x)), np.asarray(chain(x)))
    specs = fused_specs(g)
    assert all(len(s.nodes) <= 32 for s in specs) and sum(len(s.nodes) for s in specs) == 140
    assert_topological(entry_of(g).tape)

    def wide(*xs):
        acc = xs[0]
        for x in xs[1:]:
            acc = acc + x * 0.5
        return acc

    h = nv.compile(wide)
    xs = [nv.array(np.full(4, i, np.float32)) for i in range(40)]
    assert_same(np.asarray(h(*xs)), np.asarray(wide(*xs)))
    specs = fused_specs(h)
    assert specs and all(len(s.inputs) + len(s.outputs) <= 24 for s in specs)
    assert_topological(entry_of(h).tape)


def test_an_inner_value_the_function_returns_is_another_kernel_output():
    def f(x):
        a = nv.exp(x) * 2.0
        b = nv.sigmoid(a * a + 1.0)
        return a, b

    g = nv.compile(f)
    x = nv.array([0.1, 0.2, 0.3])
    for got, want in zip(g(x), f(x)):
        assert_same(np.asarray(got), np.asarray(want))
    (spec,) = fused_specs(g)
    assert len(spec.nodes) == 5 and len(spec.outputs) == 2
    tape = entry_of(g).tape
    assert len(tape.steps) == 1 and tape.outputs == (tape.steps[0].out, tape.steps[0].out + 1)


@pytest.mark.usefixtures("cpu_device")  # the read-after rule is the CPU's (fuse.fuse)
def test_a_value_read_after_the_group_is_another_kernel_output():
    def f(x):
        z = x * 2.0 - 1.0
        h = nv.maximum(z, 0.0)  # the root of z's group
        s = nv.sum(h, axis=1, keepdims=True)
        return z * s  # reads z after the group

    g = nv.compile(f)
    x = nv.array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    assert_same(np.asarray(g(x)), np.asarray(f(x)))
    first = fused_specs(g)[0]
    assert [n.op for n in first.nodes] == ["multiply", "subtract", "maximum"]
    assert len(first.outputs) == 2  # h, and z for the later multiply
    assert step_names(g, x) == [
        "compiled[multiply subtract maximum]",
        "sum",
        "broadcast_to",
        "multiply",
    ]
    assert_topological(entry_of(g).tape)


@pytest.mark.usefixtures("cpu_device")  # the read-after rule is the CPU's (fuse.fuse)
def test_a_reader_in_a_later_group_counts_at_that_groups_root():
    def f(x, a, b, c):
        p = x * a
        t = p * c  # reads p; joins the last group (traced before q)
        q = p * b
        s = nv.sum(q, axis=-1, keepdims=True)
        return t * s + t

    g = nv.compile(f)
    xs = [
        nv.array(np.random.default_rng(i).standard_normal((4, 8)).astype(np.float32))
        for i in range(4)
    ]
    assert_same(np.asarray(g(*xs)), np.asarray(f(*xs)))
    assert step_names(g, *xs) == [
        "compiled[multiply multiply]",
        "sum",
        "compiled[multiply multiply add]",
    ]
    assert_topological(entry_of(g).tape)


@pytest.mark.usefixtures("cpu_device")  # the split is the CPU's (see rewrites.split_addmm)
def test_a_bias_add_and_its_activation_after_a_matmul_take_one_kernel():
    rng = np.random.default_rng(3)
    x = nv.array(rng.standard_normal((5, 7)).astype(np.float32))
    w = nv.array(rng.standard_normal((7, 6)).astype(np.float32))
    b = nv.array(rng.standard_normal(6).astype(np.float32))

    def layer(x, w, b):
        z = nv.addmm(b, x, w)
        return nv.maximum(z, 0.0), nv.where(z > 0, 1.0, 0.5)  # every reader element-wise

    g = nv.compile(layer)
    for got, want in zip(g(x, w, b), layer(x, w, b)):
        assert_same(np.asarray(got), np.asarray(want))  # addmm's bits: same adds
    assert step_names(g, x, w, b) == ["matmul", "compiled[add maximum]", "compiled[greater select]"]

    def scaled(x, w, b):  # alpha != 1: addmm stays whole
        return nv.maximum(nv.addmm(b, x, w, alpha=2.0), 0.0)

    h = nv.compile(scaled)
    assert_same(np.asarray(h(x, w, b)), np.asarray(scaled(x, w, b)))
    assert step_names(h, x, w, b) == ["addmm", "maximum"]

    def read_by_a_reduction(x, w, b):  # a non-element-wise reader: no split
        z = nv.addmm(b, x, w)
        return nv.exp(z) / nv.sum(z)

    k = nv.compile(read_by_a_reduction)
    assert_same(np.asarray(k(x, w, b)), np.asarray(read_by_a_reduction(x, w, b)))
    assert step_names(k, x, w, b)[0] == "addmm"
    xh, wh, bh = (nv.astype(a, nv.float16) for a in (x, w, b))  # rounded once: no split
    assert step_names(g, xh, wh, bh)[0] == "addmm"


@pytest.mark.usefixtures("cpu_device")  # the split is the CPU's (see rewrites.split_addmm)
def test_a_bias_add_after_a_reshape_keeping_the_last_axis_fuses_with_its_readers():
    import nuvec.nn as nn

    rng = np.random.default_rng(6)
    lin = nn.Linear(7, 6)
    x = nv.array(rng.standard_normal((3, 5, 7)).astype(np.float32))
    r = nv.array(rng.standard_normal((3, 5, 6)).astype(np.float32))

    def relu(x):  # Linear on (B, L, D): flatten, addmm, reshape; then element-wise
        return nv.maximum(lin(x), 0.0)

    def residual(x, r):
        return r + lin(x)

    def reshape_drops_the_last_axis(x):
        z = nv.addmm(lin.bias, nv.reshape(x, (15, 7)), lin.weight.T)
        return nv.exp(nv.reshape(z, (3, 30)))

    for f, args in ((relu, (x,)), (residual, (x, r)), (reshape_drops_the_last_axis, (x,))):
        g = nv.compile(f)
        assert_same(np.asarray(g(*args)), np.asarray(f(*args)))  # addmm's bits
    assert "addmm" not in step_names(nv.compile(relu), x)
    assert "compiled[add maximum]" in step_names(nv.compile(relu), x)
    assert "addmm" not in step_names(nv.compile(residual), x, r)
    assert "addmm" in step_names(nv.compile(reshape_drops_the_last_axis), x)


@pytest.mark.usefixtures("cpu_device")  # the CPU's pass (see rewrites.permute_matmuls)
def test_a_product_read_through_transposes_is_written_in_their_layout():
    rng = np.random.default_rng(4)
    a = nv.array(rng.standard_normal((2, 3, 5, 4)).astype(np.float32))
    b = nv.array(rng.standard_normal((2, 3, 4, 6)).astype(np.float32))

    def merge_heads(a, b):  # (B, H, L, D) -> (B, L, H * D): a copy unless permuted
        return nv.reshape(nv.transpose(a @ b, (0, 2, 1, 3)), (2, 5, 18))

    def two_transposes(a, b):  # composed: (0, 2, 1, 3) then (1, 0, 2, 3)
        return nv.transpose(nv.transpose(a @ b, (0, 2, 1, 3)), (1, 0, 2, 3)) * 2.0

    def last_axis_moves(a, b):  # rows would not be contiguous: left alone
        return nv.transpose(a @ b, (0, 1, 3, 2)) * 2.0

    def read_twice(a, b):  # the product has another reader: left alone
        p = a @ b
        return nv.transpose(p, (0, 2, 1, 3)) * 2.0, p

    for fn, names in (
        (merge_heads, ["permuted_matmul", "reshape"]),
        (two_transposes, None),
        (last_axis_moves, None),
        (read_twice, None),
    ):
        g = nv.compile(fn)
        got, want = g(a, b), fn(a, b)
        for x, y in zip(
            got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]
        ):
            assert_same(np.asarray(x), np.asarray(y))
        if names:
            assert step_names(g, a, b) == names
    ai, bi = nv.astype(a * 10, nv.int32), nv.astype(b * 10, nv.int32)  # NumPy's matmul
    g = nv.compile(merge_heads)
    assert_same(np.asarray(g(ai, bi)), np.asarray(merge_heads(ai, bi)))
    assert step_names(g, ai, bi) == ["permuted_matmul", "reshape"]
    assert "permuted_matmul" in step_names(nv.compile(two_transposes), a, b)
    assert "permuted_matmul" not in step_names(nv.compile(last_axis_moves), a, b)
    assert "permuted_matmul" not in step_names(nv.compile(read_twice), a, b)


@pytest.mark.usefixtures("cpu_device")  # CPU-only behaviour (see tests/conftest.py)
def test_kernels_are_cached_on_disk_across_processes(tmp_path):
    code = (
        "import nuvec as nv\n"
        "nv.set_default_device(nv.cpu)\n"
        "from nuvec.backends.cpu import jit\n"
        "from nuvec.compile import wait_for_kernels\n"
        "f = nv.compile(lambda x: nv.tanh(x * 0.123 + 4.56) * x)\n"
        "y = f(nv.ones((3,))).tolist()[0]\n"
        "wait_for_kernels()\n"
        "print(y, jit.stats()['compiled'], jit.stats()['disk_hits'])\n"
    )
    env = dict(os.environ, NUVEC_CACHE_DIR=str(tmp_path))
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs[0][0] == runs[1][0]
    assert int(runs[0][1]) >= 1  # the first process compiled it
    assert runs[1][1] == "0" and int(runs[1][2]) >= 1  # the second loaded it from disk


@pytest.mark.usefixtures("cpu_device")  # CPU-only behaviour (see tests/conftest.py)
def test_kernels_built_in_the_background_swap_in_with_equal_results():
    import random
    from nuvec.compile import set_background_kernels, wait_for_kernels

    k = random.random()  # a kernel no run has built before
    fn = lambda x: nv.sigmoid(x * k - 0.5) * x + 2.0
    x = nv.array(np.linspace(-2, 2, 9, dtype=np.float32))
    prev = set_background_kernels(True)
    try:
        g = nv.compile(fn)
        first = np.asarray(g(x))  # runs unfused while the compiler works
        assert g.stats()["kernels_in_background"]
        assert wait_for_kernels(timeout=120)
        assert len(fused_specs(g)) == 1 and g.stats()["fused_kernels"] == 1
        assert_same(np.asarray(g(x)), first)
        assert_same(first, np.asarray(fn(x)))
        assert g.stats()["traces"] == 1
    finally:
        set_background_kernels(prev)
