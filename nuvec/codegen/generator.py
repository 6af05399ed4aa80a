"""One element-wise kernel generator; C, CUDA C and Metal are dialects of it.

The generator turns a KernelSpec into straight-line per-element code (one local per node,
each rounded to its dtype) over the shared headers (nv_coeffs.h and nv_math.h, the float32
math library; nv_coeffs64.h and nv_math64.h, the float64 one; nv_ops.h); a dialect
(nuvec/codegen/dialects/) supplies only the prelude (types, qualifiers, bit casts, where the
math library comes from), literals, and the kernel entry points with their loads, stores and
indexing.

Example::

    from nuvec.codegen import KernelSpec, generate
    src = generate(KernelSpec.single("exp", ("float32",), "float32"))          # C
    cu = generate(KernelSpec.single("exp", ("float32",), "float32"), "cuda")   # CUDA C
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files

from .ir import KernelSpec
from .optable import OPS

# compute types (the value of a node in registers) and storage types (in memory)
CTYPE = {
    "bool": "uint8_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "float16": "float",
    "bfloat16": "float",
    "float32": "float",
    "float64": "double",
    "complex64": "nv_c64",
}
STYPE = {**CTYPE, "float16": "uint16_t", "bfloat16": "uint16_t"}
SUFFIX = {
    "bool": "b",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "float16": "f32",
    "bfloat16": "f32",
    "float32": "f32",
    "float64": "f64",
    "complex64": "c64",
}
_INT_BITS = {
    "uint8": 8,
    "uint16": 16,
    "uint32": 32,
    "uint64": 64,
    "int8": 8,
    "int16": 16,
    "int32": 32,
    "int64": 64,
}

# ops whose float32 result on float16 / bfloat16 inputs is already in the narrow format
_EXACT_NARROW = frozenset(o.name for o in OPS.values() if o.exact_narrow)
_ROUND = {"float16": "nv_round_f16", "bfloat16": "nv_round_bf16"}
# functions of an argument known to be -|y| (<= -0 or NaN): nv_math.h, the same bits as the op's
_NEGABS = {"exp": "nv_exp_negabs_f32"}


@lru_cache(maxsize=None)
def header_text(name: str) -> str:
    """The text of one of the shared headers (LIBRARY_HEADERS)."""
    return files(__package__).joinpath(name).read_text()


# the shared headers, in the order they are included: the float32 math library, the float64 one
# (empty where the dialect defines NV_NO_F64), the element operations of every dtype
LIBRARY_HEADERS = ("nv_coeffs.h", "nv_math.h", "nv_coeffs64.h", "nv_math64.h", "nv_ops.h")


def library_source() -> str:
    """The shared math and element-op library (dialect-neutral; needs a dialect prelude)."""
    return "\n".join(header_text(h) for h in LIBRARY_HEADERS)


# ---- literals -------------------------------------------------------------------------------


def _narrow_to_f32_bits(dtype: str, bits: int) -> int:
    """float16 / bfloat16 raw bits -> the float32 bits of the same value."""
    if dtype == "bfloat16":
        return bits << 16
    import numpy as np

    return int(np.array([bits], np.uint16).view(np.float16).astype(np.float32).view(np.uint32)[0])


def literal(dtype: str, bits: int, dialect) -> str:
    """A constant of ``dtype`` with raw ``bits`` as an exact expression of its compute type."""
    if dtype in ("float16", "bfloat16"):
        return dialect.f32_literal(_narrow_to_f32_bits(dtype, bits))
    if dtype == "float32":
        return dialect.f32_literal(bits)
    if dtype == "float64":
        return dialect.f64_literal(bits)
    if dtype == "complex64":
        re, im = bits & 0xFFFFFFFF, bits >> 32
        return f"nv_c64_make({dialect.f32_literal(re)}, {dialect.f32_literal(im)})"
    if dtype == "bool":
        return "(uint8_t)1" if bits else "(uint8_t)0"
    suffix = "ull" if _INT_BITS[dtype] == 64 else "u"
    return f"(({CTYPE[dtype]}){bits:#x}{suffix})"


# ---- casts ------------------------------------------------------------------------------------


def cast_expr(src: str, dst: str, x: str) -> str:
    """Expression converting value ``x`` of compute type ``src`` to ``dst`` (see nv_ops.h)."""
    if src == dst:
        return x
    if dst == "bool":
        if src == "complex64":
            return f"(uint8_t)(({x}).re != 0.0f || ({x}).im != 0.0f)"
        return f"(uint8_t)({x} != 0)"
    if src == "complex64":
        return cast_expr("float32", dst, f"({x}).re")
    if dst == "complex64":
        return f"nv_c64_make({cast_expr(src, 'float32', x)}, 0.0f)"
    narrow = _ROUND.get(dst)
    if src == "bool":
        if CTYPE[dst] in ("float", "double"):  # through int32, a conversion vector ISAs have
            return f"(({CTYPE[dst]})(int32_t){x})"
        return f"(({CTYPE[dst]}){x})"
    if src in _INT_BITS:
        if dst in _INT_BITS:
            return f"(({CTYPE[dst]}){x})"
        bits, signed = _INT_BITS[src], src.startswith("int")
        # 64-bit integers convert through nv_ops.h's functions (bit operations where the
        # vector ISA has no such conversion)
        if dst == "float64":
            conv = f"nv_{SUFFIX[src]}_to_f64({x})" if bits == 64 else f"(double){x}"
            return f"nv_from_int_f64({conv})"
        conv = f"nv_{SUFFIX[src]}_to_f32({x})" if bits == 64 else f"(float){x}"
        f32 = f"nv_from_int_f32({conv})"  # exact below 2^24 (and rounded once above)
        if dst == "float32":
            return f32
        if bits <= 16:
            return f"{narrow}({f32})"
        if dst == "float16":  # beyond 2^17 everything is inf: clamp, then exact in float32
            t, u = CTYPE[src], "" if signed else "u"
            low = f"{x} < ({t})-131072 ? ({t})-131072 : {x}" if signed else x
            return (
                f"{narrow}(nv_from_int_f32((float)(int32_t)"
                f"({x} > ({t})131072{u} ? ({t})131072{u} : ({low}))))"
            )
        return f"{narrow}(nv_{SUFFIX[src]}_to_f32_odd({x}))"
    if src == "float64":
        if dst in _INT_BITS:
            return f"nv_f64_to_{SUFFIX[dst]}({x})"
        if dst == "float32":
            return f"((float){x})"
        return f"{narrow}(nv_f64_to_f32_odd({x}))"
    # src is float32, float16 or bfloat16 (a float32 register)
    if src == "float16" and dst == "uint32":
        return f"nv_f16_to_u32({x})"
    if dst in _INT_BITS:
        return f"nv_f32_to_{SUFFIX[dst]}({x})"
    if dst == "float64":
        return f"((double){x})"
    if dst == "float32":
        return x
    return f"{narrow}({x})"


# ---- the per-element body ---------------------------------------------------------------------


@dataclass
class Body:
    """Per-element code of a spec: constants (hoisted), statements, output values."""

    consts: list[str]  # declarations, before the loop
    lines: list[str]  # statements, in the loop, after the inputs are loaded
    outputs: list[str]  # variable holding each output (in spec.outputs order)
    used_inputs: list[int]  # inputs the body reads
    # where some node has a split form (ElementwiseOp.split): ``lines`` with each such node's
    # cheaper function, and the guards of their arguments (uint32_t expressions, nonzero where
    # the cheaper function does not hold); empty otherwise
    split_lines: list[str] = field(default_factory=list)
    guards: list[str] = field(default_factory=list)


def node_expr(
    op: str,
    arg_dtypes: tuple[str, ...],
    dtype: str,
    args: list[str],
    fast: dict | None = None,
    split: bool = False,
    negabs: bool = False,
) -> str:
    """C expression computing one node from argument expressions. ``fast`` (a fast-math
    kernel): the dialect's approximate function per op, and no rounding of float16 /
    bfloat16 intermediates (they are rounded where they are stored). ``split``: the op's
    cheaper function (ElementwiseOp.split) in place of ``nv_<op>_f32``, where it has one.
    ``negabs``: the argument is negative(abs(y)), which some functions take with fewer steps
    and the same bits (_NEGABS)."""
    if op == "astype":
        return cast_expr(arg_dtypes[0], dtype, args[0])
    if op == "select":
        return f"({args[0]} ? {args[1]} : {args[2]})"
    src = arg_dtypes[0]
    fn = f"nv_{op}_{SUFFIX[src]}"
    if negabs and op in _NEGABS and SUFFIX[src] == "f32" and src != "complex64":
        fn = _NEGABS[op]
    if split and _split_of(op, src, fast) is not None:
        fn = _split_of(op, src, fast)[0]
    if fast is not None:
        # a dialect's function for nodes of this dtype first (float16 / bfloat16 ones may be
        # coarser where the rounding of the stored result dominates their error), then its
        # float32 one
        ffn = None
        if SUFFIX[src] == "f32" and src != "complex64":
            ffn = fast.get((op, dtype)) or fast.get(op)
        return f"{ffn or fn}({', '.join(args)})"
    expr = f"{fn}({', '.join(args)})"
    if dtype in _ROUND and op not in _EXACT_NARROW:
        expr = f"{_ROUND[dtype]}({expr})"
    return expr


def _split_of(op: str, src: str, fast: dict | None) -> tuple[str, str] | None:
    """The (function, guard) a node of ``op`` on ``src`` runs as in split blocks, if any: a
    float32 computation (float16 and bfloat16 too) of nuvec's own function, a float64 one
    (ElementwiseOp.split_f64), or an integer one of 32 or 64 bits (ElementwiseOp.split_int)."""
    rec = OPS.get(op)
    if rec is None:
        return None
    if src in _INT_BITS:
        if rec.split_int is None or _INT_BITS[src] not in rec.split_int_bits:
            return None
        fn, guard = rec.split_int
        return fn.format(s=SUFFIX[src]), guard.format(s=SUFFIX[src])
    if SUFFIX[src] == "f64":
        return rec.split_f64
    if rec.split is None or SUFFIX[src] != "f32" or src == "complex64":
        return None
    if fast is not None and op in fast:
        return None
    return rec.split


def _is_negabs(spec: KernelSpec, arg: tuple[str, int]) -> bool:
    """Whether ``arg`` is the value of negative(abs(y)) (both exact in every float dtype)."""
    kind, i = arg
    if kind != "node" or spec.nodes[i].op != "negative":
        return False
    kind, k = spec.nodes[i].args[0]
    return kind == "node" and spec.nodes[k].op == "abs"


def body(spec: KernelSpec, dialect) -> Body:
    """Straight-line code for one element of ``spec``."""
    consts = [
        f"const {CTYPE[d]} k{i} = {literal(d, b, dialect)};"
        for i, (d, b) in enumerate(spec.constants)
    ]
    used: set[int] = set()
    lines, split_lines, guards = [], [], []
    fast = getattr(dialect, "FAST_FUNCTIONS", None) if spec.fast else None
    for j, node in enumerate(spec.nodes):
        names = []
        for kind, i in node.args:
            if kind == "in":
                used.add(i)
                names.append(f"x{i}")
            elif kind == "node":
                names.append(f"v{i}")
            else:
                names.append(f"k{i}")
        arg_dtypes = tuple(spec.arg_dtype(a) for a in node.args)
        decl = f"const {CTYPE[node.dtype]} v{j} = "
        negabs = _is_negabs(spec, node.args[0]) if node.op in _NEGABS else False
        lines.append(
            decl + f"{node_expr(node.op, arg_dtypes, node.dtype, names, fast, negabs=negabs)};"
        )
        split_lines.append(
            decl + f"{node_expr(node.op, arg_dtypes, node.dtype, names, fast, split=True)};"
        )
        sp = _split_of(node.op, arg_dtypes[0], fast)
        if sp is not None:
            guards.append(f"{sp[1]}({', '.join(names)})")
    if not guards:
        split_lines = []
    return Body(consts, lines, [f"v{o}" for o in spec.outputs], sorted(used), split_lines, guards)


def default_name(spec: KernelSpec) -> str:
    """A stable kernel name derived from the spec's content."""
    key = (spec.inputs, spec.constants, spec.nodes, spec.outputs) + (("fast",) if spec.fast else ())
    h = hashlib.sha256(repr(key).encode())
    return "nv_k_" + h.hexdigest()[:20]


def single_name(op: str, in_dtypes: tuple[str, ...], out_dtype: str) -> str:
    """The name of the prebuilt kernel of one op (what the install-time library exports)."""
    return f"nv_{op}__{'_'.join(in_dtypes)}__{out_dtype}"


def kernel_name(spec: KernelSpec) -> str:
    """The name ``generate`` gives a spec by default: stable, readable for single ops."""
    if spec.is_single():
        return single_name(spec.nodes[0].op, spec.inputs, spec.nodes[0].dtype)
    return default_name(spec)
