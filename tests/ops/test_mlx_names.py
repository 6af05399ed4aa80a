"""MLX's names built from other ops (composites.py, array_api.py, windows.py) against NumPy."""

import numpy as np
import pytest

import nuvec as nv
from tests.ops._helpers import fd_jvp_check, fd_vjp_check, vmap_check

RNG = np.random.default_rng(7)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_aliases_are_the_same_functions():
    pairs = {
        "acos": "arccos",
        "acosh": "arccosh",
        "asin": "arcsin",
        "asinh": "arcsinh",
        "atan": "arctan",
        "atanh": "arctanh",
        "atan2": "arctan2",
        "pow": "power",
        "bitwise_left_shift": "left_shift",
        "bitwise_right_shift": "right_shift",
        "cumulative_sum": "cumsum",
        "cumulative_prod": "cumprod",
        "concat": "concatenate",
        "permute_dims": "transpose",
        "matrix_transpose": "transpose",
        "empty": "zeros",
        "empty_like": "zeros_like",
    }
    for alias, name in pairs.items():
        assert getattr(nv, alias) is getattr(nv, name), alias


def test_empty_is_zero_filled_float32():
    x = nv.empty((2, 3))
    assert x.dtype == nv.float32 and x.shape == (2, 3) and np.all(np.array(x) == 0)
    assert nv.empty_like(nv.array([1, 2], dtype=nv.int16)).dtype == nv.int16


def test_logical_xor():
    a = np.array([0, 1, 2, 0]), np.array([0, 0, 3, 5.0])
    got = nv.logical_xor(nv.array(a[0]), nv.array(a[1].astype(np.float32)))
    assert got.dtype == nv.bool_
    np.testing.assert_array_equal(np.array(got), np.logical_xor(*a))
    assert nv.logical_xor(True, nv.array([True, False])).tolist() == [False, True]


def test_trunc_and_its_zero_gradient():
    x = np.array([-2.5, -1.0, -0.3, 0.0, 0.7, 3.9, np.inf, -np.inf], dtype=np.float32)
    np.testing.assert_array_equal(np.array(nv.trunc(nv.array(x))), np.trunc(x))
    i = nv.array([-3, 4])
    assert nv.trunc(i).dtype == nv.int32 and nv.trunc(i).tolist() == [-3, 4]
    assert np.all(np.array(nv.grad(lambda v: nv.trunc(v).sum())(nv.array(x[:6]))) == 0)
    with pytest.raises(ValueError, match="trunc"):
        nv.trunc(nv.array([1 + 1j]))


def test_positive_is_a_copy():
    x = nv.array([1.0, -2.0])
    y = nv.positive(x)
    assert y is not x and y.tolist() == [1.0, -2.0]


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), [2, 1]])
def test_flip(axis):
    x = f32(2, 3, 4)
    np.testing.assert_array_equal(np.array(nv.flip(nv.array(x), axis)), np.flip(x, axis))


def test_flip_gradient_and_vmap():
    x = np.arange(6.0).reshape(2, 3)
    fd_vjp_check(lambda a: nv.flip(a, 1) * a, [x])
    vmap_check(lambda a: nv.flip(a), [x], in_axes=(1,))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack(axis):
    x = f32(2, 3, 4)
    parts = nv.unstack(nv.array(x), axis=axis)
    want = [np.take(x, i, axis=axis) for i in range(x.shape[axis])]
    assert len(parts) == len(want)
    for p, w in zip(parts, want):
        np.testing.assert_array_equal(np.array(p), w)
    with pytest.raises(ValueError, match="unstack"):
        nv.unstack(nv.array(1.0))


@pytest.mark.parametrize("n,axis", [(0, -1), (1, -1), (2, 0), (3, 1), (5, 1)])
def test_diff(n, axis):
    x = f32(4, 5)
    np.testing.assert_allclose(
        np.array(nv.diff(nv.array(x), n, axis)), np.diff(x, n, axis), rtol=1e-6, atol=1e-5
    )
    xi = RNG.integers(-9, 9, (4, 5)).astype(np.int32)
    np.testing.assert_array_equal(np.array(nv.diff(nv.array(xi), n, axis)), np.diff(xi, n, axis))


def test_diff_errors_and_gradient():
    with pytest.raises(ValueError, match="diff"):
        nv.diff(nv.array([1, 2]), -1)
    with pytest.raises(ValueError, match="diff"):
        nv.diff(nv.array([1, 2]), axis=1)
    fd_vjp_check(lambda a: nv.diff(a, 2), [np.array([1.0, 4.0, 2.0, 8.0, 3.0])])
    vmap_check(lambda a: nv.diff(a), [np.arange(12.0).reshape(3, 4) ** 2], in_axes=(0,))


@pytest.mark.parametrize(
    "sa,sb", [((2,), (3,)), ((2, 3), (4, 1)), ((3,), (2, 2)), ((2, 1, 2), (3, 2)), ((), (3,))]
)
def test_kron(sa, sb):
    a, b = f32(*sa), f32(*sb)
    np.testing.assert_allclose(
        np.array(nv.kron(nv.array(a), nv.array(b))), np.kron(a, b), rtol=1e-6
    )


def test_kron_gradient_and_errors():
    fd_vjp_check(lambda a, b: nv.kron(a, b), [np.array([[1.0, 2.0]]), np.array([3.0, -1.0])])
    with pytest.raises(ValueError, match="kron"):
        nv.kron(nv.zeros((0,)), nv.ones((2,)))


@pytest.mark.parametrize(
    "offset,axis1,axis2", [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (0, 1, 2), (2, -1, 0), (9, 0, 1)]
)
def test_trace(offset, axis1, axis2):
    x = f32(3, 4, 5)
    np.testing.assert_allclose(
        np.array(nv.trace(nv.array(x), offset, axis1, axis2)),
        np.trace(x, offset, axis1, axis2),
        rtol=1e-6,
        atol=1e-6,
    )


def test_trace_dtype_gradient_errors():
    x = np.arange(9, dtype=np.int32).reshape(3, 3)
    t = nv.trace(nv.array(x), dtype=nv.float32)
    assert t.dtype == nv.float32 and t.item() == 12.0
    assert nv.trace(nv.array(x)).dtype == nv.int32
    fd_vjp_check(lambda a: nv.trace(a), [np.arange(6.0).reshape(2, 3)])
    with pytest.raises(ValueError, match="trace"):
        nv.trace(nv.array([1, 2]))
    with pytest.raises(ValueError):
        nv.trace(nv.ones((2, 2)), axis1=1, axis2=1)


@pytest.mark.parametrize(
    "shape,axis,keepdims",
    [
        ((7,), None, False),
        ((6,), 0, True),
        ((3, 4), 1, False),
        ((3, 4, 5), (0, 2), True),
        ((3, 4, 2), None, True),
        ((4, 3), -2, False),
    ],
)
def test_median(shape, axis, keepdims):
    x = f32(*shape)
    got = nv.median(nv.array(x), axis=axis, keepdims=keepdims)
    want = np.median(x, axis=tuple(axis) if isinstance(axis, list) else axis, keepdims=keepdims)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.array(got), want, rtol=1e-6)


def test_median_dtypes_and_gradient():
    assert nv.median(nv.array([1, 2, 3, 4])).dtype == nv.float32
    assert nv.median(nv.array([1, 2, 3, 4])).item() == 2.5
    assert nv.median(nv.array([1.0, 2.0], dtype=nv.float16)).dtype == nv.float16
    fd_vjp_check(
        lambda a: nv.median(a, axis=1), [np.array([[3.0, 1.0, 2.0, 7.0], [0.5, 9.0, 4.0, 2.0]])]
    )
    with pytest.raises(ValueError, match="median"):
        nv.median(nv.zeros((0, 2)), axis=0)
    with pytest.raises(ValueError, match="median"):
        nv.median(nv.zeros((2, 2)), axis=(0, 0))


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ((0, 1), True)])
def test_count_nonzero(axis, keepdims):
    x = RNG.integers(0, 3, (4, 5)).astype(np.float32)
    x[0, 0] = np.nan  # NaN is non-zero
    got = nv.count_nonzero(nv.array(x), axis=axis, keepdims=keepdims)
    assert got.dtype == nv.int32
    np.testing.assert_array_equal(np.array(got), np.count_nonzero(x, axis=axis, keepdims=keepdims))


def test_vecdot():
    a, b = f32(3, 4), f32(4)
    np.testing.assert_allclose(
        np.array(nv.vecdot(nv.array(a), nv.array(b))), np.vecdot(a, b), rtol=1e-5
    )
    np.testing.assert_allclose(
        np.array(nv.vecdot(nv.array(a), nv.array(a), axis=0)), np.vecdot(a, a, axis=0), rtol=1e-5
    )
    c = (f32(2, 3) + 1j * f32(2, 3)).astype(np.complex64)
    d = (f32(2, 3) + 1j * f32(2, 3)).astype(np.complex64)
    np.testing.assert_allclose(
        np.array(nv.vecdot(nv.array(c), nv.array(d))), np.vecdot(c, d), rtol=1e-5
    )
    fd_vjp_check(lambda x, y: nv.vecdot(x, y), [np.ones((2, 3)), np.arange(3.0)])
    with pytest.raises(ValueError, match="vecdot"):
        nv.vecdot(nv.ones((2, 3)), nv.ones((2, 4)))
    with pytest.raises(ValueError, match="vecdot"):
        nv.vecdot(nv.array(1.0), nv.ones((2,)))


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(side):
    seq = np.sort(RNG.integers(0, 10, 12)).astype(np.float32)
    vals = RNG.integers(-1, 12, (3, 4)).astype(np.float32) + np.float32(0.5) * (
        RNG.random((3, 4)) > 0.5
    )
    got = nv.searchsorted(nv.array(seq), nv.array(vals), side=side)
    assert got.dtype == nv.uint32 and got.shape == (3, 4)
    np.testing.assert_array_equal(np.array(got), np.searchsorted(seq, vals, side=side))
    iseq = nv.array([1, 3, 5])
    assert nv.searchsorted(iseq, nv.array([3.5, 0.0]), side=side).tolist() == [2, 0]


def test_searchsorted_errors():
    with pytest.raises(ValueError, match="side"):
        nv.searchsorted(nv.array([1, 2]), nv.array([1]), side="middle")
    with pytest.raises(ValueError, match="1-D"):
        nv.searchsorted(nv.ones((2, 2)), nv.array([1.0]))


def test_asarray():
    x = nv.array([1, 2])
    assert nv.asarray(x) is x
    assert nv.asarray(x, copy=True) is not x
    assert nv.asarray(x, nv.float32).dtype == nv.float32
    with pytest.raises(ValueError, match="copy"):
        nv.asarray(x, nv.float16, copy=False)
    with pytest.raises(ValueError, match="copy"):
        nv.asarray(x, copy=False)
    assert nv.asarray(x, dtype=nv.float32, copy=True).dtype == nv.float32
    assert nv.asarray(1 + 2j).item() == 1 + 2j and nv.asarray(((1, 2), (3, 4))).shape == (2, 2)
    h = np.arange(4, dtype=np.float32)
    assert nv.asarray(h).tolist() == [0.0, 1.0, 2.0, 3.0]
    shared = nv.asarray(h, copy=False)
    assert np.shares_memory(np.array(shared, copy=False), h)
    with pytest.raises(ValueError, match="copy"):
        nv.asarray(h[::2], copy=False)
    assert nv.asarray([1.5, 2]).dtype == nv.float32


def test_result_type_and_can_cast():
    assert nv.result_type(nv.int8, nv.int16) == nv.int16
    assert nv.result_type(nv.array([1], dtype=nv.int8), nv.int16, nv.int32) == nv.int32
    assert nv.result_type(nv.array(1.0), nv.array(1, dtype=nv.int32)) == nv.float32
    with pytest.raises(ValueError, match="result_type"):
        nv.result_type()
    with pytest.raises(ValueError, match="result_type"):
        nv.result_type(3)
    assert nv.can_cast(nv.uint8, nv.int16) and not nv.can_cast(nv.uint16, nv.int16)
    assert nv.can_cast(nv.array([1], dtype=nv.int8), nv.int32)
    assert not nv.can_cast(nv.float64, nv.float32)


def test_isdtype():
    assert nv.isdtype(nv.int32, nv.int32) and not nv.isdtype(nv.int32, nv.int16)
    assert nv.isdtype(nv.uint8, "unsigned integer") and not nv.isdtype(nv.uint8, "signed integer")
    assert nv.isdtype(nv.bfloat16, "real floating") and nv.isdtype(nv.complex64, "complex floating")
    assert nv.isdtype(nv.bool_, "bool") and not nv.isdtype(nv.bool_, "numeric")
    assert nv.isdtype(nv.int8, ("bool", nv.int8)) and not nv.isdtype(nv.int32, ("bool",))
    with pytest.raises(ValueError, match="kind"):
        nv.isdtype(nv.int32, "not a kind")
    xp = nv.array(1.0).__array_namespace__()
    assert all(hasattr(xp, n) for n in ("result_type", "can_cast", "isdtype", "vecdot"))


@pytest.mark.parametrize("name", ["hanning", "hamming", "bartlett", "blackman"])
@pytest.mark.parametrize("M", [0, 1, 2, 3, 10, 33])
def test_windows_match_numpy(name, M):
    got = getattr(nv, name)(M)
    want = getattr(np, name)(M)
    assert got.dtype == nv.float32 and got.shape == want.shape
    np.testing.assert_allclose(np.array(got), want, atol=2e-6)


def test_window_argument_checked():
    with pytest.raises(TypeError, match="hanning"):
        nv.hanning(2.5)


def test_stream_keyword_accepted():
    x = nv.array([[1.0, 2.0], [3.0, 4.0]])
    for f in (
        lambda s: nv.flip(x, stream=s),
        lambda s: nv.trace(x, stream=s),
        lambda s: nv.median(x, stream=s),
        lambda s: nv.hanning(4, stream=s),
        lambda s: nv.diff(x, stream=s),
        lambda s: nv.kron(x, x, stream=s),
    ):
        assert f(nv.cpu).tolist() == f(None).tolist()


def test_composites_jvp():
    fd_jvp_check(
        lambda a: nv.median(nv.flip(a, 0), axis=0), [np.array([[1.0, 4.0], [3.0, 2.0], [0.0, 5.0]])]
    )


def test_from_dlpack():
    h = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = nv.from_dlpack(h)
    assert x.dtype == nv.float32 and x.tolist() == h.tolist()
    assert np.shares_memory(np.array(x, copy=False), h)
    assert not np.shares_memory(np.array(nv.from_dlpack(h, copy=True), copy=False), h)
    stepped = nv.from_dlpack(h[:, ::2], copy=False)  # any layout is shared (MLX)
    assert stepped.tolist() == h[:, ::2].tolist()
    assert np.shares_memory(np.array(stepped, copy=False), h)
    with pytest.raises(TypeError, match="from_dlpack"):
        nv.from_dlpack([1, 2])


def test_contiguous():
    x = nv.transpose(nv.reshape(nv.arange(6), (2, 3)))
    y = nv.contiguous(x)
    assert y is not x and y.tolist() == x.tolist()
    np.testing.assert_array_equal(
        np.array(nv.grad(lambda v: nv.contiguous(v * v).sum())(nv.array([1.0, 2.0]))), [2.0, 4.0]
    )


@pytest.mark.parametrize(
    "case",
    [
        "eb,cb,fb->cef",
        "dd,fb,be,cdb->cef",
        "bca,cdb,dbf,afc->",
        "dcc,fce,ea,dbf->ab",
        "ij,jk,kl",
        "ii",
        "ij->i",
    ],
)
def test_einsum_path_matches_numpy(case):
    sizes = dict(zip("abcdefijkl", [2, 3, 4, 5, 4, 3, 5, 8, 10, 7]))
    subs = case.split("->")[0].split(",")
    ops = [np.ones([sizes[c] for c in s]) for s in subs]
    want = np.einsum_path(case, *ops, optimize="greedy")
    path, report = nv.einsum_path(case, *[nv.array(o, dtype=nv.float32) for o in ops])
    assert path == want[0][1:] and isinstance(report, str)
    with pytest.raises(ValueError, match="einsum_path"):
        nv.einsum_path("ij,jk", nv.zeros((2, 3)), nv.zeros((4, 5)))


def test_median_and_searchsorted_with_nan():
    nan = float("nan")
    for vals in ([1.0, nan, 0.0], [nan, 1.0, 0.0], [1.0, 2.0, nan, 4.0]):
        for d in (nv.float16, nv.bfloat16, nv.float32):
            assert nv.isnan(nv.median(nv.array(vals, dtype=d))).item()
    x = np.array([[1.0, nan, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
    for ax in (0, 1):
        np.testing.assert_array_equal(
            np.array(nv.median(nv.array(x), axis=ax)), np.median(x, axis=ax)
        )
    seq = np.array([1, 2, nan], dtype=np.float32)
    for side in ("left", "right"):
        got = nv.searchsorted(nv.array(seq), nv.array([nan, 2.0, 9.0]), side=side)
        np.testing.assert_array_equal(
            np.array(got), np.searchsorted(seq, [nan, 2.0, 9.0], side=side)
        )
    assert nv.searchsorted(nv.array([1.0, 2.0, 3.0]), nv.array([nan])).tolist() == [3]
    assert nv.searchsorted(nv.array([], dtype=nv.float32), nv.array([1.0, -1.0])).tolist() == [0, 0]
    vs = nv.array(RNG.uniform(0, 10, (3, 5)).astype(np.float32))
    va = nv.arange(8, dtype=nv.float32)
    assert nv.array_equal(
        nv.vmap(lambda v: nv.searchsorted(va, v))(vs), nv.searchsorted(va, vs)
    ).item()


@pytest.mark.parametrize(
    "shape,strides,offset",
    [
        ((10, 10), (3, 3), 0),
        ((5, 5), (7, 1), 1),
        ((2, 20), (1, 5), 3),
        ((10,), (4,), 2),
        ((3, 0), (1, 1), 0),
    ],
)
def test_as_strided_matches_numpy(shape, strides, offset):
    x = f32(128)
    want = np.lib.stride_tricks.as_strided(x[offset:], shape, np.multiply(strides, 4))
    got = nv.as_strided(nv.array(x), shape, strides, offset)
    np.testing.assert_array_equal(np.array(got), want)


def test_as_strided_defaults_reverse_gradient_errors():
    x = nv.array(f32(4, 3))
    np.testing.assert_array_equal(np.array(nv.as_strided(x)), np.array(x))
    np.testing.assert_array_equal(np.array(nv.as_strided(x, (2, 6))), np.array(x).reshape(2, 6))
    v = nv.array(f32(32))
    assert nv.array_equal(nv.as_strided(v, (32,), (-1,), 31), v[::-1]).item()
    g = nv.grad(lambda t: nv.as_strided(t, (3, 2), (1, 1)).sum())(nv.arange(4, dtype=nv.float32))
    assert g.tolist() == [1.0, 2.0, 2.0, 1.0]
    with pytest.raises(ValueError, match="as_strided"):
        nv.as_strided(v, (-2, 3), (3, 1), 0)
    with pytest.raises(ValueError, match="outside"):
        nv.as_strided(v, (10,), (4,), 0)


def test_depends():
    a = nv.array([1.0, 2.0, 3.0])
    b, c = nv.exp(a), nv.log(a)
    out = nv.depends([b], [c])
    assert any(x is c for x in out[0].inputs)  # the dependency is an input of the node
    assert isinstance(out, list) and nv.array_equal(out[0], b).item()
    assert nv.array_equal(nv.depends(b, c), b).item()
    g = nv.grad(lambda v: nv.depends(v * v, nv.log(v)).sum())(a)
    assert g.tolist() == [2.0, 4.0, 6.0]
    _, t = nv.jvp(lambda v: nv.depends(v * v, v), [a], [nv.ones((3,))])
    assert t[0].tolist() == [2.0, 4.0, 6.0]
