"""conv_general, conv_transpose1d/2d/3d and convolve against NumPy definitions."""

import itertools

import numpy as np
import pytest

import nuvec as nv
from tests.ops._helpers import fd_vjp_check

RNG = np.random.default_rng(3)


def ref_conv_general(x, w, stride, lo, hi, kdil, idil, groups, flip):
    """Direct loops: dilate the input, pad (negative crops), correlate with the dilated kernel."""
    nd = w.ndim - 2
    for i in range(nd):
        n = x.shape[1 + i]
        shape = list(x.shape)
        shape[1 + i] = (n - 1) * idil[i] + 1 if n else 0
        y = np.zeros(shape, x.dtype)
        idx = [slice(None)] * x.ndim
        idx[1 + i] = slice(None, None, idil[i])
        y[tuple(idx)] = x
        x = y
    width = [(0, 0)] + [(max(a, 0), max(b, 0)) for a, b in zip(lo, hi)] + [(0, 0)]
    x = np.pad(x, width)
    idx = (
        [slice(None)]
        + [
            slice(-a if a < 0 else 0, x.shape[1 + i] + b if b < 0 else None)
            for i, (a, b) in enumerate(zip(lo, hi))
        ]
        + [slice(None)]
    )
    x = x[tuple(idx)]
    if flip:
        w = np.flip(w, axis=tuple(range(1, nd + 1)))
    kern = w.shape[1:-1]
    span = [(k - 1) * d + 1 for k, d in zip(kern, kdil)]
    out_sp = [(x.shape[1 + i] - span[i]) // stride[i] + 1 for i in range(nd)]
    c_out, cg = w.shape[0], w.shape[-1]
    og = c_out // groups
    out = np.zeros((x.shape[0], *out_sp, c_out), np.float64)
    for pos in itertools.product(*[range(o) for o in out_sp]):
        for kp in itertools.product(*[range(k) for k in kern]):
            src = tuple(p * s + k * d for p, s, k, d in zip(pos, stride, kp, kdil))
            xv = x[(slice(None),) + src]  # (N, C_in)
            for g in range(groups):
                xs = xv[:, g * cg : (g + 1) * cg]
                ws = w[(slice(g * og, (g + 1) * og),) + kp]  # (og, cg)
                out[(slice(None),) + pos + (slice(g * og, (g + 1) * og),)] += xs @ ws.T
    return out


def ref_conv_transpose(x, w, stride, padding, dilation, output_padding, groups):
    """The scatter definition: input element i adds w[k] at output i * stride + k * dilation,
    cropped by padding on both sides and extended by output_padding at the end."""
    nd = w.ndim - 2
    kern = w.shape[1:-1]
    c_out, cg = w.shape[0], w.shape[-1]
    og = c_out // groups
    full = [
        (x.shape[1 + i] - 1) * stride[i] + dilation[i] * (kern[i] - 1) + 1 + output_padding[i]
        for i in range(nd)
    ]
    out = np.zeros((x.shape[0], *full, c_out), np.float64)
    for pos in itertools.product(*[range(n) for n in x.shape[1:-1]]):
        xv = x[(slice(None),) + pos]
        for kp in itertools.product(*[range(k) for k in kern]):
            dst = tuple(p * s + k * d for p, s, k, d in zip(pos, stride, kp, dilation))
            for g in range(groups):
                ws = w[(slice(g * og, (g + 1) * og),) + kp]  # (og, cg): C_in of group g
                out[(slice(None),) + dst + (slice(g * og, (g + 1) * og),)] += (
                    xv[:, g * cg : (g + 1) * cg] @ ws.T
                )
    crop = tuple(slice(padding[i], full[i] - padding[i]) for i in range(nd))
    return out[(slice(None),) + crop]


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


CASES = [  # spatial, kernel, stride, (lo, hi), kernel dilation, input dilation, groups, flip
    ((7,), (3,), (1,), ([0], [0]), (1,), (1,), 1, False),
    ((7,), (3,), (2,), ([2], [1]), (2,), (1,), 1, True),
    ((6,), (2,), (1,), ([1], [0]), (1,), (3,), 2, False),
    ((5,), (3,), (1,), ([-1], [2]), (1,), (2,), 1, True),
    ((5, 6), (2, 3), (1, 2), ([1, 0], [0, 2]), (1, 2), (2, 1), 1, True),
    ((4, 4, 3), (2, 2, 1), (1, 1, 1), ([0, 1, 0], [1, 0, 0]), (1, 1, 1), (1, 2, 1), 1, False),
]


@pytest.mark.parametrize("case", CASES)
def test_conv_general(case):
    spatial, kern, stride, (lo, hi), kdil, idil, groups, flip = case
    x = f32(2, *spatial, 4)
    w = f32(6, *kern, 4 // groups)
    got = nv.conv_general(nv.array(x), nv.array(w), stride, (lo, hi), kdil, idil, groups, flip)
    want = ref_conv_general(
        x.astype(np.float64), w.astype(np.float64), stride, lo, hi, kdil, idil, groups, flip
    )
    assert got.shape == want.shape
    np.testing.assert_allclose(np.array(got), want, rtol=1e-4, atol=1e-4)


def test_conv_general_int_padding_and_errors():
    x, w = f32(1, 5, 2), f32(3, 3, 2)
    got = nv.conv_general(nv.array(x), nv.array(w), padding=1)
    np.testing.assert_allclose(
        np.array(got), np.array(nv.conv1d(nv.array(x), nv.array(w), padding=1)), rtol=1e-6
    )
    with pytest.raises(ValueError, match="conv_general"):
        nv.conv_general(nv.array(x), nv.array(w), stride=(1, 1))
    with pytest.raises(ValueError, match="conv_general"):
        nv.conv_general(nv.ones((5, 2)), nv.array(w))
    with pytest.raises(TypeError, match="conv_general"):
        nv.conv_general(nv.array(x), nv.array(w), stride="2")


@pytest.mark.parametrize(
    "nd,stride,padding,dilation,output_padding,groups",
    [
        (1, 1, 0, 1, 0, 1),
        (1, 2, 1, 1, 1, 1),
        (1, 3, 0, 2, 2, 2),
        (1, 2, 2, 1, 0, 1),
        (2, 1, 0, 1, 0, 1),
        (2, (2, 1), (1, 0), (1, 2), (1, 0), 1),
        (2, 2, 1, 1, 0, 2),
        (3, (1, 2, 1), 0, 1, (0, 1, 0), 1),
    ],
)
def test_conv_transpose(nd, stride, padding, dilation, output_padding, groups):
    tup = lambda v: (v,) * nd if isinstance(v, int) else v  # noqa: E731
    spatial = (5, 4, 3)[:nd]
    kern = (3, 2, 2)[:nd]
    x = f32(2, *spatial, 4)
    w = f32(6, *kern, 4 // groups)
    fn = {1: nv.conv_transpose1d, 2: nv.conv_transpose2d, 3: nv.conv_transpose3d}[nd]
    got = fn(nv.array(x), nv.array(w), stride, padding, dilation, output_padding, groups)
    want = ref_conv_transpose(
        x.astype(np.float64),
        w.astype(np.float64),
        tup(stride),
        tup(padding),
        tup(dilation),
        tup(output_padding),
        groups,
    )
    assert got.shape == want.shape
    np.testing.assert_allclose(np.array(got), want, rtol=1e-4, atol=1e-4)


def test_conv_transpose_gradient_and_stream():
    x = np.arange(6.0).reshape(1, 3, 2) / 7
    w = np.arange(8.0).reshape(2, 2, 2) / 5 - 0.5
    fd_vjp_check(
        lambda a, b: nv.conv_transpose1d(a, b, stride=2, padding=1), [x, w], rtol=1e-5, atol=1e-6
    )
    a = nv.conv_transpose1d(nv.array(x), nv.array(w), 2, stream=nv.cpu)
    assert a.tolist() == nv.conv_transpose1d(nv.array(x), nv.array(w), 2).tolist()
    with pytest.raises(ValueError, match="conv_transpose2d"):
        nv.conv_transpose2d(nv.ones((1, 3, 2)), nv.ones((2, 2, 2)))


@pytest.mark.parametrize("n,m", [(5, 3), (5, 4), (3, 6), (1, 1), (8, 2), (2, 7)])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve(n, m, mode):
    a, v = f32(n), f32(m)
    got = nv.convolve(nv.array(a), nv.array(v), mode)
    want = np.convolve(a.astype(np.float64), v.astype(np.float64), mode)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-5)


def test_convolve_errors_and_gradient():
    with pytest.raises(ValueError, match="mode"):
        nv.convolve(nv.ones((3,)), nv.ones((2,)), "middle")
    with pytest.raises(ValueError, match="1-D"):
        nv.convolve(nv.ones((3, 1)), nv.ones((2,)))
    with pytest.raises(ValueError, match="empty"):
        nv.convolve(nv.ones((0,)), nv.ones((2,)))
    fd_vjp_check(
        lambda a, b: nv.convolve(a, b, "same"),
        [np.array([1.0, -2.0, 0.5, 3.0]), np.array([0.25, 1.5])],
        rtol=1e-5,
        atol=1e-6,
    )


def test_conv_nd_take_a_stream_and_check_their_arguments():
    x, w = nv.ones((1, 5, 5, 2)), nv.ones((3, 3, 3, 2))
    assert nv.array_equal(nv.conv2d(x, w, padding=1, stream=nv.cpu), nv.conv2d(x, w, padding=1))
    assert nv.conv1d(nv.ones((1, 4, 1)), nv.ones((1, 2, 1)), stream=nv.cpu).shape == (1, 3, 1)
    assert nv.conv3d(nv.ones((1, 3, 3, 3, 1)), nv.ones((1, 2, 2, 2, 1)), stream=nv.cpu).shape == (
        1,
        2,
        2,
        2,
        1,
    )
    for bad in (None, "x"):
        with pytest.raises(TypeError, match="conv2d: unsupported input type"):
            nv.conv2d(bad, w)
        with pytest.raises(TypeError, match="conv1d: unsupported input type"):
            nv.conv1d(nv.ones((1, 4, 1)), bad)
    with pytest.raises(TypeError, match="conv2d: groups must be an int"):
        nv.conv2d(x, w, groups=1.0)
    with pytest.raises(ValueError, match="conv3d: weight must be 5-d"):
        nv.conv3d(nv.ones((1, 3, 3, 3, 1)), w)
