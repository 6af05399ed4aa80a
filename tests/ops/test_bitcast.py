"""view, to_fp8 and from_fp8 against NumPy and ml_dtypes."""

import ml_dtypes
import numpy as np
import pytest

import nuvec as nv

RNG = np.random.default_rng(5)
TYPES = ["bool_", "uint8", "int16", "float16", "bfloat16", "float32", "int64", "uint32"]


def npd(name):
    return ml_dtypes.bfloat16 if name == "bfloat16" else getattr(np, name)


@pytest.mark.parametrize("t", TYPES)
def test_view_matches_numpy(t):
    a = RNG.integers(-100, 100, (4, 2, 4)).astype(np.int32)
    got = nv.array(a).view(getattr(nv, t))
    want = a.view(npd(t))
    assert got.shape == want.shape and got.dtype == getattr(nv, t)
    np.testing.assert_array_equal(np.array(got.view(nv.uint8)), want.view(np.uint8))
    back = nv.view(got, nv.int32)
    np.testing.assert_array_equal(np.array(back), a)


def test_view_of_strided_inputs_and_errors():
    base = RNG.integers(-100, 100, (2, 4)).astype(np.int32)
    for x, ref in [
        (nv.broadcast_to(nv.array(base), (3, 2, 4)), np.broadcast_to(base, (3, 2, 4))),
        (nv.array(base).T, base.T),
    ]:
        out = x.view(nv.int16)
        np.testing.assert_array_equal(np.array(out), np.ascontiguousarray(ref).view(np.int16))
    assert nv.array(1, nv.int8).view(nv.uint8).item() == 1
    with pytest.raises(ValueError, match="view"):
        nv.array(1, nv.int8).view(nv.int32)
    with pytest.raises(ValueError, match="view"):
        nv.ones((3,), dtype=nv.int8).view(nv.int16)


def test_view_vmap():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    got = nv.vmap(lambda v: v.view(nv.uint16), in_axes=1)(nv.array(x))
    want = np.stack([np.ascontiguousarray(x[:, i]).view(np.uint16) for i in range(4)])
    np.testing.assert_array_equal(np.array(got), want)


ALL_CODES = np.arange(256, dtype=np.uint8)


def mlx_value(code):
    """e4m3 with MLX's reading: 0x7F is 480 (no NaN code)."""
    s = -1.0 if code & 0x80 else 1.0
    e, m = (code >> 3) & 0xF, code & 0x7
    return s * (m / 8 * 2.0**-6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))


def test_from_fp8_decodes_every_code():
    want = np.array([mlx_value(int(c)) for c in ALL_CODES])
    for d in (nv.float32, nv.float16, nv.bfloat16):
        got = nv.from_fp8(nv.array(ALL_CODES), d)
        assert got.dtype == d
        np.testing.assert_array_equal(np.array(got.astype(nv.float32)), want.astype(np.float32))
    assert nv.from_fp8(nv.array(ALL_CODES)).dtype == nv.bfloat16


def test_to_fp8_rounds_to_nearest_even_and_saturates():
    x = np.concatenate(
        [
            RNG.standard_normal(400) * 10.0 ** RNG.uniform(-4, 2.6, 400),
            [0.0, -0.0, 448.0, 463.9, 464.0, 1e6, np.inf, -np.inf, np.nan],
            # ties between neighbours: 1 + 1/16 lies between 1 and 1.125
            [1.0625, 1.1875, 2**-9 * 1.5, 2**-10],
        ]
    ).astype(np.float32)
    codes = np.array(nv.to_fp8(nv.array(x)))
    finite = np.array([mlx_value(int(c)) for c in ALL_CODES[:127]])  # 0..0x7E, positive
    for v, c in zip(x, codes):
        mag = abs(float(v))
        if not mag < 464.0:
            assert c & 0x7F == 0x7E, v
            continue
        d = np.abs(finite - mag)
        best = np.flatnonzero(d == d.min())
        pick = best[0] if len(best) == 1 else best[np.argmin(best % 2)]  # even mantissa
        assert c & 0x7F == pick, (v, c, pick)
        if mag:
            assert bool(c & 0x80) == (v < 0)


def test_fp8_round_trip_and_errors():
    vals = nv.array([448, 256, 192, 128, 96, 64, 48, 32, 24, 16, 12, 8, 6, 4, 3, 2, 0.015625])
    assert nv.array_equal(nv.from_fp8(nv.to_fp8(vals)), vals).item()
    assert nv.array_equal(nv.from_fp8(nv.to_fp8(-vals)), -vals).item()
    assert nv.to_fp8(nv.array([1.0], dtype=nv.bfloat16)).dtype == nv.uint8
    with pytest.raises(ValueError, match="to_fp8"):
        nv.to_fp8(nv.array([1, 2]))
    with pytest.raises(ValueError, match="from_fp8"):
        nv.from_fp8(nv.array([1.0]))
    with pytest.raises(ValueError, match="from_fp8"):
        nv.from_fp8(nv.array([1], dtype=nv.uint8), nv.int32)
