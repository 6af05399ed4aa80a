"""matmul, addmm, tensordot, inner, outer, einsum, isclose, allclose, array_equal against
NumPy; errors; gradients against finite differences; vmap against a loop."""

import itertools
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nuvec as nv
from _helpers import (
    exact,
    FLOATS,
    INTS,
    assert_close,
    f64,
    fd_jvp_check,
    fd_vjp_check,
    layout,
    rand,
    vmap_check,
)

FAST = settings(max_examples=int(os.environ.get("NUVEC_TEST_EXAMPLES", 40)), deadline=None)
NUMERIC = INTS + FLOATS + ["complex64"]


def int_matmul(a: np.ndarray, b: np.ndarray, name: str) -> np.ndarray:
    """Exact integer product (Python ints), wrapped into ``name`` as NumPy's loops wrap."""
    r = np.matmul(a.astype(object), b.astype(object))
    info = np.iinfo(name)
    span = int(info.max) - int(info.min) + 1
    return np.vectorize(
        lambda v: ((int(v) - int(info.min)) % span) + int(info.min), otypes=[object]
    )(r).astype(name)


@st.composite
def matmul_operands(draw):
    """Shapes that matmul accepts: broadcastable batch dims, maybe 1-D operands, 0 sizes."""
    m, k, n = (draw(st.integers(0, 4)) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    a_batch = [d if draw(st.booleans()) else 1 for d in batch][draw(st.integers(0, len(batch))) :]
    b_batch = [d if draw(st.booleans()) else 1 for d in batch][draw(st.integers(0, len(batch))) :]
    a_shape = (k,) if draw(st.integers(0, 4)) == 0 else tuple(a_batch) + (m, k)
    b_shape = (k,) if draw(st.integers(0, 4)) == 0 else tuple(b_batch) + (k, n)
    name = draw(st.sampled_from(NUMERIC))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    a, b = rand(rng, a_shape, name), rand(rng, b_shape, name)
    kinds = (draw(st.sampled_from("cts")), draw(st.sampled_from("cts")))
    return a, b, name, kinds


@FAST
@given(ops=matmul_operands())
def test_matmul_matches_numpy(ops):
    a, b, name, kinds = ops
    r = nv.matmul(layout(a, kinds[0]), layout(b, kinds[1]))
    assert r.dtype.name == name
    if name in INTS:
        want = int_matmul(a, b, name)
        assert r.shape == want.shape
        np.testing.assert_array_equal(np.asarray(r), want)
    else:
        want = np.matmul(f64(a), f64(b))
        mag = np.matmul(np.abs(f64(a)), np.abs(f64(b)))
        assert_close(r, want, name, mag)


def test_matmul_operator_promotion_and_shapes():
    i = nv.ones((2, 3), dtype=nv.int32)
    assert (i @ nv.ones((3, 2))).dtype == nv.float32
    assert nv.matmul(nv.ones((2, 3), dtype=nv.float16), nv.ones((3, 2))).dtype == nv.float32
    assert nv.matmul(nv.ones(3), nv.ones(3)).shape == ()
    assert nv.matmul(nv.ones(3), nv.ones((2, 3, 4))).shape == (2, 4)
    assert nv.matmul(nv.ones((2, 3, 4)), nv.ones(4)).shape == (2, 3)
    assert nv.matmul(nv.ones((2, 0)), nv.ones((0, 5))).tolist() == [[0.0] * 5] * 2


def test_half_matmul_rounds_once_from_float32():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 64)).astype(np.float16)
    b = rng.standard_normal((64, 8)).astype(np.float16)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(np.asarray(exact(a) @ exact(b)), want)


def test_matmul_errors():
    with pytest.raises(
        ValueError,
        match=r"matmul: last dimension of the first input \(shape "
        r"\(2, 3\)\) must match the second-to-last dimension",
    ):
        nv.matmul(nv.ones((2, 3)), nv.ones((4, 5)))
    with pytest.raises(ValueError, match="matmul: inputs must have at least one dimension"):
        nv.matmul(exact(1.0), nv.ones(3))
    with pytest.raises(ValueError, match=r"matmul: shapes \(2,\) and \(3,\) cannot be broadcast"):
        nv.matmul(nv.ones((2, 1, 3)), nv.ones((3, 3, 1)))
    with pytest.raises(TypeError, match="matmul: not defined for bool"):
        nv.matmul(nv.ones((2, 2), dtype=nv.bool_), nv.ones((2, 2), dtype=nv.bool_))


@FAST
@given(
    seed=st.integers(0, 2**31 - 1),
    c_kind=st.sampled_from(["full", "row", "col", "scalar"]),
    alpha=st.sampled_from([1.0, 2.0, -0.5]),
    beta=st.sampled_from([1.0, 0.0, 0.25]),
    name=st.sampled_from(["float16", "bfloat16", "float32", "float64", "int32"]),
    batch=st.sampled_from([(), (2,)]),
)
def test_addmm_matches_numpy(seed, c_kind, alpha, beta, name, batch):
    rng = np.random.default_rng(seed)
    a, b = rand(rng, batch + (3, 4), name), rand(rng, (4, 5), name)
    c_shape = {"full": batch + (3, 5), "row": (5,), "col": (3, 1), "scalar": ()}[c_kind]
    c = rand(rng, c_shape, name)
    r = nv.addmm(exact(c), exact(a), layout(b, "t"), alpha=alpha, beta=beta)
    want = alpha * np.matmul(f64(a), f64(b)) + beta * f64(c)
    mag = abs(alpha) * np.matmul(np.abs(f64(a)), np.abs(f64(b))) + abs(beta) * np.abs(f64(c))
    out = name if name != "int32" or (alpha == 1 and beta == 1) else "float32"
    assert r.dtype.name == out
    assert_close(r, want, out if out != "int32" else "float32", mag)


def test_addmm_errors():
    with pytest.raises(ValueError, match=r"addmm: c of shape \(4,\) does not broadcast"):
        nv.addmm(nv.ones(4), nv.ones((2, 3)), nv.ones((3, 5)))


@FAST
@given(
    seed=st.integers(0, 2**31 - 1),
    name=st.sampled_from(["int32", "float32", "float64"]),
    case=st.sampled_from(
        [
            ((2, 3, 4), (3, 4, 5), 2),
            ((2, 3), (3, 4), 1),
            ((2, 3), (4, 5), 0),
            ((2, 3, 4), (4, 3, 2), ([1, 2], [1, 0])),
            ((3, 4), (4, 3), ([0, 1], [1, 0])),
            ((2, 0, 3), (0, 3), 2),
            ((3, 2), (3,), ([0], [0])),
        ]
    ),
)
def test_tensordot_matches_numpy(seed, name, case):
    rng = np.random.default_rng(seed)
    sa, sb, axes = case
    a, b = rand(rng, sa, name), rand(rng, sb, name)
    r = nv.tensordot(exact(a), layout(b, "t"), axes=axes)
    want = np.tensordot(f64(a), f64(b), axes=axes)
    if name == "int32":
        np.testing.assert_array_equal(np.asarray(r), want.astype(np.int32))
    else:
        assert_close(r, want, name, np.tensordot(np.abs(f64(a)), np.abs(f64(b)), axes=axes))


@pytest.mark.parametrize(
    "sa,sb", [((3,), (3,)), ((2, 3), (4, 3)), ((), (3,)), ((2, 2, 3), (3,)), ((0, 3), (2, 3))]
)
def test_inner_and_outer_match_numpy(sa, sb):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    np.testing.assert_allclose(
        np.asarray(nv.inner(exact(a), exact(b))), np.inner(a, b), rtol=1e-12, atol=1e-12
    )
    np.testing.assert_allclose(np.asarray(nv.outer(exact(a), exact(b))), np.outer(a, b), rtol=1e-12)
    ai = rng.integers(-5, 5, sa).astype(np.int32)
    assert nv.outer(exact(ai), exact(b)).dtype == nv.float64


def test_tensordot_errors():
    with pytest.raises(
        ValueError,
        match=r"tensordot: axis 1 of a \(size 3\) does not match "
        r"axis 0 of b \(size 4\)",
    ):
        nv.tensordot(nv.ones((2, 3)), nv.ones((4, 5)), axes=1)
    with pytest.raises(ValueError, match="tensordot: axes=3 is invalid"):
        nv.tensordot(nv.ones((2, 3)), nv.ones((3, 5)), axes=3)
    with pytest.raises(ValueError, match="inner: last dimensions"):
        nv.inner(nv.ones(2), nv.ones(3))


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("...ij,...jk", [(2, 3, 3), (3, 3)]),
    ("...ij,...jk->...ik", [(1, 2, 3), (4, 3, 2)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(3,), (3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("iij->j", [(3, 3, 2)]),
    ("ijk,kj->i", [(2, 3, 4), (4, 3)]),
    ("ab,ab->ab", [(2, 3), (2, 3)]),
    ("i...->...", [(3, 2, 2)]),
    ("ba,ca->bc", [(2, 0), (3, 0)]),
    ("ij,ij->i", [(0, 3), (0, 3)]),
    ("jii->ij", [(2, 3, 3)]),
    ("abc,cd,db->a", [(2, 3, 4), (4, 2), (2, 3)]),
]


@pytest.mark.parametrize("spec,shapes", EINSUM, ids=[s for s, _ in EINSUM])
def test_einsum_matches_numpy(spec, shapes):
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal(s) for s in shapes]
    r = nv.einsum(spec, *[layout(x, "t") for x in xs])
    np.testing.assert_allclose(np.asarray(r), np.einsum(spec, *xs), rtol=1e-12, atol=1e-12)
    xs32 = [x.astype(np.float32) for x in xs]
    r32 = nv.einsum(spec, *[exact(x) for x in xs32])
    assert r32.dtype == nv.float32
    ints = [rng.integers(-3, 4, s).astype(np.int32) for s in shapes]
    np.testing.assert_array_equal(
        np.asarray(nv.einsum(spec, *[exact(i) for i in ints])), np.einsum(spec, *ints)
    )


def test_einsum_errors():
    with pytest.raises(ValueError, match="einsum: 2 input terms"):
        nv.einsum("ij,jk", nv.ones((2, 2)))
    with pytest.raises(ValueError, match="einsum: label 'j' have sizes 3 and 4"):
        nv.einsum("ij,jk", nv.ones((2, 3)), nv.ones((4, 2)))
    with pytest.raises(ValueError, match="einsum: term 'ijk' has 3 labels for an operand of 2"):
        nv.einsum("ijk", nv.ones((2, 3)))
    with pytest.raises(ValueError, match="einsum: output label 'z' is not in any input"):
        nv.einsum("ij->z", nv.ones((2, 3)))
    with pytest.raises(ValueError, match="einsum: invalid character"):
        nv.einsum("i1->i", nv.ones((2, 3)))


# -- closeness ------------------------------------------------------------------------------


@FAST
@given(
    seed=st.integers(0, 2**31 - 1),
    equal_nan=st.booleans(),
    name=st.sampled_from(["float32", "float64", "float16", "int32"]),
    rtol=st.sampled_from([1e-5, 1e-2]),
    atol=st.sampled_from([1e-8, 0.1]),
)
def test_isclose_allclose_match_numpy(seed, equal_nan, name, rtol, atol):
    rng = np.random.default_rng(seed)
    a = rand(rng, (4, 5), name)
    b = (f64(a) * (1 + rng.choice([0, 1e-6, 1e-3, 0.5], a.shape))).astype(a.dtype)
    if name.startswith("float"):
        special = np.array([np.nan, np.inf, -np.inf, 1.0])
        a.flat[:4] = special.astype(a.dtype)
        b.flat[:4] = np.array([np.nan, np.inf, np.inf, np.nan]).astype(a.dtype)
    got = nv.isclose(exact(a), exact(b), rtol=rtol, atol=atol, equal_nan=equal_nan)
    cmp = a.dtype if name != "int32" else np.float32
    want = np.isclose(a.astype(cmp), b.astype(cmp), rtol=rtol, atol=atol, equal_nan=equal_nan)
    if name == "float16":  # NumPy evaluates the bound in float16, nuvec too: compare ok cells
        want = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert nv.allclose(
        exact(a), exact(b), rtol=rtol, atol=atol, equal_nan=equal_nan
    ).item() == bool(want.all())


def test_allclose_broadcasts_and_array_equal():
    assert nv.allclose(nv.ones(3), nv.ones((2, 3))).item()
    assert not nv.array_equal(nv.ones(3), nv.ones(4)).item()
    assert nv.array_equal(exact([1, 2]), exact([1.0, 2.0])).item()
    nan = exact([1.0, np.nan])
    assert not nv.array_equal(nan, nan).item()
    assert nv.array_equal(nan, nan, equal_nan=True).item()
    assert not nv.array_equal(exact([1, 2]), exact([1, 3])).item()


# -- gradients and vmap ---------------------------------------------------------------------

RNG = np.random.default_rng(5)


def r(*shape):
    return RNG.standard_normal(shape)


@pytest.mark.parametrize(
    "f,shapes",
    [
        (nv.matmul, [(3, 4), (4, 2)]),
        (nv.matmul, [(2, 1, 3, 4), (3, 4, 2)]),
        (nv.matmul, [(4,), (2, 4, 3)]),
        (nv.matmul, [(2, 3, 4), (4,)]),
        (nv.matmul, [(4,), (4,)]),
        (lambda c, a, b: nv.addmm(c, a, b), [(5,), (3, 4), (4, 5)]),
        (lambda c, a, b: nv.addmm(c, a, b, alpha=0.5, beta=-2.0), [(3, 1), (2, 3, 4), (4, 1)]),
        (lambda c, a, b: nv.addmm(c, a, nv.swapaxes(b, 0, 1)), [(3, 5), (3, 4), (5, 4)]),
        (lambda a, b: nv.tensordot(a, b, axes=([1, 2], [1, 0])), [(2, 3, 4), (4, 3, 2)]),
        (nv.inner, [(2, 3), (4, 3)]),
        (nv.outer, [(2, 2), (3,)]),
        (lambda a, b: nv.einsum("bij,bjk->bik", a, b), [(2, 2, 3), (2, 3, 2)]),
        (lambda a: nv.einsum("ii->i", a), [(3, 3)]),
        (lambda a, b, c: nv.einsum("ij,jk,kl->il", a, b, c), [(2, 3), (3, 2), (2, 2)]),
        (lambda a, b: nv.einsum("...ij,...jk", a, b), [(1, 2, 3), (2, 3, 2)]),
    ],
    ids=[
        "mm",
        "mm_bcast",
        "mm_vec_mat",
        "mm_mat_vec",
        "mm_dot",
        "addmm",
        "addmm_scaled",
        "addmm_transposed",
        "tensordot",
        "inner",
        "outer",
        "einsum_bmm",
        "einsum_diag",
        "einsum_chain",
        "einsum_ellipsis",
    ],
)
def test_linalg_gradients(f, shapes):
    xs = [r(*s) for s in shapes]
    fd_vjp_check(f, xs)
    fd_jvp_check(f, xs)


def test_mlp_layer_gradient_matches_numpy():
    x, w, b = r(8, 6), r(5, 6), r(5)

    def loss(w, b):
        h = nv.addmm(b, x_nv, nv.swapaxes(w, 0, 1))
        return nv.sum(nv.softmax(h, axis=-1) * exact(target))

    x_nv = exact(x)
    target = r(8, 5)
    fd_vjp_check(loss, [w, b])


@pytest.mark.parametrize(
    "f,shapes,in_axes",
    [
        (nv.matmul, [(3, 2, 4), (4, 5)], (1, None)),
        (nv.matmul, [(2, 4), (4, 5, 3)], (None, 2)),
        (nv.matmul, [(3, 2, 4), (4, 3, 5)], (0, 1)),
        (nv.matmul, [(3, 4), (4, 5)], (0, None)),
        (nv.matmul, [(2, 3, 4), (4, 3)], (1, 1)),
        (nv.matmul, [(2, 2, 3, 4), (4, 5)], (2, None)),
        (lambda c, a, b: nv.addmm(c, a, b), [(5,), (3, 2, 4), (4, 5)], (None, 0, None)),
        (lambda c, a, b: nv.addmm(c, a, b), [(5, 3), (2, 4), (4, 5)], (1, None, None)),
        (lambda c, a, b: nv.addmm(c, a, b, beta=0.5), [(3, 5), (2, 4), (3, 4, 5)], (0, None, 0)),
        (lambda a, b: nv.einsum("ij,jk->ik", a, b), [(2, 3, 4), (4, 2)], (1, None)),
        (lambda a, b: nv.tensordot(a, b, axes=1), [(2, 3), (3, 3, 4)], (None, 0)),
    ],
    ids=[
        "mm_a",
        "mm_b",
        "mm_both",
        "mm_vec",
        "mm_vec_both",
        "mm_batched",
        "addmm_a",
        "addmm_c",
        "addmm_cb",
        "einsum",
        "tensordot",
    ],
)
def test_linalg_vmap(f, shapes, in_axes):
    vmap_check(f, [r(*s) for s in shapes], in_axes)


def test_second_order_through_matmul_and_einsum():
    a, b = r(3, 4), r(4, 2)
    v = exact(r(3, 4))

    def f(x):
        return nv.sum(nv.tanh(nv.matmul(x, exact(b))) ** 2) + nv.einsum("ij,ij->", x, x) ** 2

    fd_vjp_check(lambda x: nv.sum(nv.grad(f)(x) * v), [a], rtol=1e-5, atol=1e-6)


# -- nv.linalg: factorisations, inverses, solvers, norms, determinants ----------------------

LRNG = np.random.default_rng(17)


def mats(*shape, dtype=np.float32):
    return LRNG.standard_normal(shape).astype(dtype)


def spd(*shape, dtype=np.float32):
    m = LRNG.standard_normal(shape)
    return (m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def lclose(got, want, tol):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


TOL = {np.float32: 2e-4, np.float64: 1e-10}

VECTOR_ORDS = [None, 0.5, 0, 1, 2, 3, -1, np.inf, -np.inf]
MATRIX_ORDS = [None, "fro", "nuc", -1, 1, -2, 2, np.inf, -np.inf]


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm_against_numpy(shape, keepdims):
    x = mats(*shape)
    for nax in range(1, min(2, len(shape)) + 1):
        for axis in itertools.permutations(range(-len(shape), 0), nax):
            for o in VECTOR_ORDS if nax == 1 else MATRIX_ORDS:
                got = nv.linalg.norm(exact(x), ord=o, axis=axis, keepdims=keepdims)
                lclose(got, np.linalg.norm(x, ord=o, axis=axis, keepdims=keepdims), 1e-5)
    lclose(nv.linalg.norm(exact(x), keepdims=keepdims), np.linalg.norm(x, keepdims=keepdims), 1e-5)
    c = (x + 1j * mats(*shape)).astype(np.complex64)
    lclose(nv.linalg.norm(exact(c)), np.linalg.norm(c), 1e-5)
    # integers become float32
    assert nv.linalg.norm(nv.arange(1, 5)).dtype == nv.float32


def test_norm_errors():
    with pytest.raises(ValueError, match="norm: received too many axes"):
        nv.linalg.norm(nv.ones((2, 2, 2)), axis=(0, 1, 2))
    with pytest.raises(ValueError, match="only supported for matrices"):
        nv.linalg.norm(nv.ones((3,)), ord="fro")
    with pytest.raises(ValueError, match="invalid ord"):
        nv.linalg.norm(nv.ones((3, 3)), ord=3)
    with pytest.raises(ValueError, match="norm: axis 2"):
        nv.linalg.norm(nv.ones((3, 3)), axis=2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 4, 4), (2, 0, 3)])
def test_qr_svd(dtype, shape):
    a = mats(*shape, dtype=dtype)
    q, r = nv.linalg.qr(exact(a))
    assert q.dtype == r.dtype == exact(a).dtype
    qn, rn = np.linalg.qr(a)
    assert q.shape == qn.shape and r.shape == rn.shape
    lclose(np.asarray(q) @ np.asarray(r), a, TOL[dtype])
    k = min(shape[-2:])
    lclose(
        np.swapaxes(np.asarray(q), -1, -2) @ np.asarray(q),
        np.broadcast_to(np.eye(k), shape[:-2] + (k, k)),
        TOL[dtype],
    )
    np.testing.assert_array_equal(np.asarray(r), np.triu(np.asarray(r)))
    u, s, vt = nv.linalg.svd(exact(a))
    un, sn, vtn = np.linalg.svd(a)
    assert (u.shape, s.shape, vt.shape) == (un.shape, sn.shape, vtn.shape)
    lclose(s, sn, TOL[dtype])
    lclose(
        (np.asarray(u)[..., :k] * np.asarray(s)[..., None, :]) @ np.asarray(vt)[..., :k, :],
        a,
        TOL[dtype],
    )
    lclose(nv.linalg.svd(exact(a), compute_uv=False), sn, TOL[dtype])


def test_svd_complex():
    a = (mats(3, 2) + 1j * mats(3, 2)).astype(np.complex64)
    u, s, vt = nv.linalg.svd(exact(a))
    assert s.dtype == nv.float32 and u.dtype == nv.complex64
    lclose((np.asarray(u)[:, :2] * np.asarray(s)) @ np.asarray(vt), a, 1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inverses(dtype):
    a = mats(2, 3, 5, 5, dtype=dtype) + 5 * np.eye(5, dtype=dtype)
    lclose(nv.linalg.inv(exact(a)), np.linalg.inv(a), TOL[dtype])
    for upper in (False, True):
        t = nv.linalg.tri_inv(exact(a), upper=upper)
        tri = np.triu(a) if upper else np.tril(a)
        lclose(t, np.linalg.inv(tri), TOL[dtype])
        got = np.asarray(t)
        np.testing.assert_array_equal(got, np.triu(got) if upper else np.tril(got))
    s = spd(3, 4, 4, dtype=dtype)
    low = nv.linalg.cholesky(exact(s))
    lclose(low, np.linalg.cholesky(s), TOL[dtype])
    up = nv.linalg.cholesky(exact(s), upper=True)
    lclose(up, np.linalg.cholesky(s, upper=True), TOL[dtype])
    lclose(nv.linalg.cholesky_inv(low), np.linalg.inv(s), TOL[dtype] * 10)
    lclose(nv.linalg.cholesky_inv(up, upper=True), np.linalg.inv(s), TOL[dtype] * 10)
    p = mats(2, 4, 6, dtype=dtype)
    lclose(nv.linalg.pinv(exact(p)), np.linalg.pinv(p), TOL[dtype] * 10)
    sing = np.array([[4.0, 1.0], [4.0, 1.0]], dtype)
    lclose(nv.linalg.pinv(exact(sing)), np.linalg.pinv(sing), TOL[dtype])
    for shape in [(0, 0), (0, 3), (3, 0), (2, 0, 0)]:
        z = np.zeros(shape, dtype)
        assert nv.linalg.pinv(exact(z)).shape == np.linalg.pinv(z).shape


def test_inverse_errors():
    with pytest.raises(RuntimeError, match="inv: the matrix is singular"):
        nv.eval(nv.linalg.inv(nv.zeros((3, 3))))
    with pytest.raises(RuntimeError, match="tri_inv: the matrix is singular"):
        nv.eval(nv.linalg.tri_inv(nv.zeros((3, 3))))
    # a singular semi-definite matrix (rank 2) factors without an error, as in MLX
    r = np.arange(1.0, 10.0, dtype=np.float32).reshape(3, 3)
    psd = r.T @ r / 81
    low = np.asarray(nv.linalg.cholesky(exact(psd)))
    lclose(low @ low.T, psd, 1e-5)
    with pytest.raises(ValueError, match="inv: arrays must have type"):
        nv.linalg.inv(exact([[1, 2], [3, 4]]))
    with pytest.raises(ValueError, match="inv: only defined for square"):
        nv.linalg.inv(nv.ones((2, 3)))
    with pytest.raises(ValueError, match="qr: arrays must have at least 2"):
        nv.linalg.qr(exact([0.0, 1.0]))
    with pytest.raises(ValueError, match="cholesky: only defined for square"):
        nv.linalg.cholesky(nv.ones((2, 3)))
    with pytest.raises(TypeError, match="cholesky: upper must be a bool"):
        nv.linalg.cholesky(nv.eye(2), upper="yes")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eig_eigh(dtype):
    a = mats(3, 5, 5, dtype=dtype)
    w, v = nv.linalg.eig(exact(a))
    assert w.dtype == v.dtype == nv.complex64
    w, v = np.asarray(w), np.asarray(v)
    lclose(a @ v, w[..., None, :] * v, 1e-4)
    lclose(
        np.sort_complex(np.asarray(nv.linalg.eigvals(exact(a)))),
        np.sort_complex(np.linalg.eigvals(a).astype(np.complex64)),
        1e-4,
    )
    s = a + np.swapaxes(a, -1, -2)
    for uplo in ("L", "U"):
        # only the named triangle is read
        garbage = np.triu(s, 1) * 7 if uplo == "L" else np.tril(s, -1) * 7
        w, v = nv.linalg.eigh(exact(s + garbage), UPLO=uplo)
        assert w.dtype == exact(s).dtype
        lclose(w, np.linalg.eigvalsh(s), TOL[dtype] * 10)
        v = np.asarray(v)
        lclose(s @ v, np.asarray(w)[..., None, :] * v, TOL[dtype] * 10)
        lclose(
            nv.linalg.eigvalsh(exact(s + garbage), UPLO=uplo),
            np.linalg.eigvalsh(s),
            TOL[dtype] * 10,
        )
    h = (mats(4, 4) + 1j * mats(4, 4)).astype(np.complex64)
    h = h + h.conj().T
    w, v = nv.linalg.eigh(exact(h))
    assert w.dtype == nv.float32 and v.dtype == nv.complex64
    lclose(w, np.linalg.eigvalsh(h), 1e-4)
    with pytest.raises(ValueError, match="eigh: UPLO"):
        nv.linalg.eigh(nv.eye(2), UPLO="X")
    with pytest.raises(ValueError, match="eig: arrays must have at least 2"):
        nv.linalg.eig(exact([1.0, 2.0]))
    with pytest.raises(ValueError, match="eigvals: only defined for square"):
        nv.linalg.eigvals(nv.ones((2, 3)))
    for shape in [(0, 0), (3, 0, 0)]:
        w, v = nv.linalg.eig(nv.zeros(shape))
        assert w.shape == shape[:-1] and v.shape == shape


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 3, 4, 4), (4, 0), (0, 3)])
def test_lu(shape):
    import scipy.linalg as sl

    a = mats(*shape)
    p, low, up = nv.linalg.lu(exact(a))
    assert p.dtype == nv.uint32
    rebuilt = np.take_along_axis(
        np.asarray(low), np.asarray(p)[..., None].astype(np.int64), axis=-2
    ) @ np.asarray(up)
    lclose(rebuilt, a, 1e-5)
    k = min(shape[-2:])
    np.testing.assert_array_equal(
        np.diagonal(np.asarray(low), axis1=-2, axis2=-1), np.ones(shape[:-2] + (k,))
    )
    packed, piv = nv.linalg.lu_factor(exact(a))
    if a.ndim == 2 and a.size:
        lu_ref, piv_ref = sl.lu_factor(a)
        lclose(packed, lu_ref, 1e-6)
        np.testing.assert_array_equal(np.asarray(piv), piv_ref)


def test_lu_of_a_singular_matrix():
    a = np.array([[1, 2, 3, 4], [2, 4, 6, 8], [0, 1, 1, 0], [1, 0, 0, 1]], np.float32)
    p, low, up = nv.linalg.lu(exact(a))
    lclose(np.asarray(low)[np.asarray(p)] @ np.asarray(up), a, 1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solve(dtype):
    a = mats(3, 2, 5, 5, dtype=dtype) + 4 * np.eye(5, dtype=dtype)
    for b in (
        mats(5, dtype=dtype),
        mats(5, 1, dtype=dtype),
        mats(3, 1, 5, 8, dtype=dtype),
        mats(5, 3, dtype=dtype),
    ):
        lclose(nv.linalg.solve(exact(a), exact(b)), np.linalg.solve(a, b), TOL[dtype] * 10)
    lclose(
        nv.linalg.solve(exact(a[0, 0]), exact(b[:, 0])),
        np.linalg.solve(a[0, 0], b[:, 0]),
        TOL[dtype] * 10,
    )
    for upper in (False, True):
        t = np.triu(a) if upper else np.tril(a)
        b = mats(3, 2, 5, 4, dtype=dtype)
        lclose(
            nv.linalg.solve_triangular(exact(t), exact(b), upper=upper),
            np.linalg.solve(t, b),
            TOL[dtype] * 10,
        )


def test_solve_errors():
    with pytest.raises(ValueError, match="solve: the first input must be a square"):
        nv.linalg.solve(nv.ones((2, 3)), nv.ones((2,)))
    with pytest.raises(ValueError, match="solve: the last dimension"):
        nv.linalg.solve(nv.eye(3), nv.ones((2,)))
    with pytest.raises(ValueError, match="promote to float32 or float64"):
        nv.linalg.solve(exact([[1, 0], [0, 1]]), exact([1, 2]))
    with pytest.raises(ValueError, match="solve_triangular: the second input"):
        nv.linalg.solve_triangular(nv.eye(2), exact(1.0))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 6])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_det_slogdet(n, dtype):
    a = mats(3, n, n, dtype=dtype)
    lclose(nv.linalg.det(exact(a)), np.linalg.det(a), TOL[dtype] * 10)
    s, l = nv.linalg.slogdet(exact(a))
    sn, ln = np.linalg.slogdet(a)
    np.testing.assert_array_equal(np.asarray(s), sn)
    lclose(l, ln, TOL[dtype] * 10)
    sing = np.zeros((n, n), dtype)
    if n:
        s, l = nv.linalg.slogdet(exact(sing))
        assert float(s) == 0.0 and float(l) == -np.inf
    assert nv.linalg.det(exact([[1, 2], [3, 4]])).dtype == nv.float32


def test_det_errors():
    with pytest.raises(ValueError, match="det: complex inputs"):
        nv.linalg.det(nv.eye(4).astype(nv.complex64))
    with pytest.raises(ValueError, match="slogdet: only defined for square"):
        nv.linalg.slogdet(nv.ones((2, 3)))
    with pytest.raises(ValueError, match="det: arrays must have at least 2"):
        nv.linalg.det(nv.ones((3,)))


def test_cross():
    for sa, sb, axis in [
        ((3,), (3,), -1),
        ((4, 3), (3,), -1),
        ((3, 5), (3, 5), 0),
        ((2,), (3,), -1),
        ((3,), (2,), -1),
        ((2,), (2,), -1),
        ((2, 1, 3), (4, 3), -1),
    ]:
        a, b = mats(*sa), mats(*sb)
        # a 2-vector's third component is zero
        a3, b3 = (
            np.concatenate([x, np.zeros(x.shape[:-1] + (1,), x.dtype)], -1)
            if x.shape[axis] == 2
            else x
            for x in (a, b)
        )
        lclose(nv.linalg.cross(exact(a), exact(b), axis=axis), np.cross(a3, b3, axis=axis), 1e-6)
    with pytest.raises(ValueError, match="cross: the axis must have size 2 or 3"):
        nv.linalg.cross(nv.ones((4,)), nv.ones((4,)))
    fd_vjp_check(lambda a, b: nv.linalg.cross(a, b), [mats(2, 3), mats(2, 3)])


def test_factorisations_vmap_and_compile():
    a = spd(4, 3, 3, dtype=np.float64)
    for f in (
        nv.linalg.inv,
        nv.linalg.cholesky,
        lambda x: nv.linalg.qr(x)[1],
        lambda x: nv.linalg.svd(x)[1],
        lambda x: nv.linalg.eigh(x)[0],
        lambda x: nv.linalg.eig(x)[0].abs(),
        lambda x: nv.linalg.lu(x)[2],
        lambda x: nv.linalg.tri_inv(x, upper=True),
        nv.linalg.det,
        nv.linalg.pinv,
        lambda x: nv.linalg.solve(x, x[..., :1]),
    ):
        vmap_check(f, [a], (0,))
        vmap_check(f, [np.moveaxis(a, 0, 2).copy()], (2,))
        g = nv.compile(f)
        np.testing.assert_array_equal(np.asarray(g(exact(a))), np.asarray(f(exact(a))))


def test_stream_keyword_and_norm_gradient():
    a = spd(3, 3)
    lclose(nv.linalg.inv(exact(a), stream=nv.cpu), np.linalg.inv(a), 1e-4)
    lclose(
        nv.linalg.solve(exact(a), nv.ones((3,)), stream=nv.cpu),
        np.linalg.solve(a, np.ones(3)),
        1e-4,
    )
    fd_vjp_check(lambda x: nv.linalg.norm(x, ord=3, axis=-1), [mats(2, 4)])
    fd_vjp_check(lambda x: nv.linalg.norm(x, ord="fro", axis=(0, 1)), [mats(2, 4)])
    fd_vjp_check(nv.linalg.det, [mats(3, 3)])


def _spd_fn(f):
    return lambda x: f(x @ nv.swapaxes(x, -1, -2) + 3 * nv.eye(x.shape[-1], dtype=nv.float64))


@pytest.mark.parametrize(
    "name,f,shape",
    [
        ("inv", lambda x: nv.linalg.inv(x + 3 * nv.eye(3, dtype=nv.float64)), (2, 3, 3)),
        ("tri_inv", lambda x: nv.linalg.tri_inv(x + 3 * nv.eye(3, dtype=nv.float64)), (3, 3)),
        (
            "tri_inv_upper",
            lambda x: nv.linalg.tri_inv(x + 3 * nv.eye(3, dtype=nv.float64), upper=True),
            (3, 3),
        ),
        ("cholesky", _spd_fn(nv.linalg.cholesky), (2, 3, 3)),
        ("cholesky_upper", _spd_fn(lambda s: nv.linalg.cholesky(s, upper=True)), (3, 3)),
        ("cholesky_inv", _spd_fn(lambda s: nv.linalg.cholesky_inv(nv.linalg.cholesky(s))), (3, 3)),
        ("eigvalsh", _spd_fn(nv.linalg.eigvalsh), (2, 4, 4)),
        ("eigvalsh_upper", _spd_fn(lambda s: nv.linalg.eigvalsh(s, UPLO="U")), (4, 4)),
        ("eigh_vectors", _spd_fn(lambda s: nv.linalg.eigh(s)[1] ** 2), (3, 3)),
        ("singular_values", lambda x: nv.linalg.svd(x, compute_uv=False), (2, 3, 4)),
        (
            "qr_tall",
            lambda x: nv.concatenate(
                [nv.reshape(nv.linalg.qr(x)[0], (-1,)), nv.reshape(nv.linalg.qr(x)[1] ** 2, (-1,))]
            ),
            (5, 3),
        ),
        ("qr_square_batched", lambda x: nv.linalg.qr(x)[0] + nv.linalg.qr(x)[1], (2, 3, 3)),
        ("lu_factor", lambda x: nv.linalg.lu_factor(x)[0], (2, 4, 4)),
        ("lu", lambda x: nv.linalg.lu(x)[1] * 2 + nv.linalg.lu(x)[2], (4, 4)),
        ("det_and_slogdet", lambda x: nv.linalg.det(x) + nv.linalg.slogdet(x)[1], (2, 5, 5)),
        ("solve", lambda x: nv.linalg.solve(x, x[..., :2] + 1), (2, 4, 4)),
        (
            "norm_2_and_nuc",
            lambda x: (
                nv.linalg.norm(x, ord=2, axis=(-2, -1))
                + nv.linalg.norm(x, ord="nuc", axis=(-2, -1))
            ),
            (2, 4, 3),
        ),
        (
            "solve_triangular",
            lambda x: nv.linalg.solve_triangular(x + 3 * nv.eye(3, dtype=nv.float64), x[..., :1]),
            (3, 3),
        ),
    ],
)
def test_factorisation_gradients(name, f, shape):
    x = LRNG.standard_normal(shape)
    fd_vjp_check(f, [x], rtol=1e-5, atol=1e-7)
    fd_jvp_check(f, [x], rtol=1e-5, atol=1e-7)


def test_one_triangle_read_has_zero_gradient_elsewhere():
    s = spd(4, 4, dtype=np.float64)
    for f, upper in [
        (nv.linalg.cholesky, False),
        (nv.linalg.eigvalsh, False),
        (lambda a: nv.linalg.eigvalsh(a, UPLO="U"), True),
        (lambda a: nv.linalg.tri_inv(a, upper=True), True),
    ]:
        g = np.asarray(nv.grad(lambda a, f=f: nv.sum(f(a) ** 2))(exact(s)))
        other = np.tril(g, -1) if upper else np.triu(g, 1)
        np.testing.assert_array_equal(other, 0)
        assert np.abs(g).sum() > 0


def test_undefined_derivatives_say_why():
    a = exact(mats(3, 3, dtype=np.float64))
    wide = exact(mats(2, 3, dtype=np.float64))
    with pytest.raises(NotImplementedError, match="qr: no derivative"):
        nv.grad(lambda x: nv.sum(nv.linalg.qr(x)[0]))(wide)
    with pytest.raises(NotImplementedError, match="lu: no derivative"):
        nv.grad(lambda x: nv.sum(nv.linalg.lu(x)[1]))(wide)
    for f, name in [
        (lambda x: nv.linalg.eigvals(x).abs(), "eig"),
        (lambda x: nv.linalg.svd(x)[0], "svd"),
    ]:
        with pytest.raises(NotImplementedError, match=f"{name}: no derivative"):
            nv.grad(lambda x, f=f: nv.sum(f(x)))(a)
