"""vmap's rules record no traced sizes: a vmapped function compiled shapeless replays on
inputs of other shapes without a new trace."""

from __future__ import annotations

import numpy as np

import nuvec as nv


def _traced_matmul():
    calls = [0]

    def fn(x, y):
        calls[0] += 1
        return nv.matmul(x, y)

    return fn, calls


def test_vmapped_matmul_with_broadcast_batch_axes_replays_shapeless():
    fn, calls = _traced_matmul()
    f = nv.compile(nv.vmap(fn, in_axes=(0, 1)), shapeless=True)
    r = np.random.default_rng(0)
    for xs, ys in (((2, 3, 1, 4, 5), (1, 2, 5, 6)), ((3, 2, 1, 4, 5), (2, 3, 5, 6))):
        x, y = r.standard_normal(xs, np.float32), r.standard_normal(ys, np.float32)
        out = f(nv.array(x), nv.array(y))
        expected = np.stack([x[i] @ y[:, i] for i in range(x.shape[0])])
        np.testing.assert_allclose(np.array(out), expected, rtol=1e-5, atol=1e-5)
    assert calls[0] == 1  # one trace for both shapes


def test_vmapped_matmul_and_addmm_with_unbatched_operand_replay_shapeless():
    fn, calls = _traced_matmul()
    f = nv.compile(nv.vmap(fn, in_axes=(0, None)), shapeless=True)
    g = nv.compile(nv.vmap(lambda c, a, b: nv.addmm(c, a, b), in_axes=(0, 0, None)), shapeless=True)
    r = np.random.default_rng(1)
    for xs, ys in (((2, 3, 1, 4, 5), (1, 2, 5, 6)), ((2, 3, 1, 7, 2), (1, 2, 2, 3))):
        x, y = r.standard_normal(xs, np.float32), r.standard_normal(ys, np.float32)
        np.testing.assert_allclose(
            np.array(f(nv.array(x), nv.array(y))), x @ y, rtol=1e-5, atol=1e-5
        )
        c = r.standard_normal((x @ y).shape).astype(np.float32)
        got = g(nv.array(c), nv.array(x), nv.array(y))
        np.testing.assert_allclose(np.array(got), c + x @ y, rtol=1e-5, atol=1e-5)
    assert calls[0] == 1
