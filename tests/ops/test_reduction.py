"""Reductions, scans, softmax and logsumexp against NumPy (float64 references), MLX's dtype
rules, errors, gradients against finite differences, vmap against a loop."""

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nuvec as nv
from _helpers import (
    exact,
    host,
    ALL,
    FLOATS,
    INTS,
    REAL,
    arrays,
    assert_close,
    axes_for,
    f64,
    fd_jvp_check,
    fd_vjp_check,
    np_axes,
    npdtype,
    vmap_check,
)

FAST = settings(max_examples=int(os.environ.get("NUVEC_TEST_EXAMPLES", 40)), deadline=None)


def sum_dtype(name):
    return {
        "bool": "int32",
        "int8": "int32",
        "int16": "int32",
        "uint8": "uint32",
        "uint16": "uint32",
    }.get(name, name)


def wrap(v: np.ndarray, name: str) -> np.ndarray:
    """Python-int results reduced modulo 2**bits into ``name`` (two's complement)."""
    info = np.iinfo(name)
    span = int(info.max) - int(info.min) + 1
    flat = [((int(x) - int(info.min)) % span) + int(info.min) for x in np.ravel(v)]
    return np.array(flat, dtype=object).reshape(np.shape(v)).astype(name)


# -- sum / prod / max / min / all / any ----------------------------------------------------


@FAST
@given(data=st.data(), keepdims=st.booleans())
def test_sum_matches_numpy(data, keepdims):
    x, a, name = data.draw(arrays(ALL))
    axis = data.draw(axes_for(x.ndim))
    r = nv.sum(a, axis=axis, keepdims=keepdims)
    out = sum_dtype(name)
    assert r.dtype == getattr(nv, out if out != "bool" else "bool_")
    axes = np_axes(axis, x.ndim)
    if out in INTS:
        want = wrap(np.sum(x.astype(object), axis=axes, keepdims=keepdims), out)
        np.testing.assert_array_equal(np.asarray(r), want)
    else:
        mag = np.sum(np.abs(f64(x)), axis=axes, keepdims=keepdims)
        assert_close(r, np.sum(f64(x), axis=axes, keepdims=keepdims), out, mag)


@FAST
@given(data=st.data(), keepdims=st.booleans())
def test_prod_matches_numpy(data, keepdims):
    x, a, name = data.draw(arrays(ALL, max_side=3))
    if name in FLOATS or name == "complex64":  # keep products in range
        x = (
            (np.sign(f64(x).real) * (0.5 + np.abs(f64(x).real) % 1)).astype(npdtype(name))
            if name != "complex64"
            else (x / np.abs(x).max(initial=1)).astype(np.complex64)
        )
        a = exact(x)
    axis = data.draw(axes_for(x.ndim))
    r = nv.prod(a, axis=axis, keepdims=keepdims)
    out = sum_dtype(name)
    axes = np_axes(axis, x.ndim)
    if out in INTS:
        want = wrap(np.prod(x.astype(object), axis=axes, keepdims=keepdims), out)
        np.testing.assert_array_equal(np.asarray(r), want)
    else:
        assert r.dtype.name == out
        want = np.prod(f64(x), axis=axes, keepdims=keepdims)
        n = max(1, int(np.prod([x.shape[i] for i in axes])))
        mag = np.prod(np.abs(f64(x)), axis=axes, keepdims=keepdims) * n
        assert_close(r, want, out, mag)


@FAST
@given(data=st.data(), keepdims=st.booleans(), op=st.sampled_from(["max", "min"]))
def test_max_min_match_numpy(data, keepdims, op):
    x, a, name = data.draw(arrays(REAL, min_side=1))
    axis = data.draw(axes_for(x.ndim))
    r = getattr(nv, op)(a, axis=axis, keepdims=keepdims)
    assert r.dtype.name == name
    ref = np.max if op == "max" else np.min
    want = ref(
        x.astype(np.float32) if name == "bfloat16" else x,
        axis=np_axes(axis, x.ndim),
        keepdims=keepdims,
    )
    np.testing.assert_array_equal(host(r).astype(want.dtype), want)


@FAST
@given(data=st.data(), keepdims=st.booleans(), op=st.sampled_from(["all", "any"]))
def test_all_any_match_numpy(data, keepdims, op):
    x, a, name = data.draw(arrays(ALL))
    axis = data.draw(axes_for(x.ndim))
    r = getattr(nv, op)(a, axis=axis, keepdims=keepdims)
    assert r.dtype == nv.bool_
    xb = x.astype(np.float32) != 0 if name == "bfloat16" else x
    want = getattr(np, op)(xb, axis=np_axes(axis, x.ndim), keepdims=keepdims)
    np.testing.assert_array_equal(np.asarray(r), want)


def test_max_propagates_nan_and_empty_axis_is_an_error():
    assert np.isnan(nv.max(exact([1.0, np.nan, 2.0])).item())
    assert nv.max(nv.zeros((0, 3)), axis=1).shape == (0,)
    with pytest.raises(ValueError, match="max: cannot reduce over axis 0 of size 0"):
        nv.max(nv.zeros((0, 3)), axis=0)
    assert nv.sum(nv.zeros((0, 3)), axis=0).tolist() == [0.0, 0.0, 0.0]
    assert nv.prod(nv.zeros((0, 3)), axis=0).tolist() == [1.0, 1.0, 1.0]
    assert nv.all(nv.zeros((0, 3)), axis=0).tolist() == [True, True, True]


# -- mean / var / std / logsumexp -----------------------------------------------------------


def float_out(name):
    return name if name in FLOATS or name == "complex64" else "float32"


@FAST
@given(data=st.data(), keepdims=st.booleans())
def test_mean_matches_numpy(data, keepdims):
    x, a, name = data.draw(arrays(ALL, min_side=1))
    axis = data.draw(axes_for(x.ndim))
    r = nv.mean(a, axis=axis, keepdims=keepdims)
    out = float_out(name)
    assert r.dtype.name == out
    axes = np_axes(axis, x.ndim)
    mag = np.mean(np.abs(f64(x)), axis=axes, keepdims=keepdims)
    assert_close(r, np.mean(f64(x), axis=axes, keepdims=keepdims), out, mag)


@FAST
@given(
    data=st.data(),
    keepdims=st.booleans(),
    ddof=st.integers(0, 1),
    op=st.sampled_from(["var", "std"]),
)
def test_var_std_match_numpy(data, keepdims, ddof, op):
    x, a, name = data.draw(arrays(ALL, min_side=2))
    axis = data.draw(axes_for(x.ndim))
    r = getattr(nv, op)(a, axis=axis, keepdims=keepdims, ddof=ddof)
    out = name if name in FLOATS else "float32"
    assert r.dtype.name == out
    axes = np_axes(axis, x.ndim)
    n = int(np.prod([x.shape[i] for i in axes]))
    if n - ddof <= 0:
        return
    want = getattr(np, op)(f64(x), axis=axes, keepdims=keepdims, ddof=ddof)
    mag = (
        np.var(f64(x), axis=axes, keepdims=keepdims)
        + np.mean(np.abs(f64(x)) ** 2, axis=axes, keepdims=keepdims) * 4
    )
    assert_close(
        r,
        want,
        out if out != "float32" or name != "complex64" else "complex64",
        np.sqrt(mag) if op == "std" else mag,
    )


def test_var_ddof_at_count_is_inf_as_mlx():
    assert nv.var(exact([1.0, 2.0, 4.0]), ddof=3).item() == np.inf
    assert nv.var(exact([1.0, 2.0, 4.0]), ddof=1).item() == pytest.approx(7 / 3, rel=1e-6)


def ref_logsumexp(x, axes, keepdims):
    x = f64(x)
    if any(x.shape[a] == 0 for a in axes):
        return np.full(np.sum(x, axis=axes, keepdims=keepdims).shape, -np.inf)
    m = np.max(x, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    r = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axes)


@FAST
@given(data=st.data(), keepdims=st.booleans())
def test_logsumexp_matches_numpy(data, keepdims):
    x, a, name = data.draw(arrays(REAL))
    axis = data.draw(axes_for(x.ndim))
    r = nv.logsumexp(a, axis=axis, keepdims=keepdims)
    out = float_out(name)
    assert r.dtype.name == out
    want = ref_logsumexp(x, np_axes(axis, x.ndim), keepdims)
    assert_close(r, want, out, np.abs(want) + 1)


def test_logsumexp_infinities_and_large_values():
    assert nv.logsumexp(exact([-np.inf, -np.inf])).item() == -np.inf
    assert nv.logsumexp(exact([np.inf, 1.0])).item() == np.inf
    assert nv.logsumexp(exact([1000.0, 1000.0])).item() == pytest.approx(1000 + np.log(2))


@FAST
@given(data=st.data(), precise=st.booleans())
def test_softmax_matches_numpy(data, precise):
    x, a, name = data.draw(arrays(REAL))
    axis = data.draw(axes_for(x.ndim))
    r = nv.softmax(a, axis=axis, precise=precise)
    out = float_out(name)
    assert r.dtype.name == out and r.shape == x.shape
    axes = np_axes(axis, x.ndim)
    xf = f64(x)
    if xf.size:
        e = np.exp(xf - np.max(xf, axis=axes, keepdims=True))
        want = e / np.sum(e, axis=axes, keepdims=True)
    else:
        want = xf
    assert_close(r, want, out, 0.0)


def test_half_precision_reductions_accumulate_in_float32():
    ones = nv.ones((10000,), dtype=nv.float16)
    assert nv.sum(ones).item() == 10000.0  # float16 accumulation would stop at 2048
    big = nv.full((10000,), 60000.0, dtype=nv.float16)
    assert nv.mean(big).item() == 60000.0  # a float16 sum would overflow to inf
    bf = nv.ones((4096,), dtype=nv.bfloat16)
    assert nv.sum(bf).item() == 4096.0
    assert nv.cumsum(ones)[-1].item() == 10000.0


# -- argmax / argmin ------------------------------------------------------------------------


@FAST
@given(data=st.data(), keepdims=st.booleans(), op=st.sampled_from(["argmax", "argmin"]))
def test_argmax_argmin_match_numpy(data, keepdims, op):
    x, a, name = data.draw(arrays(REAL, min_side=1))
    xr = x.astype(np.float32) if name == "bfloat16" else x
    if x.ndim and data.draw(st.booleans()):
        axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
        want = getattr(np, op)(xr, axis=axis, keepdims=keepdims)
    else:
        axis = None
        want = getattr(np, op)(xr, keepdims=keepdims)
    r = getattr(nv, op)(a, axis=axis, keepdims=keepdims)
    assert r.dtype == nv.uint32
    np.testing.assert_array_equal(np.asarray(r), want)


def test_argmax_first_of_ties_and_nan():
    assert nv.argmax(exact([1.0, 2.0, 2.0])).item() == 1
    assert nv.argmax(exact([1.0, np.nan, 2.0])).item() == 1
    assert nv.argmin(exact([[3, 1], [0, 5]]), axis=1, keepdims=True).tolist() == [[1], [0]]
    with pytest.raises(ValueError, match="argmax: cannot reduce"):
        nv.argmax(nv.zeros((0,)))


# -- scans ----------------------------------------------------------------------------------

SCANS = {
    "cumsum": "sum",
    "cumprod": "prod",
    "cummax": "max",
    "cummin": "min",
    "logcumsumexp": "lse",
}


def ref_scan(x: np.ndarray, op: str, axis: int, reverse: bool, inclusive: bool, out: str):
    """A Python loop over each line (exact Python ints for integers, float64 otherwise)."""
    exact = out in INTS or out == "bool"
    xs = x.astype(object) if exact else f64(x)
    if x.dtype == bool and op == "sum":
        xs = x.astype(int).astype(object)
    moved = np.moveaxis(xs, axis, -1)
    res = np.empty(moved.shape, dtype=object if exact else moved.dtype)
    for idx in np.ndindex(moved.shape[:-1]):
        line = list(moved[idx])
        order = range(len(line) - 1, -1, -1) if reverse else range(len(line))
        acc = None
        for i in order:
            v = line[i]
            new = (
                v
                if acc is None
                else {
                    "sum": lambda p, q: p + q,
                    "prod": lambda p, q: p * q,
                    "max": max,
                    "min": min,
                    "lse": np.logaddexp,
                    "and": lambda p, q: p and q,
                }[("and" if out == "bool" and op == "prod" else op)](acc, v)
            )
            if inclusive:
                res[idx + (i,)] = new
            else:
                res[idx + (i,)] = acc if acc is not None else _identity(op, out)
            acc = new
    res = np.moveaxis(res, -1, axis)
    if out == "bool":
        return res.astype(bool)
    if exact:
        return wrap(res, out)
    return res


def _identity(op, out):
    if op == "sum":
        return 0
    if op == "prod":
        return 1 if out != "bool" else True
    if op == "lse":
        return -np.inf
    big = op == "min"
    if out == "bool":
        return big
    if out in INTS:
        info = np.iinfo(out)
        return int(info.max if big else info.min)
    return np.inf if big else -np.inf


@FAST
@given(
    data=st.data(),
    name=st.sampled_from(list(SCANS)),
    reverse=st.booleans(),
    inclusive=st.booleans(),
)
def test_scans_match_a_loop(data, name, reverse, inclusive):
    dtypes = FLOATS if name == "logcumsumexp" else REAL
    x, a, dname = data.draw(arrays(dtypes if name != "cumprod" else dtypes, max_side=4))
    if name == "cumprod" and dname in FLOATS:
        x = (np.sign(f64(x)) * (0.5 + np.abs(f64(x)) % 1)).astype(npdtype(dname))
        a = exact(x)
    if x.ndim and data.draw(st.booleans()):
        axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
        ax = axis % x.ndim
        xr = x
    else:
        axis, ax, xr = None, 0, x.reshape(-1)
    r = getattr(nv, name)(a, axis=axis, reverse=reverse, inclusive=inclusive)
    out = "int32" if name == "cumsum" and dname == "bool" else dname
    if name == "logcumsumexp" and dname not in FLOATS:
        out = "float32"
    assert r.dtype.name == out and r.shape == xr.shape
    want = ref_scan(xr, SCANS[name], ax, reverse, inclusive, out)
    if out in INTS or out == "bool":
        np.testing.assert_array_equal(np.asarray(r), want)
    elif name in ("cummax", "cummin"):
        np.testing.assert_array_equal(host(r).astype(np.float64), want)
    else:
        mag = np.abs(want) + (np.cumsum(np.abs(f64(xr)), axis=ax) if xr.ndim else 0)
        assert_close(r, want, out, mag + (1 if name == "logcumsumexp" else 0))


def test_scan_details_as_mlx():
    x = exact([1, 2, 3, 4])
    assert nv.cumsum(x, reverse=True, inclusive=False).tolist() == [9, 7, 4, 0]
    assert nv.cummax(exact([1, 5, 3, 4]), inclusive=False).tolist()[0] == np.iinfo(np.int32).min
    assert nv.cumsum(exact([[1, 2], [3, 4]])).tolist() == [1, 3, 6, 10]
    assert nv.cumsum(exact(3)).shape == (1,)
    assert nv.cumsum(exact([True, True])).dtype == nv.int32
    assert nv.cumprod(exact([True, False])).dtype == nv.bool_


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        nv.sum,
        nv.prod,
        nv.max,
        nv.min,
        nv.mean,
        nv.var,
        nv.std,
        nv.all,
        nv.any,
        nv.logsumexp,
        nv.argmax,
        nv.argmin,
        nv.cumsum,
        nv.cumprod,
        nv.cummax,
        nv.cummin,
        nv.logcumsumexp,
        nv.softmax,
    ],
)
def test_invalid_axis_names_the_op(fn):
    with pytest.raises(
        ValueError,
        match=rf"^{fn.__name__}: axis 3 is out of bounds for an "
        r"array of dimension 2",
    ):
        fn(nv.ones((2, 3)), axis=3)
    with pytest.raises(ValueError, match=rf"^{fn.__name__}: axis -3 is out of bounds"):
        fn(nv.ones((2, 3)), axis=-3)


def test_repeated_axes_and_bad_types():
    with pytest.raises(ValueError, match=r"sum: repeated axis in \(0, -2\)"):
        nv.sum(nv.ones((2, 3)), axis=(0, -2))
    with pytest.raises(TypeError, match="mean: axis must be an int"):
        nv.mean(nv.ones((2, 3)), axis=1.5)
    with pytest.raises(ValueError, match="sum: axis 0 is out of bounds"):
        nv.sum(exact(3.0), axis=0)
    with pytest.raises(TypeError, match="logsumexp: complex inputs"):
        nv.logsumexp(exact([1j]))


def test_empty_axis_list_is_identity_with_dtype_rule():
    x = exact([[1, 2], [3, 4]], dtype=nv.int8)
    r = nv.sum(x, axis=())
    assert r.dtype == nv.int32 and r.tolist() == [[1, 2], [3, 4]]
    assert nv.max(x, axis=[]).tolist() == [[1, 2], [3, 4]]


# -- gradients (float64, against central differences) -----------------------------------------

RNG = np.random.default_rng(7)
X34 = RNG.standard_normal((3, 4))


@pytest.mark.parametrize(
    "f",
    [
        lambda x: nv.sum(x, axis=1),
        lambda x: nv.sum(x, axis=(0, 1), keepdims=True),
        lambda x: nv.prod(x, axis=0),
        lambda x: nv.max(x, axis=1),
        lambda x: nv.min(x, axis=(0,), keepdims=True),
        lambda x: nv.mean(x, axis=-1),
        lambda x: nv.var(x, axis=0, ddof=1),
        lambda x: nv.std(x, axis=1, keepdims=True),
        lambda x: nv.logsumexp(x, axis=1),
        lambda x: nv.logsumexp(x, keepdims=True),
        lambda x: nv.softmax(x, axis=-1),
        lambda x: nv.softmax(x, axis=(0, 1)),
    ],
    ids=[
        "sum",
        "sum_keep",
        "prod",
        "max",
        "min_keep",
        "mean",
        "var",
        "std",
        "lse",
        "lse_all",
        "softmax",
        "softmax_all",
    ],
)
def test_reduction_gradients(f):
    fd_vjp_check(f, [X34])
    fd_jvp_check(f, [X34])


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("inclusive", [True, False])
def test_scan_gradients(name, reverse, inclusive):
    fn = getattr(nv, name)

    def f(x):
        y = fn(x, axis=1, reverse=reverse, inclusive=inclusive)
        if not inclusive and name in ("cummax", "cummin", "logcumsumexp"):  # infinite identity
            y = y[:, :-1] if reverse else y[:, 1:]
        return y

    fd_vjp_check(f, [X34])
    fd_jvp_check(f, [X34])


def test_prod_and_cumprod_gradients_with_zeros():
    x = np.array([[2.0, 0.0, 3.0, 0.0, 4.0], [1.5, -2.0, 0.0, 3.0, 0.5], [1.0, 2.0, 3.0, 4.0, 5.0]])
    for f in (
        lambda v: nv.prod(v, axis=1),
        lambda v: nv.cumprod(v, axis=1),
        lambda v: nv.cumprod(v, axis=1, reverse=True),
        lambda v: nv.cumprod(v, axis=1, inclusive=False),
    ):
        fd_vjp_check(f, [x], atol=1e-6)
        fd_jvp_check(f, [x], atol=1e-6)


def test_max_gradient_splits_ties_equally():
    x = exact([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    g = nv.grad(lambda v: nv.sum(nv.max(v, axis=1) * exact([1.0, 3.0])))(x)
    xs = np.asarray(x)
    mask = (xs == xs.max(axis=1, keepdims=True)).astype(float)
    np.testing.assert_allclose(np.asarray(g), mask / mask.sum(1, keepdims=True) * [[1], [3]])


def test_cummax_gradient_goes_to_last_reaching_position():
    x = np.array([1.0, 3.0, 2.0, 3.0, 5.0, 0.0])
    w = np.array([1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0])
    _, (g,) = nv.vjp(nv.cummax, [exact(x)], [exact(w)])
    want = np.zeros_like(x)
    best, where = -np.inf, -1
    for i, v in enumerate(x):
        if v >= best:
            best, where = v, i
        want[where] += w[i]
    np.testing.assert_array_equal(np.asarray(g), want)


def test_integer_outputs_have_no_gradient():
    x = exact(X34)
    g = nv.grad(lambda v: nv.sum(v * nv.argmax(v, axis=1, keepdims=True).astype(nv.float64)))(x)
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(np.argmax(X34, 1)[:, None], (3, 4)))


# -- vmap -----------------------------------------------------------------------------------

X234 = RNG.standard_normal((2, 3, 4))


@pytest.mark.parametrize(
    "f",
    [
        lambda x: nv.sum(x, axis=0),
        lambda x: nv.max(x, axis=1, keepdims=True),
        lambda x: nv.mean(x),
        lambda x: nv.var(x, axis=-1),
        lambda x: nv.argmax(x, axis=0),
        lambda x: nv.argmin(x, axis=1, keepdims=True),
        lambda x: nv.logsumexp(x, axis=0),
        lambda x: nv.softmax(x, axis=1),
        lambda x: nv.cumsum(x, axis=0, reverse=True),
        lambda x: nv.cummax(x, axis=1, inclusive=False),
        lambda x: nv.all(x > 0, axis=1),
    ],
    ids=[
        "sum",
        "max",
        "mean",
        "var",
        "argmax",
        "argmin",
        "lse",
        "softmax",
        "cumsum",
        "cummax",
        "all",
    ],
)
@pytest.mark.parametrize("in_axis", [0, 1, 2])
def test_reduction_vmap(f, in_axis):
    vmap_check(f, [X234], (in_axis,))


def test_grad_of_vmap_of_scan():
    def f(x):
        return nv.sum(nv.vmap(lambda r: nv.cumprod(r, axis=0), in_axes=1)(x) ** 2)

    fd_vjp_check(f, [X34])


@pytest.mark.parametrize(
    "f",
    [
        lambda x: nv.sum(nv.logsumexp(x, axis=1) ** 2),
        lambda x: nv.sum(nv.softmax(x, axis=0) * x),
        lambda x: nv.sum(nv.max(x, axis=1) ** 3),
        lambda x: nv.sum(nv.cumprod(x, axis=1) ** 2),
        lambda x: nv.sum(nv.logcumsumexp(x, axis=0) ** 2),
        lambda x: nv.sum(nv.var(x, axis=1) * nv.mean(x, axis=1)),
    ],
    ids=["lse", "softmax", "max", "cumprod", "logcumsumexp", "var_mean"],
)
def test_second_order_gradients(f):
    """The gradient's own gradient (a Hessian-vector product) against finite differences."""
    v = exact(np.random.default_rng(11).standard_normal(X34.shape))
    fd_vjp_check(lambda x: nv.sum(nv.grad(f)(x) * v), [X34], rtol=1e-5, atol=1e-6)


def test_integer_outputs_have_zero_tangents():
    x = exact(X34)
    _, (t,) = nv.jvp(lambda v: nv.argmax(v, axis=1), [x], [nv.ones_like(x)])
    assert t.tolist() == [0, 0, 0]
