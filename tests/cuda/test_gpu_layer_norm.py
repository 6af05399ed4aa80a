"""nv.fast.layer_norm on the GPU as one primitive (nuvec/backends/cuda/norm.py and rows.py):
forward and backward passes against a float64 NumPy reference, rows of a warp and of a block,
with and without weight and bias, non-finite rows and strided inputs; compiled against eager
bit for bit; half precision keeps the composite form."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv
from devices import cuda_only
from nuvec.primitives.norm import LayerNorm

pytestmark = cuda_only
pytest.importorskip("cupy")

EPS = 1e-5


def _ref(x, w, b, g):
    """y and the gradients of sum(y * g) for x, w, b in float64."""
    x, g = x.astype(np.float64), g.astype(np.float64)
    n = x.shape[-1]
    m = x.mean(-1, keepdims=True)
    xc = x - m
    r = 1 / np.sqrt((xc * xc).mean(-1, keepdims=True) + EPS)
    xhat = xc * r
    y = xhat * (1 if w is None else w) + (0 if b is None else b)
    wg = g * (1 if w is None else w.astype(np.float64))
    dx = (wg - wg.sum(-1, keepdims=True) / n - xhat * (wg * xhat).sum(-1, keepdims=True) / n) * r
    lead = tuple(range(x.ndim - 1))
    return y, dx, (g * xhat).sum(lead), g.sum(lead)


def _case(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    n = shape[-1]
    x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal(n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    return x, w, b, g


def _run(x, w, b, g, nd):
    """Forward and gradients on the GPU, eager and compiled, as NumPy arrays."""
    names = [k for k, v in (("w", w), ("b", b)) if v is not None]

    def loss(xa, *p, ga):
        kw = dict(zip(names, p))
        return (nv.fast.layer_norm(xa, kw.get("w"), kw.get("b"), EPS) * ga).sum()

    def both(xa, ga, *p):
        kw = dict(zip(names, p))
        y = nv.fast.layer_norm(xa, kw.get("w"), kw.get("b"), EPS)
        grads = nv.grad(lambda xa, *p: loss(xa, *p, ga=ga), argnums=tuple(range(1 + len(p))))(
            xa, *p
        )
        return [y, *(grads if p else [grads])]  # one argnum: one gradient, as MLX

    with nv.stream(nv.gpu):
        xa, ga = nv.array(x, dtype=nd), nv.array(g, dtype=nd)
        p = [nv.array(v, dtype=nd) for v in (w, b) if v is not None]
        assert isinstance(nv.fast.layer_norm(xa, *([None] * 2), EPS)._prim, LayerNorm)
        eager = [np.array(a) for a in both(xa, ga, *p)]
        f = nv.compile(both)
        f(xa, ga, *p)
        compiled = [np.array(a) for a in f(xa, ga, *p)]
    return eager, compiled


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 128), (5, 1), (3, 7, 33), (4, 1024), (3, 1025), (2, 3000)])
@pytest.mark.parametrize("params", ["both", "weight", "bias", "none"])
def test_layer_norm_matches_reference(shape, dtype, params) -> None:
    x, w, b, g = _case(shape, dtype, sum(shape))
    w = w if params in ("both", "weight") else None
    b = b if params in ("both", "bias") else None
    nd = nv.float64 if dtype == np.float64 else nv.float32
    eager, compiled = _run(x, w, b, g, nd)
    y, dx, dw, db = _ref(x, w, b, g)
    want = [y, dx] + ([dw] if w is not None else []) + ([db] if b is not None else [])
    tol = 1e-10 if dtype == np.float64 else 3e-5 * max(1.0, np.sqrt(shape[-1]) / 8)
    for got, ref in zip(eager, want):
        assert got.dtype == dtype and got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * max(1.0, np.abs(ref).max()))
    for a, c in zip(eager, compiled):
        np.testing.assert_array_equal(c.view(np.uint8), a.view(np.uint8))


def test_non_finite_rows_and_strided_input() -> None:
    x, w, b, g = _case((6, 40), np.float32, 3)
    x[0, 3], x[1, :], x[2, 0] = np.nan, 7.0, np.inf  # NaN, a constant row, inf
    with nv.stream(nv.gpu):
        y = np.array(nv.fast.layer_norm(nv.array(x), nv.array(w), nv.array(b), EPS))
        t = nv.transpose(nv.array(np.ascontiguousarray(x.T)))  # x's values, strided
        yt = np.array(nv.fast.layer_norm(t, nv.array(w), nv.array(b), EPS))
    assert np.isnan(y[0]).all() and np.isnan(y[2]).all()
    np.testing.assert_array_equal(y[1], b)  # a constant row: xc = 0
    ref = _ref(x[3:], w, b, g[3:])[0]
    np.testing.assert_allclose(y[3:], ref, rtol=3e-5, atol=3e-5 * np.abs(ref).max())
    np.testing.assert_array_equal(yt.view(np.uint8), y.view(np.uint8))


def test_half_precision_keeps_the_composite() -> None:
    x, w, b, _ = _case((8, 16), np.float32, 4)
    with nv.stream(nv.gpu):
        h = nv.array(x).astype(nv.bfloat16)
        assert not isinstance(nv.fast.layer_norm(h, None, None, EPS)._prim, LayerNorm)
        y = nv.fast.layer_norm(h, None, None, EPS).astype(nv.float32)
    ref = _ref(np.array(h.astype(nv.float32)), None, None, x)[0]
    np.testing.assert_allclose(np.array(y), ref, atol=0.05)
