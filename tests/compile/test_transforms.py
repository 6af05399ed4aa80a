"""Called on arrays a transform is tracing (grad, vmap, another compile), a compiled
function runs the function itself; grad of compiled, compiled grad and vmap of compiled work;
a trace that captured an outer tracer is used once and not cached; a fused node met by a
transform is re-expanded into its operations."""

import numpy as np

import nuvec as nv
from nuvec.core.array import Array

from conftest import assert_same, entry_of, fused_specs

rng = np.random.default_rng(5)
X = nv.array(rng.standard_normal(5).astype(np.float32))
Y = nv.array(rng.standard_normal(5).astype(np.float32))


def f(x, y):
    return nv.sum(nv.tanh(x * 1.5 + y) * nv.exp(-x * x) + y * y)


def test_grad_of_a_compiled_function_runs_the_function():
    cf = nv.compile(f)
    for got, want in zip(nv.grad(cf, argnums=(0, 1))(X, Y), nv.grad(f, argnums=(0, 1))(X, Y)):
        assert_same(np.asarray(got), np.asarray(want))
    assert cf.stats()["traces"] == 0


def test_compiled_grad_is_traced_once_and_exact():
    g = nv.compile(nv.grad(f, argnums=(0, 1)))
    want = nv.grad(f, argnums=(0, 1))(X, Y)
    for _ in range(2):
        for a, b in zip(g(X, Y), want):
            assert_same(np.asarray(a), np.asarray(b))
    assert g.stats()["traces"] == 1 and g.stats()["hits"] == 1
    assert fused_specs(g)  # the backward chain was fused too


def test_vmap_of_a_compiled_function():
    h = lambda x, y: nv.tanh(x * 1.5 + y) * nv.exp(-x * x)
    xs = nv.array(rng.standard_normal((4, 5)).astype(np.float32))
    got = nv.vmap(nv.compile(h), in_axes=(0, None))(xs, Y)
    assert_same(np.asarray(got), np.asarray(nv.vmap(h, in_axes=(0, None))(xs, Y)))
    comp_vmap = nv.compile(nv.vmap(h, in_axes=(0, None)))
    assert_same(np.asarray(comp_vmap(xs, Y)), np.asarray(got))


def test_a_compiled_function_inside_a_trace_is_inlined():
    inner = nv.compile(lambda x: nv.exp(x) * 2.0)
    outer = nv.compile(lambda x: inner(x) + 1.0)
    assert_same(np.asarray(outer(X)), np.asarray(nv.exp(X) * 2.0 + 1.0))
    assert inner.stats()["traces"] == 0 and outer.stats()["traces"] == 1
    assert [len(s.nodes) for s in fused_specs(outer)] == [3]  # one kernel across both


def test_a_trace_capturing_an_outer_tracer_is_used_once_and_not_cached():
    made = []

    def loss(w):
        h = nv.compile(lambda x: nv.sin(x) * w)  # w is the tracer grad differentiates
        made.append(h)
        return nv.sum(h(X) + h(Y))

    grad = nv.grad(loss)(nv.array(0.5))
    assert abs(grad.item() - nv.sum(nv.sin(X) + nv.sin(Y)).item()) < 1e-5
    st = made[0].stats()
    assert st["traces"] == 2 and st["uncached_traces"] == 2 and st["entries"] == 0
    w0 = nv.array(2.0)  # a plain captured array: cached
    g = nv.compile(lambda x: nv.sin(x) * w0)
    g(X)
    g(Y)
    assert g.stats()["traces"] == 1 and g.stats()["entries"] == 1


def test_a_fused_node_met_by_a_transform_is_re_expanded():
    def chain(x, y):
        return nv.sigmoid(x * y + 0.5) * x

    cf = nv.compile(chain)
    cf(X, Y)
    (st,) = [s for s in entry_of(cf).tape.steps if s.prim.name == "compiled"]
    prim = st.prim

    def fused(x, y):
        return Array.make(prim, [x, y])

    for a, b in zip(
        nv.grad(lambda x, y: nv.sum(fused(x, y)), argnums=(0, 1))(X, Y),
        nv.grad(lambda x, y: nv.sum(chain(x, y)), argnums=(0, 1))(X, Y),
    ):
        assert_same(np.asarray(a), np.asarray(b))
    _, (t1,) = nv.jvp(fused, [X, Y], [nv.ones_like(X), nv.zeros_like(Y)])
    _, (t2,) = nv.jvp(chain, [X, Y], [nv.ones_like(X), nv.zeros_like(Y)])
    assert_same(np.asarray(t1), np.asarray(t2))
    xs = nv.array(rng.standard_normal((3, 5)).astype(np.float32))
    assert_same(
        np.asarray(nv.vmap(fused, in_axes=(0, None))(xs, Y)),
        np.asarray(nv.vmap(chain, in_axes=(0, None))(xs, Y)),
    )
