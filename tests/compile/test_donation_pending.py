"""A trace's first call while its fused kernels are still being built (background mode): the
graph it leaves lazy holds the fused nodes (``export_to_dot`` names them as MLX does), and a
fused node evaluated before its kernel is loaded runs its operations one by one, with the
fused kernel's bits and its buffer donation."""

from __future__ import annotations

import io
import random
import threading

import numpy as np
import pytest

import nuvec as nv
from nuvec.backends.cpu import kernels
from nuvec.compile import background

from conftest import assert_same, entry_of


@pytest.fixture
def held_worker():
    """Background kernels, with the worker held busy until the test releases it, so the
    kernels of a new trace are certainly not built while the test looks at its first call."""
    gate = threading.Event()
    prev = background.set_background_kernels(True)
    background.submit(gate.wait)
    try:
        yield gate
    finally:
        gate.set()
        background.wait_for_kernels()
        background.set_background_kernels(prev)


def _dot(*arrays) -> str:
    buf = io.StringIO()
    nv.export_to_dot(buf, *arrays)
    return buf.getvalue()


def _address(a) -> int:
    return np.asarray(a, copy=False).__array_interface__["data"][0]


@pytest.mark.usefixtures("cpu_device")
def test_first_call_graph_holds_the_fused_node_and_donates_before_the_kernel_exists(
    held_worker,
):
    c = 0.5 + random.random()  # a kernel no run has built before
    fn = lambda x: nv.sin(x) * c + 1.0  # noqa: E731
    want = np.asarray(fn(nv.arange(16, dtype=nv.float32)))
    g = nv.compile(fn)
    x = nv.arange(16, dtype=nv.float32)
    nv.eval(x)
    address = _address(x)
    out = g(x)
    e = entry_of(g)
    assert e.ready is not None and not e.ready.is_set()  # the kernel is not built
    (spec,) = [st.prim.spec for st in e.tape.steps if st.prim.name == "compiled"]
    assert spec not in kernels._kernels
    dot = _dot(out)
    assert "CompiledSinMultiplyAdd" in dot and '"Sin"' not in dot, dot
    del x  # only the graph holds the input now: the fused node may write over it
    nv.eval(out)
    assert spec not in kernels._kernels  # evaluated op by op
    assert _address(out) == address
    assert_same(np.asarray(out), want)
    held_worker.set()
    assert background.wait_for_kernels(timeout=120)
    assert spec in kernels._kernels
    again = g(nv.arange(16, dtype=nv.float32))
    assert_same(np.asarray(again), want)


def _programs():
    yield "several outputs", lambda x, y: (nv.exp(x) * y, nv.tanh(x - y) + 2.0)
    yield "select", lambda x, y: nv.where(x > y, x * 3.0, y - 1.0)
    yield "casts", lambda x, y: (x.astype(nv.float16) * 2).astype(nv.float32) + y
    yield "bfloat16", lambda x, y: nv.sigmoid(x.astype(nv.bfloat16)) * y.astype(nv.bfloat16)
    yield "int32", lambda x, y: (x.astype(nv.int32) * 3 + 7) // 2 - (y > 0)


def _data(dtype: str, shape: tuple, rng) -> np.ndarray:
    d = kernels._np_dtypes((dtype,))[0]
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if d.kind in "iu":
        return rng.integers(-50, 50, shape).astype(d)
    v = rng.standard_normal(shape).astype(np.float32) * 4
    v.flat[::7] = np.nan
    v.flat[1::11] = np.inf
    return v.astype(d)


@pytest.mark.usefixtures("cpu_device")
@pytest.mark.parametrize("name,fn", list(_programs()), ids=[p[0] for p in _programs()])
def test_a_fused_kernel_op_by_op_gives_its_bits(name, fn):
    from nuvec.backends.cpu.compiled import run_unfused

    from conftest import fused_specs

    rng = np.random.default_rng(5)
    g = nv.compile(fn)
    z = nv.zeros((3, 5))
    g(z, z)
    specs = fused_specs(g)
    assert specs
    for spec in specs:
        shape = (3, 5)
        ins = [_data(d, shape if i % 2 == 0 else (1, 5), rng) for i, d in enumerate(spec.inputs)]
        want = kernels.run(spec, ins, shape)
        got = run_unfused(spec, ins, shape)
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert_same(a, b)
        if len(got) > 1:
            assert len({id(a) for a in got}) == len(got)
