"""The C compiler vectorizes the generated loops (benchmarks.vectorization).

Every single-op kernel, for the AVX2 and AVX-512 builds (a compile report: no such processor
needed) and aarch64 NEON where a cross gcc is installed: each contiguous loop, each loop that
reads one broadcast input once, and each costly kernel's strided function (which copies its
operands into blocks for the contiguous loop) is vectorized, except the loops of SCALAR, an
explicit list with the reason of each, which must stay exact: a loop that goes scalar fails,
and so does one that is listed but vectorizes (update the list). A cheap kernel's strided
function is a direct scalar loop by design (the strided loads and stores are its cost). Also:
the float32 math kernels and the fused chains with nuvec's own flags on this machine, and the
float32 math kernels per ISA, baseline build included, at each ISA's widest vectors."""

from __future__ import annotations

import platform
import shutil

import pytest

from benchmarks import vectorization as V
from benchmarks import workloads as W
from nuvec.codegen.generator import single_name

pytestmark = pytest.mark.skipif(
    shutil.which("gcc") is None or shutil.which("objdump") is None,
    reason="the vectorization report needs gcc and objdump",
)


def _name(op: str, dtype: str, arity: int) -> str:
    return single_name(op, (dtype,) * arity, dtype)


def scalar_loops(isa: str) -> dict[str, str]:
    """{kernel: why} of the contiguous loops that stay scalar on ``isa``: none on x86-64 (the
    float64 functions are nuvec's own, nv_math64.h; float64 and 64-bit integer floor_divide and
    remainder take straight-line forms, nv_ops.h); on NEON the 64-bit integer products, which
    64-bit division's correction step needs too."""
    out = {}
    if isa == "neon":
        why = "NEON has no 64-bit lane multiply"
        for op, arity in (("multiply", 2), ("square", 1), ("power", 2)):
            for d in ("int64", "uint64"):
                out[_name(op, d, arity)] = why
        for op in ("floor_divide", "remainder"):
            for d in ("int64", "uint64"):
                out[_name(op, d, 2)] = why
    return out


def scalar_bcast_loops(isa: str) -> dict[str, str]:
    """{kernel:in<k>: why} of the loops with one broadcast input that stay scalar."""
    out = {}
    for kernel, why in scalar_loops(isa).items():
        if kernel.count("__") == 2 and "_" in kernel.split("__")[1]:  # two inputs
            for k in (0, 1):
                out[f"{kernel}:in{k}"] = why
    # exponent broadcast: every factor of the squaring is invariant, and GCC's cost model
    # then keeps the uint16 loop scalar
    if isa != "avx512":  # AVX-512's wider vectors pay for it
        out[f"{_name('power', 'uint16', 2)}:in1"] = "the cost model"
    return out


def _isas() -> list[str]:
    out = ["avx2", "avx512"] if platform.machine() in ("x86_64", "AMD64") else []
    return out + ["neon"]


@pytest.fixture(scope="module")
def every_kernel() -> dict[str, list[V.Loop]]:
    """The loops of every single-op kernel, per ISA that this machine can report on."""
    isas = [i for i in _isas() if i in V.available_isas()]
    loops = V.run(isas, None, chains=False)
    return {isa: [lp for lp in loops if lp.isa == isa] for isa in isas}


@pytest.mark.parametrize("isa", _isas())
def test_every_kernel_vectorizes_but_the_listed_ones(
    isa: str, every_kernel: dict[str, list[V.Loop]]
) -> None:
    if isa not in every_kernel:
        pytest.skip("no aarch64 gcc here (apt: gcc-aarch64-linux-gnu)")
    loops = every_kernel[isa]
    contig = {lp.kernel: lp for lp in loops if lp.loop == "contig"}
    assert len(contig) > 800
    scalar = {k: lp.why for k, lp in contig.items() if lp.status == "scalar"}
    want = scalar_loops(isa)
    assert sorted(set(scalar) - set(want)) == [], "contiguous loops gone scalar"
    assert sorted(set(want) - set(scalar)) == [], "listed as scalar but vectorized"
    bcast = {lp.kernel: lp for lp in loops if lp.loop == "bcast"}
    scalar_b = {k for k, lp in bcast.items() if lp.status == "scalar"}
    want_b = scalar_bcast_loops(isa)
    assert sorted(scalar_b - set(want_b)) == [], "broadcast-input loops gone scalar"
    assert sorted(set(want_b) - scalar_b) == [], "listed as scalar but vectorized"
    # strided: a costly kernel's blocks run its contiguous loop; a cheap one's direct loop
    # is scalar by design
    for lp in loops:
        if lp.loop == "strided" and lp.status == "scalar" and not lp.why.startswith("cheap"):
            assert lp.kernel in want, (lp.kernel, lp.why)
    widest = {"avx2": 32, "avx512": 64, "neon": 16}[isa]
    assert max(lp.vector_bytes for lp in loops) == widest


FLOAT32_OPS = (
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
    "floor_divide",
    "remainder",
    "multiply",
    "add",
)
BINARY = ("power", "floor_divide", "remainder", "multiply", "add")
UNARY = [op for op in FLOAT32_OPS if op not in BINARY]
COSTLY = [f"nv_{op}__float32__float32" for op in UNARY] + [
    f"nv_{op}__float32_float32__float32" for op in ("power", "floor_divide", "remainder")
]
CHEAP = [f"nv_{op}__float32_float32__float32" for op in ("multiply", "add")]
WANT = COSTLY + CHEAP


def _by_kind(loops: list[V.Loop], kind: str) -> dict[str, V.Loop]:
    return {lp.kernel: lp for lp in loops if lp.loop == kind}


def test_float32_math_and_chains_vectorize() -> None:
    srcs = [(s, None) for s in V.single_sources(FLOAT32_OPS, 1, ("float32",))]
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
    want_b = [f"{k}:in{i}" for k in CHEAP + COSTLY[len(UNARY) :] for i in (0, 1)]
    assert sorted(set(want_b) - set(bcast)) == []
    assert {k: bcast[k].why for k in want_b if bcast[k].status != "vector"} == {}
    # the copies of strided operands are listed, one per helper and element size
    copies = _by_kind(loops, "copy")
    assert {f"nv_gather:{n}" for n in (1, 2, 4, 8)} <= set(copies)
    assert {f"nv_scatter:{n}" for n in (1, 2, 4, 8)} <= set(copies)


@pytest.mark.parametrize("isa", [*_isas(), "baseline"])
def test_float32_math_vectorizes_per_isa(isa: str) -> None:
    if isa not in V.available_isas():
        pytest.skip(f"no {isa} report here (NEON: apt gcc-aarch64-linux-gnu)")
    (src,) = V.single_sources(FLOAT32_OPS, 1, ("float32",))
    loops = V.analyse(src, isa)
    widest = {"avx2": 32, "avx512": 64, "baseline": 32, "neon": 16}[isa]
    for kind, want in (("contig", WANT), ("strided", COSTLY)):
        got = _by_kind(loops, kind)
        assert {k: got[k].why for k in want if got[k].status != "vector"} == {}, kind
        assert max(got[k].vector_bytes for k in want) == widest, kind


def test_report_names_a_scalar_loop_and_its_cause() -> None:
    # float64 erf's kernels made to call libm's erf, which has no vector variant under nuvec's
    # flags (every generated loop vectorizes on x86-64: this one is made scalar for the test)
    src = V.single_sources(("erf",), 1, ("float32", "float64"))[0]
    src = src.replace("= nv_erf_f64(x0);", "= erf(x0);")
    loops = {(lp.kernel, lp.loop): lp for lp in V.analyse(src, "native")}
    f64 = loops[("nv_erf__float64__float64", "contig")]
    assert f64.status == "scalar" and "calls erf" in f64.why
    # its strided function runs the same loop, and says so
    s64 = loops[("nv_erf__float64__float64", "strided")]
    assert s64.status == "scalar" and "through the contiguous loop" in s64.why
    assert loops[("nv_erf__float32__float32", "contig")].status == "vector"
    assert loops[("nv_erf__float32__float32", "strided")].status == "vector"
    text = V.summary(list(loops.values()))
    assert "contiguous loops left scalar: 1" in text and "strided loops left scalar: 1" in text


def test_float64_math_vectorizes_per_isa() -> None:
    """nuvec's own float64 functions (nv_math64.h) at each ISA's widest vectors (sin, cos, tan,
    floor_divide and remainder: both the split body and the full one)."""
    ops = ("exp", "expm1", "log", "log1p", "log2", "log10", "sigmoid", "tanh", "sinh", "cosh")
    ops += ("sin", "cos", "tan", "arctan", "arcsin", "arccos", "arcsinh", "arccosh", "arctanh")
    ops += ("erf", "erfinv")
    binary = ("logaddexp", "power", "arctan2", "floor_divide", "remainder")
    srcs = V.single_sources(ops + binary, 1, ("float64",))
    for isa in _isas():
        if isa not in V.available_isas():
            continue
        loops = [lp for src in srcs for lp in V.analyse(src, isa)]
        got = {(lp.kernel, lp.loop): lp for lp in loops}
        want = [f"nv_{op}__float64__float64" for op in ops]
        want += [f"nv_{op}__float64_float64__float64" for op in binary]
        widest = {"avx2": 32, "avx512": 64, "neon": 16}[isa]
        for k in want:
            for kind in ("contig", "strided"):
                lp = got[(k, kind)]
                assert (lp.status, lp.vector_bytes) == ("vector", widest), (isa, k, kind, lp.why)
