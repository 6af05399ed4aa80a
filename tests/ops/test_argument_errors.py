"""Wrong arguments to public functions raise a clean TypeError, ValueError or IndexError
whose message names the function: wrong types, bad axes, bad shapes and dtypes, drawn by
hypothesis over a table of nuvec's public functions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import nuvec as nv

X = nv.ones((2, 3))
WRONG_TYPES = st.sampled_from(["str", None, object(), {1: 2}, [[1], [2, 3]]])
BAD_AXES = st.one_of(
    st.integers(4, 50), st.integers(-50, -4), st.sampled_from([1.5, "0", None, object()])
)
BAD_SHAPES = st.sampled_from(["12", (2.5,), (-3,), ("a",), (2, None), 1.5, object()])

UNARY = [
    "exp", "log", "sin", "cos", "tanh", "sqrt", "abs", "negative", "sigmoid", "erf", "floor",
    "round", "sign", "square", "reciprocal", "logical_not", "isnan", "stop_gradient", "real",
    "imag", "conjugate", "expm1", "arctan", "log1p", "ceil", "isinf",
]  # fmt: skip
BINARY = [
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal", "less",
    "greater_equal", "logical_and", "logical_or", "arctan2", "logaddexp", "floor_divide",
    "remainder", "matmul", "inner", "outer", "kron",
]  # fmt: skip
AXIS_REDUCTIONS = [
    "sum", "mean", "max", "min", "prod", "all", "any", "var", "std", "logsumexp",
]  # fmt: skip
ONE_AXIS = [
    "argmax", "argmin", "cumsum", "cumprod", "cummax", "logcumsumexp", "sort", "argsort",
    "softmax", "expand_dims", "squeeze", "flatten", "diff", "median",
]  # fmt: skip
SHAPE_TAKERS = {
    "zeros": lambda s: nv.zeros(s),
    "ones": lambda s: nv.ones(s),
    "full": lambda s: nv.full(s, 1.0),
    "reshape": lambda s: nv.reshape(X, s),
    "broadcast_to": lambda s: nv.broadcast_to(X, s),
    "normal": lambda s: nv.random.normal(s),
    "uniform": lambda s: nv.random.uniform(shape=s),
    "randint": lambda s: nv.random.randint(0, 5, s),
    "bernoulli": lambda s: nv.random.bernoulli(0.5, s),
}
OTHERS = {
    "transpose": lambda b: nv.transpose(X, b),
    "swapaxes": lambda b: nv.swapaxes(X, 0, b),
    "moveaxis": lambda b: nv.moveaxis(X, 0, b),
    "concatenate": lambda b: nv.concatenate([X, b]),
    "stack": lambda b: nv.stack([X, b]),
    "tile": lambda b: nv.tile(X, b),
    "repeat": lambda b: nv.repeat(X, b),
    "split": lambda b: nv.split(X, b),
    "pad": lambda b: nv.pad(X, b),
    "take": lambda b: nv.take(X, b),
    "clip": lambda b: nv.clip(X, b, 1.0),
    "astype": lambda b: nv.astype(X, b),
    "topk": lambda b: nv.topk(X, b),
    "roll": lambda b: nv.roll(X, b),
    "eye": lambda b: nv.eye(b),
    "arange": lambda b: nv.arange(b),
    "einsum": lambda b: nv.einsum(b, X),
    "where": lambda b: nv.where(X > 0, X, b),
    "conv1d": lambda b: nv.conv1d(nv.ones((1, 4, 1)), b),
}

# arguments of OTHERS' functions that are valid
VALID = {"arange": (1.5,), "clip": (1.5, None), "where": (1.5,), "transpose": (None,)}


def _raises_cleanly(name: str, call) -> None:
    with pytest.raises((TypeError, ValueError, IndexError)) as info:
        call()
    assert name in str(info.value), f"{name}: the message does not name it: {info.value}"


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(UNARY), bad=WRONG_TYPES)
def test_unary_functions_refuse_wrong_types(name, bad):
    _raises_cleanly(name, lambda: getattr(nv, name)(bad))


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(BINARY), bad=WRONG_TYPES, first=st.booleans())
def test_binary_functions_refuse_wrong_types(name, bad, first):
    f = getattr(nv, name)
    _raises_cleanly(name, lambda: f(bad, X) if first else f(X, bad))


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(AXIS_REDUCTIONS + ONE_AXIS), axis=BAD_AXES)
def test_axis_arguments_are_checked(name, axis):
    if name == "squeeze" and axis is None:
        return  # squeeze(axis=None) drops every size-1 axis
    if name == "flatten":
        _raises_cleanly(name, lambda: nv.flatten(X, axis))
    elif name == "expand_dims":
        _raises_cleanly(name, lambda: nv.expand_dims(X, axis if axis is not None else 1.5))
    elif axis is None:
        return  # None means every axis (or the flattened array)
    else:
        _raises_cleanly(name, lambda: getattr(nv, name)(X, axis=axis))


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(sorted(SHAPE_TAKERS)), shape=BAD_SHAPES)
def test_shape_arguments_are_checked(name, shape):
    _raises_cleanly(name, lambda: SHAPE_TAKERS[name](shape))


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(OTHERS)), bad=st.one_of(WRONG_TYPES, st.just(1.5)))
def test_other_arguments_are_checked(name, bad):
    if any(bad is v or (type(bad) is type(v) and bad == v) for v in VALID.get(name, ())):
        return
    _raises_cleanly(name, lambda: OTHERS[name](bad))
