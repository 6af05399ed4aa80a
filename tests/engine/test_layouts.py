"""Layouts and threads: results never depend on strides, broadcasting, or the thread split.

Every case is compared bit for bit with the same kernel run on contiguous copies of the
inputs broadcast to the full shape (the plain vector loop), and exact ops with NumPy too.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_util import assert_bits_equal, assert_same, run1, values
from nuvec.codegen.ir import KernelSpec
from nuvec.backends.cpu import kernels

RNG = np.random.default_rng(7)

CASES = [  # (op, input dtypes, output dtype)
    ("add", ("float32", "float32"), "float32"),
    ("multiply", ("int32", "int32"), "int32"),
    ("exp", ("float32",), "float32"),
    ("tanh", ("bfloat16",), "bfloat16"),
    ("logaddexp", ("float64", "float64"), "float64"),
    ("multiply", ("complex64", "complex64"), "complex64"),
    ("select", ("bool", "float16", "float16"), "float16"),
    ("astype", ("float16",), "int8"),
    ("less", ("uint16", "uint16"), "bool"),
]


def _contig_reference(spec: KernelSpec, ins: list[np.ndarray], shape) -> list[np.ndarray]:
    full = [np.array(np.broadcast_to(x, shape), order="C") for x in ins]
    return kernels.run(spec, full, shape)


def _base(dtype: str, shape) -> np.ndarray:
    n = int(np.prod(shape)) if shape else 1
    return values(dtype, n, RNG).reshape(shape)


@pytest.mark.parametrize("op,ins,out", CASES)
def test_views_match_contiguous(op, ins, out) -> None:
    spec = KernelSpec.single(op, ins, out)
    shape = (5, 7, 6)
    makers = [
        lambda d: _base(d, (12, 16, 15))[::2, 1:15:2, ::-2][:5, :7, :6],  # steps, reversed
        lambda d: _base(d, (6, 7, 5)).transpose(2, 1, 0),  # transposed
        lambda d: _base(d, (3, 7, 6))[:1],  # broadcast axis 0
        lambda d: _base(d, (2, 3))[1, 2],  # 0-d scalar
        lambda d: _base(d, (5, 2, 3))[:, :1, 1:2],  # broadcast 1 and 2
    ]
    for start in range(5):
        views = [np.asarray(makers[(start + k) % 5](d)) for k, d in enumerate(ins)]
        got = kernels.run(spec, views, shape)
        want = _contig_reference(spec, views, shape)
        for g, w in zip(got, want):
            assert g.flags.c_contiguous and g.shape == shape
            assert_bits_equal(g, w, f"{op}{ins} layout {start}")


@pytest.mark.parametrize("shape", [(0,), (3, 0, 2), (0, 5), ()])
def test_empty_and_zero_dim(shape) -> None:
    a = _base("float32", shape)
    b = _base("float32", shape)
    got = run1("add", a, b)
    assert got.shape == shape and got.dtype == np.float32
    assert np.array_equal(got, a + b)


def test_scalar_broadcast_blocks() -> None:
    # scalar inputs on a long contiguous run go through the block buffer path
    x = values("float32", 100_003, RNG)
    s = np.array(1.25, np.float32)
    got = run1("multiply", x, s)
    assert_bits_equal(got, x * s, "x * scalar")
    col = values("float32", 300, RNG).reshape(300, 1)
    row = values("float32", 1000, RNG).reshape(1, 1000)
    got = run1("add", col, row)
    assert_bits_equal(got, col + row, "col + row")
    got = run1("exp", np.broadcast_to(col, (300, 1000)))
    want = _contig_reference(KernelSpec.single("exp", ("float32",), "float32"), [col], (300, 1000))[
        0
    ]
    assert_bits_equal(got, want, "exp of a broadcast column")


@pytest.mark.parametrize(
    "op,dt",
    [
        ("add", "float32"),
        ("sin", "float32"),
        ("erf", "float16"),
        ("power", "float64"),
        ("floor_divide", "int16"),
    ],
)
def test_threads_do_not_change_bits(op, dt) -> None:
    n = 1_000_003
    ins = [values(dt, n, RNG, "small" if dt.startswith("int") else "any")]
    if op in ("add", "power", "floor_divide"):
        ins.append(values(dt, n, RNG, "small" if dt.startswith("int") else "any"))
    prev = kernels.set_num_threads(1)
    try:
        one = run1(op, *ins)
        kernels.set_num_threads(4)
        four = run1(op, *ins)
    finally:
        kernels.set_num_threads(prev)
    assert_bits_equal(one, four, op)
    # and the same as in a short run (a different split of vector body and tail)
    part = run1(op, *[x[12345:12350] for x in ins])
    assert_bits_equal(part, one[12345:12350], op)


# ---- hypothesis: random shapes, broadcasting and strides --------------------------------------


@st.composite
def layouts(draw):
    nd = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=nd, max_size=nd)))
    ins = []
    for _ in range(2):
        # broadcast: drop leading axes, or set axes to 1
        k = draw(st.integers(0, nd))
        sub = list(shape[k:])
        for i in range(len(sub)):
            if draw(st.booleans()) and draw(st.booleans()):
                sub[i] = 1
        # build it as a view of a bigger array: step, reversal, transposition
        steps = [draw(st.sampled_from([1, 2, -1, -3])) for _ in sub]
        perm = draw(st.permutations(range(len(sub))))
        ins.append((tuple(sub), steps, perm))
    dtype = draw(st.sampled_from(["float32", "int64", "bfloat16", "complex64", "uint8"]))
    return shape, ins, dtype


def _make_view(sub, steps, perm, dtype):
    # an array of shape `sub` as a strided, reversed, transposed view of a base array
    inv = np.argsort(perm) if len(perm) else perm
    tshape = [sub[p] for p in perm]
    big = [max(1, n) * abs(s) + 2 for n, s in zip(tshape, [steps[p] for p in perm])]
    base = values(dtype, int(np.prod(big)) if big else 1, RNG).reshape(big)
    sl = []
    for n, s in zip(tshape, [steps[p] for p in perm]):
        sl.append(slice(0, n * s, s) if s > 0 else slice(n * -s, 0, s) if n else slice(0, 0))
    v = base[tuple(sl)] if sl else base.reshape(())
    v = v[tuple(slice(0, n) for n in tshape)]
    return v.transpose(inv) if len(perm) else v


@settings(max_examples=150, deadline=None)
@given(layouts())
def test_random_layouts(case) -> None:
    shape, ins, dtype = case
    arrs = [_make_view(sub, steps, perm, dtype) for sub, steps, perm in ins]
    for a, (sub, _, _) in zip(arrs, ins):
        assert a.shape == sub
    op = "add" if dtype != "uint8" else "bitwise_xor"
    spec = KernelSpec.single(op, (dtype, dtype), dtype)
    got = kernels.run(spec, arrs, shape)[0]
    want = _contig_reference(spec, arrs, shape)[0]
    # where two NaNs meet, which payload survives depends on the operand order the C compiler
    # picked for that loop (IEEE leaves it open): NaN equals NaN here, all else bit for bit
    assert_bits_equal(got, want, f"{op} {dtype} {shape}", nan_payloads=False)
    ref = np.add(*arrs) if op == "add" else np.bitwise_xor(*arrs)
    assert_same(
        got,
        np.array(np.broadcast_to(ref.astype(got.dtype), shape), order="C"),
        f"{op} {dtype} {shape} vs NumPy",
    )


def test_chunks_of_a_strided_broadcast_launch_do_not_change_bits() -> None:
    # threads claim chunks that start and end inside rows: a transposed input, a broadcast row
    # (the kernel's broadcast loop) and a broadcast column (expanded into blocks)
    shape = (1001, 1999)
    t = values("float32", shape[0] * shape[1], RNG).reshape(shape[::-1]).T
    row = values("float32", shape[1], RNG).reshape(1, shape[1])
    col = values("float32", shape[0], RNG).reshape(shape[0], 1)
    spec = KernelSpec.single("logaddexp", ("float32", "float32"), "float32")
    want = _contig_reference(spec, [t, row], shape)[0]
    want_col = _contig_reference(spec, [col, t], shape)[0]
    prev = kernels.set_num_threads(1)
    try:
        for n in (1, 2, 3, 7):
            kernels.set_num_threads(n)
            assert_bits_equal(kernels.run(spec, [t, row], shape)[0], want, f"{n} threads")
            assert_bits_equal(kernels.run(spec, [col, t], shape)[0], want_col, f"{n} threads")
    finally:
        kernels.set_num_threads(prev)


# ---- errors ----------------------------------------------------------------------------------


def test_bad_inputs_raise_clearly() -> None:
    spec = KernelSpec.single("add", ("float32", "float32"), "float32")
    a = np.ones(3, np.float32)
    with pytest.raises(ValueError, match="expected 2 inputs"):
        kernels.run(spec, [a], (3,))
    with pytest.raises(TypeError, match="dtype float64"):
        kernels.run(spec, [a, np.ones(3)], (3,))
    with pytest.raises(ValueError, match=r"does not broadcast to \(4,\)"):
        kernels.run(spec, [a, a], (4,))
    with pytest.raises(TypeError, match="expected a NumPy array"):
        kernels.run(spec, [a, [1.0, 2.0, 3.0]], (3,))
    with pytest.raises(TypeError, match="expected"):
        kernels.run(spec, [a, a.astype(">f4")], (3,))  # byte-swapped is another dtype


def test_outputs_are_fresh() -> None:
    a = np.arange(6, dtype=np.float32)
    o1 = run1("copy", a)
    o2 = run1("copy", a)
    assert o1.ctypes.data != o2.ctypes.data != a.ctypes.data
    o1[0] = 99
    assert a[0] == 0 and o2[0] == 0


def test_every_prebuilt_kernel_is_position_independent() -> None:
    """A long run (vector body + tail) equals one call per element (the scalar loop), for
    every single-op kernel: a compiler that fused or reordered only in vector code would
    show here."""
    from nuvec.codegen.prebuilt import prebuilt_specs

    rng = np.random.default_rng(11)
    n = 37
    for name, spec in prebuilt_specs():
        ins = [values(d, n, rng) for d in spec.inputs]
        full = kernels.run(spec, ins, (n,))
        for k in range(n):
            one = kernels.run(spec, [x[k : k + 1] for x in ins], (1,))
            for f, o in zip(full, one):
                assert_bits_equal(f[k : k + 1], o, f"{name} element {k}")


def test_broadcast_views_match_numpys():
    # the CPU's Broadcast: a view made in C, with np.broadcast_to's shape, strides and values
    from nuvec.backends.cpu._views import broadcast_view

    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 1, 4)).astype(np.float32)
    for src, shape in [
        (x, (3, 5, 4)),
        (x, (2, 3, 5, 4)),
        (x[:, :, ::2], (7, 3, 2, 2)),
        (x.transpose(2, 1, 0), (4, 6, 3)),
        (np.float32(2.5), (2, 3)),
        (x[:0], (2, 0, 1, 4)),
    ]:
        got, want = broadcast_view(src, shape), np.broadcast_to(src, shape)
        assert got.shape == want.shape and got.strides == want.strides
        np.testing.assert_array_equal(got, want)
        assert not got.flags.writeable
    for shape in [(3, 2, 3), (4,), (1, 5, 4)]:
        with pytest.raises(ValueError, match="cannot broadcast"):
            broadcast_view(x, shape)
