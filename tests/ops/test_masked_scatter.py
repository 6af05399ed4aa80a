"""``a[mask] = v`` (MLX's masked scatter) against NumPy's boolean-mask assignment, with its
vjp and jvp against finite differences / the explicit rule and vmap against a loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nuvec as nv
from _helpers import exact


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_masked_assignment_matches_numpy(d):
    shape = tuple(d.draw(st.lists(st.integers(0, 4), min_size=1, max_size=3)))
    k = d.draw(st.integers(0, len(shape)))  # the mask covers the first k axes
    rng = np.random.default_rng(d.draw(st.integers(0, 2**16)))
    x = rng.standard_normal(shape).astype(np.float32)
    mask = rng.random(shape[:k]) < 0.5
    count = int(mask.sum())
    trailing = shape[k:]
    form = d.draw(st.sampled_from(["slices", "scalar", "trailing"]))
    if form == "slices":  # one entry per selected slice, plus spare entries MLX ignores
        v = rng.standard_normal((count + d.draw(st.integers(0, 2)),) + trailing)
        v = v.astype(np.float32)
        expected_v = v[:count]
    elif form == "scalar":
        v = np.float32(2.5)
        expected_v = v
    else:  # one value broadcast to every selected slice
        v = rng.standard_normal(trailing).astype(np.float32)
        expected_v = v
    expected = x.copy()
    expected[mask] = expected_v
    a = exact(x)
    a[mask if d.draw(st.booleans()) else exact(mask)] = exact(v) if np.ndim(v) else float(v)
    np.testing.assert_array_equal(np.array(a), expected)


def test_masked_assignment_forms():
    a = nv.array([1.0, 2.0, 3.0])
    a[[True, False, True]] = nv.array([5.0, 6.0])
    assert a.tolist() == [5.0, 2.0, 6.0]
    a = nv.array([1.0, 2.0, 3.0])
    a[True] = 5.0
    assert a.tolist() == [5.0, 5.0, 5.0]
    a = nv.array([1, 2, 3])
    a[nv.array(False)] = 9
    assert a.tolist() == [1, 2, 3] and a.dtype == nv.int32
    # strided (sliced) target, mask and value
    t = nv.arange(10.0)[1::2]
    m = nv.array([False, True, False, False, True, False, False, True, False, False])[1::2]
    t[m] = nv.arange(-4.0, 0.0)[::2]
    assert t.tolist() == [-4.0, 3.0, 5.0, -2.0, 9.0]


def test_masked_assignment_errors():
    a = nv.zeros((4, 3))
    with pytest.raises(ValueError, match="setitem: a boolean mask must have the shape"):
        a[np.zeros((1, 3), bool)] = 0
    with pytest.raises(ValueError, match="setitem: a boolean mask must have the shape"):
        a[np.zeros((4, 3, 1), bool)] = 0
    with pytest.raises(ValueError, match="setitem: a masked value of shape"):
        a[np.zeros(4, bool)] = nv.zeros((2, 2, 3))
    with pytest.raises(TypeError, match="getitem.*boolean"):
        a[np.zeros(4, bool)]


def _scatter(x, m, src):
    x[m] = src
    return x


def test_masked_assignment_vjp_jvp():
    mask = nv.array([True, False, True, True])
    x = nv.array([1.0, 2.0, 3.0, 4.0])
    src = nv.array([10.0, 20.0, 30.0, 40.0])
    ct = nv.array([1.0, 2.0, 3.0, 4.0])
    _, (gx, gs) = nv.vjp(lambda a, b: _scatter(a, mask, b), [x, src], [ct])
    assert gx.tolist() == [0.0, 2.0, 0.0, 0.0]  # overwritten elements get no gradient
    assert gs.tolist() == [1.0, 3.0, 4.0, 0.0]  # each used entry gets its slot's cotangent
    _, (t,) = nv.jvp(lambda a, b: _scatter(a, mask, b), [x, src], [nv.ones(4), 2 * nv.ones(4)])
    assert t.tolist() == [2.0, 1.0, 2.0, 2.0]


@pytest.mark.parametrize("axes", [(0, 0, 0), (0, 0, None), (None, 0, 0), (0, None, 0)])
def test_masked_assignment_vmap_matches_loop(axes):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 9, (3, 5)).astype(np.int32)
    m = rng.random((3, 5)) < 0.6
    s = rng.integers(10, 20, (3, 5)).astype(np.int32)
    ins = [x, m, s]
    args = [exact(v) if ax is not None else exact(v[0]) for v, ax in zip(ins, axes)]
    out = nv.vmap(_scatter, in_axes=axes)(*args)
    for b in range(3):
        per = [v[b] if ax is not None else v[0] for v, ax in zip(ins, axes)]
        expected = per[0].copy()
        expected[per[1]] = per[2][: int(per[1].sum())]
        np.testing.assert_array_equal(np.array(out[b]), expected)
