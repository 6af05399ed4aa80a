"""matmul, addmm, tensordot, inner, outer, einsum, isclose, allclose, array_equal against
NumPy; errors; gradients against finite differences; vmap against a loop."""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nuvec as nv
from _helpers import (FLOATS, INTS, RTOL, assert_close, f64, fd_jvp_check, fd_vjp_check,
                      layout, rand, vmap_check)

FAST = settings(max_examples=int(os.environ.get("NUVEC_TEST_EXAMPLES", 40)), deadline=None)
NUMERIC = INTS + FLOATS + ["complex64"]


def int_matmul(a: np.ndarray, b: np.ndarray, name: str) -> np.ndarray:
    """Exact integer product (Python ints), wrapped into ``name`` as NumPy's loops wrap."""
    r = np.matmul(a.astype(object), b.astype(object))
    info = np.iinfo(name)
    span = int(info.max) - int(info.min) + 1
    return np.vectorize(lambda v: ((int(v) - int(info.min)) % span) + int(info.min),
                        otypes=[object])(r).astype(name)


@st.composite
def matmul_operands(draw):
    """Shapes that matmul accepts: broadcastable batch dims, maybe 1-D operands, 0 sizes."""
    m, k, n = (draw(st.integers(0, 4)) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    a_batch = [d if draw(st.booleans()) else 1 for d in batch][draw(st.integers(0, len(batch))):]
    b_batch = [d if draw(st.booleans()) else 1 for d in batch][draw(st.integers(0, len(batch))):]
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
    np.testing.assert_array_equal(np.asarray(nv.array(a) @ nv.array(b)), want)


def test_matmul_errors():
    with pytest.raises(ValueError, match=r"matmul: last dimension of the first input \(shape "
                                         r"\(2, 3\)\) must match the second-to-last dimension"):
        nv.matmul(nv.ones((2, 3)), nv.ones((4, 5)))
    with pytest.raises(ValueError, match="matmul: inputs must have at least one dimension"):
        nv.matmul(nv.array(1.0), nv.ones(3))
    with pytest.raises(ValueError, match=r"matmul: shapes \(2,\) and \(3,\) cannot be broadcast"):
        nv.matmul(nv.ones((2, 1, 3)), nv.ones((3, 3, 1)))
    with pytest.raises(TypeError, match="matmul: not defined for bool"):
        nv.matmul(nv.ones((2, 2), dtype=nv.bool_), nv.ones((2, 2), dtype=nv.bool_))


@FAST
@given(seed=st.integers(0, 2**31 - 1), c_kind=st.sampled_from(["full", "row", "col", "scalar"]),
       alpha=st.sampled_from([1.0, 2.0, -0.5]), beta=st.sampled_from([1.0, 0.0, 0.25]),
       name=st.sampled_from(["float16", "bfloat16", "float32", "float64", "int32"]),
       batch=st.sampled_from([(), (2,)]))
def test_addmm_matches_numpy(seed, c_kind, alpha, beta, name, batch):
    rng = np.random.default_rng(seed)
    a, b = rand(rng, batch + (3, 4), name), rand(rng, (4, 5), name)
    c_shape = {"full": batch + (3, 5), "row": (5,), "col": (3, 1), "scalar": ()}[c_kind]
    c = rand(rng, c_shape, name)
    r = nv.addmm(nv.array(c), nv.array(a), layout(b, "t"), alpha=alpha, beta=beta)
    want = alpha * np.matmul(f64(a), f64(b)) + beta * f64(c)
    mag = abs(alpha) * np.matmul(np.abs(f64(a)), np.abs(f64(b))) + abs(beta) * np.abs(f64(c))
    out = name if name != "int32" or (alpha == 1 and beta == 1) else "float32"
    assert r.dtype.name == out
    assert_close(r, want, out if out != "int32" else "float32", mag)


def test_addmm_errors():
    with pytest.raises(ValueError, match=r"addmm: c of shape \(4,\) does not broadcast"):
        nv.addmm(nv.ones(4), nv.ones((2, 3)), nv.ones((3, 5)))


@FAST
@given(seed=st.integers(0, 2**31 - 1), name=st.sampled_from(["int32", "float32", "float64"]),
       case=st.sampled_from([
           ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1), ((2, 3), (4, 5), 0),
           ((2, 3, 4), (4, 3, 2), ([1, 2], [1, 0])), ((3, 4), (4, 3), ([0, 1], [1, 0])),
           ((2, 0, 3), (0, 3), 2), ((3, 2), (3,), ([0], [0]))]))
def test_tensordot_matches_numpy(seed, name, case):
    rng = np.random.default_rng(seed)
    sa, sb, axes = case
    a, b = rand(rng, sa, name), rand(rng, sb, name)
    r = nv.tensordot(nv.array(a), layout(b, "t"), axes=axes)
    want = np.tensordot(f64(a), f64(b), axes=axes)
    if name == "int32":
        np.testing.assert_array_equal(np.asarray(r), want.astype(np.int32))
    else:
        assert_close(r, want, name, np.tensordot(np.abs(f64(a)), np.abs(f64(b)), axes=axes))


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (4, 3)), ((), (3,)), ((2, 2, 3), (3,)),
                                   ((0, 3), (2, 3))])
def test_inner_and_outer_match_numpy(sa, sb):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    np.testing.assert_allclose(np.asarray(nv.inner(nv.array(a), nv.array(b))), np.inner(a, b),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(nv.outer(nv.array(a), nv.array(b))), np.outer(a, b),
                               rtol=1e-12)
    ai = rng.integers(-5, 5, sa).astype(np.int32)
    assert nv.outer(nv.array(ai), nv.array(b)).dtype == nv.float64


def test_tensordot_errors():
    with pytest.raises(ValueError, match=r"tensordot: axis 1 of a \(size 3\) does not match "
                                         r"axis 0 of b \(size 4\)"):
        nv.tensordot(nv.ones((2, 3)), nv.ones((4, 5)), axes=1)
    with pytest.raises(ValueError, match="tensordot: axes=3 is invalid"):
        nv.tensordot(nv.ones((2, 3)), nv.ones((3, 5)), axes=3)
    with pytest.raises(ValueError, match="inner: last dimensions"):
        nv.inner(nv.ones(2), nv.ones(3))


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("ij->j", [(2, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]), ("...ij,...jk", [(2, 3, 3), (3, 3)]),
    ("...ij,...jk->...ik", [(1, 2, 3), (4, 3, 2)]), ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(3,), (3,)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("iij->j", [(3, 3, 2)]), ("ijk,kj->i", [(2, 3, 4), (4, 3)]), ("ab,ab->ab", [(2, 3), (2, 3)]),
    ("i...->...", [(3, 2, 2)]), ("ba,ca->bc", [(2, 0), (3, 0)]), ("ij,ij->i", [(0, 3), (0, 3)]),
    ("jii->ij", [(2, 3, 3)]), ("abc,cd,db->a", [(2, 3, 4), (4, 2), (2, 3)]),
]


@pytest.mark.parametrize("spec,shapes", EINSUM, ids=[s for s, _ in EINSUM])
def test_einsum_matches_numpy(spec, shapes):
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal(s) for s in shapes]
    r = nv.einsum(spec, *[layout(x, "t") for x in xs])
    np.testing.assert_allclose(np.asarray(r), np.einsum(spec, *xs), rtol=1e-12, atol=1e-12)
    xs32 = [x.astype(np.float32) for x in xs]
    r32 = nv.einsum(spec, *[nv.array(x) for x in xs32])
    assert r32.dtype == nv.float32
    ints = [rng.integers(-3, 4, s).astype(np.int32) for s in shapes]
    np.testing.assert_array_equal(np.asarray(nv.einsum(spec, *[nv.array(i) for i in ints])),
                                  np.einsum(spec, *ints))


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
@given(seed=st.integers(0, 2**31 - 1), equal_nan=st.booleans(),
       name=st.sampled_from(["float32", "float64", "float16", "int32"]),
       rtol=st.sampled_from([1e-5, 1e-2]), atol=st.sampled_from([1e-8, 0.1]))
def test_isclose_allclose_match_numpy(seed, equal_nan, name, rtol, atol):
    rng = np.random.default_rng(seed)
    a = rand(rng, (4, 5), name)
    b = (f64(a) * (1 + rng.choice([0, 1e-6, 1e-3, 0.5], a.shape))).astype(a.dtype)
    if name.startswith("float"):
        special = np.array([np.nan, np.inf, -np.inf, 1.0])
        a.flat[:4] = special.astype(a.dtype)
        b.flat[:4] = np.array([np.nan, np.inf, np.inf, np.nan]).astype(a.dtype)
    got = nv.isclose(nv.array(a), nv.array(b), rtol=rtol, atol=atol, equal_nan=equal_nan)
    cmp = a.dtype if name != "int32" else np.float32
    want = np.isclose(a.astype(cmp), b.astype(cmp), rtol=rtol, atol=atol, equal_nan=equal_nan)
    if name == "float16":  # NumPy evaluates the bound in float16, nuvec too: compare ok cells
        want = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert nv.allclose(nv.array(a), nv.array(b), rtol=rtol, atol=atol,
                       equal_nan=equal_nan).item() == bool(want.all())


def test_allclose_broadcasts_and_array_equal():
    assert nv.allclose(nv.ones(3), nv.ones((2, 3))).item()
    assert not nv.array_equal(nv.ones(3), nv.ones(4)).item()
    assert nv.array_equal(nv.array([1, 2]), nv.array([1.0, 2.0])).item()
    nan = nv.array([1.0, np.nan])
    assert not nv.array_equal(nan, nan).item()
    assert nv.array_equal(nan, nan, equal_nan=True).item()
    assert not nv.array_equal(nv.array([1, 2]), nv.array([1, 3])).item()


# -- gradients and vmap ---------------------------------------------------------------------

RNG = np.random.default_rng(5)


def r(*shape):
    return RNG.standard_normal(shape)


@pytest.mark.parametrize("f,shapes", [
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
], ids=["mm", "mm_bcast", "mm_vec_mat", "mm_mat_vec", "mm_dot", "addmm", "addmm_scaled",
        "addmm_transposed", "tensordot", "inner", "outer", "einsum_bmm", "einsum_diag",
        "einsum_chain", "einsum_ellipsis"])
def test_linalg_gradients(f, shapes):
    xs = [r(*s) for s in shapes]
    fd_vjp_check(f, xs)
    fd_jvp_check(f, xs)


def test_mlp_layer_gradient_matches_numpy():
    x, w, b = r(8, 6), r(5, 6), r(5)

    def loss(w, b):
        h = nv.addmm(b, x_nv, nv.swapaxes(w, 0, 1))
        return nv.sum(nv.softmax(h, axis=-1) * nv.array(target))
    x_nv = nv.array(x)
    target = r(8, 5)
    fd_vjp_check(loss, [w, b])


@pytest.mark.parametrize("f,shapes,in_axes", [
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
], ids=["mm_a", "mm_b", "mm_both", "mm_vec", "mm_vec_both", "mm_batched", "addmm_a",
        "addmm_c", "addmm_cb", "einsum", "tensordot"])
def test_linalg_vmap(f, shapes, in_axes):
    vmap_check(f, [r(*s) for s in shapes], in_axes)


def test_second_order_through_matmul_and_einsum():
    a, b = r(3, 4), r(4, 2)
    v = nv.array(r(3, 4))

    def f(x):
        return nv.sum(nv.tanh(nv.matmul(x, nv.array(b))) ** 2) + nv.einsum("ij,ij->", x, x) ** 2
    fd_vjp_check(lambda x: nv.sum(nv.grad(f)(x) * v), [a], rtol=1e-5, atol=1e-6)
