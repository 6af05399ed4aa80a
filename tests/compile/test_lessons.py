"""Regressions from the peers' bug trackers. The cache survives address reuse of
function objects; CSE and constant merging are linear (a scalar used by 40,000 operations);
a failing C compiler falls back to unfused execution with one warning carrying its message;
every call returns fresh outputs; a compiled step that mutates state gives exactly the
uncompiled step's results."""

import gc
import random
import stat
import warnings

import numpy as np

import pytest

import nuvec as nv
from nuvec.backends.cpu import jit
from nuvec.compile import passes

from conftest import assert_same, entry_of, unfused


def test_a_new_function_at_a_reused_address_never_gets_another_ones_trace():
    x = nv.array([1.0, 2.0])
    ids = set()
    for i in range(300):
        c = nv.array([float(i), i + 0.5])  # captured: a different constant
        f = nv.compile(lambda x, c=c: x * 2.0 + c)  # ... in the same code each time
        ids.add(id(f))
        assert f(x).tolist() == [2.0 + i, 4.5 + i]
        del f  # freed at once (no cycle)
    assert len(ids) < 300  # addresses were reused, and every function was still right


def test_merging_and_cse_stay_linear_for_a_scalar_used_40000_times():
    def chain(n):
        def f(x):
            for _ in range(n):
                x = x * 2.0 + 2.0  # 2n operations on one scalar constant
            return x

        return f

    cpu = {}
    # Python's collector is off while timing: in the full suite (a large heap) its
    # collections made the ratio 8-9x, against 4.3x alone; this checks nuvec's passes.
    # Best of three runs (with two, a clean-clone CI run once measured 8.7x: the 20,000-op
    # trace's first build after the rest of the suite).
    gc.collect()
    gc.disable()
    try:
        with unfused():
            for n in (5_000, 20_000):
                for _ in range(3):
                    g = nv.compile(chain(n))
                    out = g(nv.zeros((2,)))
                    tape = entry_of(g).tape
                    assert len(tape.steps) == 2 * n and len(tape.consts) == 1
                    st = g.stats()  # CPU time of this thread: other processes' load does not count
                    t = st["simplify_cpu_s"] + st["finalize_cpu_s"]
                    cpu[n] = min(cpu.get(n, t), t)
    finally:
        gc.enable()
    assert np.isinf(np.asarray(out)).all()
    assert cpu[20_000] < 1.0, cpu  # 40,000 operations: well under a second
    assert cpu[20_000] < 8 * cpu[5_000], cpu  # 4x the operations: about 4x the time


@pytest.mark.usefixtures("cpu_device")  # CPU-only behaviour (see tests/conftest.py)
def test_a_failing_c_compiler_means_unfused_execution_and_one_warning(monkeypatch, tmp_path):
    cc = tmp_path / "broken-cc"
    cc.write_text("#!/bin/sh\necho 'broken-cc: this compiler is out of order' >&2\nexit 3\n")
    cc.chmod(cc.stat().st_mode | stat.S_IEXEC)
    k1, k2 = random.random(), random.random()  # kernels no run has built before
    fns = [lambda x: nv.tanh(x * k1) + 1.0, lambda x: nv.exp(x - k2) * 3.0]
    x = nv.array([0.5, 1.5])
    want = [np.asarray(f(x)) for f in fns]  # single ops, loaded before the switch
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv("NUVEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(passes, "_warned_compiler", [False])
    jit.clear_memory_cache()
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got = [nv.compile(f)(x) for f in fns]
        msgs = [str(m.message) for m in w if "fused kernels cannot be built" in str(m.message)]
        assert len(msgs) == 1 and "this compiler is out of order" in msgs[0]
        for a, b in zip(got, want):
            assert_same(np.asarray(a), b)
    finally:
        monkeypatch.undo()
        jit.clear_memory_cache()


def test_every_call_returns_fresh_outputs():
    w = nv.array([1.0, 2.0])
    f = nv.compile(lambda x: (x + w, w))
    x = nv.array([0.0, 0.0])
    first = f(x)
    first[0][0] = 9.0
    first[1][1] = 9.0
    second = f(x)
    assert second[0].tolist() == [1.0, 2.0] and second[1].tolist() == [1.0, 2.0]
    assert all(a is not b for a, b in zip(first, second))


def test_a_mutating_step_gives_the_uncompiled_results():
    def run(compiled):
        state = {"count": nv.array(0), "ema": nv.zeros((3,)), "hist": [nv.zeros((3,))]}

        def step(x):
            state["count"] = state["count"] + 1
            state["ema"] = state["ema"] * 0.9 + x * 0.1
            state["hist"][0] = nv.maximum(state["hist"][0], state["ema"])
            return state["ema"].sum()

        if compiled:
            step = nv.compile(step, inputs=state, outputs=state)
        outs = [step(nv.array([1.0, 2.0, 3.0]) * k) for k in range(1, 6)]
        nv.eval(outs, state)
        return outs, state, step

    plain, comp = run(False), run(True)
    for a, b in zip(plain[0], comp[0]):
        assert_same(np.asarray(a), np.asarray(b))
    for k in ("count", "ema"):
        assert_same(np.asarray(plain[1][k]), np.asarray(comp[1][k]))
    assert_same(np.asarray(plain[1]["hist"][0]), np.asarray(comp[1]["hist"][0]))
    assert comp[2].stats()["traces"] == 1
