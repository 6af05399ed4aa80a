"""One trace per signature (tree structure, leaf dtypes and shapes, non-array
constants, default stream); replays do not run the function; captured arrays are frozen
constants; evaluating inside a trace is a clear error; a trace counter exists."""

import pytest

import nuvec as nv
from nuvec.compile import trace_count
from nuvec.core.evaluate import TraceEvaluationError


def counting(fn):
    calls = []

    def f(*args, **kwargs):
        calls.append(1)
        return fn(*args, **kwargs)

    f.calls = calls
    return f


def test_replays_do_not_run_the_function():
    f = counting(lambda x, y: x * y + 2)
    g = nv.compile(f)
    before = trace_count()
    for i in range(5):
        x = nv.array([float(i), 1.0])
        assert g(x, x).tolist() == [i * i + 2.0, 3.0]
    assert len(f.calls) == 1
    assert trace_count() == before + 1
    assert g.stats()["hits"] == 4 and g.stats()["misses"] == 1


@pytest.mark.parametrize(
    "first,second",
    [
        ((nv.ones((3,)),), (nv.ones((4,)),)),  # shape
        ((nv.ones((3,)),), (nv.ones((3,), dtype=nv.float16),)),  # dtype
        (([nv.ones((3,)), nv.ones((3,))],), ((nv.ones((3,)), nv.ones((3,))),)),  # list vs tuple
        (({"a": nv.ones((3,))},), ({"b": nv.ones((3,))},)),  # dict keys
        ((nv.ones((3,)), 1), (nv.ones((3,)), 2)),  # constant value
        ((nv.ones((3,)), 1), (nv.ones((3,)), 1.0)),  # constant type
        ((nv.ones((3,)), 1), (nv.ones((3,)), True)),
        ((nv.ones((3,)), "relu"), (nv.ones((3,)), "gelu")),
        ((nv.ones((3,)), None), (nv.ones((3,)), 0)),
    ],
)
def test_each_part_of_the_signature_retraces(first, second):
    f = counting(lambda *a: a[0])
    g = nv.compile(f)
    g(*first)
    g(*first)
    assert len(f.calls) == 1
    g(*second)
    g(*second)
    assert len(f.calls) == 2
    g(*first)
    assert len(f.calls) == 2  # both signatures stay cached


def test_keyword_arguments_are_part_of_the_signature():
    f = counting(lambda x, *, scale: x * scale)
    g = nv.compile(f)
    x = nv.ones((2,))
    assert g(x, scale=2.0).tolist() == [2.0, 2.0]
    assert g(x, scale=3.0).tolist() == [3.0, 3.0]
    g(x, scale=3.0)
    assert len(f.calls) == 2


def test_a_new_default_stream_retraces():
    f = counting(lambda x: x + 1)
    g = nv.compile(f)
    x = nv.ones((2,))
    g(x)
    with nv.stream(nv.new_stream(nv.cpu)):
        assert g(x).tolist() == [2.0, 2.0]
    assert len(f.calls) == 2
    assert "default stream" in g.stats()["last_miss"]
    g(x)
    assert len(f.calls) == 2


def test_captured_arrays_are_frozen_at_the_first_trace():
    w = nv.array([1.0, 2.0])
    g = nv.compile(lambda x: x * w)
    x = nv.ones((2,))
    assert g(x).tolist() == [1.0, 2.0]
    w = nv.array([10.0, 20.0])  # the closure now sees another array ...
    assert g(x).tolist() == [1.0, 2.0]  # ... but the trace keeps the first


def test_evaluating_inside_a_trace_is_a_clear_error():
    def f(x):
        if (x > 0).item():
            return x
        return -x

    with pytest.raises(TraceEvaluationError, match="nv.compile"):
        nv.compile(f)(nv.ones((1,)))
    with pytest.raises(TraceEvaluationError, match="nv.compile"):
        nv.compile(lambda x: nv.eval(x) or x)(nv.ones((1,)))


def test_the_trace_counter_counts_every_trace():
    g = nv.compile(lambda x: x - 1)
    n0 = trace_count()
    g(nv.ones((1,)))
    g(nv.ones((2,)))
    g(nv.ones((2,)))
    assert trace_count() - n0 == 2 == g.stats()["traces"]
