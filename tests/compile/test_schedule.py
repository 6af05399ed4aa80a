"""Step order: a reduction runs right after the step that makes its argument (while that
argument is in the cache), every step still after its arguments, and results are unchanged."""

import numpy as np
import pytest

import nuvec as nv

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
