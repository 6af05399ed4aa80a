"""Compiled against uncompiled, bit for bit, on random graphs: element-wise ops over every
dtype family, scalar constants, broadcasts, reductions, reshapes and matmuls; shaped and
shapeless (replayed on a second set of shapes)."""

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import nuvec as nv

from conftest import assert_same, assert_topological, entry_of

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["int8", "int32", "uint8", "int64"]

F_UNARY = ["exp", "tanh", "sigmoid", "abs", "negative", "sin", "square", "erf", "floor"]
F_BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "divide"]
I_BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_xor"]


def np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def make_inputs(rng, dtypes, rows):
    xs = []
    for i, d in enumerate(dtypes):
        shape = [(rows, 3), (3,), (rows, 1)][i % 3]
        if d in FLOATS:
            a = rng.standard_normal(shape).astype(np.float32).astype(np_dtype(d))
        else:
            a = rng.integers(-20 if d.startswith("int") else 0, 20, shape).astype(d)
        xs.append(nv.array(a))
    return xs


def build(program, shapeless):
    """The function a program describes: a list of (op, operand indices, extra)."""

    def f(*xs):
        vals = list(xs)
        for op, args, extra in program:
            a = [vals[i % len(vals)] for i in args]
            if op in F_UNARY:
                x = a[0] if a[0].dtype.kind == "f" else nv.astype(a[0], nv.float32)
                v = getattr(nv, op)(x)
            elif op == "scalar":
                v = a[0] * extra + (1 if a[0].dtype.kind in "iu" else 0.5)
            elif op == "where":
                v = nv.where(a[0] > a[1], a[0], a[1])
            elif op == "sum":
                v = nv.sum(a[0], axis=-1, keepdims=True)
            elif op == "reshape":
                v = nv.reshape(nv.reshape(a[0], (-1,)), a[0].shape)
            elif op == "matmul":
                x = a[0] if a[0].dtype.kind == "f" else nv.astype(a[0], nv.float32)
                v = x @ nv.ones((x.shape[-1], x.shape[-1]), dtype=x.dtype)
            elif op == "cast":
                v = nv.astype(nv.astype(a[0], extra), a[0].dtype)
            else:
                if op.startswith("bitwise"):
                    a = [x if x.dtype.kind in "iub" else nv.astype(x, nv.int32) for x in a]
                v = getattr(nv, op)(a[0], a[1])
            vals.append(v)
        return vals[len(xs) :]

    return f


@st.composite
def programs(draw, shapeless):
    kind = draw(st.sampled_from(["float", "int", "mixed"]))
    if kind == "float":
        dtypes = [draw(st.sampled_from(FLOATS))] * 3
    elif kind == "int":
        dtypes = [draw(st.sampled_from(INTS))] * 3
    else:
        dtypes = [draw(st.sampled_from(FLOATS)), draw(st.sampled_from(INTS)), "float32"]
    ops = (
        F_UNARY + F_BINARY + ["scalar", "where", "sum", "cast"]
        if kind != "int"
        else I_BINARY + ["scalar", "where", "sum", "cast", "exp"]
    )
    if not shapeless:
        ops = ops + ["reshape", "matmul"]
    program = []
    for _ in range(draw(st.integers(4, 14))):
        op = draw(st.sampled_from(ops))
        args = (draw(st.integers(0, 30)), draw(st.integers(0, 30)))
        extra = None
        if op == "scalar":
            extra = (
                draw(st.sampled_from([2, 3, 5]))
                if kind == "int"
                else draw(st.sampled_from([1.5, -0.25, 3.0]))
            )
        elif op == "cast":
            extra = draw(st.sampled_from(["float32", "int32", "float16", "bool"]))
        program.append((op, args, extra))
    return dtypes, program, draw(st.integers(0, 2**31))


def check(f, g, xs):
    for a, b in zip(g(*xs), f(*xs)):
        assert_same(np.asarray(a), np.asarray(b))


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(shapeless=False))
def test_shaped_compile_equals_uncompiled(case):
    dtypes, program, seed = case
    f = build(program, False)
    xs = make_inputs(np.random.default_rng(seed), dtypes, 2)
    check(f, nv.compile(f), xs)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(shapeless=True))
def test_shapeless_compile_equals_uncompiled_on_other_shapes(case):
    dtypes, program, seed = case
    f = build(program, True)
    g = nv.compile(f, shapeless=True)
    rng = np.random.default_rng(seed)
    for rows in (2, 5):
        check(f, g, make_inputs(rng, dtypes, rows))
    assert g.stats()["traces"] == 1


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(shapeless=False), st.lists(st.integers(0, 20), min_size=1, max_size=2))
def test_inner_values_read_by_later_steps_compile_equal_uncompiled(case, keep):
    """Only a few values are returned, so most intermediates are read inside the graph alone:
    fused groups take members whose values later steps read (several kernel outputs)."""
    dtypes, program, seed = case
    full = build(program, False)

    def f(*xs):
        vals = full(*xs)
        return [vals[k % len(vals)] for k in keep] + [vals[-1]]

    xs = make_inputs(np.random.default_rng(seed), dtypes, 4)
    g = nv.compile(f)
    check(f, g, xs)
    assert_topological(entry_of(g).tape)
