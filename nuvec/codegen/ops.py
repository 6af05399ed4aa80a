"""Element-wise operations the engine knows: arity, result dtypes, and which dtypes each covers.

Example::

    >>> from nuvec.codegen.ops import supports, result_dtype
    >>> supports("exp", "float16"), supports("exp", "int32"), supports("astype", "bool")
    (True, False, True)
    >>> result_dtype("less", ("int8", "int8"))
    'bool'
"""

from __future__ import annotations

UNARY = (
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
    "bitwise_invert",
    "isnan",
    "isinf",
    "isposinf",
    "isneginf",
    "isfinite",
    "real",
    "imag",
    "conjugate",
    "copy",
    "astype",
)
BINARY = (
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
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "left_shift",
    "right_shift",
)
TERNARY = ("select",)

ARITY: dict[str, int] = {
    **{o: 1 for o in UNARY},
    **{o: 2 for o in BINARY},
    **{o: 3 for o in TERNARY},
}

BOOL_RESULT = frozenset(
    (
        "equal",
        "not_equal",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
        "logical_and",
        "logical_or",
        "logical_not",
        "isnan",
        "isinf",
        "isposinf",
        "isneginf",
        "isfinite",
    )
)

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64")

_CMP = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
_PREDICATES = ("isnan", "isinf", "isposinf", "isneginf", "isfinite")
_COMMON = (
    (
        "copy",
        "select",
        "astype",
        "real",
        "imag",
        "conjugate",
        "logical_not",
        "logical_and",
        "logical_or",
        "maximum",
        "minimum",
        "abs",
    )
    + _CMP
    + _PREDICATES
)

_BOOL_OPS = frozenset(
    _COMMON + ("add", "multiply", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert")
)
_INT_OPS = frozenset(
    _COMMON
    + (
        "negative",
        "sign",
        "square",
        "floor",
        "ceil",
        "round",
        "bitwise_invert",
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
    )
)
_FLOAT_OPS = frozenset(
    o
    for o in ARITY
    if o
    not in (
        "bitwise_invert",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "left_shift",
        "right_shift",
    )
)
_COMPLEX_OPS = frozenset(
    (
        "add",
        "subtract",
        "multiply",
        "divide",
        "equal",
        "not_equal",
        "abs",
        "real",
        "imag",
        "conjugate",
        "negative",
        "square",
        "exp",
        "log",
        "sqrt",
        "sin",
        "cos",
        "copy",
        "select",
        "astype",
        "isnan",
        "isinf",
        "isfinite",
    )
)

_TABLE: dict[str, frozenset[str]] = {
    "bool": _BOOL_OPS,
    "complex64": _COMPLEX_OPS,
    **{d: _INT_OPS for d in INT_DTYPES},
    **{d: _FLOAT_OPS for d in FLOAT_DTYPES},
}

# dtypes a dialect cannot hold at all
_DIALECT_MISSING: dict[str, frozenset[str]] = {
    "c": frozenset(),
    "cuda": frozenset(),
    "metal": frozenset(("float64",)),
}


def supports(op: str, dtype: str, dialect: str = "c") -> bool:
    """Whether the engine has a kernel for ``op`` over arguments of ``dtype``.

    For ``select`` the dtype is that of the two values (the condition is bool); for
    ``astype`` it is the source dtype (every pair of dtypes is covered).
    """
    if dtype in _DIALECT_MISSING.get(dialect, frozenset()):
        return False
    return op in _TABLE.get(dtype, ())


def result_dtype(op: str, arg_dtypes: tuple[str, ...], astype_to: str | None = None) -> str:
    """The dtype of ``op`` applied to arguments of ``arg_dtypes`` (``astype``: ``astype_to``)."""
    if op == "astype":
        if astype_to is None:
            raise ValueError("result_dtype: astype needs the target dtype")
        return astype_to
    if op in BOOL_RESULT:
        return "bool"
    if op == "select":
        return arg_dtypes[1]
    if op in ("real", "imag", "abs") and arg_dtypes[0] == "complex64":
        return "float32"
    return arg_dtypes[0]


def check_node(op: str, arg_dtypes: tuple[str, ...], dtype: str, where: str = "node") -> None:
    """Raise ValueError if ``op`` over ``arg_dtypes`` producing ``dtype`` is not valid."""
    if op == "select":
        if arg_dtypes[0] != "bool":
            raise ValueError(f"{where} (select): the condition must be bool, got {arg_dtypes[0]}")
        if arg_dtypes[1] != arg_dtypes[2]:
            raise ValueError(
                f"{where} (select): both values must have one dtype, got "
                f"{arg_dtypes[1]} and {arg_dtypes[2]}"
            )
        value = arg_dtypes[1]
    else:
        if len(set(arg_dtypes)) != 1:
            raise ValueError(
                f"{where} ({op}): arguments must share one dtype, got {', '.join(arg_dtypes)}"
            )
        value = arg_dtypes[0]
    if not supports(op, value):
        raise ValueError(f"{where} ({op}): not supported for {value}")
    want = result_dtype(op, arg_dtypes, dtype)
    if want != dtype:
        raise ValueError(f"{where} ({op}): result dtype is {want}, the node says {dtype}")
