"""quantize / dequantize / quantized_matmul / gather_qmm: MLX's packed bits (reference made by
make_mlx_reference.py with MLX), round trips, and products against dequantize-then-matmul in
float64."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nuvec as nv
from nuvec.primitives import quant_formats as qf
from nuvec.transforms.autodiff import apply_vjp

REF = np.load(Path(__file__).parent / "data" / "mlx_quantized.npz")
RNG = np.random.default_rng(5)
AFFINE = [(g, b) for g in (32, 64, 128) for b in (2, 3, 4, 5, 6, 8)]


@pytest.mark.parametrize("gs,bits", AFFINE)
@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_affine_packing_is_mlx_bit_for_bit(gs, bits, dt):
    key = f"affine_{gs}_{bits}_{dt}"
    wq, s, b = nv.quantize(nv.array(REF[key + "_w"]), gs, bits)
    assert wq.dtype == nv.uint32 and s.dtype == getattr(nv, dt)
    assert np.asarray(wq).tobytes() == REF[key + "_q"].tobytes()
    assert np.asarray(s).tobytes() == REF[key + "_s"].tobytes()
    assert np.asarray(b).tobytes() == REF[key + "_b"].tobytes()
    # MLX's codes decode to MLX's dequantized values
    d = nv.dequantize(
        nv.array(REF[key + "_q"]), nv.array(REF[key + "_s"]), nv.array(REF[key + "_b"]), gs, bits
    )
    np.testing.assert_array_equal(np.asarray(d), REF[key + "_d"])


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8", "nvfp4"])
def test_float_modes_are_mlx_bit_for_bit(mode):
    wq, s = nv.quantize(nv.array(REF[f"{mode}_w"]), mode=mode)
    assert s.dtype == nv.uint8
    assert np.asarray(wq).tobytes() == REF[f"{mode}_q"].tobytes()
    assert np.asarray(s).tobytes() == REF[f"{mode}_s"].tobytes()
    d = nv.dequantize(wq, s, mode=mode, dtype=nv.float32)
    np.testing.assert_array_equal(np.asarray(d), REF[f"{mode}_d"])
    assert nv.dequantize(wq, s, mode=mode).dtype == nv.bfloat16


@pytest.mark.parametrize("bits", [2, 3, 4, 5, 6, 8])
def test_pack_unpack_round_trip(bits):
    codes = RNG.integers(0, 1 << bits, size=(3, 64)).astype(np.uint8)
    np.testing.assert_array_equal(qf.unpack(qf.pack(codes, bits), bits), codes)
    # the layout: code j at bit j * bits of the row's little-endian stream
    words = qf.pack(codes, bits)
    stream = int.from_bytes(words[1].tobytes(), "little")
    assert [(stream >> (j * bits)) & ((1 << bits) - 1) for j in range(64)] == list(codes[1])


@pytest.mark.parametrize("gs,bits", AFFINE)
def test_affine_round_trip_error_is_within_a_step(gs, bits):
    w = RNG.standard_normal((8, 256)).astype(np.float32)
    wq, s, b = nv.quantize(nv.array(w), gs, bits)
    d = np.asarray(nv.dequantize(wq, s, b, gs, bits)).reshape(8, -1, gs)
    g = w.reshape(8, -1, gs)
    # within one step of the group's range (the edge of larger magnitude is exact, which
    # can move the other end by up to half a step)
    step = (g.max(-1) - g.min(-1))[..., None] / ((1 << bits) - 1)
    assert np.all(np.abs(d - g) <= step)
    edge = np.where(np.abs(g.min(-1)) > np.abs(g.max(-1)), g.min(-1), g.max(-1))
    assert np.all(np.isclose(d, edge[..., None], rtol=0, atol=1e-6).any(-1))


def _dequantized64(wq, s, b, gs, bits, mode="affine"):
    return np.asarray(nv.dequantize(wq, s, b, gs, bits, mode=mode, dtype=nv.float32), np.float64)


@pytest.mark.parametrize("gs,bits", AFFINE)
@pytest.mark.parametrize("transpose", [True, False])
def test_quantized_matmul_is_the_product_with_the_dequantized_weight(gs, bits, transpose):
    n, k = 48, 256
    shape = (n, k) if transpose else (k, 128 * 3)
    w = RNG.standard_normal(shape).astype(np.float32)
    wq, s, b = nv.quantize(nv.array(w), gs, bits)
    dw = _dequantized64(wq, s, b, gs, bits)
    x = RNG.standard_normal((2, 5, k)).astype(np.float32)
    y = nv.quantized_matmul(nv.array(x), wq, s, b, transpose, gs, bits)
    want = x.astype(np.float64) @ (dw.T if transpose else dw)
    assert y.shape == want.shape and y.dtype == nv.float32
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8", "nvfp4"])
def test_float_mode_products(mode):
    w = RNG.standard_normal((40, 128)).astype(np.float32)
    wq, s = nv.quantize(nv.array(w), mode=mode)
    dw = _dequantized64(wq, s, None, None, None, mode)
    x = RNG.standard_normal((3, 128)).astype(np.float32)
    y = nv.quantized_matmul(nv.array(x), wq, s, mode=mode)
    np.testing.assert_allclose(np.asarray(y), x.astype(np.float64) @ dw.T, rtol=1e-5, atol=1e-4)


def test_float64_and_half_inputs():
    w = RNG.standard_normal((16, 64)).astype(np.float32)
    wq, s, b = nv.quantize(nv.array(w), 64, 4)
    dw = _dequantized64(wq, s, b, 64, 4)
    x = RNG.standard_normal((3, 64))
    y = nv.quantized_matmul(nv.array(x, nv.float64), wq, s, b, group_size=64, bits=4)
    assert y.dtype == nv.float64  # float64 x with float32 scales
    codes = qf.unpack(np.asarray(wq), 4).astype(np.float64).reshape(16, 1, 64)
    dw64 = (
        codes * np.asarray(s, np.float64)[..., None] + np.asarray(b, np.float64)[..., None]
    ).reshape(16, 64)
    np.testing.assert_allclose(np.asarray(y), x @ dw64.T, rtol=1e-12, atol=1e-12)
    y64 = nv.quantized_matmul(
        nv.array(x, nv.float64),
        wq,
        nv.astype(s, nv.float64),
        nv.astype(b, nv.float64),
        group_size=64,
        bits=4,
    )
    assert y64.dtype == nv.float64
    np.testing.assert_allclose(np.asarray(y64), x @ dw64.T, rtol=1e-12, atol=1e-12)
    yh = nv.quantized_matmul(
        nv.array(x.astype(np.float16)),
        wq,
        nv.astype(s, nv.float16),
        nv.astype(b, nv.float16),
        group_size=64,
        bits=4,
    )
    assert yh.dtype == nv.float16
    np.testing.assert_allclose(np.asarray(yh, np.float64), x @ dw.T, rtol=2e-2, atol=2e-2)


def test_batched_weights_and_gather_qmm():
    e, n, k = 4, 16, 64
    w = RNG.standard_normal((e, n, k)).astype(np.float32)
    wq, s, b = nv.quantize(nv.array(w), 32, 4)
    dw = _dequantized64(wq, s, b, 32, 4)
    x = RNG.standard_normal((3, 2, k)).astype(np.float32)
    idx = np.array([[3, 0], [1, 1], [2, 3]])
    y = nv.gather_qmm(
        nv.array(x[:, None]), wq, s, b, rhs_indices=nv.array(idx), group_size=32, bits=4
    )
    assert y.shape == (3, 2, 2, n)
    for i in range(3):
        for j in range(2):
            np.testing.assert_allclose(
                np.asarray(y)[i, j], x[i].astype(np.float64) @ dw[idx[i, j]].T, rtol=1e-5, atol=1e-4
            )
    batched = nv.quantized_matmul(nv.array(np.repeat(x[:1], e, 0)), wq, s, b, group_size=32, bits=4)
    np.testing.assert_allclose(
        np.asarray(batched), x[0].astype(np.float64) @ np.swapaxes(dw, -1, -2), rtol=1e-5, atol=1e-4
    )


def test_gradients_are_mlx_s():
    w = RNG.standard_normal((16, 64)).astype(np.float32)
    wq, s, b = nv.quantize(nv.array(w), 32, 4)
    dw = _dequantized64(wq, s, b, 32, 4)
    x = nv.array(RNG.standard_normal((3, 64)).astype(np.float32))
    g = RNG.standard_normal((3, 16))

    def loss(x, s, b):
        return (
            nv.quantized_matmul(x, wq, s, b, group_size=32, bits=4) * nv.array(g, nv.float32)
        ).sum()

    gx, gs_, gb = nv.grad(loss, argnums=(0, 1, 2))(x, s, b)
    np.testing.assert_allclose(np.asarray(gx), g @ dw, rtol=1e-5, atol=1e-5)
    dW = (g.T @ np.asarray(x, np.float64)).reshape(16, 2, 32)  # dL/dW per group
    codes = qf.unpack(np.asarray(wq), 4).reshape(16, 2, 32)
    np.testing.assert_allclose(np.asarray(gb), dW.sum(-1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(gs_), (dW * codes).sum(-1), rtol=1e-4, atol=1e-4)
    y = nv.quantized_matmul(x, wq, s, b, group_size=32, bits=4)
    with pytest.raises(ValueError, match="no gradient with respect to the quantized weights"):
        apply_vjp(y._prim, [x, wq, s, b], [nv.ones_like(y)], [1], [y])
    # compiled equals eager, bit for bit
    f = nv.compile(lambda x: nv.quantized_matmul(x, wq, s, b, group_size=32, bits=4))
    assert (
        np.asarray(f(x)).tobytes()
        == np.asarray(nv.quantized_matmul(x, wq, s, b, group_size=32, bits=4)).tobytes()
    )
    # vmap over x
    xs = nv.array(RNG.standard_normal((4, 64)).astype(np.float32))
    v = nv.vmap(lambda r: nv.quantized_matmul(r, wq, s, b, group_size=32, bits=4))(xs)
    np.testing.assert_allclose(
        np.asarray(v), np.asarray(xs, np.float64) @ dw.T, rtol=1e-5, atol=1e-4
    )


def test_errors_name_the_function_and_argument():
    w = nv.ones((8, 64))
    with pytest.raises(ValueError, match="quantize: the group size 16 is not supported"):
        nv.quantize(w, 16, 4)
    with pytest.raises(ValueError, match="quantize: 7 bits are not supported"):
        nv.quantize(w, 64, 7)
    with pytest.raises(ValueError, match="quantize: the last dimension"):
        nv.quantize(nv.ones((8, 48)), 32, 4)
    with pytest.raises(ValueError, match="quantize: unknown quantization mode"):
        nv.quantize(w, mode="int4")
    with pytest.raises(ValueError, match="mxfp4 quantization requires group size 32"):
        nv.quantize(w, 64, mode="mxfp4")
    wq, s, b = nv.quantize(w, 64, 4)
    with pytest.raises(ValueError, match="quantized_matmul: the last dimension of x"):
        nv.quantized_matmul(nv.ones((2, 32)), wq, s, b)
    with pytest.raises(ValueError, match="quantized_matmul: biases must be given"):
        nv.quantized_matmul(nv.ones((2, 64)), wq, s)
    with pytest.raises(ValueError, match="dequantize: the quantized weight must be uint32"):
        nv.dequantize(nv.ones((8, 8)), s, b)


def test_nvfp4_global_scale_round_trip():
    w = (RNG.standard_normal((4, 64)) * 1e3).astype(np.float32)
    gscale = nv.array(np.float32(np.abs(w).max()))
    wq, s = nv.quantize(nv.array(w), mode="nvfp4", global_scale=gscale)
    d = np.asarray(nv.dequantize(wq, s, mode="nvfp4", global_scale=gscale, dtype=nv.float32))
    g = w.reshape(4, -1, 16)
    # e2m1 keeps about one significant bit: within a quarter of each group's largest value
    assert np.all(np.abs(d.reshape(g.shape) - g) <= 0.26 * np.abs(g).max(-1, keepdims=True))
    with pytest.raises(ValueError, match="only supported for 'nvfp4'"):
        nv.quantize(nv.array(w), mode="mxfp4", global_scale=gscale)
    with pytest.raises(ValueError, match="must be float32"):
        nv.quantize(nv.array(w), mode="nvfp4", global_scale=nv.array(1.0, nv.float16))


def test_vmap_of_quantize_and_dequantize_is_per_entry():
    w = RNG.standard_normal((3, 8, 64)).astype(np.float32)
    wq, s, b = nv.vmap(lambda a: nv.quantize(a, 32, 4))(nv.array(w))
    for i in range(3):
        q1, s1, b1 = nv.quantize(nv.array(w[i]), 32, 4)
        assert np.asarray(wq)[i].tobytes() == np.asarray(q1).tobytes()
    d = nv.vmap(lambda q, s, b: nv.dequantize(q, s, b, 32, 4), in_axes=(1, 1, 1))(
        nv.swapaxes(wq, 0, 1), nv.swapaxes(s, 0, 1), nv.swapaxes(b, 0, 1)
    )
    np.testing.assert_array_equal(np.asarray(d), np.asarray(nv.dequantize(wq, s, b, 32, 4)))
    q = nv.quantize(nv.array(w[0]), 32, 4)
    with pytest.raises(ValueError, match="quantize: no gradient"):
        apply_vjp(q[0]._prim, [nv.array(w[0])], [nv.ones_like(x) for x in q], [0], list(q))


def _through_quantization(a, mode, global_scale=None):
    packed = nv.quantize(a, mode=mode, global_scale=global_scale)
    return nv.dequantize(*packed, mode=mode, global_scale=global_scale, dtype=nv.float32)


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8"])
def test_qqmm_is_the_product_of_both_operands_through_quantization(mode):
    x = nv.array(RNG.standard_normal((5, 64)).astype(np.float32))
    w = nv.array(RNG.standard_normal((16, 64)).astype(np.float32))
    want = np.asarray(_through_quantization(x, mode)) @ np.asarray(_through_quantization(w, mode)).T
    np.testing.assert_allclose(np.asarray(nv.qqmm(x, w, mode=mode)), want, rtol=1e-5, atol=1e-5)
    wq, s = nv.quantize(w, mode=mode)  # a packed weight gives the same product
    np.testing.assert_allclose(np.asarray(nv.qqmm(x, wq, s, mode=mode)), want, rtol=1e-5, atol=1e-5)
    assert nv.qqmm(x.astype(nv.bfloat16), w, mode=mode).dtype == nv.bfloat16


def test_qqmm_global_scales_and_gradients():
    x = nv.array(RNG.standard_normal((32, 64)).astype(np.float32))
    w = nv.array(RNG.standard_normal((32, 64)).astype(np.float32))
    gx, gw = nv.max(nv.abs(x)), nv.max(nv.abs(w))
    want = (
        np.asarray(_through_quantization(x, "nvfp4", gx))
        @ np.asarray(_through_quantization(w, "nvfp4", gw)).T
    )
    y = nv.qqmm(x, w, mode="nvfp4", global_scale_x=gx, global_scale_w=gw)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5, atol=1e-5)
    # MLX's gradients: the cotangent's quantized products with the other operand
    dx, dw = nv.grad(lambda a, b: nv.qqmm(a, b, mode="mxfp8").sum(), argnums=(0, 1))(x, w)
    c = nv.ones((32, 32))
    fq = lambda a: np.asarray(_through_quantization(a, "mxfp8"))  # noqa: E731
    np.testing.assert_allclose(np.asarray(dx), fq(c) @ fq(w.T).T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(dw), fq(c.T) @ fq(x.T).T, rtol=1e-5, atol=1e-5)


def test_qqmm_gradient_of_a_batched_x_treats_its_rows_as_one_product():
    x = nv.array(RNG.standard_normal((2, 16, 64)).astype(np.float32))
    w = nv.array(RNG.standard_normal((32, 64)).astype(np.float32))
    dx, dw = nv.grad(lambda a, b: nv.qqmm(a, b, mode="mxfp8").sum(), argnums=(0, 1))(x, w)
    assert dx.shape == x.shape and dw.shape == w.shape
    c = nv.ones((32, 32))
    fq = lambda a: np.asarray(_through_quantization(a, "mxfp8"))  # noqa: E731
    rows = x.reshape(32, 64)
    np.testing.assert_allclose(np.asarray(dw), fq(c.T) @ fq(rows.T).T, rtol=1e-5, atol=1e-5)
    want_dx = (fq(nv.ones((16, 32))) @ fq(w.T).T)[None].repeat(2, 0)
    np.testing.assert_allclose(np.asarray(dx), want_dx, rtol=1e-5, atol=1e-5)


def test_qqmm_jvp_is_the_tangents_quantized_products():
    x = nv.array(RNG.standard_normal((32, 64)).astype(np.float32))
    w = nv.array(RNG.standard_normal((32, 64)).astype(np.float32))
    tx = nv.array(RNG.standard_normal((32, 64)).astype(np.float32))
    tw = nv.array(RNG.standard_normal((32, 64)).astype(np.float32))
    _, (t,) = nv.jvp(lambda a, b: nv.qqmm(a, b, mode="mxfp8"), [x, w], [tx, tw])
    want = nv.qqmm(tx, w, mode="mxfp8") + nv.qqmm(x, tw, mode="mxfp8")
    assert np.asarray(t).tobytes() == np.asarray(want).tobytes()
    assert float(nv.abs(t).max()) > 0


def test_qqmm_vmap_is_the_batched_product_and_global_scales_get_no_gradient():
    x = nv.array(RNG.standard_normal((3, 32, 64)).astype(np.float32))
    w = nv.array(RNG.standard_normal((32, 64)).astype(np.float32))
    gx, gw = nv.array(3.0), nv.array(2.0)

    def f(a, b):
        return nv.qqmm(a, b, mode="nvfp4", global_scale_x=gx, global_scale_w=gw)

    got = nv.vmap(f, in_axes=(0, None))(x, w)
    assert np.asarray(got).tobytes() == np.asarray(f(x, w)).tobytes()
    d = nv.grad(lambda s: nv.qqmm(x[0], w, mode="nvfp4", global_scale_x=s, global_scale_w=gw).sum())
    assert float(d(gx)) == 0.0
    with pytest.raises(ValueError, match="qqmm: vmap over the global scales"):
        nv.vmap(lambda s: nv.qqmm(x[0], w, mode="nvfp4", global_scale_x=s, global_scale_w=gw))(
            nv.array([1.0, 2.0])
        )


def test_qqmm_errors_name_the_function():
    x, w = nv.ones((2, 64)), nv.ones((4, 64))
    with pytest.raises(ValueError, match="qqmm: mode"):
        nv.qqmm(x, w, mode="affine")
    with pytest.raises(ValueError, match="qqmm: global scales"):
        nv.qqmm(x, w, mode="mxfp8", global_scale_x=nv.array(1.0))
    with pytest.raises(ValueError, match="qqmm: the last dimensions"):
        nv.qqmm(x, nv.ones((4, 32)), mode="mxfp8")


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8"])
@pytest.mark.parametrize(
    "batch_a, lhs, batch_b, rhs",
    [
        ((1,), (0,), (3,), (2, 1)),
        ((1,), None, (3,), (2, 1)),
        ((2,), None, (3,), (2, 1)),
        ((3,), (0, 2), (1,), (0,)),
        ((5,), (0, 2), (3,), (2, 1)),
        ((2, 2), None, (2, 2), None),
    ],
)
def test_gather_qqmm_is_gather_mm_of_the_operands_through_quantization(
    mode, batch_a, lhs, batch_b, rhs
):
    # MLX's test_gather_qqmm cases (which MLX runs only on its GPU)
    x = nv.array(RNG.standard_normal(batch_a + (3, 64)).astype(np.float32))
    w = nv.array(RNG.standard_normal(batch_b + (16, 64)).astype(np.float32))
    gx = nv.max(nv.abs(x)) if mode == "nvfp4" else None
    gw = nv.max(nv.abs(w)) if mode == "nvfp4" else None
    li = None if lhs is None else nv.array(lhs)
    ri = None if rhs is None else nv.array(rhs)
    x_hat = np.asarray(_through_quantization(x, mode, gx))
    w_hat = np.asarray(_through_quantization(w, mode, gw))
    la = np.arange(int(np.prod(batch_a))).reshape(batch_a) if lhs is None else np.array(lhs)
    ra = np.arange(int(np.prod(batch_b))).reshape(batch_b) if rhs is None else np.array(rhs)
    la, ra = np.broadcast_arrays(la, ra)
    xf = x_hat.reshape((-1,) + x_hat.shape[-2:])[la]
    wf = w_hat.reshape((-1,) + w_hat.shape[-2:])[ra]
    want = xf.astype(np.float64) @ np.swapaxes(wf, -1, -2).astype(np.float64)
    wq, s = nv.quantize(w, mode=mode, global_scale=gw)
    kw = dict(mode=mode, global_scale_x=gx, global_scale_w=gw)
    for got in (
        nv.gather_qqmm(x, wq, s, li, ri, **kw),  # packed weight
        nv.gather_qqmm(x, w, None, li, ri, **kw),  # quantized on the fly
    ):
        assert got.shape == want.shape and got.dtype == nv.float32
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-4)
    ref = nv.gather_mm(nv.array(x_hat), nv.swapaxes(nv.array(w_hat), -1, -2), li, ri)
    np.testing.assert_allclose(np.asarray(ref), want, rtol=1e-5, atol=1e-4)


def test_gather_qqmm_gradient_reaches_the_gathered_rows():
    # (MLX's vjp quantizes the cotangent along M and N too: multiples of the group size)
    x = nv.array(RNG.standard_normal((3, 32, 32)).astype(np.float32))
    w = nv.array(RNG.standard_normal((4, 32, 32)).astype(np.float32))
    li, ri = nv.array([2, 0]), nv.array([1, 1])

    def f(a, b):
        return nv.gather_qqmm(a, b, None, li, ri, mode="mxfp8").sum()

    dx, dw = nv.grad(f, argnums=(0, 1))(x, w)
    # the entries never gathered get no gradient; gathered ones get qqmm's
    assert not np.asarray(dx)[1].any() and np.asarray(dx)[[0, 2]].any()
    assert not np.asarray(dw)[[0, 2, 3]].any() and np.asarray(dw)[1].any()
    gx, gw = nv.grad(lambda a, b: nv.qqmm(a, b, mode="mxfp8").sum(), argnums=(0, 1))(x[2], w[1])
    gx0, gw0 = nv.grad(lambda a, b: nv.qqmm(a, b, mode="mxfp8").sum(), argnums=(0, 1))(x[0], w[1])
    np.testing.assert_allclose(np.asarray(dx)[2], np.asarray(gx), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(dx)[0], np.asarray(gx0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(dw)[1], np.asarray(gw) + np.asarray(gw0), rtol=1e-5)


def test_gather_qqmm_errors_name_the_function():
    x, w = nv.ones((3, 2, 64)), nv.ones((3, 4, 64))
    with pytest.raises(ValueError, match="gather_qqmm: mode"):
        nv.gather_qqmm(x, w, mode="affine")
    with pytest.raises(ValueError, match="gather_qqmm: x must have at least 2"):
        nv.gather_qqmm(nv.ones((64,)), w, mode="mxfp8")
    with pytest.raises(ValueError, match="gather_qqmm: indices must be integral"):
        nv.gather_qqmm(x, w, rhs_indices=nv.array([0.5]), mode="mxfp8")
    with pytest.raises(ValueError, match="gather_qqmm: the last dimensions"):
        nv.gather_qqmm(x, nv.ones((3, 4, 32)), mode="mxfp8")


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8", "nvfp4"])
def test_grad_through_integer_scales_or_codes_raises(mode):
    # MLX's test_fp_vjp_scales_throws: the float modes' scales are uint8, yet a gradient
    # asked through them is an error, not zeros; so is one through the packed weight
    x = nv.array(RNG.standard_normal((2, 64)).astype(np.float32))
    wq, s = nv.quantize(nv.array(RNG.standard_normal((32, 64)).astype(np.float32)), mode=mode)
    with pytest.raises(ValueError, match=f"no gradient with respect to the scales in {mode}"):
        nv.grad(lambda s: nv.quantized_matmul(x, wq, s, mode=mode).sum())(s)
    with pytest.raises(ValueError, match=f"no gradient with respect to the scales in {mode}"):
        nv.grad(lambda s: nv.gather_qmm(x, wq, s, rhs_indices=nv.array(0), mode=mode).sum())(s)
    with pytest.raises(ValueError, match="no gradient with respect to the quantized weights"):
        nv.grad(lambda w: nv.quantized_matmul(x, w, s, mode=mode).sum())(wq)
    # the gradient for x alone does not ask about the scales
    gx = nv.grad(lambda x: nv.quantized_matmul(x, wq, s, mode=mode).sum())(x)
    w_hat = np.asarray(nv.dequantize(wq, s, mode=mode, dtype=nv.float32))
    np.testing.assert_allclose(np.asarray(gx), np.ones((2, 32)) @ w_hat, rtol=1e-5, atol=1e-5)


def test_shapeless_replay_on_shapes_that_do_not_fit_raises_as_uncompiled():
    w = nv.array(RNG.standard_normal((32, 64)).astype(np.float32))
    wq, s, b = nv.quantize(w, 64, 4)
    qmm = nv.compile(
        lambda x: nv.quantized_matmul(x, wq, s, b, group_size=64, bits=4), shapeless=True
    )
    assert qmm(nv.ones((2, 64))).shape == (2, 32)
    assert qmm(nv.ones((3, 64))).shape == (3, 32)  # another batch replays
    with pytest.raises(ValueError, match="quantized_matmul: the last dimension of x"):
        qmm(nv.ones((2, 32)))
    deq = nv.compile(lambda q: nv.dequantize(q, s, b, 64, 4), shapeless=True)
    assert deq(wq).shape == (32, 64)
    with pytest.raises(ValueError, match="dequantize: the quantized weight"):
        deq(wq[:, :4])
    quant = nv.compile(lambda a: nv.quantize(a, 64, 4)[0], shapeless=True)
    assert quant(w).shape == (32, 8)
    with pytest.raises(ValueError, match="quantize: the last dimension"):
        quant(w[:, :48])
