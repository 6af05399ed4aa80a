"""nv.fast (rms_norm, layer_norm, rope, scaled_dot_product_attention) and nv.conv1d/2d/3d
against NumPy references."""
from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn

RNG = np.random.default_rng(11)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_rms_norm_and_layer_norm_match_numpy():
    x, w, b = randn(3, 5, 8), randn(8), randn(8)
    ms = np.mean(x * x, -1, keepdims=True)
    np.testing.assert_allclose(np.asarray(nv.fast.rms_norm(nv.array(x), nv.array(w), 1e-5)),
                               w * x / np.sqrt(ms + 1e-5), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(nv.fast.rms_norm(nv.array(x), None, 1e-5)),
                               x / np.sqrt(ms + 1e-5), rtol=1e-5, atol=1e-6)
    xc = x - x.mean(-1, keepdims=True)
    ref = xc / np.sqrt((xc * xc).mean(-1, keepdims=True) + 1e-4)
    got = nv.fast.layer_norm(nv.array(x), nv.array(w), nv.array(b), 1e-4)
    np.testing.assert_allclose(np.asarray(got), ref * w + b, rtol=1e-5, atol=1e-5)
    got = nv.fast.layer_norm(nv.array(x), None, None, 1e-4)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-5)


def test_norm_errors_name_the_op():
    with pytest.raises(ValueError, match="rms_norm: weight must have shape"):
        nv.fast.rms_norm(nv.ones((2, 4)), nv.ones((3,)), 1e-5)
    with pytest.raises(ValueError, match="layer_norm: eps must be positive"):
        nv.fast.layer_norm(nv.ones((2, 4)), None, None, 0.0)


def _rope_ref(x, dims, traditional, base, scale, offset):
    half = dims // 2
    inv = base ** (-np.arange(half) * 2.0 / dims)
    theta = (np.arange(offset, offset + x.shape[-2]) * scale)[:, None] * inv[None]
    c, s = np.cos(theta), np.sin(theta)
    out = x.astype(np.float64).copy()
    if traditional:
        a, b = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2], out[..., 1:dims:2] = a * c - b * s, a * s + b * c
    else:
        a, b = x[..., :half], x[..., half:dims]
        out[..., :half], out[..., half:dims] = a * c - b * s, a * s + b * c
    return out


@pytest.mark.parametrize("traditional", [False, True])
def test_rope_matches_numpy_and_the_layer(traditional):
    x = randn(2, 7, 10)
    got = nv.fast.rope(nv.array(x), 8, traditional=traditional, base=10000.0, scale=0.5,
                       offset=3)
    np.testing.assert_allclose(np.asarray(got), _rope_ref(x, 8, traditional, 10000.0, 0.5, 3),
                               rtol=1e-4, atol=1e-4)
    layer = nn.RoPE(8, traditional=traditional, scale=0.5)(nv.array(x), offset=3)
    np.testing.assert_array_equal(np.asarray(layer), np.asarray(got))
    freqs = nv.array((10000.0 ** (np.arange(4) * 2.0 / 8)).astype(np.float32))
    via_freqs = nv.fast.rope(nv.array(x), 8, traditional=traditional, base=None, scale=0.5,
                             offset=3, freqs=freqs)
    np.testing.assert_allclose(np.asarray(via_freqs), np.asarray(got), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="exactly one of base and freqs"):
        nv.fast.rope(nv.array(x), 8, traditional=False, base=1.0, scale=1.0, offset=0,
                     freqs=freqs)
    with pytest.raises(ValueError, match="positive even"):
        nv.fast.rope(nv.array(x), 7, traditional=False, base=1.0, scale=1.0, offset=0)


@pytest.mark.parametrize("mask", [None, "causal", "bool", "additive"])
def test_attention_matches_numpy(mask):
    q, k, v = randn(2, 3, 5, 4), randn(2, 3, 6, 4), randn(2, 3, 6, 4)
    s = (q * 0.5) @ np.swapaxes(k, -1, -2)
    m = None
    if mask == "causal":
        keep = (np.arange(5)[:, None] + 1) >= np.arange(6)[None]
        s = np.where(keep, s, -np.inf)
        m = "causal"
    elif mask == "bool":
        keep = RNG.random((5, 6)) > 0.3
        keep[:, 0] = True
        s = np.where(keep, s, -np.inf)
        m = nv.array(keep)
    elif mask == "additive":
        add = randn(5, 6)
        s = s + add
        m = nv.array(add)
    e = np.exp(s - s.max(-1, keepdims=True))
    want = (e / e.sum(-1, keepdims=True)) @ v
    got = nv.fast.scaled_dot_product_attention(nv.array(q), nv.array(k), nv.array(v),
                                               scale=0.5, mask=m)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def _conv_ref(x, w):
    """Naive N-d cross-correlation, stride 1, no padding, channels last."""
    kernel = w.shape[1:-1]
    out_sp = tuple(s - k + 1 for s, k in zip(x.shape[1:-1], kernel))
    y = np.zeros((x.shape[0], *out_sp, w.shape[0]))
    for idx in np.ndindex(*out_sp):
        win = x[(slice(None),) + tuple(slice(i, i + k) for i, k in zip(idx, kernel))]
        y[(slice(None),) + idx] = np.tensordot(win, w, axes=(list(range(1, win.ndim)),
                                                             list(range(1, w.ndim))))
    return y


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_top_level_convolutions(nd):
    x, w = randn(2, *([5] * nd), 3), randn(4, *([2] * nd), 3)
    fn = {1: nv.conv1d, 2: nv.conv2d, 3: nv.conv3d}[nd]
    np.testing.assert_allclose(np.asarray(fn(nv.array(x), nv.array(w))), _conv_ref(x, w),
                               rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match=f"conv{nd}d: weight must be {nd + 2}-d"):
        fn(nv.array(x), nv.ones((4, 3)))
