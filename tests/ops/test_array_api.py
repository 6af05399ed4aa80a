"""The Array's MLX surface: every method and property MLX's array has, each equal to the
function form; reshape/transpose argument forms; ``at``; real/imag; copy, pickle, format,
iteration and the indexing protocol."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import nuvec as nv
from nuvec.ops import methods

#: MLX's array attributes (mlx.core.array, Python API reference).
MLX_ARRAY_API = [
    "astype",
    "at",
    "item",
    "tolist",
    "dtype",
    "itemsize",
    "nbytes",
    "ndim",
    "shape",
    "size",
    "real",
    "imag",
    "abs",
    "all",
    "any",
    "argmax",
    "argmin",
    "conj",
    "cos",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "diag",
    "diagonal",
    "exp",
    "flatten",
    "log",
    "log10",
    "log1p",
    "log2",
    "logcumsumexp",
    "logsumexp",
    "max",
    "mean",
    "min",
    "moveaxis",
    "prod",
    "reciprocal",
    "reshape",
    "round",
    "rsqrt",
    "sin",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "std",
    "sum",
    "swapaxes",
    "transpose",
    "T",
    "var",
    "view",
    "__getitem__",
    "__setitem__",
    "__len__",
    "__iter__",
    "__copy__",
    "__deepcopy__",
    "__getstate__",
    "__setstate__",
    "__format__",
    "__array_namespace__",
    "__dlpack__",
    "__dlpack_device__",
    "__int__",
    "__float__",
    "__bool__",
    "__round__",
]

X = np.array([[1.5, -2.0, 3.25], [0.5, 4.0, -1.0]], np.float32)


def eq(a, b) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_every_mlx_attribute_is_there():
    missing = [n for n in MLX_ARRAY_API if not hasattr(nv.array, n)]
    assert not missing


# (method name, args, kwargs) -> compared with nv.<name>(x, *args, **kwargs)
CALLS = [
    ("abs", (), {}),
    ("all", (), {"axis": 1}),
    ("any", (0,), {"keepdims": True}),
    ("argmax", (), {"axis": 1}),
    ("argmin", (1,), {}),
    ("conj", (), {}),
    ("cos", (), {}),
    ("cummax", (), {"axis": 1}),
    ("cummin", (1,), {"reverse": True}),
    ("cumprod", (), {}),
    ("cumsum", (), {"axis": 0, "inclusive": False}),
    ("diag", (), {"k": 1}),
    ("diagonal", (), {"offset": -1}),
    ("exp", (), {}),
    ("flatten", (), {}),
    ("log", (), {}),
    ("log10", (), {}),
    ("log1p", (), {}),
    ("log2", (), {}),
    ("logcumsumexp", (), {"axis": 1}),
    ("logsumexp", (), {"axis": 0, "keepdims": True}),
    ("max", (), {}),
    ("mean", (1,), {}),
    ("min", (), {"axis": (0, 1)}),
    ("moveaxis", (0, 1), {}),
    ("prod", (), {"axis": 1}),
    ("reciprocal", (), {}),
    ("round", (1,), {}),
    ("rsqrt", (), {}),
    ("sin", (), {}),
    ("sqrt", (), {}),
    ("square", (), {}),
    ("squeeze", (), {}),
    ("std", (), {"ddof": 1}),
    ("sum", (), {}),
    ("swapaxes", (0, 1), {}),
    ("var", (0,), {}),
]


@pytest.mark.parametrize("name,args,kwargs", CALLS, ids=[c[0] for c in CALLS])
def test_methods_equal_the_functions(name, args, kwargs):
    x = nv.array(X)
    eq(getattr(x, name)(*args, **kwargs), getattr(nv, name)(x, *args, **kwargs))


def test_split_method_returns_the_pieces():
    x = nv.array(X)
    for a, b in zip(x.split(3, axis=1), nv.split(x, 3, axis=1)):
        eq(a, b)
    assert [p.shape for p in x.split([1])] == [(1, 3), (1, 3)]


def test_methods_are_looked_up_when_called(monkeypatch):
    calls = []

    def fake_view(a, dtype, *, stream=None):
        calls.append((a, dtype, stream))
        return a

    monkeypatch.setattr(nv.ops, "view", fake_view, raising=False)
    x = nv.array(X)
    assert x.view(nv.int32) is x and calls == [(x, nv.int32, None)]
    assert set(methods.FORWARDED) <= set(MLX_ARRAY_API)


def test_reshape_and_transpose_argument_forms():
    x = nv.array(np.arange(24).reshape(2, 3, 4))
    assert x.reshape(4, 6).shape == x.reshape((4, 6)).shape == x.reshape([4, -1]).shape == (4, 6)
    assert x.reshape(24).shape == (24,)
    eq(x.transpose(), nv.transpose(x))
    eq(x.transpose(1, 0, 2), nv.transpose(x, (1, 0, 2)))
    eq(x.transpose((2, 0, 1)), nv.transpose(x, [2, 0, 1]))
    eq(x.T, nv.transpose(x))
    with pytest.raises(ValueError, match="reshape"):
        x.reshape(5, 5)


def test_real_and_imag_are_properties():
    z = nv.array(np.array([1 + 2j, -3j], np.complex64))
    assert z.real.tolist() == [1.0, 0.0] and z.imag.tolist() == [2.0, -3.0]
    r = nv.array([1.0, 2.0])
    assert r.real.tolist() == [1.0, 2.0] and r.imag.tolist() == [0.0, 0.0]


def test_at_property():
    x = nv.zeros((3,))
    idx = nv.array([0, 2, 0])
    assert x.at[idx].add(1.0).tolist() == [2.0, 0.0, 1.0]
    assert x.at[idx].subtract(1.0).tolist() == [-2.0, 0.0, -1.0]
    assert nv.ones(3).at[idx].multiply(3.0).tolist() == [9.0, 1.0, 3.0]
    assert nv.ones(3).at[idx].divide(2.0).tolist() == [0.25, 1.0, 0.5]
    assert x.at[idx].maximum(nv.array([1.0, -1.0, 5.0])).tolist() == [5.0, 0.0, 0.0]
    assert x.at[1:].minimum(-2.0).tolist() == [0.0, -2.0, -2.0]
    assert x.tolist() == [0.0, 0.0, 0.0]  # at[] never changes the array itself


def test_copy_pickle_format_round():
    x = nv.array(X)
    for c in (copy.copy(x), copy.deepcopy(x)):
        assert c is not x
        c[0, 0] = 100.0
        assert x[0, 0].item() == 1.5 and c[0, 0].item() == 100.0
    y = pickle.loads(pickle.dumps(nv.array(X) * 2))
    eq(y, nv.array(X * 2))
    assert f"{nv.array(2.5):.2f}" == "2.50" and f"{nv.array(3)}" == "3"
    assert format(nv.array([1, 2])) == repr(nv.array([1, 2]))
    with pytest.raises(TypeError, match="format"):
        format(nv.array([1, 2]), ".2f")
    assert round(nv.array(2.567), 2).item() == pytest.approx(2.57, abs=1e-6)
    assert x.__array_namespace__() is nv


def test_python_protocol():
    x = nv.array(X)
    assert len(x) == 2 and [r.tolist() for r in x] == X.tolist()
    assert int(nv.array(3)) == 3 and float(nv.array(1.5)) == 1.5 and bool(nv.array([1]))
    assert x[1, 2].item() == -1.0 and x[-1].tolist() == X[-1].tolist()
    assert nv.ops.getitem(x, (0, slice(None, None, -1))).tolist() == X[0, ::-1].tolist()
    y = nv.ops.setitem(x, 0, 0.0)
    assert y.tolist()[0] == [0.0] * 3 and x.tolist() == X.tolist()
    x[1] = nv.array([7.0, 8.0, 9.0])
    assert x.tolist() == [X[0].tolist(), [7.0, 8.0, 9.0]]
    with pytest.raises(TypeError):
        len(nv.array(1.0))
