"""RNN, GRU, LSTM, the transformer decoder and Upsample against NumPy references."""

import math

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn

RNG = np.random.default_rng(5)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def close(a, b, rtol=1e-5, atol=1e-5):
    a = np.asarray(a)
    assert a.shape == np.shape(b), (a.shape, np.shape(b))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def P(m, name):
    return np.asarray(m[name], np.float64)


@pytest.mark.parametrize("bias", [True, False])
def test_rnn_against_numpy(bias):
    m = nn.RNN(3, 4, bias=bias)
    x, h0 = rand(2, 5, 3), rand(2, 4)
    for hidden in (None, h0):
        h = np.zeros((2, 4)) if hidden is None else h0.astype(np.float64)
        ref = []
        for t in range(5):
            pre = x[:, t] @ P(m, "Wxh").T + h @ P(m, "Whh").T + (P(m, "bias") if bias else 0)
            h = np.tanh(pre)
            ref.append(h)
        got = m(nv.array(x), None if hidden is None else nv.array(hidden))
        close(got, np.stack(ref, 1))
    relu = nn.RNN(3, 4, nonlinearity=nn.relu)
    assert np.asarray(relu(nv.array(x))).min() >= 0
    assert relu(nv.array(x[0])).shape == (5, 4)
    with pytest.raises(ValueError, match="callable"):
        nn.RNN(3, 4, nonlinearity="tanh")
    with pytest.raises(ValueError, match="RNN"):
        m(nv.ones((2, 5, 7)))


@pytest.mark.parametrize("bias", [True, False])
def test_gru_against_numpy(bias):
    m = nn.GRU(3, 4, bias=bias)
    x, h0 = rand(2, 6, 3), rand(2, 4)
    Wx, Wh = P(m, "Wx"), P(m, "Wh")
    b = P(m, "b") if bias else np.zeros(12)
    bhn = P(m, "bhn") if bias else np.zeros(4)
    for hidden in (None, h0):
        h = np.zeros((2, 4)) if hidden is None else h0.astype(np.float64)
        ref = []
        for t in range(6):
            gx = x[:, t] @ Wx.T + b
            gh = h @ Wh.T
            r = sigmoid(gx[:, :4] + gh[:, :4])
            z = sigmoid(gx[:, 4:8] + gh[:, 4:8])
            n = np.tanh(gx[:, 8:] + r * (gh[:, 8:] + bhn))
            h = (1 - z) * n + z * h
            ref.append(h)
        got = m(nv.array(x), None if hidden is None else nv.array(hidden))
        close(got, np.stack(ref, 1))
    close(m(nv.array(x)), m(nv.array(x), nv.zeros((2, 4))))


def test_lstm_against_numpy_and_gradient():
    m = nn.LSTM(3, 4)
    x, h0, c0 = rand(2, 5, 3), rand(2, 4), rand(2, 4)
    Wx, Wh, b = P(m, "Wx"), P(m, "Wh"), P(m, "bias")
    h, c = h0.astype(np.float64), c0.astype(np.float64)
    hs, cs = [], []
    for t in range(5):
        g = x[:, t] @ Wx.T + h @ Wh.T + b
        i, f, gg, o = sigmoid(g[:, :4]), sigmoid(g[:, 4:8]), np.tanh(g[:, 8:12]), sigmoid(g[:, 12:])
        c = f * c + i * gg
        h = o * np.tanh(c)
        hs.append(h)
        cs.append(c)
    got_h, got_c = m(nv.array(x), hidden=nv.array(h0), cell=nv.array(c0))
    close(got_h, np.stack(hs, 1))
    close(got_c, np.stack(cs, 1))

    # the gradient flows through every step: finite differences on one input
    def loss(v):
        return m(v)[0][:, -1].sum()

    g = np.asarray(nv.grad(loss)(nv.array(x)))
    eps = 1e-2
    xp, xm = x.copy(), x.copy()
    xp[0, 0, 1] += eps
    xm[0, 0, 1] -= eps
    fd = (loss(nv.array(xp)).item() - loss(nv.array(xm)).item()) / (2 * eps)
    assert abs(g[0, 0, 1] - fd) < 1e-3


@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_decoder_layer_is_its_composition(norm_first):
    nv.random.seed(1)
    layer = nn.TransformerDecoderLayer(8, 2, mlp_dims=16, norm_first=norm_first)
    x, mem = nv.array(rand(2, 3, 8)), nv.array(rand(2, 4, 8))
    mask = nn.MultiHeadAttention.create_additive_causal_mask(3)
    got = layer(x, mem, mask, None)
    sa, ca = layer.self_attention, layer.cross_attention
    mlp = lambda v: layer.linear2(nn.relu(layer.linear1(v)))  # noqa: E731
    if norm_first:
        y = layer.ln1(x)
        h = x + sa(y, y, y, mask)
        y = layer.ln2(h)
        h = h + ca(y, mem, mem, None)
        want = h + mlp(layer.ln3(h))
    else:
        h = layer.ln1(x + sa(x, x, x, mask))
        h = layer.ln2(h + ca(h, mem, mem, None))
        want = layer.ln3(h + mlp(h))
    close(got, np.asarray(want), atol=1e-6)


def test_transformer_wires_encoder_into_decoder():
    nv.random.seed(2)
    model = nn.Transformer(
        dims=8, num_heads=2, num_encoder_layers=1, num_decoder_layers=2, mlp_dims=16
    )
    src, tgt = nv.array(rand(2, 5, 8)), nv.array(rand(2, 3, 8))
    mask = nn.MultiHeadAttention.create_additive_causal_mask(3)
    want = model.decoder(tgt, model.encoder(src, None), mask, None)
    close(model(src, tgt, None, mask, None), np.asarray(want), atol=1e-6)
    assert len(model.decoder.layers) == 2
    ident = nn.Transformer(
        dims=8, num_heads=2, custom_encoder=nn.Identity(), custom_decoder=nn.Identity()
    )
    assert isinstance(ident.encoder, nn.Identity) and isinstance(ident.decoder, nn.Identity)


# -- Upsample ------------------------------------------------------------------------------
def interp_axis(x, axis, coords):
    """Linear interpolation along ``axis`` at ``coords`` (edges clamped), by np.interp."""
    return np.apply_along_axis(lambda v: np.interp(coords, np.arange(len(v)), v), axis, x)


@pytest.mark.parametrize("align", [False, True])
def test_upsample_linear_against_np_interp(align):
    x = rand(2, 3, 4, 2)
    for sh, sw in [(2, 2), (3, 0.5), (2, 1.5)]:  # sizes n * s exact
        y = nn.Upsample((sh, sw), mode="linear", align_corners=align)(nv.array(x))
        ref = x.astype(np.float64)
        for axis, (n, s) in enumerate([(3, sh), (4, sw)], start=1):
            m = int(n * s)
            if align:
                c = np.arange(m) * ((n - 1) / max(m - 1, 1))
            else:
                c = (np.arange(m) + 0.5) / s - 0.5
            ref = interp_axis(ref, axis, c)
        close(y, ref)


def test_upsample_cubic_against_the_2d_formula():
    # the weights sum to 1: a constant stays constant
    const = np.full((1, 5, 3, 2), 2.5, np.float32)
    close(
        nn.Upsample(2, mode="cubic", align_corners=True)(nv.array(const)),
        np.full((1, 10, 6, 2), 2.5),
    )
    # the separable evaluation equals the 2-d sum of the 16 products of 1-d weights
    x = rand(1, 3, 4, 1)

    def keys(d, a=-0.75):
        d = abs(d)
        return (
            ((a + 2) * d - (a + 3)) * d * d + 1
            if d <= 1
            else ((((d - 5) * d + 8) * d - 4) * a if d <= 2 else 0.0)
        )

    def coords(n, s):
        return (np.arange(int(n * s)) + 0.5) / s - 0.5

    ref = np.zeros((1, 6, 8, 1))
    for i, ci in enumerate(coords(3, 2)):
        for j, cj in enumerate(coords(4, 2)):
            acc = 0.0
            for a in range(-1, 3):
                for b in range(-1, 3):
                    ri, rj = math.floor(ci) + a, math.floor(cj) + b
                    acc += (
                        keys(ci - ri)
                        * keys(cj - rj)
                        * x[0, min(max(ri, 0), 2), min(max(rj, 0), 3), 0]
                    )
            ref[0, i, j, 0] = acc
    close(nn.Upsample(2, mode="cubic")(nv.array(x)), ref)


def test_upsample_nearest():
    x = nv.arange(1, 5).reshape((1, 2, 2, 1))
    y = nn.Upsample(2)(x)
    assert y.dtype == nv.int32
    assert np.asarray(y)[0, :, :, 0].tolist() == [
        [1, 1, 2, 2],
        [1, 1, 2, 2],
        [3, 3, 4, 4],
        [3, 3, 4, 4],
    ]
    v = rand(1, 7, 1)
    # downsampling picks floor(i * n / m); upsampling rounds the centred coordinate
    close(nn.Upsample(3 / 7)(nv.array(v)), v[:, np.floor(np.arange(3) * 7 / 3).astype(int)])
    idx = np.round((np.arange(10) + 0.5) * (7 / 10) - 0.5).astype(int)
    close(nn.Upsample(10 / 7)(nv.array(v)), v[:, idx])


def test_upsample_antialias_downscale_by_two():
    v = rand(1, 8, 2)
    y = nn.Upsample(0.5, mode="linear", antialias=True)(nv.array(v))
    w = np.array([1, 3, 3, 1]) / 8
    pad = np.concatenate([v[:, :1] * 0, v, v[:, :1] * 0], 1)  # taps outside are dropped
    ref = np.stack([(pad[:, 2 * i : 2 * i + 4] * w[None, :, None]).sum(1) for i in range(4)], 1)
    ref[:, 0] = (v[:, :3] * (w[1:] / w[1:].sum())[None, :, None]).sum(1)
    ref[:, -1] = (v[:, -3:] * (w[:3] / w[:3].sum())[None, :, None]).sum(1)
    close(y, ref)
    # upscaling with antialias is plain interpolation for linear
    close(
        nn.Upsample(2, mode="linear", antialias=True)(nv.array(v)),
        np.asarray(nn.Upsample(2, mode="linear")(nv.array(v))),
    )


def test_upsample_dtypes_repr_and_errors():
    assert nn.Upsample(2, mode="linear")(nv.ones((1, 2, 2, 1), nv.float16)).dtype == nv.float16
    assert nn.Upsample(2, mode="linear")(nv.ones((1, 2, 1), nv.int32)).dtype == nv.float32
    assert (
        repr(nn.Upsample((2, 3)))
        == "Upsample(scale_factor=(2.0, 3.0), mode='nearest', align_corners=False)"
    )
    with pytest.raises(ValueError, match="mode"):
        nn.Upsample(2, mode="area")
    with pytest.raises(ValueError, match="antialias"):
        nn.Upsample(2, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="antialias"):
        nn.Upsample(2, mode="linear", antialias=True, align_corners=True)
    with pytest.raises(ValueError, match="spatial"):
        nn.Upsample((2, 2))(nv.ones((1, 4, 1)))
    with pytest.raises(ValueError, match="spatial"):
        nn.Upsample(2)(nv.ones((4, 1)))
