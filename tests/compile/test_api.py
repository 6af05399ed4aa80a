"""The API: nv.compile as a function, a decorator and through functools.partial; wrapping;
the cache capacity option; disable_compile / enable_compile / NUVEC_DISABLE_COMPILE."""

import functools
import inspect
import os
import subprocess
import sys

import pytest

import nuvec as nv


def test_call_decorator_and_partial_forms_give_the_same_results():
    def f(x, y):
        return x * y + 1.0

    x, y = nv.array([1.0, 2.0]), nv.array([3.0, 4.0])
    direct = nv.compile(f)

    @nv.compile
    def deco(x, y):
        return x * y + 1.0

    part = functools.partial(nv.compile, shapeless=True)(f)
    opts = nv.compile(shapeless=True)(f)  # options without the function: a decorator
    for g in (direct, deco, part, opts):
        assert g(x, y).tolist() == [4.0, 9.0]
    assert part.shapeless and opts.shapeless and not direct.shapeless


def test_keeps_name_docstring_and_signature():
    def scaled_add(x, y, *, scale=2.0):
        """Adds y, scaled."""
        return x + scale * y

    f = nv.compile(scaled_add)
    assert f.__name__ == "scaled_add"
    assert f.__doc__ == "Adds y, scaled."
    assert f.__wrapped__ is scaled_add
    assert str(inspect.signature(f)) == "(x, y, *, scale=2.0)"
    assert f(nv.array(1.0), nv.array(2.0), scale=3.0).item() == 7.0


def test_rejects_a_non_function_and_bad_options():
    with pytest.raises(TypeError, match="compile: expected a function"):
        nv.compile(3)
    with pytest.raises(ValueError, match="cache_capacity"):
        nv.compile(lambda x: x, cache_capacity=-1)


def test_cache_keeps_the_most_recently_used_signatures():
    f = nv.compile(lambda x: x + 1, cache_capacity=2)
    a, b, c = nv.ones((1,)), nv.ones((2,)), nv.ones((3,))
    f(a)
    f(b)
    f(a)  # a is now the most recently used
    f(c)  # evicts b
    assert f.stats()["traces"] == 3 and f.stats()["entries"] == 2
    f(a)
    assert f.stats()["traces"] == 3
    f(b)
    assert f.stats()["traces"] == 4
    assert "evicted" in f.stats()["last_miss"]


def test_default_capacity_is_64_and_zero_never_caches():
    f = nv.compile(lambda x: x * 2)
    assert f.stats()["capacity"] == 64
    for n in range(1, 70):
        f(nv.ones((n,)))
    assert f.stats()["entries"] == 64
    g = nv.compile(lambda x: x * 2, cache_capacity=0)
    x = nv.ones((2,))
    for _ in range(3):
        assert g(x).tolist() == [2.0, 2.0]
    assert g.stats()["traces"] == 3 and g.stats()["entries"] == 0


def test_disable_and_enable_compile():
    calls = []

    def f(x):
        calls.append(1)
        return x + 1

    g = nv.compile(f)
    x = nv.ones((2,))
    g(x)
    g(x)
    assert len(calls) == 1
    nv.disable_compile()
    try:
        assert g(x).tolist() == [2.0, 2.0]
        g(x)
        assert len(calls) == 3  # runs the function itself every call
    finally:
        nv.enable_compile()
    g(x)
    assert len(calls) == 3  # cached again


def test_environment_variable_disables_compile():
    code = (
        "import nuvec as nv\n"
        "n = []\n"
        "f = nv.compile(lambda x: (n.append(1), x + 1)[1])\n"
        "x = nv.ones((2,)); f(x); f(x)\n"
        "print(len(n), nv.compile(lambda x: x).stats()['traces'])\n"
    )
    env = dict(os.environ, NUVEC_DISABLE_COMPILE="1")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["2", "0"]
