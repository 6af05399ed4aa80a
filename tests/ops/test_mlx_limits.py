"""MLX's limits and argument forms at the edges: 32-bit slice bounds and shape dimensions,
conv1d on higher-rank operands, and from_dlpack of a dtype nuvec has no type for."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nuvec as nv


@pytest.mark.parametrize(
    "index",
    [
        slice(None, 2**32),
        slice(-(2**32), None),
        slice(None, None, 2**32),
        (slice(np.int64(2**33), None),),
        (None, slice(2**40)),
        (Ellipsis, slice(2**31)),
    ],
)
def test_slice_bounds_beyond_32_bits_are_refused(index):
    x = nv.array([0, 1, 2])
    with pytest.raises(ValueError, match="does not fit in 32 bits"):
        x[index]


def test_slice_bounds_within_32_bits_clamp_as_numpy():
    x = nv.array([0, 1, 2])
    assert x[: 2**31 - 1].tolist() == [0, 1, 2]
    assert x[-(2**31) :].tolist() == [0, 1, 2]
    assert x[:: 2**31 - 1].tolist() == [0]
    with pytest.raises(ValueError):
        x[2**32]  # an int index beyond the axis


def test_numpy_shape_beyond_32_bits_is_an_overflow():
    a = np.lib.stride_tricks.as_strided(np.zeros(1, np.bool_), (2**31,), (0,))
    with pytest.raises(OverflowError, match="dimension 2147483648"):
        nv.array(a)


def test_conv1d_of_higher_rank_operands_convolves_every_spatial_axis():
    r = np.random.default_rng(0)
    x = nv.array(r.standard_normal((1, 5, 6, 4)).astype(np.float32))
    w = nv.array(r.standard_normal((6, 3, 2, 2)).astype(np.float32))
    for kw in ({}, {"stride": 2, "padding": 1}, {"dilation": 2}):
        got = nv.conv1d(x, w, groups=2, **kw)
        two = {k: (v, v) for k, v in kw.items()}
        np.testing.assert_allclose(
            np.array(got), np.array(nv.conv2d(x, w, groups=2, **two)), rtol=1e-6, atol=1e-6
        )
    # and its gradient, against conv2d's
    cot = nv.ones(nv.conv1d(x, w, groups=2).shape)
    _, g1 = nv.vjp(lambda a, b: nv.conv1d(a, b, groups=2), [x, w], [cot])
    _, g2 = nv.vjp(lambda a, b: nv.conv2d(a, b, groups=2), [x, w], [cot])
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="conv1d: weight must be 3-d"):
        nv.conv1d(nv.ones((1, 5, 2)), nv.ones((2, 3, 3, 1)), groups=2)


class _NoDtype:
    """A DLPack producer whose export fails as NumPy's import of an unknown dtype does."""

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, *args, **kwargs):
        raise RuntimeError("Unsupported dtype in DLTensor.")


def test_from_dlpack_of_an_unsupported_dtype_is_a_value_error():
    with pytest.raises(ValueError, match="from_dlpack: cannot import"):
        nv.from_dlpack(_NoDtype())


def test_from_dlpack_of_torch_complex32_is_a_value_error():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's complex32 is experimental
        x = torch.ones(3, dtype=torch.complex32)
    with pytest.raises(ValueError, match="from_dlpack"):
        nv.from_dlpack(x)
