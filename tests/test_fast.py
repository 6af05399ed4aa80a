"""nv.fast (rms_norm, layer_norm, rope, scaled_dot_product_attention) and nv.conv1d/2d/3d
against NumPy references."""

from __future__ import annotations

import math

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
    np.testing.assert_allclose(
        np.asarray(nv.fast.rms_norm(nv.array(x), nv.array(w), 1e-5)),
        w * x / np.sqrt(ms + 1e-5),
        rtol=1e-5,
        atol=1e-6,
    )
    np.testing.assert_allclose(
        np.asarray(nv.fast.rms_norm(nv.array(x), None, 1e-5)),
        x / np.sqrt(ms + 1e-5),
        rtol=1e-5,
        atol=1e-6,
    )
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
    got = nv.fast.rope(nv.array(x), 8, traditional=traditional, base=10000.0, scale=0.5, offset=3)
    np.testing.assert_allclose(
        np.asarray(got), _rope_ref(x, 8, traditional, 10000.0, 0.5, 3), rtol=1e-4, atol=1e-4
    )
    layer = nn.RoPE(8, traditional=traditional, scale=0.5)(nv.array(x), offset=3)
    np.testing.assert_array_equal(np.asarray(layer), np.asarray(got))
    freqs = nv.array((10000.0 ** (np.arange(4) * 2.0 / 8)).astype(np.float32))
    via_freqs = nv.fast.rope(
        nv.array(x), 8, traditional=traditional, base=None, scale=0.5, offset=3, freqs=freqs
    )
    np.testing.assert_allclose(np.asarray(via_freqs), np.asarray(got), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="exactly one of base and freqs"):
        nv.fast.rope(nv.array(x), 8, traditional=False, base=1.0, scale=1.0, offset=0, freqs=freqs)
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
    got = nv.fast.scaled_dot_product_attention(
        nv.array(q), nv.array(k), nv.array(v), scale=0.5, mask=m
    )
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def _conv_ref(x, w):
    """Naive N-d cross-correlation, stride 1, no padding, channels last."""
    kernel = w.shape[1:-1]
    out_sp = tuple(s - k + 1 for s, k in zip(x.shape[1:-1], kernel))
    y = np.zeros((x.shape[0], *out_sp, w.shape[0]))
    for idx in np.ndindex(*out_sp):
        win = x[(slice(None),) + tuple(slice(i, i + k) for i, k in zip(idx, kernel))]
        y[(slice(None),) + idx] = np.tensordot(
            win, w, axes=(list(range(1, win.ndim)), list(range(1, w.ndim)))
        )
    return y


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_top_level_convolutions(nd):
    x, w = randn(2, *([5] * nd), 3), randn(4, *([2] * nd), 3)
    fn = {1: nv.conv1d, 2: nv.conv2d, 3: nv.conv3d}[nd]
    np.testing.assert_allclose(
        np.asarray(fn(nv.array(x), nv.array(w))), _conv_ref(x, w), rtol=1e-4, atol=1e-4
    )
    with pytest.raises(ValueError, match=f"conv{nd}d: weight must be {nd + 2}-d"):
        fn(nv.array(x), nv.ones((4, 3)))


def _attention_ref(q, k, v, scale, mask=None, sinks=None):
    """float64 attention with kv heads repeated to the query heads (MLX's GQA grouping)."""
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    rep = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2)
    if mask is not None and mask.dtype == bool:
        s = np.where(mask, s, -np.inf)
    elif mask is not None:
        s = s + mask
    if sinks is not None:
        s = np.concatenate(
            [np.broadcast_to(sinks[None, :, None, None], s.shape[:-1] + (1,)), s], axis=-1
        )
    e = np.exp(s - s.max(-1, keepdims=True))
    w = e / e.sum(-1, keepdims=True)
    return (w[..., 1:] if sinks is not None else w) @ v


@pytest.mark.parametrize("mask", [None, "causal", "bool", "additive", "bool per head"])
@pytest.mark.parametrize("heads", [(4, 2), (6, 1), (3, 3)])
def test_grouped_query_attention_matches_repeated_kv_heads(mask, heads):
    nq, nkv = heads
    q, k, v = randn(2, nq, 3, 8), randn(2, nkv, 5, 8), randn(2, nkv, 5, 8)
    m, ref = None, None
    if mask == "causal":
        m, ref = "causal", (np.arange(3)[:, None] + 2) >= np.arange(5)[None]
    elif mask == "bool":
        ref = RNG.random((3, 5)) > 0.4
        ref[:, 0] = True
        m = nv.array(ref)
    elif mask == "bool per head":
        ref = RNG.random((nq, 3, 5)) > 0.4
        ref[..., 0] = True
        m = nv.array(ref)
    elif mask == "additive":
        ref = randn(2, nq, 3, 5)
        m = nv.array(ref)
    got = nv.fast.scaled_dot_product_attention(
        nv.array(q), nv.array(k), nv.array(v), scale=0.3, mask=m
    )
    assert got.shape == (2, nq, 3, 8)
    np.testing.assert_allclose(
        np.asarray(got), _attention_ref(q, k, v, 0.3, ref), rtol=2e-5, atol=2e-5
    )


def test_attention_sinks_take_weight_per_head():
    q, k, v = randn(1, 4, 3, 8), randn(1, 2, 5, 8), randn(1, 2, 5, 8)
    sinks = randn(4)
    for m, ref in ((None, None), ("causal", (np.arange(3)[:, None] + 2) >= np.arange(5)[None])):
        got = nv.fast.scaled_dot_product_attention(
            nv.array(q), nv.array(k), nv.array(v), scale=0.5, mask=m, sinks=nv.array(sinks)
        )
        np.testing.assert_allclose(
            np.asarray(got), _attention_ref(q, k, v, 0.5, ref, sinks), rtol=2e-5, atol=2e-5
        )


def test_attention_gradients_with_grouped_heads_match_the_reference():
    q, k, v = randn(1, 4, 3, 8), randn(1, 2, 5, 8), randn(1, 2, 5, 8)

    def loss(q, k, v):
        return (nv.fast.scaled_dot_product_attention(q, k, v, scale=0.4, mask="causal") ** 2).sum()

    def loss_tiled(q, k, v):  # kv heads repeated by hand: the same function
        k, v = nv.repeat(k, 2, axis=1), nv.repeat(v, 2, axis=1)
        return (nv.fast.scaled_dot_product_attention(q, k, v, scale=0.4, mask="causal") ** 2).sum()

    got = nv.grad(loss, argnums=(0, 1, 2))(nv.array(q), nv.array(k), nv.array(v))
    want = nv.grad(loss_tiled, argnums=(0, 1, 2))(nv.array(q), nv.array(k), nv.array(v))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-5)


def test_attention_errors_name_attention():
    q, kv = nv.ones((1, 4, 3, 8)), nv.ones((1, 3, 5, 8))
    with pytest.raises(
        ValueError,
        match="scaled_dot_product_attention: the number of query heads \\(4\\) must be a multiple",
    ):
        nv.fast.scaled_dot_product_attention(q, kv, kv, scale=1.0)
    kv = nv.ones((1, 2, 5, 8))
    with pytest.raises(ValueError, match="scaled_dot_product_attention: invalid mask"):
        nv.fast.scaled_dot_product_attention(q, kv, kv, scale=1.0, mask="upper")
    with pytest.raises(ValueError, match="scaled_dot_product_attention: mask with shape"):
        nv.fast.scaled_dot_product_attention(q, kv, kv, scale=1.0, mask=nv.ones((3, 4)))
    with pytest.raises(ValueError, match="scaled_dot_product_attention: sinks must have shape"):
        nv.fast.scaled_dot_product_attention(q, kv, kv, scale=1.0, sinks=nv.ones((2,)))
    with pytest.raises(ValueError, match="q and k must have the same last dimension"):
        nv.fast.scaled_dot_product_attention(q, nv.ones((1, 2, 5, 4)), kv, scale=1.0)


def test_rope_offset_array_per_batch_entry():
    x = randn(3, 2, 4, 8)
    offs = [0, 5, 2]
    got = nv.fast.rope(
        nv.array(x), 8, traditional=False, base=1e4, scale=0.5, offset=nv.array(offs)
    )
    for b, o in enumerate(offs):
        want = nv.fast.rope(
            nv.array(x[b : b + 1]), 8, traditional=False, base=1e4, scale=0.5, offset=o
        )
        np.testing.assert_allclose(
            np.asarray(got)[b : b + 1], np.asarray(want), rtol=1e-5, atol=1e-5
        )
    scalar = nv.fast.rope(nv.array(x), 8, traditional=True, base=1e4, scale=1.0, offset=nv.array(3))
    np.testing.assert_allclose(
        np.asarray(scalar),
        np.asarray(nv.fast.rope(nv.array(x), 8, traditional=True, base=1e4, scale=1.0, offset=3)),
        rtol=1e-5,
        atol=1e-5,
    )
    with pytest.raises(ValueError, match="rope: offset must"):
        nv.fast.rope(
            nv.array(x), 8, traditional=False, base=1e4, scale=1.0, offset=nv.array([1, 2])
        )
    with pytest.raises(ValueError, match="rope: the input must be floating"):
        nv.fast.rope(
            nv.ones((1, 2, 8), dtype=nv.int32), 8, traditional=False, base=1e4, scale=1.0, offset=0
        )


def test_cuda_kernel_writes_mlx_s_signature_and_needs_a_gpu():
    k = nv.fast.cuda_kernel(
        "k1", ["a", "b"], ["out"], "out[0] = a[0] * a_shape[0] + b[a_ndim];", header="// h\n"
    )
    with pytest.raises(ValueError, match="cuda_kernel k1: runs on a CUDA GPU only"):
        k(
            inputs=[nv.ones((3,)), nv.ones((2,))],
            output_shapes=[(1,)],
            output_dtypes=[nv.float32],
            grid=(1, 1, 1),
            threadgroup=(1, 1, 1),
            stream=nv.cpu,
        )
    with pytest.raises(ValueError, match="2 inputs named, 1 given"):
        k(
            inputs=[nv.ones((3,))],
            output_shapes=[(1,)],
            output_dtypes=[nv.float32],
            grid=(1, 1, 1),
            threadgroup=(1, 1, 1),
        )


def test_rope_angles_shared_between_calls_follow_the_offset():
    # q and k of every layer share one offset: their angles are computed once, yet a new
    # value of the same offset object (in-place update) or another dtype gets its own
    rng = np.random.default_rng(3)
    x = nv.array(rng.standard_normal((1, 2, 3, 8)).astype(np.float32))
    kw = dict(traditional=False, base=1e4, scale=1.0)
    pos = nv.array([4], nv.int32)
    first = nv.fast.rope(x, 8, offset=pos, **kw)
    again = nv.fast.rope(x, 8, offset=pos, **kw)
    assert np.array_equal(np.asarray(first), np.asarray(again))
    want = nv.fast.rope(x, 8, offset=nv.array([4], nv.int32), **kw)
    assert np.array_equal(np.asarray(first), np.asarray(want))
    pos[0] = 9
    moved = nv.fast.rope(x, 8, offset=pos, **kw)
    fresh = nv.fast.rope(x, 8, offset=nv.array([9], nv.int32), **kw)
    assert np.array_equal(np.asarray(moved), np.asarray(fresh))
    half = nv.fast.rope(x.astype(nv.float16), 8, offset=pos, **kw)
    assert half.dtype == nv.float16
    f = nv.compile(
        lambda a, p: nv.fast.rope(a, 8, offset=p, **kw) + nv.fast.rope(a, 8, offset=p, **kw)
    )
    assert np.array_equal(np.asarray(f(x, pos)), np.asarray(moved + moved))


@pytest.mark.parametrize("traditional", [False, True])
def test_rope_has_the_bits_of_mlx_composite(traditional):
    """rope equals, bit for bit, the composite that MLX's own fallback and tests write:
    inverse frequencies exp(-i log(base) / half), angles (offset + position) * scale * them."""
    dims, base, scale = 8, 10000.0, 0.75
    x = nv.random.uniform(shape=(2, 3, 5, 12), key=nv.random.key(4))
    for offset in (3, nv.array(3)):
        half = dims // 2
        pos = (nv.arange(5, dtype=nv.float32) + 3) * scale
        inv = nv.exp(-nv.arange(0.0, half, dtype=nv.float32) * (math.log(base) / half))
        theta = nv.expand_dims(pos, -1) * inv
        c, s = nv.cos(theta), nv.sin(theta)
        r = x[..., :dims]
        if traditional:
            x1, x2 = r[..., 0::2], r[..., 1::2]
            rot = nv.stack([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1).reshape(r.shape)
        else:
            x1, x2 = r[..., :half], r[..., half:]
            rot = nv.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)
        want = nv.concatenate([rot, x[..., dims:]], axis=-1)
        got = nv.fast.rope(x, dims, traditional=traditional, base=base, scale=scale, offset=offset)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
