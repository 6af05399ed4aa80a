"""The C compiler vectorizes the loops of the float32 math kernels and of the fused chains
(benchmarks.vectorization, a fast subset), for contiguous operands and for strided and broadcast
ones, which the strided function of a costly kernel copies into blocks for the same contiguous
loop (a cheap kernel's strided function is a direct scalar loop), and the binary kernels' loops
for one broadcast input: nuvec's own flags on this
machine, the AVX2 and AVX-512 builds (a compile report: no such processor needed) and aarch64
NEON where a cross gcc is installed."""

from __future__ import annotations

import platform
import shutil

import pytest

from benchmarks import vectorization as V
from benchmarks import workloads as W

pytestmark = pytest.mark.skipif(
    shutil.which("gcc") is None or shutil.which("objdump") is None,
    reason="the vectorization report needs gcc and objdump",
)

OPS = (
    "tanh",
    "exp",
    "erf",
    "sigmoid",
    "expm1",
    "sinh",
    "cosh",
    "sin",
    "cos",
    "tan",
    "log",
    "log2",
    "log10",
    "log1p",
    "power",
    "multiply",
    "add",
)
UNARY = [op for op in OPS if op not in ("power", "multiply", "add")]
COSTLY = [f"nv_{op}__float32__float32" for op in UNARY] + ["nv_power__float32_float32__float32"]
CHEAP = [f"nv_{op}__float32_float32__float32" for op in ("multiply", "add")]
WANT = COSTLY + CHEAP


def _by_kind(loops: list[V.Loop], kind: str) -> dict[str, V.Loop]:
    return {lp.kernel: lp for lp in loops if lp.loop == kind}


def test_float32_math_and_chains_vectorize() -> None:
    srcs = [(s, None) for s in V.single_sources(OPS, 1, ("float32",))]
    srcs += [(s, label) for label, s in V.chain_sources(("float32", "bfloat16")).items()]
    loops = [lp for src, label in srcs for lp in V.analyse(src, "native", label)]
    chains = [f"chain:{c}:{d}" for c in W.CHAINS for d in ("float32", "bfloat16")]
    for kind, want in (("contig", WANT + chains), ("strided", COSTLY + chains)):
        got = _by_kind(loops, kind)
        assert sorted(set(want) - set(got)) == [], kind
        scalar = {k: got[k].why for k in want if got[k].status != "vector"}
        assert scalar == {}, kind
        assert all(got[k].vector_bytes >= 16 for k in want), kind
    strided = _by_kind(loops, "strided")
    assert all(strided[k].status == "scalar" and "cheap" in strided[k].why for k in CHEAP)
    # the binary kernels' loops that read one broadcast input once vectorize too
    bcast = _by_kind(loops, "bcast")
    want_b = [f"{k}:in{i}" for k in CHEAP + COSTLY[-1:] for i in (0, 1)]
    assert sorted(set(want_b) - set(bcast)) == []
    assert {k: bcast[k].why for k in want_b if bcast[k].status != "vector"} == {}
    # the copies of strided operands are listed, one per helper and element size
    copies = _by_kind(loops, "copy")
    assert {f"nv_gather:{n}" for n in (1, 2, 4, 8)} <= set(copies)
    assert {f"nv_scatter:{n}" for n in (1, 2, 4, 8)} <= set(copies)


def _isas() -> list[str]:
    out = []
    if platform.machine() in ("x86_64", "AMD64"):
        out += ["avx2", "avx512", "baseline"]
    out += ["neon"]
    return out


@pytest.mark.parametrize("isa", _isas())
def test_float32_math_vectorizes_per_isa(isa: str) -> None:
    if isa == "neon" and "neon" not in V.available_isas():
        pytest.skip("no aarch64 gcc here (apt: gcc-aarch64-linux-gnu)")
    (src,) = V.single_sources(OPS, 1, ("float32",))
    loops = V.analyse(src, isa)
    widest = {"avx2": 32, "avx512": 64, "baseline": 32, "neon": 16}[isa]
    for kind, want in (("contig", WANT), ("strided", COSTLY)):
        got = _by_kind(loops, kind)
        assert {k: got[k].why for k in want if got[k].status != "vector"} == {}, kind
        assert max(got[k].vector_bytes for k in want) == widest, kind


def test_report_names_a_scalar_loop_and_its_cause() -> None:
    # float64 exp calls libm's exp, which has no vector variant under nuvec's flags
    src = V.single_sources(("exp",), 1, ("float32", "float64"))[0]
    loops = {(lp.kernel, lp.loop): lp for lp in V.analyse(src, "native")}
    f64 = loops[("nv_exp__float64__float64", "contig")]
    assert f64.status == "scalar" and "calls exp" in f64.why
    # its strided function runs the same loop, and says so
    s64 = loops[("nv_exp__float64__float64", "strided")]
    assert s64.status == "scalar" and "through the contiguous loop" in s64.why
    assert loops[("nv_exp__float32__float32", "contig")].status == "vector"
    assert loops[("nv_exp__float32__float32", "strided")].status == "vector"
    text = V.summary(list(loops.values()))
    assert "contiguous loops left scalar: 1" in text and "strided loops left scalar: 1" in text
