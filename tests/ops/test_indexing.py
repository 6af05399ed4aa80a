"""Indexing against NumPy: getitem / setitem with ints, slices (negative steps), None,
Ellipsis and integer arrays in every combination; ``at[]`` updates with repeated indices;
take, take_along_axis, put_along_axis, dynamic slice / slice_update, diagonal / diag; errors;
gradients of gather and scatter against finite differences and vmap against a loop."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nuvec as nv
from _helpers import ALL, FLOATS, exact, fd_check, layout, npdtype, same, vmap_same
from nuvec.primitives.indexing import Gather, GatherAxis, Scatter, ScatterAxis

FEW = settings(max_examples=int(os.environ.get("NV_EXAMPLES", 40)), deadline=None)


def rand(rng, shape, dtype: str) -> np.ndarray:
    return np.asarray(_rand(rng, tuple(shape), dtype))


def _rand(rng, shape, dtype: str):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype[0] in "ui":
        return rng.integers(0 if dtype[0] == "u" else -50, 50, shape).astype(dtype)
    if dtype == "complex64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return (rng.standard_normal(shape) * 4).astype(npdtype(dtype))


@st.composite
def arrays(draw, min_dims=0, max_dims=4, max_side=4, dtypes=ALL):
    shape = draw(st.lists(st.integers(0, max_side), min_size=min_dims, max_size=max_dims))
    dtype = draw(st.sampled_from(dtypes))
    x = rand(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, dtype)
    return x, layout(x, draw(st.sampled_from("cts"))), dtype


@st.composite
def index_for(draw, shape, allow_none=True, allow_arrays=True):
    """(nuvec index, NumPy index): ints, slices, None, Ellipsis and int arrays (as nuvec
    arrays, NumPy arrays or lists) that NumPy accepts for ``shape``."""
    nd = len(shape)
    k = draw(st.integers(0, nd))
    ell = draw(st.booleans())
    split = draw(st.integers(0, k)) if ell else k
    axes = list(range(split)) + list(range(nd - (k - split), nd))
    base = draw(st.sampled_from([(), (2,), (3,), (2, 3)]))
    nv_ix, np_ix = [], []
    for ax in axes:
        n = shape[ax]
        kinds = ["slice"] + (["int"] if n else []) + (["array"] * 2 if n and allow_arrays else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "int":
            i = draw(st.integers(-n, n - 1))
            nv_ix.append(i)
            np_ix.append(i)
        elif kind == "slice":
            b = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
            e = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
            s = draw(st.sampled_from([None, 1, 2, 3, -1, -2]))
            nv_ix.append(slice(b, e, s))
            np_ix.append(slice(b, e, s))
        else:
            ishape = tuple(d if draw(st.booleans()) else 1 for d in base)
            ishape = ishape[draw(st.integers(0, len(ishape))) :]
            vals = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).integers(-n, n, ishape)
            form = draw(st.sampled_from(["nv", "np", "list", "uint8"]))
            if form == "uint8":
                vals = (vals % n).astype(np.uint8)
                nv_ix.append(exact(vals))
            elif form == "nv":
                nv_ix.append(exact(vals.astype(np.int32)))
            elif form == "np":
                nv_ix.append(vals.astype(np.int64))
            else:
                nv_ix.append(vals.tolist() if vals.ndim else int(vals))
            np_ix.append(vals)
    if ell:
        nv_ix.insert(split, Ellipsis)
        np_ix.insert(split, Ellipsis)
    if allow_none:
        for _ in range(draw(st.integers(0, 2))):
            p = draw(st.integers(0, len(nv_ix)))
            nv_ix.insert(p, None)
            np_ix.insert(p, None)
    if len(nv_ix) == 1 and draw(st.booleans()):
        return nv_ix[0], np_ix[0]
    return tuple(nv_ix), tuple(np_ix)


# -- getitem / setitem -------------------------------------------------------------------
@FEW
@given(arrays(), st.data())
def test_getitem_matches_numpy(xa, d):
    x, a, _ = xa
    ix, npix = d.draw(index_for(x.shape))
    same(a[ix], x[npix])


@FEW
@given(arrays(dtypes=["int32", "float32", "bfloat16", "bool", "complex64", "uint64"]), st.data())
def test_setitem_matches_numpy(xa, d):
    x, a, dtype = xa
    ix, npix = d.draw(index_for(x.shape))
    target = x[npix]
    positions = np.arange(x.size).reshape(x.shape)[npix]
    unique = len(np.unique(positions)) == positions.size
    e = x.copy()
    if unique and d.draw(st.booleans()):
        vshape = target.shape[d.draw(st.integers(0, target.ndim)) :]
        vshape = tuple(s if d.draw(st.booleans()) else 1 for s in vshape)
        v = rand(np.random.default_rng(3), vshape, dtype)
        e[npix] = v
        value = exact(v) if d.draw(st.booleans()) else v
    else:
        v = {"bool": True, "complex64": 2 - 1j}.get(dtype, 7)
        e[npix] = v
        value = v
    alias = a
    a[ix] = value
    assert alias is a
    same(a, e)


def test_getitem_views_and_node_counts():
    x = exact(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    nv.eval(x)
    for view in [x[1], x[:, 1:, ::-2], x[..., None, 0], x[None]]:
        nv.eval(view)
        assert np.shares_memory(view._data, x._data)
    assert x[...] is x and x[:] is x and x[()] is x
    y = x[exact([1, 0])]
    assert type(y.primitive) is Gather and y.inputs[0] is x  # one node for a plain take


def test_setitem_keeps_the_old_value_for_the_update_and_siblings():
    a = nv.arange(5)
    a[1:3] = a[3:5]  # the update reads the value before the assignment
    assert a.tolist() == [0, 3, 4, 3, 4]
    a[exact([0, 4])] = exact([10, 20])
    a[-1] += 1
    assert a.tolist() == [10, 3, 4, 3, 21]
    parts = nv.split(nv.arange(4), 2)
    parts[0][0] = 9
    assert parts[0].tolist() == [9, 1] and parts[1].tolist() == [2, 3]


AT_MODES = {
    "add": lambda p, v: p + v,
    "subtract": lambda p, v: p - v,
    "multiply": lambda p, v: p * v,
    "divide": lambda p, v: p / v,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


@FEW
@given(
    arrays(min_dims=1, dtypes=["int32", "uint8", "float32", "float64", "float16", "bool"]),
    st.sampled_from(list(AT_MODES)),
    st.data(),
)
def test_at_updates_count_repeated_indices(xa, mode, d):
    x, a, dtype = xa
    ix, npix = d.draw(index_for(x.shape, allow_none=False))
    positions = np.arange(x.size).reshape(x.shape)[npix]
    if dtype == "bool" and mode in ("subtract", "divide"):
        return
    v = rand(np.random.default_rng(5), positions.shape, dtype)
    if mode == "divide":
        if dtype not in FLOATS:
            with pytest.raises(TypeError, match="at.divide"):
                a.at[ix].divide(exact(v))
            return
        v = np.where(v == 0, 1, v).astype(v.dtype)
    flat = x.reshape(-1).copy()
    op = AT_MODES[mode]
    with np.errstate(all="ignore"):
        for p, val in zip(positions.reshape(-1), v.reshape(-1)):
            flat[p] = op(flat[p], val)
    out = getattr(a.at[ix], mode)(exact(v))
    e = flat.reshape(x.shape)
    if dtype in FLOATS:  # repeated float updates may combine in another order
        np.testing.assert_allclose(
            np.asarray(out).astype(np.float64),
            e.astype(np.float64),
            rtol={"float16": 4e-3}.get(dtype, 1e-5),
            atol=1e-2,
        )
        assert out.dtype.name == dtype
    else:
        same(out, e)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_updates_sum_in_add_at_order_bit_for_bit(dtype):
    """The embedding-gradient path (rows picked by one index array, sorted and added step by
    step): every row sums its updates in their original order, as np.add.at does."""
    rng = np.random.default_rng(9)
    for vocab, shape in [(96, (32, 64)), (7, (200,)), (50, (3, 40)), (300, (2, 2, 33))]:
        idx = rng.integers(-vocab, vocab, shape).astype(np.int32)  # negatives wrap
        table = (rng.standard_normal((vocab, 5)) * 100).astype(dtype)
        upd = rng.standard_normal(shape + (5,)) * 10.0 ** rng.uniform(-3, 3, shape + (5,))
        upd = upd.astype(dtype)
        want = table.copy()
        np.add.at(want, (idx,), upd)
        got = exact(table).at[exact(idx)].add(exact(upd))
        assert np.asarray(got).tobytes() == want.tobytes(), (vocab, shape)
    if nv.default_device() != nv.cpu:
        return  # the GPU wraps a bad index instead (backends/cuda/indexing.py says why)
    with pytest.raises(IndexError, match="scatter"):  # a bad index is still reported
        exact(table).at[exact(np.full(70, 300, np.int32))].add(
            exact(np.ones((70, 5), dtype))
        ).tolist()


def test_at_example_from_mlx_docs():
    a = exact([0, 0])
    idx = exact([0, 1, 0, 1])
    a[idx] += 1
    assert a.tolist() == [1, 1]
    assert exact([0, 0]).at[idx].add(1).tolist() == [2, 2]


# -- take and friends --------------------------------------------------------------------
@FEW
@given(arrays(), st.data())
def test_take(xa, d):
    x, a, _ = xa
    axis = d.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1))) if x.ndim else None
    n = x.size if axis is None else x.shape[axis]
    if n == 0:
        return
    ishape = d.draw(st.sampled_from([(), (3,), (2, 2)]))
    idx = np.random.default_rng(1).integers(-n, n, ishape)
    same(nv.take(a, exact(idx.astype(np.int32)), axis=axis), np.take(x, idx, axis=axis))
    i = d.draw(st.integers(-n, n - 1))
    same(nv.take(a, i, axis=axis), np.take(x, i, axis=axis))


@FEW
@given(arrays(min_dims=1), st.data())
def test_take_and_put_along_axis(xa, d):
    x, a, dtype = xa
    ax = d.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[ax]
    if n == 0:
        return
    rng = np.random.default_rng(2)
    k = d.draw(st.integers(0, 3))
    ishape = tuple(
        k if i == ax % x.ndim else (s if d.draw(st.booleans()) else 1)
        for i, s in enumerate(x.shape)
    )
    idx = rng.integers(-n, n, ishape)
    same(
        nv.take_along_axis(a, exact(idx.astype(np.int32)), axis=ax),
        np.take_along_axis(x, idx, axis=ax),
    )
    if x.size:
        flat = idx.reshape(-1)[:3] % x.size
        same(
            nv.take_along_axis(a, exact(flat), axis=None),
            np.take_along_axis(x.reshape(-1), flat, axis=0),
        )
    # put with distinct indices along the axis, shaped like the array elsewhere
    k = min(k, n)
    perm = np.argsort(
        rng.random(x.shape[: ax % x.ndim] + (n,) + x.shape[ax % x.ndim + 1 :]), axis=ax
    )
    pidx = np.take(perm, np.arange(k), axis=ax)
    vals = rand(rng, pidx.shape, dtype)
    e = x.copy()
    np.put_along_axis(e, pidx, vals, axis=ax)
    same(nv.put_along_axis(a, exact(pidx), exact(vals), axis=ax), e)


def test_put_along_axis_broadcasts_values_and_axis_none():
    x = np.zeros((2, 3), np.float32)
    e = x.copy()
    np.put_along_axis(e, np.array([[0], [2]]), 5.0, axis=1)
    same(nv.put_along_axis(exact(x), exact([[0], [2]]), 5.0, axis=1), e)
    e = x.copy().reshape(-1)
    e[[1, 4]] = [1, 2]
    same(nv.put_along_axis(exact(x), exact([1, 4]), exact([1.0, 2.0]), axis=None), e.reshape(2, 3))


@FEW
@given(arrays(min_dims=1, max_dims=3, max_side=5), st.data())
def test_dynamic_slice_and_slice_update(xa, d):
    x, a, dtype = xa
    k = d.draw(st.integers(1, x.ndim))
    axes = d.draw(st.permutations(range(x.ndim)))[:k]
    sizes = [d.draw(st.integers(0, s)) for s in x.shape]
    starts = [d.draw(st.integers(-x.shape[ax] - 1, x.shape[ax] + 1)) for ax in axes]
    box = [slice(0, s) for s in sizes]
    for ax, st_ in zip(axes, starts):
        n, s = x.shape[ax], sizes[ax]
        b = st_ + n if st_ < 0 else st_
        b = min(max(b, 0), n - s)
        box[ax] = slice(b, b + s)
    start = (
        exact(np.array(starts, np.int32))
        if k > 1 or d.draw(st.booleans())
        else exact(np.int32(starts[0]))
    )
    same(nv.slice(a, start, axes, sizes), x[tuple(box)])
    upd = rand(np.random.default_rng(4), tuple(sizes), dtype)
    e = x.copy()
    e[tuple(box)] = upd
    same(nv.slice_update(a, exact(upd), start, axes), e)
    # an evaluated start is read at once (a static update); an unevaluated one when the
    # graph runs (a scatter over index grids): the same values
    same(nv.slice_update(a, exact(upd), start + 0, axes), e)


def test_slice_update_never_writes_a_held_input():
    x = nv.zeros((2, 4)) + 1
    nv.eval(x)
    y = nv.slice_update(x, nv.ones((1, 2)) * 5, exact([1, 1]), (0, 1))
    z = nv.slice_update(x, nv.ones((1, 2)) * 7, exact([0, 0]), (0, 1))
    assert y.tolist() == [[1, 1, 1, 1], [1, 5, 5, 1]]
    assert z.tolist() == [[7, 7, 1, 1], [1, 1, 1, 1]]
    assert x.tolist() == [[1] * 4] * 2


def test_slice_update_of_a_dropped_input_reuses_its_buffer():
    x = nv.zeros((2, 4)) + 1
    nv.eval(x)
    if not isinstance(x._data, np.ndarray):
        pytest.skip("buffer donation is the CPU's")
    ptr = np.asarray(x).ctypes.data
    y = nv.slice_update(x, nv.ones((1, 2)) * 5, exact([1, 1]), (0, 1))
    del x  # only the graph holds it now
    assert y.tolist() == [[1, 1, 1, 1], [1, 5, 5, 1]]
    assert np.asarray(y).ctypes.data == ptr


def test_slice_examples_from_mlx_docs():
    a = exact([[1, 2, 3], [4, 5, 6]])
    assert nv.slice(a, exact(1), (0,), (1, 2)).tolist() == [[4, 5]]
    assert nv.slice(a, exact(1), (1,), (2, 1)).tolist() == [[2], [5]]
    z = nv.slice_update(nv.zeros((3, 3)), nv.ones((1, 2)), exact([1, 1]), (0, 1))
    assert z.tolist() == [[0, 0, 0], [0, 1, 1], [0, 0, 0]]


@FEW
@given(arrays(min_dims=2, max_dims=4), st.data())
def test_diagonal_and_diag(xa, d):
    x, a, _ = xa
    off = d.draw(st.integers(-5, 5))
    i, j = d.draw(st.permutations(range(x.ndim)))[:2]
    same(nv.diagonal(a, off, i, j), np.diagonal(x, off, i, j))
    m = x.reshape(x.shape[0], int(np.prod(x.shape[1:])))
    same(nv.diag(exact(m), off), np.diag(m, off))
    v = m.reshape(-1)[:4]
    same(nv.diag(exact(v), off), np.diag(v, off))


# -- errors ------------------------------------------------------------------------------
@pytest.mark.usefixtures("cpu_device")  # CPU-only behaviour (see tests/conftest.py)
def test_index_errors_are_clear():
    a = nv.zeros((3, 4))
    for bad in [exact([True, False, True]), True, [True, False, True], np.array([True])]:
        with pytest.raises(TypeError, match="boolean"):
            a[bad]
    for bad in [1.5, exact([1.0]), "x", {1: 2}]:
        with pytest.raises(TypeError, match="getitem"):
            a[bad]
    for bad in [3, -4, (0, 4), (0, 0, 0)]:
        with pytest.raises(IndexError, match="getitem"):
            a[bad]
        with pytest.raises(ValueError, match="getitem"):
            a[bad]
    with pytest.raises(IndexError, match="setitem: index 7"):
        a[7] = 1
    with pytest.raises(ValueError, match="single ellipsis"):
        a[..., ...]
    with pytest.raises(ValueError, match="setitem: cannot broadcast"):
        a[0] = nv.zeros((2,))
    with pytest.raises(IndexError, match="gather"):
        nv.eval(a[exact([0, 3])])
    with pytest.raises(IndexError, match="getitem"):
        exact(1.0)[0]


def test_take_family_errors():
    a = nv.zeros((2, 3))
    with pytest.raises(ValueError, match="take: axis 2"):
        nv.take(a, exact([0]), axis=2)
    with pytest.raises(TypeError, match="take: index arrays must be integers"):
        nv.take(a, exact([0.5]))
    with pytest.raises(IndexError, match="take"):
        nv.take(a, 6)
    with pytest.raises(ValueError, match="take_along_axis: indices of dimension 1"):
        nv.take_along_axis(a, exact([0]), axis=1)
    with pytest.raises(ValueError, match="put_along_axis"):
        nv.put_along_axis(a, nv.zeros((3, 1), nv.int32), 1.0, axis=1)
    with pytest.raises(ValueError, match="slice: 1 slice sizes"):
        nv.slice(a, exact([0]), (0,), (1,))
    with pytest.raises(ValueError, match="slice: 2 start indices for 1 axes"):
        nv.slice(a, exact([0, 1]), (0,), (1, 3))
    with pytest.raises(TypeError, match="slice: start indices must be integers"):
        nv.slice(a, exact([0.0]), (0,), (1, 3))
    with pytest.raises(ValueError, match="slice_update: an update of shape"):
        nv.slice_update(a, nv.zeros((3, 3)), exact([0]), (0,))
    with pytest.raises(ValueError, match="diagonal: the array"):
        nv.diagonal(nv.zeros((3,)))
    with pytest.raises(ValueError, match="diag: the input"):
        nv.diag(nv.zeros((2, 2, 2)))


# -- gradients and vmap ------------------------------------------------------------------
R = np.random.default_rng(11)
X = R.standard_normal((3, 4))
V2 = R.standard_normal((2, 4))
V3 = R.standard_normal((3,)) + 3.0
I_DUP = exact([2, 0, 2])

GATHER_SCATTER = {
    "gather_rows": (lambda x: x[I_DUP], [X]),
    "gather_mixed": (lambda x: x[exact([[1], [2]]), exact([0, 3, 3])], [X]),
    "gather_nonadjacent": (lambda x: x[I_DUP, None, exact([0, 1, 3])], [X]),
    "gather_after_slice": (lambda x: x[None, ::-1, None, I_DUP], [X]),
    "take": (lambda x: nv.take(x, exact([3, 3, 1]), axis=1), [X]),
    "take_along_axis": (
        lambda x: nv.take_along_axis(x, exact([[0, 0], [2, 1], [3, 3]]), axis=1),
        [X],
    ),
    "setitem_array": (lambda x, v: nv.setitem(x, exact([2, 0]), v), [X, V2]),
    "setitem_mixed": (
        lambda x, v: nv.setitem(x, (slice(1, None), exact([0, 3, 1])), v[0]),
        [X, np.stack([V3, V3 - 1])],
    ),
    "at_add": (lambda x, v: x.at[I_DUP, 1:].add(v[:, :3]), [X, R.standard_normal((3, 4))]),
    "at_multiply": (lambda x, v: x.at[I_DUP, 0].multiply(v), [X, V3]),
    "at_maximum": (lambda x, v: x.at[I_DUP, 2].maximum(v), [X, R.standard_normal(3) * 3]),
    "at_minimum": (lambda x, v: x.at[I_DUP, 2].minimum(v), [X, R.standard_normal(3) * 3]),
    "put_along_axis": (
        lambda x, v: nv.put_along_axis(x, exact([[1], [3], [0]]), v, axis=1),
        [X, V3[:, None]],
    ),
    "dynamic_slice": (lambda x: nv.slice(x, exact([1, 2]), (0, 1), (2, 2)), [X]),
    "dynamic_slice_update": (
        lambda x, v: nv.slice_update(x, v, exact(1), (1,)),
        [X, R.standard_normal((3, 2))],
    ),
    "diagonal": (lambda x: nv.diagonal(x, 1), [X]),
    "diag": (lambda v: nv.diag(v, -1), [V3]),
}


@pytest.mark.parametrize("name", list(GATHER_SCATTER))
def test_gradients_against_finite_differences(name):
    f, xs = GATHER_SCATTER[name]
    fd_check(f, xs, jvp_rtol=1e-8)


@pytest.mark.parametrize("name", list(GATHER_SCATTER))
def test_vmap_against_a_loop(name):
    f, xs = GATHER_SCATTER[name]
    first = np.stack([xs[0], xs[0] * 2, -xs[0]], axis=1)
    vmap_same(f, [first] + xs[1:], [1] + [None] * (len(xs) - 1))
    if len(xs) > 1:
        vmap_same(f, [xs[0], np.stack([xs[1], xs[1] + 1], axis=0)], [None, 0])


def test_vmap_over_indices():
    x = np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, 2], [1, 1], [2, 0]])
    vmap_same(lambda i: exact(x)[i], [idx], [0])
    vmap_same(lambda x, i: x[i, 1:], [np.stack([x, x + 1, x * 2]), idx], [0, 0])
    vmap_same(
        lambda x, i: nv.take_along_axis(x, i, axis=0),
        [x, np.array([[0, 2], [1, 1], [2, 0], [1, 2]])],
        [1, 0],
    )
    vmap_same(lambda i: exact(x).at[i].add(1.0), [idx], [0])
    vmap_same(lambda x, i: nv.put_along_axis(x, i, 0.0, axis=1), [x, idx[:, None, :1]], [None, 0])
    vmap_same(lambda s: nv.slice(exact(x), s, (1,), (3, 2)), [np.array([0, 2, 3])], [0])
    vmap_same(
        lambda s: nv.slice_update(exact(x), nv.ones((3, 1)), s, (1,)), [np.array([0, 3])], [0]
    )


def test_integer_indices_get_no_gradient_and_rules_cover_all_inputs():
    x = exact(X)
    g = nv.grad(lambda x: x[exact([1, 1])].sum())(x)
    assert g.tolist()[1] == [2.0] * 4 and g.tolist()[0] == [0.0] * 4
    for p in [Gather((0,)), Scatter((0,), "add"), GatherAxis(0), ScatterAxis(0, "add")]:
        assert p == type(p)(*p.params) and hash(p) == hash(type(p)(*p.params))
    with pytest.raises(ValueError, match="scatter: unknown mode"):
        Scatter((0,), "mean")
