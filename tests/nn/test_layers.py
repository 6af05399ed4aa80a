"""Layers against NumPy references (forward, and gradients where a layer has its own math)."""

import math

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn

RNG = np.random.default_rng(1234)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def npa(x):
    return np.asarray(x)


def close(a, b, rtol=1e-5, atol=1e-5):
    a = npa(a)
    assert a.shape == np.shape(b), (a.shape, np.shape(b))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# -- affine ------------------------------------------------------------------------------------
def test_linear_and_init_range():
    nv.random.seed(0)
    m = nn.Linear(5, 3)
    W, b = npa(m.weight), npa(m.bias)
    assert W.shape == (3, 5) and b.shape == (3,)
    k = 1 / math.sqrt(5)
    assert np.all(np.abs(W) <= k) and np.all(np.abs(b) <= k)
    x = rand(2, 4, 5)
    close(m(nv.array(x)), x @ W.T + b)
    m2 = nn.Linear(5, 3, bias=False)
    assert "bias" not in m2
    close(m2(nv.array(x)), x @ npa(m2.weight).T)


def test_bilinear():
    m = nn.Bilinear(3, 4, 2)
    x1, x2 = rand(5, 3), rand(5, 4)
    W, b = npa(m.weight), npa(m.bias)
    ref = np.einsum("ni,kji,nj->nk", x1, W, x2) + b
    close(m(nv.array(x1), nv.array(x2)), ref, rtol=1e-4)


def test_identity_sequential_embedding():
    x = rand(2, 3)
    assert nn.Identity(1, foo=2)(nv.array(x)) is not None
    close(nn.Identity()(nv.array(x)), x)
    seq = nn.Sequential(nn.Linear(3, 4), nn.relu, nn.Linear(4, 1))
    l0, l2 = seq.layers[0], seq.layers[2]
    h = np.maximum(x @ npa(l0.weight).T + npa(l0.bias), 0)
    close(seq(nv.array(x)), h @ npa(l2.weight).T + npa(l2.bias))
    emb = nn.Embedding(10, 4)
    ids = np.array([[1, 9, 1], [0, 3, 2]], np.int32)
    E = npa(emb.weight)
    close(emb(nv.array(ids)), E[ids])
    close(emb.as_linear(nv.array(x[:, :1].repeat(4, 1))), x[:, :1].repeat(4, 1) @ E.T)
    with pytest.raises(TypeError, match="Embedding"):
        emb(nv.array([0.5]))


def test_dropout_train_and_eval():
    nv.random.seed(7)
    d = nn.Dropout(0.25)
    x = nv.ones((200, 100))
    y = npa(d(x))
    kept = y != 0
    assert 0.72 < kept.mean() < 0.78
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError, match="Dropout"):
        nn.Dropout(1.5)
    d2 = nn.Dropout2d(0.5)
    y2 = npa(d2(nv.ones((4, 3, 3, 16))))
    # a channel is dropped everywhere in the image or nowhere
    per = (y2 != 0).reshape(4, 9, 16)
    assert np.all(per.all(1) | (~per).all(1))


# -- normalisation -------------------------------------------------------------------------
def ln_ref(x, axis, eps):
    m = x.mean(axis=axis, keepdims=True)
    v = ((x - m) ** 2).mean(axis=axis, keepdims=True)
    return (x - m) / np.sqrt(v + eps)


def test_layer_norm_and_rms_norm():
    x = rand(2, 5, 8, scale=3) + 1
    ln = nn.LayerNorm(8, eps=1e-5)
    ln.weight = nv.array(rand(8))
    ln.bias = nv.array(rand(8))
    close(ln(nv.array(x)), ln_ref(x, -1, 1e-5) * npa(ln.weight) + npa(ln.bias), atol=2e-5)
    close(nn.LayerNorm(8, affine=False)(nv.array(x)), ln_ref(x, -1, 1e-5), atol=2e-5)
    assert "bias" not in nn.LayerNorm(8, bias=False)
    rms = nn.RMSNorm(8, eps=1e-6)
    rms.weight = nv.array(rand(8))
    ref = x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-6) * npa(rms.weight)
    close(rms(nv.array(x)), ref, atol=2e-5)
    with pytest.raises(ValueError, match="LayerNorm"):
        ln(nv.ones((2, 7)))


@pytest.mark.parametrize("torch_layout", [False, True])
def test_group_norm(torch_layout):
    x = rand(2, 3, 4, 6, scale=2)
    gn = nn.GroupNorm(3, 6, pytorch_compatible=torch_layout)
    gn.weight, gn.bias = nv.array(rand(6)), nv.array(rand(6))
    n = x.shape[0]
    if torch_layout:  # groups are contiguous blocks of channels
        g = x.reshape(n, -1, 3, 2)
        y = ln_ref(g, (1, 3), 1e-5).reshape(x.shape)
    else:  # channel c is in group c % 3
        g = x.reshape(n, -1, 3)
        y = ln_ref(g, 1, 1e-5).reshape(x.shape)
    close(gn(nv.array(x)), y * npa(gn.weight) + npa(gn.bias), atol=3e-5)


def test_batch_norm_train_then_eval():
    x = rand(8, 5, 4, scale=2) + 3
    bn = nn.BatchNorm(4, momentum=0.1)
    y = bn(nv.array(x))
    close(y, ln_ref(x, (0, 1), 1e-5), atol=3e-5)
    n = 40
    close(bn.running_mean, 0.1 * x.mean((0, 1)), atol=1e-5)
    close(bn.running_var, 0.9 + 0.1 * x.var((0, 1)) * n / (n - 1), atol=1e-5)
    bn.eval()
    rm, rv = npa(bn.running_mean), npa(bn.running_var)
    close(bn(nv.array(x)), (x - rm) / np.sqrt(rv + 1e-5), atol=3e-5)
    with pytest.raises(ValueError, match="BatchNorm"):
        bn(nv.ones((4,)))


# -- convolution and pooling ---------------------------------------------------------------
def conv_ref(x, w, stride, pad, dil, groups):
    """Direct N-d channels-last convolution (cross-correlation) in float64."""
    nd = x.ndim - 2
    x = np.pad(x.astype(np.float64), [(0, 0)] + [(p, p) for p in pad] + [(0, 0)])
    cout, cg = w.shape[0], w.shape[-1]
    kernel = w.shape[1:-1]
    out = [(x.shape[1 + i] - dil[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    y = np.zeros((x.shape[0], *out, cout))
    og = cout // groups
    for offs in np.ndindex(*kernel):
        sl = tuple(
            slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, n, s in zip(offs, dil, out, stride)
        )
        patch = x[(slice(None),) + sl]
        for g in range(groups):
            wg = w[g * og : (g + 1) * og][(slice(None),) + offs].astype(np.float64)  # (og, cg)
            y[..., g * og : (g + 1) * og] += patch[..., g * cg : (g + 1) * cg] @ wg.T
    return y


@pytest.mark.parametrize(
    "stride,pad,dil,groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (2, 1, 1, 2), (1, 1, 1, 4)]
)
def test_conv2d_forward(stride, pad, dil, groups):
    conv = nn.Conv2d(4, 8, kernel_size=3, stride=stride, padding=pad, dilation=dil, groups=groups)
    conv.bias = nv.array(rand(8))
    x = rand(2, 9, 8, 4)
    ref = conv_ref(x, npa(conv.weight), (stride,) * 2, (pad,) * 2, (dil,) * 2, groups)
    close(conv(nv.array(x)), ref + npa(conv.bias), rtol=1e-4, atol=1e-4)


def test_conv2d_rectangular_and_conv1d():
    conv = nn.Conv2d(3, 5, kernel_size=(2, 3), stride=(1, 2), padding=(1, 0), bias=False)
    x = rand(1, 6, 7, 3)
    close(
        conv(nv.array(x)),
        conv_ref(x, npa(conv.weight), (1, 2), (1, 0), (1, 1), 1),
        rtol=1e-4,
        atol=1e-4,
    )
    c1 = nn.Conv1d(3, 6, kernel_size=3, stride=2, padding=1, groups=3)
    x1 = rand(2, 11, 3)
    close(
        c1(nv.array(x1)),
        conv_ref(x1, npa(c1.weight), (2,), (1,), (1,), 3) + npa(c1.bias),
        rtol=1e-4,
        atol=1e-4,
    )
    assert c1.weight.shape == (6, 3, 1)
    with pytest.raises(ValueError, match="conv2d"):
        nn.conv2d(nv.ones((1, 2, 2, 3)), nv.ones((4, 3, 3, 3)))
    with pytest.raises(ValueError, match="Conv2d"):
        nn.Conv2d(3, 4, kernel_size=3, groups=2)


def test_conv2d_gradients():
    x = rand(2, 6, 5, 4)
    w = rand(6, 3, 3, 2)
    R = rand(2, 3, 3, 6)  # the output's cotangent (stride 2, pad 1)

    def loss(x, w):
        return nv.sum(nn.conv2d(x, w, stride=2, padding=1, groups=2) * nv.array(R))

    gx, gw = nv.grad(loss, argnums=(0, 1))(nv.array(x), nv.array(w))
    # reference: dL/dw[co, kh, kw, ci] = sum R[n,o,co] xpad[n, window, ci]; dL/dx by adjoint
    xp = np.pad(x.astype(np.float64), [(0, 0), (1, 1), (1, 1), (0, 0)])
    gw_ref = np.zeros(w.shape)
    gxp = np.zeros(xp.shape)
    for kh in range(3):
        for kw in range(3):
            patch = xp[:, kh : kh + 5 : 2, kw : kw + 5 : 2, :]
            for g in range(2):
                Rg = R[..., g * 3 : (g + 1) * 3]
                gw_ref[g * 3 : (g + 1) * 3, kh, kw] = np.einsum(
                    "nhwo,nhwc->oc", Rg, patch[..., g * 2 : (g + 1) * 2]
                )
                gxp[:, kh : kh + 5 : 2, kw : kw + 5 : 2, g * 2 : (g + 1) * 2] += np.einsum(
                    "nhwo,oc->nhwc", Rg, w[g * 3 : (g + 1) * 3, kh, kw]
                )
    close(gw, gw_ref, rtol=1e-4, atol=1e-4)
    close(gx, gxp[:, 1:-1, 1:-1], rtol=1e-4, atol=1e-4)


def pool_ref(x, k, s, p, kind):
    fill = -np.inf if kind == "max" else 0.0
    x = np.pad(x, [(0, 0), (p[0], p[0]), (p[1], p[1]), (0, 0)], constant_values=fill)
    oh = (x.shape[1] - k[0]) // s[0] + 1
    ow = (x.shape[2] - k[1]) // s[1] + 1
    y = np.zeros((x.shape[0], oh, ow, x.shape[3]), np.float32)
    for i in range(oh):
        for j in range(ow):
            win = x[:, i * s[0] : i * s[0] + k[0], j * s[1] : j * s[1] + k[1]]
            y[:, i, j] = win.max((1, 2)) if kind == "max" else win.mean((1, 2))
    return y


@pytest.mark.parametrize("k,s,p", [(2, None, 0), (3, 2, 1), ((2, 3), (1, 2), (1, 1))])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d(k, s, p, kind):
    cls = nn.MaxPool2d if kind == "max" else nn.AvgPool2d
    x = rand(2, 6, 8, 3)
    kk = (k, k) if isinstance(k, int) else k
    ss = kk if s is None else ((s, s) if isinstance(s, int) else s)
    pp = (p, p) if isinstance(p, int) else p
    close(cls(k, s, p)(nv.array(x)), pool_ref(x, kk, ss, pp, kind), atol=1e-6)


def test_pool1d_and_max_pool_gradient():
    x = rand(2, 8, 3)
    close(nn.MaxPool1d(2)(nv.array(x)), x.reshape(2, 4, 2, 3).max(2))
    close(
        nn.AvgPool1d(3, 2)(nv.array(x)),
        np.stack([x[:, i : i + 3].mean(1) for i in range(0, 6, 2)], 1),
        atol=1e-6,
    )
    xs = rand(1, 4, 4, 2)
    g = nv.grad(lambda a: nv.sum(nn.MaxPool2d(2)(a)))(nv.array(xs))
    blocks = xs.reshape(1, 2, 2, 2, 2, 2).transpose(0, 1, 3, 5, 2, 4).reshape(1, 2, 2, 2, 4)
    ref = (blocks == blocks.max(-1, keepdims=True)).astype(np.float32)
    ref = ref.reshape(1, 2, 2, 2, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(xs.shape)
    close(g, ref)


# -- attention and transformer -------------------------------------------------------------
def lin(m, x):
    y = x @ npa(m.weight).T
    return y + npa(m.bias) if "bias" in m else y


def softmax_ref(z):
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def mha_ref(m, q, k, v, mask):
    B, L, _ = q.shape
    S = k.shape[1]
    h = m.num_heads
    Q = lin(m.query_proj, q).reshape(B, L, h, -1).transpose(0, 2, 1, 3)
    K = lin(m.key_proj, k).reshape(B, S, h, -1).transpose(0, 2, 1, 3)
    V = lin(m.value_proj, v).reshape(B, S, h, -1).transpose(0, 2, 1, 3)
    s = Q @ K.transpose(0, 1, 3, 2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        s = s + mask
    o = (softmax_ref(s) @ V).transpose(0, 2, 1, 3).reshape(B, L, -1)
    return lin(m.out_proj, o)


def test_multi_head_attention_and_masks():
    m = nn.MultiHeadAttention(16, 4, key_input_dims=12, bias=True)
    q, k = rand(2, 5, 16), rand(2, 7, 12)
    close(m(nv.array(q), nv.array(k), nv.array(k)), mha_ref(m, q, k, k, None), rtol=1e-4, atol=1e-5)
    mask = nn.MultiHeadAttention.create_additive_causal_mask(5)
    mnp = npa(mask)
    assert mnp[0, 1] < -1e30 and mnp[1, 0] == 0 and mnp[2, 2] == 0
    x = rand(2, 5, 16)
    m2 = nn.MultiHeadAttention(16, 4)
    ref = mha_ref(m2, x, x, x, np.where(np.triu(np.ones((5, 5)), 1) > 0, -1e9, 0.0))
    close(m2(nv.array(x), nv.array(x), nv.array(x), mask), ref, rtol=1e-4, atol=1e-5)
    close(m2(nv.array(x), nv.array(x), nv.array(x), "causal"), ref, rtol=1e-4, atol=1e-5)
    keep = nv.array(np.tril(np.ones((5, 5), bool)))
    close(m2(nv.array(x), nv.array(x), nv.array(x), keep), ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="num_heads"):
        nn.MultiHeadAttention(10, 4)


@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_encoder(norm_first):
    nv.random.seed(5)
    enc = nn.TransformerEncoder(2, 8, 2, mlp_dims=16, norm_first=norm_first, activation=nn.gelu)
    x = rand(3, 4, 8)
    mask = np.where(np.triu(np.ones((4, 4)), 1) > 0, -1e9, 0.0).astype(np.float32)

    def ln(m, z):
        return ln_ref(z, -1, 1e-5) * npa(m.weight) + npa(m.bias)

    def gelu(z):
        return z * (1 + np.vectorize(math.erf)(z / math.sqrt(2))) / 2

    y = x.astype(np.float64)
    for layer in enc.layers:
        if norm_first:
            h = ln(layer.ln1, y)
            y = y + mha_ref(layer.attention, h, h, h, mask)
            y = y + lin(layer.linear2, gelu(lin(layer.linear1, ln(layer.ln2, y))))
        else:
            y = ln(layer.ln1, y + mha_ref(layer.attention, y, y, y, mask))
            y = ln(layer.ln2, y + lin(layer.linear2, gelu(lin(layer.linear1, y))))
    close(enc(nv.array(x), nv.array(mask)), ln(enc.ln, y), rtol=1e-4, atol=1e-4)


def rope_ref(x, dims, traditional, base, scale, offset):
    L = x.shape[-2]
    half = dims // 2
    inv = base ** (-np.arange(half) * 2.0 / dims)
    theta = (np.arange(offset, offset + L) * scale)[:, None] * inv[None]
    c, s = np.cos(theta), np.sin(theta)
    out = x.astype(np.float64).copy()
    if traditional:
        a, b = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2] = a * c - b * s
        out[..., 1:dims:2] = a * s + b * c
    else:
        a, b = x[..., :half], x[..., half:dims]
        out[..., :half] = a * c - b * s
        out[..., half:dims] = a * s + b * c
    return out


@pytest.mark.parametrize("traditional", [False, True])
@pytest.mark.parametrize("dims", [8, 6])
def test_rope(traditional, dims):
    x = rand(2, 3, 5, 8)
    r = nn.RoPE(dims, traditional=traditional, base=100, scale=0.5)
    close(
        r(nv.array(x), offset=3), rope_ref(x, dims, traditional, 100, 0.5, 3), rtol=1e-4, atol=1e-5
    )


def test_sinusoidal_positional_encoding():
    pe = nn.SinusoidalPositionalEncoding(8, min_freq=1e-3, max_freq=1.0)
    pos = np.arange(6, dtype=np.float32)
    sig = np.exp(
        np.log(1.0)
        + (1 - np.arange(4) / 3) * (np.log(1.0) - np.log(1e-3))
        + (np.log(1e-3) - np.log(1.0)) * 0
    )
    sig = np.exp((1 - np.arange(4) / 3) * (0 - np.log(1e-3)) + np.log(1e-3))
    y = pos[:, None] * sig
    ref = np.concatenate([np.sin(y), np.cos(y)], -1) * math.sqrt(2 / 8)
    close(pe(nv.array(pos)), ref, rtol=1e-5, atol=1e-5)
    assert "_sigmas" not in dict(nn.Module.parameters(pe))
    pe2 = nn.SinusoidalPositionalEncoding(4, cos_first=True, scale=1.0)
    out = npa(pe2(nv.array([0.0])))
    assert out.tolist() == [[1.0, 1.0, 0.0, 0.0]]


# -- activations ---------------------------------------------------------------------------
ERF = np.vectorize(math.erf)


def sigm(x):
    return 1 / (1 + np.exp(-x))


def softplus_ref(x):
    return np.logaddexp(x, 0)


ACTS = {
    "relu": (nn.relu, nn.ReLU(), lambda x: np.maximum(x, 0)),
    "relu6": (nn.relu6, nn.ReLU6(), lambda x: np.clip(x, 0, 6)),
    "leaky_relu": (
        lambda x: nn.leaky_relu(x, 0.1),
        nn.LeakyReLU(0.1),
        lambda x: np.where(x > 0, x, 0.1 * x),
    ),
    "elu": (
        lambda x: nn.elu(x, 0.5),
        nn.ELU(0.5),
        lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1)),
    ),
    "selu": (
        nn.selu,
        nn.SELU(),
        lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1)),
    ),
    "celu": (
        lambda x: nn.celu(x, 2.0),
        nn.CELU(2.0),
        lambda x: np.maximum(x, 0) + 2.0 * (np.exp(np.minimum(x, 0) / 2.0) - 1),
    ),
    "gelu": (nn.gelu, nn.GELU(), lambda x: 0.5 * x * (1 + ERF(x / math.sqrt(2)))),
    "gelu_approx": (
        nn.gelu_approx,
        nn.GELU("tanh"),
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    ),
    "gelu_fast_approx": (nn.gelu_fast_approx, nn.GELU("fast"), lambda x: x * sigm(1.702 * x)),
    "silu": (nn.silu, nn.SiLU(), lambda x: x * sigm(x)),
    "sigmoid": (nn.sigmoid, nn.Sigmoid(), sigm),
    "tanh": (nn.tanh, nn.Tanh(), np.tanh),
    "softplus": (nn.softplus, nn.Softplus(), softplus_ref),
    "softsign": (nn.softsign, nn.Softsign(), lambda x: x / (1 + np.abs(x))),
    "mish": (nn.mish, nn.Mish(), lambda x: x * np.tanh(softplus_ref(x))),
    "hardswish": (nn.hardswish, nn.Hardswish(), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "log_sigmoid": (nn.log_sigmoid, nn.LogSigmoid(), lambda x: -softplus_ref(-x)),
    "glu": (nn.glu, nn.GLU(), lambda x: x[..., :4] * sigm(x[..., 4:])),
    "softmax": (nn.softmax, nn.Softmax(), softmax_ref),
    "log_softmax": (
        nn.log_softmax,
        nn.LogSoftmax(),
        lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True)),
    ),
}


@pytest.mark.parametrize("name", sorted(ACTS))
def test_activations(name):
    fn, layer, ref = ACTS[name]
    x = rand(3, 8, scale=3)
    x[0, :4] = [-7.0, 0.0, 6.5, 20.0]
    expect = ref(x.astype(np.float64))
    close(fn(nv.array(x)), expect, rtol=2e-5, atol=2e-6)
    close(layer(nv.array(x)), expect, rtol=2e-5, atol=2e-6)


def test_activation_errors_and_prelu():
    with pytest.raises(ValueError, match="glu"):
        nn.glu(nv.ones((2, 3)))
    with pytest.raises(ValueError, match="GELU"):
        nn.GELU("exact")
    p = nn.PReLU(3, init=0.2)
    x = rand(4, 3)
    close(p(nv.array(x)), np.where(x > 0, x, 0.2 * x), atol=1e-7)


# -- initialisers --------------------------------------------------------------------------
def test_init_functions():
    nv.random.seed(11)
    a = nv.zeros((400, 300))
    fan_in, fan_out = 300, 400
    w = npa(nn.init.glorot_uniform()(a))
    lim = math.sqrt(6 / (fan_in + fan_out))
    assert w.shape == (400, 300) and np.abs(w).max() <= lim and np.abs(w).max() > 0.95 * lim
    w = npa(nn.init.glorot_normal()(a, gain=2.0))
    assert abs(w.std() - 2 * math.sqrt(2 / (fan_in + fan_out))) < 0.02 * w.std()
    w = npa(nn.init.he_normal()(a, mode="fan_out"))
    assert abs(w.std() - 1 / math.sqrt(fan_out)) < 0.02 * w.std()
    w = npa(nn.init.he_uniform()(a))
    assert np.abs(w).max() <= math.sqrt(3 / fan_in)
    w = npa(nn.init.normal(2.0, 0.5)(a))
    assert abs(w.mean() - 2.0) < 0.01 and abs(w.std() - 0.5) < 0.01
    w = npa(nn.init.uniform(-1.0, 3.0)(a))
    assert w.min() >= -1 and w.max() < 3 and abs(w.mean() - 1.0) < 0.02
    assert npa(nn.init.constant(0.5)(a)).tolist()[0][:2] == [0.5, 0.5]
    assert np.array_equal(npa(nn.init.identity()(nv.zeros((3, 3)))), np.eye(3))
    q = npa(nn.init.orthogonal()(nv.zeros((6, 4))))
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-5)
    q = npa(nn.init.orthogonal(gain=2.0)(nv.zeros((3, 5))))
    np.testing.assert_allclose(q @ q.T, 4 * np.eye(3), atol=1e-5)
    s = npa(nn.init.sparse(0.25)(nv.zeros((8, 5))))
    assert ((s == 0).sum(1) == 2).all()
    with pytest.raises(ValueError, match="identity"):
        nn.init.identity()(nv.zeros((2, 3)))
    with pytest.raises(ValueError, match="fan"):
        nn.init.glorot_uniform()(nv.zeros((3,)))
