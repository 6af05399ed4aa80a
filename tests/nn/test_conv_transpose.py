"""ConvTranspose1d/2d/3d against the scatter-add definition of a transposed convolution."""

import itertools

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn

RNG = np.random.default_rng(11)


def conv_transpose_ref(x, w, stride, padding, dilation, output_padding):
    """out[i * s + k * d - p] += x[i] @ w[:, k, :].T over input positions i, offsets k
    (accumulated uncropped, then the first and last p positions cut)."""
    n, *spatial, cin = x.shape
    cout, *kernel, _ = w.shape
    full = [
        (i - 1) * s + d * (k - 1) + 1 + op
        for i, s, d, k, op in zip(spatial, stride, dilation, kernel, output_padding)
    ]
    out = np.zeros([n] + full + [cout])
    for pos in itertools.product(*[range(i) for i in spatial]):
        for off in itertools.product(*[range(k) for k in kernel]):
            o = tuple(p * s + k * d for p, s, k, d in zip(pos, stride, off, dilation))
            out[(slice(None),) + o] += x[(slice(None),) + pos] @ w[(slice(None),) + off].T
    crop = tuple(slice(p, f - p) for p, f in zip(padding, full))
    return out[(slice(None),) + crop]


CASES = [
    (nn.ConvTranspose1d, (2, 5, 3), dict(kernel_size=3, stride=2, padding=1)),
    (nn.ConvTranspose1d, (1, 4, 2), dict(kernel_size=2, dilation=2, output_padding=1, stride=2)),
    (nn.ConvTranspose2d, (2, 3, 4, 3), dict(kernel_size=(2, 3), stride=(2, 1), padding=(0, 1))),
    (nn.ConvTranspose3d, (1, 2, 3, 2, 2), dict(kernel_size=2, stride=2)),
]


@pytest.mark.parametrize("cls,shape,kw", CASES)
def test_conv_transpose_against_scatter_add(cls, shape, kw):
    x = RNG.standard_normal(shape).astype(np.float32)
    m = cls(shape[-1], 4, **kw)
    m.bias = nv.array(RNG.standard_normal(4).astype(np.float32))
    want = conv_transpose_ref(
        x.astype(np.float64),
        np.asarray(m.weight, np.float64),
        m.stride,
        m.padding,
        m.dilation,
        m.output_padding,
    ) + np.asarray(m.bias)
    np.testing.assert_allclose(np.asarray(m(nv.array(x))), want, rtol=1e-5, atol=1e-5)


def test_conv_transpose_init_and_repr():
    m = nn.ConvTranspose2d(4, 8, kernel_size=(3, 5))
    assert m.weight.shape == (8, 3, 5, 4)
    bound = (1 / (4 * 15)) ** 0.5
    assert np.abs(np.asarray(m.weight)).max() <= bound
    assert "kernel_size=(3, 5)" in repr(m)
    assert "kernel_size=(2, 3, 4)" in repr(nn.ConvTranspose3d(4, 8, kernel_size=(2, 3, 4)))
    assert "bias" not in nn.ConvTranspose1d(2, 3, 2, bias=False)
    with pytest.raises(ValueError, match="kernel_size"):
        nn.ConvTranspose2d(2, 3, kernel_size=(2, 2, 2))


def test_conv_transpose_is_the_adjoint_of_conv_and_differentiable():
    # <conv(x, W), u> = <x, conv_transpose(u, W')>, W' the weight with its channel axes swapped
    x = nv.array(RNG.standard_normal((2, 9, 3)).astype(np.float32))
    w = nv.array(RNG.standard_normal((4, 3, 3)).astype(np.float32))
    y = nv.conv1d(x, w, stride=2, padding=1, dilation=1)
    u = nv.array(RNG.standard_normal(y.shape).astype(np.float32))
    ct = nn.ConvTranspose1d(4, 3, kernel_size=3, stride=2, padding=1, bias=False)
    ct.weight = nv.transpose(w, (2, 1, 0))
    back = ct(u)
    assert back.shape == x.shape
    assert abs(nv.sum(y * u).item() - nv.sum(x * back).item()) < 1e-3
    # the gradient of <conv_transpose(u), x> with respect to u is conv(x)
    g = nv.grad(lambda v: nv.sum(ct(v) * x))(u)
    np.testing.assert_allclose(np.asarray(g), np.asarray(y), rtol=1e-4, atol=1e-4)
