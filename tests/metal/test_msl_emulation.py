"""The Metal dialect's kernels, compiled as C++ and run on the CPU, against the CPU backend.

For fused graphs (gelu with erf, gelu with tanh, swiglu, a ten-op chain, comparisons with
select, casts to every width) over float32, float16, bfloat16 and int32, with contiguous,
broadcast-scalar and strided inputs, the MSL that ``generate(spec, "metal")`` emits is
compiled by g++ (C++17, ``-ffp-contract=off``, no fast math) against
``msl_emulation/include/metal_stdlib`` and run thread by thread by ``msl_emulation/runner.cpp``
with the launch plans of the Metal backend (``nuvec.backends.metal.layout``: variant,
[[buffer(i)]] slots, constants, grid). Every output is compared with the CPU backend's
(``nuvec.backends.cpu.kernels.run``, node by node as eager nuvec runs it, on the same input
views) bit for bit; the one exception is
the sign and payload of NaNs (any NaN equals any NaN): x86 gives a NaN made by an invalid
operation the payload of whichever operand the compiler put first, so g++'s scalar code and
the CPU backend's vectorised C differ there on the same machine, as a GPU may.
The backend's matmul kernel runs the same way, with real threads meeting at its barriers.

What this proves:
  * the Metal dialect's indexing: contig / scalar / strided variants, the order of the
    ``[[buffer(i)]]`` slots and constants as the backend packs them, broadcast (0) and
    negative strides, merged axes, multi-output kernels of mixed dtypes, the ``i >= n``
    guard for threads past the end (the grid is rounded up to whole threadgroups, as on
    GPUs without non-uniform threadgroups; AddressSanitizer catches any stray access);
  * that the generated code, under C++ semantics close to MSL's (32-bit int, 64-bit long,
    signed char, no double: float -> double promotion is a compile error), computes the same
    bits as the CPU: casts (x86-64's out-of-range float -> int results, round-to-nearest-even
    float16 / bfloat16, exact int -> float16/bfloat16), and the math, which is nuvec's own
    (nv_math.h, built from + - * / sqrt fma only, the same source as the C dialect's), never
    the Metal library's erf/tanh/exp;
  * that it has no undefined behaviour on these inputs (UBSan: signed overflow, shifts,
    out-of-range float -> int conversions), which a GPU compiler could otherwise exploit.

What it does not prove (needs an Apple GPU, which this project does not have):
  * that Apple's Metal compiler accepts the source (g++ is more lenient in places, and MSL
    keywords are only macros here) and honours ``math_mode(safe)`` / ``fp contract(off)``;
  * that the GPU rounds + - * / and sqrt correctly, computes fma with one rounding, keeps
    float32 subnormals (nv_f16_to_f32 relies on them), and implements fmod / rint / floor /
    ceil exactly as C: the emulation header maps them to the C library (the assumed MSL
    precise-mode behaviour), so a GPU that differs would differ from the CPU in the low
    bits and this check would not see it;
  * NaN signs and payloads (not compared, see above);
  * dispatch through the Swift shim, threadgroup sizes chosen by Metal, memory ordering on
    the GPU.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from msl_emulation import emulate  # noqa: E402

from nuvec.backends.metal import layout  # noqa: E402
from nuvec.codegen import KernelSpec, Node, generate_many  # noqa: E402
from nuvec.codegen.ops import ARITY, result_dtype  # noqa: E402

pytestmark = pytest.mark.skipif(
    emulate.compiler() is None, reason="needs g++ for the MSL emulation"
)

NP = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "int32": np.dtype(np.int32),
    "bool": np.dtype(np.bool_),
    "uint8": np.dtype(np.uint8),
    "int8": np.dtype(np.int8),
    "uint16": np.dtype(np.uint16),
    "int16": np.dtype(np.int16),
    "uint32": np.dtype(np.uint32),
    "int64": np.dtype(np.int64),
    "uint64": np.dtype(np.uint64),
}
FLOATS = ("float32", "float16", "bfloat16")


# ----------------------------------------------------------------------------- graphs


class Graph:
    """Builds a KernelSpec: ``g.x(0)``, ``g.c(0.5)``, ``g.op("add", a, b)``, ``g.spec(out...)``."""

    def __init__(self, *inputs: str) -> None:
        self.inputs = inputs
        self.consts: list[tuple[str, int]] = []
        self.nodes: list[Node] = []

    def dtype_of(self, ref) -> str:
        kind, i = ref
        return {
            "in": self.inputs,
            "const": [c[0] for c in self.consts],
            "node": [n.dtype for n in self.nodes],
        }[kind][i]

    def x(self, i: int):
        return ("in", i)

    def c(self, value, dtype: str):
        raw = np.array(value, dtype=NP[dtype]).reshape(1).view(f"u{NP[dtype].itemsize}")
        self.consts.append((dtype, int(raw[0])))
        return ("const", len(self.consts) - 1)

    def op(self, name: str, *args, to: str | None = None):
        dts = tuple(self.dtype_of(a) for a in args)
        self.nodes.append(Node(name, tuple(args), result_dtype(name, dts, to)))
        return ("node", len(self.nodes) - 1)

    def spec(self, *outs) -> KernelSpec:
        s = KernelSpec(
            tuple(self.inputs), tuple(self.consts), tuple(self.nodes), tuple(o[1] for o in outs)
        )
        s.validate()
        return s


def gelu_erf(t: str) -> KernelSpec:
    g = Graph(t)
    x = g.x(0)
    e = g.op("erf", g.op("multiply", x, g.c(0.7071067811865476, t)))
    return g.spec(g.op("multiply", x, g.op("multiply", g.op("add", e, g.c(1.0, t)), g.c(0.5, t))))


def gelu_tanh(t: str) -> KernelSpec:
    g = Graph(t)
    x = g.x(0)
    cube = g.op("multiply", g.op("square", x), x)
    inner = g.op(
        "multiply",
        g.op("add", x, g.op("multiply", cube, g.c(0.044715, t))),
        g.c(0.7978845608028654, t),
    )
    half_x = g.op("multiply", x, g.c(0.5, t))
    return g.spec(g.op("multiply", half_x, g.op("add", g.op("tanh", inner), g.c(1.0, t))))


def swiglu(t: str) -> KernelSpec:
    g = Graph(t, t)
    a, b = g.x(0), g.x(1)
    s = g.op("sigmoid", a)
    return g.spec(g.op("multiply", g.op("multiply", a, s), b), s)  # two outputs


def chain10(t: str) -> KernelSpec:
    g = Graph(t, t)
    x, y = g.x(0), g.x(1)
    if t == "int32":
        v = g.op("add", x, y)
        v = g.op("multiply", v, g.c(7, t))
        v = g.op("floor_divide", v, y)
        v = g.op("remainder", g.op("subtract", v, x), g.op("bitwise_or", y, g.c(3, t)))
        v = g.op("bitwise_xor", v, g.op("left_shift", x, y))
        v = g.op("right_shift", g.op("negative", v), g.op("abs", y))
        v = g.op("maximum", g.op("power", v, g.c(3, t)), g.op("square", x))
        return g.spec(v)
    v = g.op("exp", g.op("multiply", x, g.c(0.25, t)))
    v = g.op("log1p", v)
    v = g.op("sin", g.op("multiply", v, y))
    v = g.op("subtract", v, g.op("tanh", x))
    v = g.op("divide", v, g.op("add", g.op("abs", y), g.c(0.5, t)))
    v = g.op("sqrt", g.op("abs", v))
    v = g.op("power", v, g.op("cos", y))
    v = g.op("minimum", g.op("maximum", v, g.c(-2.0, t)), g.op("log", g.op("abs", x)))
    return g.spec(g.op("floor_divide", v, g.c(0.375, t)))


def compare_select(t: str) -> KernelSpec:
    g = Graph(t, t)
    a, b = g.x(0), g.x(1)
    gt = g.op("greater", a, b)
    if t in FLOATS:
        gt = g.op("logical_and", gt, g.op("logical_not", g.op("isnan", a)))
    big = g.op("less_equal", g.op("abs", a), g.c(2, t))
    pick = g.op("select", gt, g.op("multiply", a, b), g.op("subtract", a, b))
    out = g.op("select", big, pick, g.op("maximum", a, b))
    return g.spec(out, g.op("equal", a, b), g.op("logical_or", gt, big))


def casts(t: str) -> KernelSpec:
    g = Graph(t)
    x = g.x(0)
    targets = [
        "int32",
        "uint8",
        "int8",
        "int16",
        "uint16",
        "float16",
        "bfloat16",
        "float32",
        "bool",
        "int64",
        "uint64",
        "uint32",
    ]
    outs = [g.op("astype", x, to=d) for d in targets if d != t]
    if t != "float16":  # a double hop through two narrow formats
        outs.append(g.op("astype", g.op("astype", x, to="float16"), to="bfloat16"))
    back = g.op("astype", g.op("astype", x, to="bfloat16"), to=t)
    outs.append(g.op("add", back, x))
    return g.spec(*outs)


_UNARY_F = (
    "abs",
    "negative",
    "sign",
    "sqrt",
    "rsqrt",
    "square",
    "reciprocal",
    "exp",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "arcsinh",
    "arccosh",
    "arctanh",
    "sigmoid",
    "erf",
    "erfinv",
    "floor",
    "ceil",
    "round",
    "logical_not",
    "isnan",
    "isinf",
    "isposinf",
    "isneginf",
    "isfinite",
    "real",
    "imag",
    "conjugate",
    "copy",
)
_BINARY_F = (
    "add",
    "subtract",
    "multiply",
    "divide",
    "floor_divide",
    "remainder",
    "power",
    "maximum",
    "minimum",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "logical_and",
    "logical_or",
    "logaddexp",
    "arctan2",
)
_INT_OPS = (
    "negative",
    "sign",
    "square",
    "abs",
    "bitwise_invert",
    "logical_not",
    "add",
    "subtract",
    "multiply",
    "floor_divide",
    "remainder",
    "power",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "left_shift",
    "right_shift",
    "maximum",
    "minimum",
    "equal",
    "less",
    "greater_equal",
    "logical_or",
)


def zoo(ops):
    """Every op of ``ops`` applied to the inputs, one output each (a wide multi-output kernel:
    each op's code path through the Metal dialect, in one kernel)."""

    def make(t: str) -> KernelSpec:
        g = Graph(t, t)
        return g.spec(*[g.op(o, *[g.x(i) for i in range(ARITY[o])]) for o in ops])

    return make


GRAPHS = {
    "unary_a": zoo(_UNARY_F[:21]),
    "unary_b": zoo(_UNARY_F[21:]),
    "binary": zoo(_BINARY_F),
    "int_ops": zoo(_INT_OPS),
    "gelu_erf": gelu_erf,
    "gelu_tanh": gelu_tanh,
    "swiglu": swiglu,
    "chain10": chain10,
    "compare_select": compare_select,
    "casts": casts,
}
INT_GRAPHS = ("int_ops", "chain10", "compare_select", "casts")
CASES = [(name, t) for name in GRAPHS if name != "int_ops" for t in FLOATS] + [
    (name, "int32") for name in INT_GRAPHS
]
LAYOUTS = ("contig", "scalar", "strided", "strided_forced")


# ----------------------------------------------------------------------------- inputs

_SPECIAL_F = [
    0.0,
    -0.0,
    np.inf,
    -np.inf,
    np.nan,
    1e-40,
    -3e-39,
    1e-8,
    65504.0,
    65520.0,
    7e4,
    -1e30,
    3.4e38,
    0.5,
    -0.5,
    1.5,
    2.5,
    2.0,
    -2.0,
    1.0,
    -1.0,
]
_SPECIAL_I = [
    0,
    1,
    -1,
    2,
    -2,
    31,
    32,
    33,
    -32,
    2**31 - 1,
    -(2**31),
    65504,
    131072,
    -131073,
    2**24 + 1,
    16777217,
    3,
    -3,
    1000000007,
]


def values(t: str, n: int, rng: np.random.Generator, salt: int) -> np.ndarray:
    """n values of dtype t: random ones with the special cases spread in."""
    if t == "int32":
        v = rng.integers(-2000, 2000, size=n).astype(np.int64)
        special = np.array(_SPECIAL_I, dtype=np.int64)
        if salt == 1:  # a second operand: small shift counts / divisors, some out of range
            v = rng.integers(-4, 36, size=n)
            special = np.array([0, -1, 1, 31, 32, -32, 2**31 - 1, -(2**31)], dtype=np.int64)
        idx = rng.choice(n, size=min(n, len(special)), replace=False)
        v[idx] = special[: len(idx)]
        return v.astype(np.int32)
    v = rng.standard_normal(n) * 3.0
    special = np.array(_SPECIAL_F)
    idx = rng.choice(n, size=min(n, len(special)), replace=False)
    v[idx] = special[rng.permutation(len(special))[: len(idx)]]
    with np.errstate(over="ignore"):  # 7e4 and beyond are inf in float16, on purpose
        return v.astype(np.float32).astype(NP[t])


@dataclass
class Case:
    shape: tuple
    ins: list  # NumPy views, in the spec's dtypes
    force: str | None
    expect: str  # the variant the backend must choose


def make_case(spec: KernelSpec, layout_name: str, rng: np.random.Generator) -> Case:
    if layout_name == "contig":  # 1031 elements: two threadgroups of 1024, 1017 idle
        shape = (1031,)
        ins = [values(t, 1031, rng, i) for i, t in enumerate(spec.inputs)]
        return Case(shape, ins, None, "contig")
    if layout_name == "scalar":  # input 0 a 0-d scalar, the rest contiguous
        shape = (4, 33)
        ins = [values(spec.inputs[0], 1, rng, 0).reshape(())]
        ins += [values(t, 132, rng, i + 1).reshape(shape) for i, t in enumerate(spec.inputs[1:])]
        return Case(shape, ins, None, "scalar")
    if layout_name == "strided":  # reversed, stepped and transposed views, a broadcast row
        shape = (3, 5, 7)
        ins = []
        for i, t in enumerate(spec.inputs):
            if i % 2 == 0:
                base = values(t, 4 * 5 * 14, rng, i).reshape(4, 5, 14)
                ins.append(base[:0:-1, :, ::-2])  # (3, 5, 7), negative steps
            else:
                row = values(t, 35, rng, i).reshape(7, 1, 5)
                ins.append(np.broadcast_to(row.transpose(1, 2, 0), (3, 5, 7))[::-1])
        return Case(shape, ins, None, "strided")
    # strided kernel forced on a layout that needs no index arithmetic, incl. a 0-d scalar
    shape = (2, 1, 9)
    ins = [values(spec.inputs[0], 1, rng, 0).reshape(())]
    ins += [values(t, 18, rng, i + 1).reshape(shape) for i, t in enumerate(spec.inputs[1:])]
    return Case(shape, ins, "strided", "strided")


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def emu_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("msl_emulation")


def _name(graph: str, t: str) -> str:
    return f"{graph}_{t}"


@pytest.fixture(scope="module")
def fused_module(emu_cache):
    """One emulation build holding the MSL of every case (the library is compiled once)."""
    specs = {_name(g, t): GRAPHS[g](t) for g, t in CASES}
    source = generate_many(list(specs.items()), "metal")
    ensure_cpu_kernels(list(specs.values()) + [gelu_tanh("float32")])
    return specs, emulate.build(source, emu_cache)


def node_specs(spec: KernelSpec) -> list[KernelSpec]:
    """The single-op spec of each node of ``spec`` (what ``cpu_reference`` runs)."""
    return [
        KernelSpec.single(n.op, tuple(spec.arg_dtype(a) for a in n.args), n.dtype)
        for n in spec.nodes
    ]


def ensure_cpu_kernels(specs) -> None:
    """Single-op CPU kernels come prebuilt; if that library is stale (the generator changed
    since install), build all the reference needs in one compiler run, not one per op."""
    from nuvec.backends.cpu import compiled, kernels

    if kernels.cache_info()["prebuilt"] != "loaded":
        compiled.prepare(list(dict.fromkeys(s for spec in specs for s in node_specs(spec))))


def cpu_reference(spec: KernelSpec, ins: list, shape: tuple) -> list[np.ndarray]:
    """The spec evaluated node by node on the CPU backend: each node one single-op kernel
    (``kernels.run``; the install-time kernels, no compiler), its value rounded to its dtype
    in memory. What eager nuvec computes; the CPU's fused kernel equals it by design."""
    from nuvec.backends.cpu import kernels

    vals = []
    for node, single in zip(spec.nodes, node_specs(spec)):
        args = []
        for kind, i in node.args:
            if kind == "in":
                args.append(np.asarray(ins[i]))
            elif kind == "node":
                args.append(vals[i])
            else:
                d, bits = spec.constants[i]
                raw = bits.to_bytes(NP[d].itemsize, "little")
                args.append(np.frombuffer(raw, dtype=NP[d]).reshape(()))
        (v,) = kernels.run(single, args, shape)
        vals.append(v)
    return [vals[o] for o in spec.outputs]


def emulate_launch(plan: layout.Launch, arrays: list, nin: int) -> emulate.Job:
    args = {
        slot: arrays[v.index] if isinstance(v, layout.ArrayRef) else v
        for slot, v in plan.args.items()
    }
    writes = {
        slot for slot, v in plan.args.items() if isinstance(v, layout.ArrayRef) and v.index >= nin
    }
    return emulate.Job(plan.kernel, args, plan.grid, plan.threadgroup, plan.mode, writes)


def _sentinel(shape, dtype) -> np.ndarray:
    """An output array filled with a byte pattern no kernel result should leave untouched."""
    out = np.empty(shape, dtype)
    out.reshape(-1).view(np.uint8)[:] = 0xA5
    return out


# ----------------------------------------------------------------------------- tests


def test_emulation_header_rejects_what_metal_lacks(emu_cache):
    """The header is strict: double arithmetic and non-float math overloads do not compile
    (so the checks below cannot pass by computing in double or through int overloads)."""
    base = (
        "#include <metal_stdlib>\nusing namespace metal;\n"
        "kernel void k(device float *o [[buffer(0)]], uint i [[thread_position_in_grid]])\n"
    )
    with pytest.raises(emulate.CompileError, match="double-promotion"):
        emulate.build(base + "{ float x = o[i]; o[i] = x * 0.1; }\n", emu_cache)
    with pytest.raises(emulate.CompileError, match="for float only"):
        emulate.build(base + "{ o[i] = (float)fabs((int)i); }\n", emu_cache)
    mod = emulate.build(
        base + "{ if (i < 4) o[i] = sqrt(o[i]) + as_type<float>(0x3f800000u); }\n", emu_cache
    )
    o = np.array([4.0, 2.0, 0.0, 9.0], np.float32)
    emulate.run(mod, [emulate.Job("k", {0: o}, (4, 1, 1), writes={0})])
    np.testing.assert_array_equal(o, np.sqrt(np.array([4.0, 2.0, 0.0, 9.0], np.float32)) + 1)


@pytest.mark.parametrize("layout_name", LAYOUTS)
def test_fused_graphs_match_cpu_bit_for_bit(fused_module, layout_name):
    specs, module = fused_module
    rng = np.random.default_rng(8 + LAYOUTS.index(layout_name))
    jobs, checks = [], []
    for key, spec in specs.items():
        case = make_case(spec, layout_name, rng)
        plan = layout.elementwise(spec, key, case.ins, case.shape, force=case.force)
        assert plan.variant == case.expect, (key, plan.variant)
        outs = [_sentinel(case.shape, NP[spec.nodes[o].dtype]) for o in spec.outputs]
        jobs.append(emulate_launch(plan, case.ins + outs, len(spec.inputs)))
        checks.append((key, spec, case, outs))
    emulate.run(module, jobs)
    compared = 0
    for key, spec, case, outs in checks:
        refs = cpu_reference(spec, case.ins, case.shape)
        for k, (got, ref) in enumerate(zip(outs, refs)):
            assert got.dtype == ref.dtype and got.shape == ref.shape
            bad = mismatches(got, np.ascontiguousarray(ref))
            assert bad.size == 0, (
                f"{key} ({layout_name}) output {k}: {bad.size} of {got.size} elements differ, "
                f"first at {bad[0]}: metal {got.reshape(-1)[bad[0]]!r} vs cpu "
                f"{ref.reshape(-1)[bad[0]]!r}"
            )
            compared += got.size
    assert compared == sum(len(s.outputs) for s in specs.values()) * int(np.prod(case.shape))


def mismatches(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Flat indices where ``got`` and ``ref`` differ in their bits, except that any NaN
    equals any NaN: the sign and payload of a NaN made by an invalid operation depend on the
    order in which a compiler puts operands on x86 (and on the hardware), not on nuvec."""
    g = got.reshape(-1)
    r = ref.reshape(-1)
    diff = g.view(f"u{g.itemsize}") != r.view(f"u{r.itemsize}")
    if g.dtype.kind == "f" or g.dtype == NP["bfloat16"]:
        both_nan = np.isnan(g.astype(np.float32)) & np.isnan(r.astype(np.float32))
        diff &= ~both_nan
    return np.flatnonzero(diff)


def test_broken_kernels_are_caught(emu_cache):
    """The check can fail: a kernel without its bounds guard writes past the output
    (AddressSanitizer), and one that reads the wrong strides gives other bits."""
    spec = gelu_tanh("float32")
    src = generate_many([("k", spec)], "metal")
    assert "if (i >= n)" in src and "meta[(long)ndim * 1 + d]" in src
    bad = src.replace("if (i >= n)\n        return;", "", 1)
    bad = bad.replace("meta[(long)ndim * 1 + d]", "meta[(long)ndim * 2 + d]")
    module = emulate.build(bad, emu_cache)
    rng = np.random.default_rng(1)
    x = values("float32", 1031, rng, 0)
    out = _sentinel((1031,), np.float32)
    plan = layout.elementwise(spec, "k", [x], (1031,))
    with pytest.raises(emulate.RunError, match="AddressSanitizer"):
        emulate.run(module, [emulate_launch(plan, [x, out], 1)])
    case = make_case(spec, "strided", rng)
    out = _sentinel(case.shape, np.float32)
    plan = layout.elementwise(spec, "k", case.ins, case.shape)
    try:  # wrong strides read other elements, or outside the input (AddressSanitizer)
        emulate.run(module, [emulate_launch(plan, case.ins + [out], 1)])
    except emulate.RunError as e:
        assert "AddressSanitizer" in str(e)
    else:
        (ref,) = cpu_reference(spec, case.ins, case.shape)
        assert mismatches(out, ref).size > 0


def test_packing_errors_are_caught(fused_module):
    """A plan that binds the wrong slots or a wrong-sized constant is refused."""
    specs, module = fused_module
    spec = specs["swiglu_float32"]
    x = np.ones(8, np.float32)
    plan = layout.elementwise(spec, "swiglu_float32", [x, x], (8,))
    arrays = [x, x, np.empty(8, np.float32), np.empty(8, np.float32)]
    job = emulate_launch(plan, arrays, 2)
    job.args[plan.buffer_count] = b"\0\0\0\0"  # one slot too many
    with pytest.raises(emulate.RunError, match="declares"):
        emulate.run(module, [job])
    job = emulate_launch(plan, arrays, 2)
    job.args[4] = struct.pack("<Q", 8)  # n is a 32-bit uint
    with pytest.raises(emulate.RunError, match="needs 4 bytes"):
        emulate.run(module, [job])


# ----------------------------------------------------------------------------- matmul


def _mm_reference(a: np.ndarray, b: np.ndarray, dtype: str, c=None, alpha=1.0, beta=0.0):
    """The kernel's arithmetic in NumPy: k-ordered float32 sums of float32 products (one
    rounding each), alpha / beta as the CPU backend applies them, one final rounding."""
    f = np.int64 if dtype == "int32" else np.float32
    a2, b2 = a.astype(f), b.astype(f)
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    a2 = np.broadcast_to(a2, shape[:-2] + a.shape[-2:])
    b2 = np.broadcast_to(b2, shape[:-2] + b.shape[-2:])
    acc = np.zeros(shape, f)
    for k in range(a.shape[-1]):
        acc = acc + a2[..., :, k : k + 1] * b2[..., k : k + 1, :]
    if dtype == "int32":
        return acc.astype(np.int32)  # wraps as 32-bit arithmetic
    if alpha != 1.0:
        acc = acc * np.float32(alpha)
    if c is not None and beta != 0.0:
        cf = c.astype(np.float32)
        acc = acc + cf if beta == 1.0 else acc + np.float32(beta) * cf
    return acc.astype(NP[dtype])


@pytest.fixture(scope="module")
def mm_module(emu_cache):
    return emulate.build(layout.matmul_source(), emu_cache)


@pytest.mark.parametrize("dtype", layout.MM_DTYPES)
def test_matmul_kernel_emulated(mm_module, dtype):
    rng = np.random.default_rng(3)
    jobs, checks = [], []

    def operand(shape):
        if dtype == "int32":
            return rng.integers(-50000, 50000, size=shape).astype(np.int32)
        return (rng.standard_normal(shape) * 2).astype(np.float32).astype(NP[dtype])

    cases = [
        (operand((19, 23)), operand((23, 17)), None),  # edges of a tile
        (operand((2, 1, 33, 5)), operand((3, 5, 18)), None),  # broadcast batches
        (operand((20, 3)).T, operand((9, 40))[::-1].T[::2], None),  # transposed, stepped
        (operand((4, 0)), operand((0, 5)), None),  # K = 0: zeros
    ]
    if dtype != "int32":
        cases += [
            (operand((2, 17, 16)), operand((16, 31)), operand((31,))),  # bias row
            (operand((5, 7)), operand((7, 3)), operand((5, 1))[::-1]),
        ]  # column
    for i, (a, b, c) in enumerate(cases):
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
        alpha, beta = (1.0, 0.0) if c is None else ((0.5, 1.0) if i % 2 else (1.0, -0.75))
        plan = layout.matmul(a, b, shape, dtype, c=c, alpha=alpha, beta=beta)
        out = _sentinel(shape, NP[dtype])
        arrays = [a, b, out] + ([c] if c is not None else [])
        jobs.append(emulate_launch(plan, arrays, 2))
        jobs[-1].writes = {2}
        checks.append((a, b, c, alpha, beta, out))
    emulate.run(mm_module, jobs)
    for a, b, c, alpha, beta, out in checks:
        ref = _mm_reference(a, b, dtype, c, alpha, beta)
        assert mismatches(out, ref).size == 0, (a.shape, b.shape, dtype)
        # and against the CPU backend's BLAS, to float32 accuracy
        prod = np.matmul(a.astype(np.float64), b.astype(np.float64))
        if c is not None:
            prod = alpha * prod + beta * c.astype(np.float64)
        tol = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 1.6e-2, "int32": 0}[dtype]
        if dtype == "int32":
            assert np.array_equal(out, prod.astype(np.int64).astype(np.int32))
        else:
            scale = (
                np.abs(a.astype(np.float64)).max(initial=0)
                * np.abs(b.astype(np.float64)).max(initial=0)
                * a.shape[-1]
                + 1
            )
            np.testing.assert_allclose(out.astype(np.float64), prod, atol=tol * scale, rtol=tol)
