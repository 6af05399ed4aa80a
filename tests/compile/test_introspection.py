"""Nv.export_to_dot; f.inspect (simplified steps, fused groups, each kernel's
generated source); per-function statistics with the reason of the last miss; an opt-in
warning when one function traces more than N times; errors naming the argument path of a bad
input."""

import io
import re
import warnings

import numpy as np
import pytest

import nuvec as nv


def test_export_to_dot_writes_the_graph(tmp_path):
    x = nv.array([1.0, 2.0])
    y = nv.exp(x) * 2.0
    z = nv.sum(y)
    buf = io.StringIO()
    nv.export_to_dot(buf, y, total=z)
    text = buf.getvalue()
    assert text.startswith("digraph") and text.rstrip().endswith("}")
    for word in ("exp", "multiply", "sum", "total", "float32 (2,)"):
        assert word in text, word
    # every edge joins declared nodes
    declared = set(re.findall(r"^\s+(\w+) \[", text, re.M))
    for a, b in re.findall(r"^\s+(\w+) -> (\w+);", text, re.M):
        assert a in declared and b in declared
    path = tmp_path / "g.dot"
    nv.export_to_dot(str(path), y)
    assert path.read_text().startswith("digraph")
    with pytest.raises(ValueError, match="export_to_dot: no arrays"):
        nv.export_to_dot(buf)


@pytest.mark.usefixtures("cpu_device")  # a compiled call left lazy (its inputs can donate)
def test_export_to_dot_names_a_fused_node_as_mlx_does():
    def fun(x, y, z):
        yy = nv.broadcast_to(y, z.shape)
        return x + yy * z, yy.sum()

    def two(x, y):
        return nv.arctan(nv.logaddexp(x, y) * 2.0)

    def normal(*shape):
        x = nv.random.normal(shape)
        nv.eval(x)  # owns its memory (nv.ones is a broadcast view)
        return x

    for f, args, name in (
        (fun, (normal(3, 3), nv.array(0.5), normal(3, 3)), "CompiledBroadcastMultiplyAdd"),
        (two, (normal(4), normal(4)), "CompiledLogAddExpMultiplyArcTan"),
    ):
        g = nv.compile(f)
        nv.eval(g(*args))
        entry = next(iter(g.cache.values()))
        if entry.ready is not None:
            entry.ready.wait()  # the fused tape (the tracing call runs the unfused one)
        out = g(*args)
        buf = io.StringIO()
        nv.export_to_dot(buf, out)
        assert f'label="{name}"' in buf.getvalue(), buf.getvalue()


def test_inspect_shows_steps_groups_and_kernel_sources():
    f = nv.compile(lambda x, y: (nv.exp(x) * y + 1.0, nv.sum(x)))
    x, y = nv.ones((3,)), nv.ones((3,))
    f(x, y)
    rep = f.inspect(x, y)
    assert f.stats()["traces"] == 1  # the cached trace is described
    assert any("sum" in s for s in rep.steps)
    assert [g.ops for g in rep.groups] == [("exp", "multiply", "add")]
    src = rep.groups[0].source
    assert "void nv_k_" in src and "nv_exp_f32" in src
    text = str(rep)  # kernel names, no sources
    assert "fused group 0" in text and "argument 0" in text
    assert rep.groups[0].name in text and rep.groups[0].name in src and "nv_exp_f32" not in text
    full = rep.format(source=True)
    assert full.startswith(text) and f"kernel 0 ({rep.groups[0].name}) source" in full
    assert src in full
    rep2 = f.inspect(nv.ones((4,)), nv.ones((4,)))  # a new signature is traced for it
    assert f.stats()["traces"] == 2 and "(4,)" in rep2.signature


def test_statistics_and_the_reason_of_the_last_miss():
    f = nv.compile(lambda x, n, *, opts: x * n + opts["w"])
    w = nv.ones((4,))
    f(nv.ones((3, 4)), 2, opts={"w": w})
    assert f.stats()["last_miss"] == "first call"
    f(nv.ones((3, 4)), 2, opts={"w": w})
    f(nv.ones((5, 4)), 2, opts={"w": w})
    assert f.stats()["last_miss"] == "argument 0: shape (3, 4) -> (5, 4)"
    f(nv.ones((5, 4)), 3, opts={"w": w})
    assert f.stats()["last_miss"] == "argument 1: constant 2 -> 3"
    f(nv.ones((5, 4)), 3, opts={"w": w.astype(nv.float16)})
    assert f.stats()["last_miss"] == "keyword 'opts'['w']: dtype float32 -> float16"
    st = f.stats()
    assert (st["hits"], st["misses"], st["traces"], st["entries"]) == (1, 4, 4, 4)
    assert st["trace_s"] >= 0 and "kernel_compile_s" in st


def test_an_opt_in_warning_when_a_function_keeps_retracing():
    def step(x):
        return x + 1

    quiet = nv.compile(step)
    loud = nv.compile(step, warn_traces=2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in range(1, 6):
            quiet(nv.ones((n,)))
            loud(nv.ones((n,)))
    msgs = [str(m.message) for m in w if "traced" in str(m.message)]
    assert len(msgs) == 1
    assert "step" in msgs[0] and "3 times" in msgs[0] and "shape (2,) -> (3,)" in msgs[0]


def test_errors_name_the_path_of_a_bad_argument():
    f = nv.compile(lambda x, cfg: x * cfg["scale"])
    with pytest.raises(TypeError, match=r"argument 1\['bad'\] is a ndarray"):
        f(nv.ones((2,)), {"scale": 2.0, "bad": np.ones(2)})
    with pytest.raises(TypeError, match=r"keyword 'opts'\[0\] is a set"):
        nv.compile(lambda x, opts: x)(nv.ones((2,)), opts=[{1, 2}])


def test_inspect_a_stateful_step_without_changing_the_state():
    state = {"w": nv.array([1.0, 2.0])}

    def step(x):
        state["w"] = state["w"] * 0.5 + nv.exp(x)
        return state["w"].sum()

    f = nv.compile(step, inputs=state, outputs=state)
    w0 = state["w"]
    rep = f.inspect(nv.array([0.0, 1.0]))
    assert state["w"] is w0  # inspecting runs nothing
    assert [g.ops for g in rep.groups] == [("multiply", "exp", "add")]
    assert "state" in rep.signature and f.stats()["traces"] == 1
    f(nv.array([0.0, 1.0]))
    assert f.stats()["traces"] == 1  # the call uses the inspected trace
