"""Arguments that MLX's vmap refuses to map over: pad's padding value and searchsorted's
sorted sequence (the other arguments map as usual)."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv


def test_pad_maps_over_the_array_not_the_value():
    x = nv.array(np.arange(18, dtype=np.float32).reshape(2, 3, 3))
    f = lambda a, v: nv.pad(a, ((1, 1), (1, 1)), constant_values=v)  # noqa: E731
    with pytest.raises(ValueError, match="pad: vmap over the padding value"):
        nv.vmap(f)(x, nv.array([3.0, 4.0]))
    out = nv.vmap(f, in_axes=(0, None))(x, nv.array(5.0))
    expected = np.pad(np.array(x), ((0, 0), (1, 1), (1, 1)), constant_values=5.0)
    np.testing.assert_array_equal(np.array(out), expected)
    # the value alone mapped, the array not: refused as well
    with pytest.raises(ValueError, match="pad: vmap over the padding value"):
        nv.vmap(f, in_axes=(None, 0))(x[0], nv.array([3.0, 4.0]))


def test_searchsorted_maps_over_the_values_only():
    seq = nv.arange(8, dtype=nv.float32)
    vals = nv.array(np.linspace(-1, 9, 15, dtype=np.float32).reshape(3, 5))
    out = nv.vmap(lambda v: nv.searchsorted(seq, v))(vals)
    np.testing.assert_array_equal(np.array(out), np.searchsorted(np.array(seq), np.array(vals)))
    with pytest.raises(ValueError, match="searchsorted: vmap over the sorted sequence"):
        nv.vmap(lambda s: nv.searchsorted(s, nv.array([1.0])))(nv.zeros((3, 4)))
    # outside vmap the sequence passes through unchanged: compiled, differentiated
    f = nv.compile(lambda s, v: nv.searchsorted(s, v, side="right"))
    got = f(nv.array([1.0, 2.0, 2.0, 5.0]), nv.array([2.0, 6.0]))
    assert got.tolist() == [3, 4]
    g = nv.grad(lambda s: nv.sum(s) + nv.searchsorted(s, nv.array(1.5)).astype(nv.float32))(
        nv.array([1.0, 2.0])
    )
    assert g.tolist() == [1.0, 1.0]
