"""Step order: a reduction runs right after the step that makes its argument (while that
argument is in the cache), every step still after its arguments, and results are unchanged."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

import nuvec as nv
from nuvec.backends.runs import MAX_RUN, independent_runs
from training_step import adam_step, mlp

from conftest import assert_same, assert_topological, entry_of, step_names


@pytest.mark.usefixtures("cpu_device")  # the CPU's order (see compile/trace.py)
def test_a_reduction_moves_next_to_its_argument_and_results_stay():
    def f(x, w):
        g = nv.exp(x) * 2.0  # a large intermediate
        big = nv.matmul(g, w) + 1.0  # a matmul reading g, traced before the sum
        s = nv.sum(g, axis=0, keepdims=True)  # moves up to follow g
        m = nv.max(s, axis=1)  # a reduction of a hoisted reduction follows it
        return big, s, m

    x = nv.array(np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6))
    w = nv.array(np.ones((6, 3), np.float32) * 0.5)
    g = nv.compile(f)
    for got, want in zip(g(x, w), f(x, w)):
        assert_same(np.asarray(got), np.asarray(want))
    names = step_names(g, x, w)
    k = names.index("compiled[exp multiply]")
    assert names[k + 1 : k + 3] == ["sum", "max"], names
    assert "matmul" in names[k + 3 :], names
    assert_topological(entry_of(g).tape)


@pytest.fixture
def gathering(monkeypatch):
    """The CPU with CUDA's order: fused steps gathered, reductions where the trace put them
    (the order is pure logic over the draft; the CPU runs the steps one by one)."""
    from nuvec.backends.cpu.backend import CpuBackend

    policy = dataclasses.replace(CpuBackend.policy, hoist_reductions=False, gather_kernels=True)
    monkeypatch.setattr(CpuBackend, "policy", policy)


def _fused(step) -> bool:
    return step.prim.name == "compiled"


@pytest.mark.usefixtures("cpu_device", "gathering")
def test_fused_steps_wait_for_their_first_reader_and_independent_ones_join():
    def f(x, w):
        a = nv.exp(x) * 2.0  # read by the product: placed right before it
        b = nv.sin(x) + 1.0  # read by nothing else: waits to the end
        c = nv.matmul(a, w)
        d = nv.tanh(c) * 3.0  # waits to the end too, beside b
        return b, d

    x = nv.array(np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6))
    w = nv.array(np.linspace(0, 1, 18, dtype=np.float32).reshape(6, 3))
    g = nv.compile(f)
    for got, want in zip(g(x, w), f(x, w)):
        assert_same(np.asarray(got), np.asarray(want))
    names = step_names(g, x, w)
    assert names == [
        "compiled[exp multiply]",
        "matmul",
        "compiled[sin add]",
        "compiled[tanh multiply]",
    ]
    tape = entry_of(g).tape
    assert_topological(tape)
    assert independent_runs(tape.steps, _fused) == [(2, 4)]


@pytest.mark.usefixtures("cpu_device", "gathering")
def test_an_adam_steps_parameter_updates_become_one_run_with_the_same_bits():
    data = [
        (
            nv.array(np.random.default_rng(k).standard_normal((16, 12)).astype(np.float32)),
            nv.array(np.random.default_rng(k).integers(0, 5, 16).astype(np.int32)),
        )
        for k in range(3)
    ]
    runs = []
    for compiled in (False, True):
        t = adam_step(lambda: mlp(12, 20, 20, 5), seed=3, compiled=compiled)
        losses = [t.step(x, y) for x, y in data * 2]
        nv.eval(losses, t.state)
        runs.append([np.asarray(v) for v in losses])
        runs[-1] += [np.asarray(v) for _, v in nv.utils.tree_flatten(t.model.parameters())]
    for got, want in zip(runs[1], runs[0]):
        assert_same(got, want)
    tape = entry_of(t.step).tape
    assert_topological(tape)
    updates = [k for k, s in enumerate(tape.steps) if _fused(s) and s.nout == 3]
    assert len(updates) == 6  # m, v and the parameter, for each of the 6 parameters
    assert (updates[0], updates[-1] + 1) in independent_runs(tape.steps, _fused)


def test_independent_runs_stop_at_a_reader_of_the_run_and_at_other_steps():
    def step(args, out, nout=1, fused=True):
        return SimpleNamespace(args=args, out=out, nout=nout, fused=fused)

    steps = [
        step((0,), 10),  # run 1
        step((1,), 11, nout=2),  # run 1
        step((0, 1), 13),  # run 1
        step((12,), 14),  # reads run 1's output: starts run 2
        step((0,), 15),  # run 2
        step((15,), 16, fused=False),  # another kind of step ends run 2
        step((16,), 17),  # alone
    ]
    assert independent_runs(steps, lambda s: s.fused) == [(0, 3), (3, 5)]
    many = [step((0,), 10 + k) for k in range(MAX_RUN + 3)]
    assert independent_runs(many, lambda s: s.fused) == [(0, MAX_RUN), (MAX_RUN, MAX_RUN + 3)]
