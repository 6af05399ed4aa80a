"""The C compiler vectorizes the contiguous loop of the float32 math kernels and of the fused
chains (benchmarks.vectorization, a fast subset: nuvec's own flags on this machine)."""

from __future__ import annotations

import shutil

import pytest

from benchmarks import vectorization as V
from benchmarks import workloads as W

pytestmark = pytest.mark.skipif(
    shutil.which("gcc") is None or shutil.which("objdump") is None,
    reason="the vectorization report needs gcc and objdump",
)

OPS = ("tanh", "exp", "erf", "sigmoid", "multiply", "add")


def test_float32_math_and_chains_vectorize() -> None:
    srcs = [(s, None) for s in V.single_sources(OPS, 1, ("float32",))]
    srcs += [(s, label) for label, s in V.chain_sources(("float32", "bfloat16")).items()]
    loops = [lp for src, label in srcs for lp in V.analyse(src, "native", label)]
    contig = {lp.kernel: lp for lp in loops if lp.loop == "contig"}
    want = [f"nv_{op}__float32__float32" for op in OPS[:4]]
    want += [f"nv_{op}__float32_float32__float32" for op in OPS[4:]]
    want += [f"chain:{c}:{d}" for c in W.CHAINS for d in ("float32", "bfloat16")]
    assert sorted(set(want) - set(contig)) == []
    scalar = {k: contig[k].why for k in want if contig[k].status != "vector"}
    assert scalar == {}
    assert all(contig[k].vector_bytes >= 16 for k in want)
    # the strided loop is deliberately left scalar, and the report says so
    assert all(lp.status == "scalar" for lp in loops if lp.loop == "strided")


def test_report_names_a_scalar_loop_and_its_cause() -> None:
    # float64 exp calls libm's exp, which has no vector variant under nuvec's flags
    src = V.single_sources(("exp",), 1, ("float32", "float64"))[0]
    loops = {(lp.kernel, lp.loop): lp for lp in V.analyse(src, "native")}
    f64 = loops[("nv_exp__float64__float64", "contig")]
    assert f64.status == "scalar" and "calls exp" in f64.why
    assert loops[("nv_exp__float32__float32", "contig")].status == "vector"
    assert "contiguous loops left scalar: 1" in V.summary(list(loops.values()))
