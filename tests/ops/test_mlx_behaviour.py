"""Behaviour that follows MLX where NumPy or an older nuvec differed: default dtypes of
nv.array, arange's inference and casts, linspace's endpoint, full's precision, meshgrid's
tuple, shape arguments (types, negative and overflowing dimensions), pad's mirror modes,
complex inputs that MLX refuses, and clip's keywords."""

import math

import numpy as np
import pytest

import nuvec as nv


def test_array_default_dtypes():
    assert nv.array(np.zeros(3)).dtype == nv.float32
    assert nv.array(np.zeros(3), nv.float64).dtype == nv.float64
    assert nv.array(np.float64(1.5)).dtype == nv.float32
    assert nv.array(np.zeros(2, np.complex128)).dtype == nv.complex64
    assert nv.array(np.zeros(2, np.int64)).dtype == nv.int64
    assert nv.array(np.zeros(2, np.float16)).dtype == nv.float16
    assert nv.array([]).dtype == nv.float32 and nv.array([]).shape == (0,)
    assert nv.array([2**40]).dtype == nv.int64 and nv.array([2**40]).tolist() == [2**40]
    assert nv.array(2**40).dtype == nv.int64
    assert nv.array([1, -(2**31)]).dtype == nv.int32
    assert nv.array([1.0, 2**40]).dtype == nv.float32


def test_array_float64_survives_pickle():
    import pickle

    a = nv.array(np.array([0.1, 0.2]), nv.float64)
    b = pickle.loads(pickle.dumps(a))
    assert b.dtype == nv.float64 and b.tolist() == [0.1, 0.2]


def test_arange_inference_and_signatures():
    a = nv.arange(2**40, 2**40 + 3)
    assert a.dtype == nv.int64 and a.tolist() == [2**40, 2**40 + 1, 2**40 + 2]
    assert nv.arange(2**31 - 3, 2**31 - 1).dtype == nv.int32
    assert nv.arange(-(2**31) - 1, -(2**31) + 1).dtype == nv.int64
    assert nv.arange(stop=2, step=2**40).tolist() == [0]
    assert nv.arange(stop=2, step=0.5).tolist() == [0.0, 0.5, 1.0, 1.5]
    assert nv.arange(-3, step=-1).tolist() == [0, -1, -2]
    assert nv.arange(-3, None, -1).tolist() == [0, -1, -2]
    assert nv.arange(start=1, stop=4).tolist() == [1, 2, 3]
    with pytest.raises(TypeError, match="arange: stop"):
        nv.arange(start=1, step=2)


def test_arange_casts_the_step_first():
    assert nv.arange(0, 3, 0.2, dtype=nv.int32).tolist() == [0] * 15
    assert nv.arange(-1, -4, -0.9, dtype=nv.int32).tolist() == [-1] * 4
    assert nv.arange(-1, -20, -1.2, dtype=nv.int32).tolist() == list(range(-1, -17, -1))


@pytest.mark.parametrize(
    "args",
    [(0, 2**31), (0, 2**40), (float("nan"), 1, 5), (0, float("inf"), float("inf")), (2, 2, 0)],
)
def test_arange_refuses(args):
    with pytest.raises(ValueError, match="arange"):
        nv.arange(*args)


@pytest.mark.parametrize("num", [0, 1, 2, 5, 50])
def test_linspace_endpoint_matches_numpy(num):
    np.testing.assert_array_equal(
        np.asarray(nv.linspace(0, 10, num, endpoint=False)),
        np.linspace(0, 10, num, endpoint=False).astype(np.float32),
    )
    np.testing.assert_array_equal(
        np.asarray(nv.linspace(0, 10, num, False, nv.int64)),
        np.linspace(0, 10, num, endpoint=False, dtype=int),
    )


def test_full_keeps_double_precision():
    for v in (0.37, 0.1, math.pi):
        assert nv.full((3,), v, dtype=nv.float64).tolist() == [v] * 3
    assert nv.full((2,), 0.37).dtype == nv.float32


def test_meshgrid_returns_a_tuple():
    out = nv.meshgrid(nv.arange(3), nv.arange(2))
    assert isinstance(out, tuple) and [g.shape for g in out] == [(2, 3), (2, 3)]


def test_broadcast_shapes_errors():
    assert nv.broadcast_shapes((1, 2, 3), (3,)) == (1, 2, 3)
    for bad in [(), ((-3, 4), (4,)), ((3, 4), (4, 3))]:
        with pytest.raises(ValueError, match="broadcast_shapes"):
            nv.broadcast_shapes(*bad)
    with pytest.raises(TypeError, match="broadcast_shapes"):
        nv.broadcast_shapes((2.5, 4), (4,))


@pytest.mark.parametrize(
    "make",
    [
        lambda s: nv.zeros(s),
        lambda s: nv.ones(s),
        lambda s: nv.full(s, 0.0),
        lambda s: nv.random.uniform(shape=s),
        lambda s: nv.random.normal(s),
        lambda s: nv.reshape(nv.zeros(4), s),
        lambda s: nv.broadcast_to(nv.zeros(4), s),
    ],
)
def test_shape_arguments_are_checked(make):
    for bad in ["12", (2.5,), [1, "a"], 2.0, (True,)]:
        with pytest.raises(TypeError):
            make(bad)
    with pytest.raises(OverflowError, match=str(2**31)):
        make([2**31, 1])
    with pytest.raises(OverflowError, match=str(-(2**31) - 1)):
        make([-(2**31) - 1])


def test_computed_dimensions_that_overflow():
    big = nv.zeros(2**30)
    with pytest.raises(OverflowError, match=str(3 * 2**30)):
        nv.concatenate([big] * 3)
    with pytest.raises(OverflowError, match=str(2 * 2**30)):
        nv.repeat(big, 2)


def test_diagonal_offsets_must_be_ints():
    for f in (
        lambda: nv.eye(3, 4, k=2.5),
        lambda: nv.tri(3, k=1.5),
        lambda: nv.tril(nv.zeros((2, 2)), 0.5),
        lambda: nv.triu(nv.zeros((2, 2)), "1"),
    ):
        with pytest.raises(TypeError, match="k must be an int"):
            f()


CASES = [
    ((8,), [(2, 3)]),
    ((8,), [(0, 4)]),
    ((4,), [(10, 7)]),
    ((4,), [(20, 20)]),
    ((1,), [(3, 2)]),
    ((2,), [(5, 6)]),
    ((5, 6), [(9, 9), (11, 0)]),
    ((3, 4, 5), [(4, 4), (0, 0), (7, 3)]),
]


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
@pytest.mark.parametrize("shape,pw", CASES)
def test_pad_mirror_modes_match_numpy(mode, shape, pw):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    out = nv.pad(nv.array(x), pw, mode=mode)
    np.testing.assert_array_equal(np.asarray(out), np.pad(x, pw, mode=mode))


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
def test_pad_mirror_gradient_and_empty_axis(mode):
    w = np.arange(9, dtype=np.float32)
    g = nv.grad(lambda x: nv.sum(nv.pad(x, (2, 3), mode=mode) * nv.array(w)))(nv.ones(4))
    # the gradient of each input element is the sum of the weights of its copies
    index = np.pad(np.arange(4), (2, 3), mode=mode)
    np.testing.assert_array_equal(np.asarray(g), np.bincount(index, weights=w, minlength=4))
    with pytest.raises(ValueError, match="pad"):
        nv.pad(nv.array([]), 2, mode=mode)
    assert nv.pad(nv.zeros((0, 3)), [(0, 0), (1, 1)], mode=mode).shape == (0, 5)


@pytest.mark.parametrize(
    "f",
    [
        nv.expm1,
        nv.erf,
        nv.erfinv,
        nv.sigmoid,
        nv.floor,
        nv.ceil,
        lambda z: nv.remainder(z, z),
        lambda z: z % 2,
    ],
)
def test_complex_inputs_mlx_refuses(f):
    with pytest.raises(ValueError, match="complex"):
        f(nv.array([7 + 3j], nv.complex64))


def test_isposinf_isneginf_on_complex():
    x = nv.array([0.0, float("-inf"), float("inf")]).astype(nv.complex64)
    assert nv.isposinf(x).tolist() == [False, False, True]
    assert nv.isneginf(x).tolist() == [False, True, False]


def test_clip_keywords():
    a = nv.array([1.0, 5.0, -3.0])
    assert nv.clip(a, a_min=0.0, a_max=2.0).tolist() == [1.0, 2.0, 0.0]
    assert nv.clip(a, None, a_max=0.0).tolist() == [0.0, 0.0, -3.0]


@pytest.mark.parametrize(
    "op,ref",
    [
        ("__iadd__", np.add),
        ("__isub__", np.subtract),
        ("__imul__", np.multiply),
        ("__itruediv__", np.divide),
        ("__ifloordiv__", np.floor_divide),
        ("__imod__", np.mod),
        ("__ipow__", np.power),
    ],
)
def test_inplace_operators_update_every_reference(op, ref):
    x = np.array([1.5, 2.0, -3.0], np.float32)
    a = nv.array(x)
    alias, before = a, a * 1
    out = getattr(a, op)(2.0)
    assert out is a and alias is a
    np.testing.assert_allclose(np.asarray(alias), ref(x, np.float32(2.0)), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(before), x)  # earlier results keep the old value


def test_inplace_integer_operators_and_self_update():
    a = nv.array([6, 3])
    b = a
    a &= 2
    a |= 1
    a ^= 4
    a <<= 1
    a >>= 1
    assert b.tolist() == (((np.array([6, 3]) & 2 | 1) ^ 4) << 1 >> 1).tolist()
    c = nv.array([1.0, 2.0])
    c += c
    assert c.tolist() == [2.0, 4.0]
    m = nv.eye(2)
    m @= nv.array([[1.0, 2.0], [3.0, 4.0]])
    assert m.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_inplace_update_of_a_traced_input():
    def f(x):
        x += 1
        return nv.sum(x * x)

    x = nv.array([1.0, 2.0])
    assert nv.grad(f)(x).tolist() == [4.0, 6.0]
    assert nv.compile(f)(x).item() == 13.0
    assert x.tolist() == [1.0, 2.0]  # the caller's array is not the function's local one


@pytest.mark.parametrize("dtype", [nv.int8, nv.int16, nv.int32, nv.int64])
def test_integer_power_with_negative_exponent_is_zero(dtype):
    x = nv.power(nv.array([2, -2, 1, 3], dtype), nv.array([-1, -3, -9, 2], dtype))
    assert x.dtype == dtype and x.tolist() == [0, 0, 0, 9]
    assert nv.power(2, -1).item() == 0


def test_round_integers_to_negative_decimals():
    a = nv.array([15, 122, -25], nv.int32)
    assert nv.round(a, decimals=-1).tolist() == [20, 120, -20]  # half to even, as MLX
    assert nv.round(a, decimals=-2).tolist() == [0, 100, 0]
    assert nv.round(a, decimals=-1).dtype == nv.int32
    assert nv.round(a).tolist() == [15, 122, -25]
    with pytest.raises(TypeError, match="round: decimals"):
        nv.round(a, 1.5)


def test_bad_arguments_to_issubdtype_key_and_randint():
    with pytest.raises(TypeError, match="issubdtype: arg1"):
        nv.issubdtype("float33", nv.float32)
    assert nv.issubdtype(nv.float32, nv.floating) and not nv.issubdtype(nv.int8, nv.floating)
    with pytest.raises(OverflowError, match="key: seed"):
        nv.random.key(1 << 70)
    assert nv.random.key(2**64 - 1).tolist() == [2**32 - 1, 2**32 - 1]
    with pytest.raises(ValueError, match="randint: high must be finite"):
        nv.random.randint(0, float("inf"), (4,))


def test_inplace_update_keeps_the_dtype_and_python_ints_must_fit():
    a = nv.array([1])
    with pytest.raises(ValueError, match="in-place update cannot change the dtype"):
        a /= 1
    assert a.tolist() == [1] and a.dtype == nv.int32
    y = nv.array(2000000000, dtype=nv.int32)
    for f in (
        lambda: y + 3000000000,
        lambda: nv.add(y, 3000000000),
        lambda: nv.array([1], nv.uint8) - (-1) * 300,
    ):
        with pytest.raises(ValueError, match="does not fit"):
            f()
    assert (nv.array([1.0]) + 3000000000).tolist() == [3000000000.0]


@pytest.mark.parametrize("other", [[1, 2, 3], (1, 2, 3), "abc", None, {"a": 1}])
def test_comparing_with_non_arrays(other):
    a = nv.array([1, 2, 3])
    assert (a == other) is False and (a != other) is True
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__add__", "__rmul__", "__and__"):
        with pytest.raises(ValueError, match="an array operator cannot take"):
            getattr(a, op)(other)
    with pytest.raises(ValueError, match="add: an array operator cannot take"):
        a += other
    assert a.tolist() == [1, 2, 3]


def test_operators_take_arrays_scalars_and_numpy():
    a = nv.array([1, 2, 3])
    assert (a == np.array([1, 0, 3])).tolist() == [True, False, True]
    assert (a + np.int64(1)).tolist() == [2, 3, 4]
    assert (2.5 * a).tolist() == [2.5, 5.0, 7.5]
    assert nv.add(a, [1, 1, 1]).tolist() == [2, 3, 4]  # the functions still take lists
    with pytest.raises(ValueError, match="bitwise_and: not defined for float32"):
        nv.array(1.0) & nv.array(1)
    assert (nv.array(True) & True).item() is True


def _np_complex_logaddexp(x, y):
    hi = np.where((x.real > y.real) | ((x.real == y.real) & (x.imag >= y.imag)), x, y)
    lo = np.where(hi == x, y, x)
    return hi + np.log1p(np.exp(lo - hi))


def test_complex_logaddexp_and_logcumsumexp():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(6) * 3 + 1j * rng.standard_normal(6)).astype(np.complex64)
    y = (rng.standard_normal(6) * 3 + 1j * rng.standard_normal(6)).astype(np.complex64)
    np.testing.assert_allclose(
        np.array(nv.logaddexp(nv.array(x), nv.array(y))), _np_complex_logaddexp(x, y), rtol=1e-5
    )
    inf = nv.logaddexp(nv.array([-np.inf + 0j, 1 + 1j]), nv.array([-np.inf + 0j, np.inf + 0j]))
    assert inf.tolist() == [complex(-np.inf, 0), complex(np.inf, 0)]
    z = x.reshape(2, 3)
    for axis, reverse, inclusive in [(1, False, True), (0, True, True), (1, False, False)]:
        got = np.array(nv.logcumsumexp(nv.array(z), axis, reverse=reverse, inclusive=inclusive))
        w = np.flip(z, axis) if reverse else z
        ref = np.log(np.cumsum(np.exp(w.astype(np.complex128)), axis=axis))
        if not inclusive:
            ref = np.concatenate([np.full((2, 1), -np.inf), ref[:, :-1]], axis=1)
        ref = np.flip(ref, axis) if reverse else ref
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="arctan2: complex"):
        nv.arctan2(nv.array([1j]), nv.array([1.0]))


def test_like_constructors_take_a_dtype_and_empty_float_indices():
    x = nv.array([1, 2, 3])
    assert nv.zeros_like(x).dtype == nv.int32
    assert nv.zeros_like(x, nv.float16).dtype == nv.float16
    assert nv.ones_like(x, dtype=nv.float32).tolist() == [1.0, 1.0, 1.0]
    assert nv.empty_like(x, nv.float16).dtype == nv.float16
    e = nv.array([], nv.float32)
    assert nv.put_along_axis(e, e, e, axis=None).shape == (0,)


def test_arrays_from_bytes_dlpack_and_to_complex():
    assert nv.array(b"Hello").tolist() == [72, 101, 108, 108, 111]
    assert nv.array(bytearray([1, 2, 3])).dtype == nv.uint8
    assert nv.array(memoryview(np.arange(3, dtype=np.int16))).dtype == nv.int16
    for src, want in [(np.float64, nv.float32), (np.complex128, nv.complex64)]:
        x = nv.from_dlpack(np.ones(3, src))  # narrowed as nv.array narrows (MLX)
        assert x.dtype == want and x.tolist() == [1, 1, 1]
        with pytest.raises(ValueError, match="from_dlpack: copy=False"):
            nv.from_dlpack(np.ones(3, src), copy=False)
    assert nv.from_dlpack(np.ones(3, np.float16)).dtype == nv.float16
    zero_d = np.from_dlpack(nv.array(1, nv.int32))
    assert zero_d.shape == () and zero_d == 1
    assert complex(nv.array(1 + 2j)) == 1 + 2j and complex(nv.array(1.5)) == 1.5 + 0j
    with pytest.raises(ValueError):
        complex(nv.zeros((2, 1)))
    with pytest.raises(ValueError, match="array: unsupported element type str"):
        nv.array([[0, 1], ["hello", 1]])


def test_at_needs_indices():
    a = nv.array(1)
    with pytest.raises(ValueError, match=r"at.add: give the indices first"):
        a.at.add(1)
    assert a.at[None].add(1).item() == 2


def test_pad_value_keeps_the_arrays_precision():
    a = nv.array([1.0], dtype=nv.float64)
    assert nv.pad(a, 1, constant_values=0.1).tolist() == [0.1, 1.0, 0.1]
    assert nv.pad(nv.array([1.0], nv.float16), 1, constant_values=0.1).dtype == nv.float16
    assert nv.pad(nv.array([1, 2]), 1, constant_values=3).tolist() == [3, 1, 2, 3]


def test_float_to_uint8_wraps_as_mlx_and_numpy():
    x = np.array([300.5, -1.5, 1000.0, 255.9], np.float32)
    want = x.astype(np.uint8).tolist()  # [44, 255, 232, 255]
    assert nv.array(x).astype(nv.uint8).tolist() == want == [44, 255, 232, 255]
    assert nv.compile(lambda a: (a * 1).astype(nv.uint8))(nv.array(x)).tolist() == want


@pytest.mark.parametrize("dst", ["int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("src", ["float16", "float32", "float64"])
def test_float_to_wide_int_as_numpy_on_x86(src, dst):
    # out-of-range values take x86-64's bits as NumPy and MLX do: -1e9 -> uint32 3294967296
    x = np.array(
        [-1e9, 3e9, -3e9, 5e9, 1e19, -1e19, 2.0**63, 2.0**64, 1e30, -2.5, 7.9, np.inf, -np.inf]
        + [np.nan] * 3,
        np.float32,
    ).astype(src)
    with np.errstate(invalid="ignore"):  # in NumPy's vector loop (see tests/engine/test_ops.py)
        want = np.concatenate([np.zeros(64, src), x, np.zeros(64, src)]).astype(dst)[64:-64]
    if src == "float32" and dst == "uint32":
        assert want[0] == 3294967296
    cast = getattr(nv, dst)
    assert np.array_equal(np.asarray(nv.array(x).astype(cast)), want)
    f = nv.compile(lambda a: (a * 1).astype(cast))
    assert np.array_equal(np.asarray(f(nv.array(x))), want)


@pytest.mark.parametrize("dtype", [nv.float32, nv.float16, nv.bfloat16, nv.complex64])
def test_python_scalars_take_the_array_dtype(dtype):
    # weak typing, on either side of the operator, for floats and ints
    x = nv.array([1.0, -2.0, 3.0], dtype=dtype)
    for y in (x * 2.0, 2.0 * x, x + 3, 3 - x, x / 2, nv.add(x, 1.5)):
        assert y.dtype == dtype
    assert (2 - x).tolist() == (nv.array([2, 2, 2], dtype=dtype) - x).tolist()


def test_python_scalars_zero_signs_and_nan_stay_apart():
    # -0.0 equals 0.0 and NaN equals nothing: neither may reuse another scalar's operand
    x = nv.array([1.0, -1.0])
    assert np.signbit(np.array(x * 0.0)).tolist() == [False, True]
    assert np.signbit(np.array(x * -0.0)).tolist() == [True, False]
    assert np.signbit(np.array(x * 0.0)).tolist() == [False, True]
    assert np.isnan(np.array(x + math.nan)).all()
    assert (x + 0).tolist() == [1.0, -1.0]


def test_python_int_next_to_an_int_array_is_range_checked():
    x = nv.array([1, 2], dtype=nv.int8)
    assert (x + 3).dtype == nv.int8
    with pytest.raises(ValueError, match="does not fit"):
        x + 300
    assert (nv.array([1.5]) + 2**40).dtype == nv.float32
