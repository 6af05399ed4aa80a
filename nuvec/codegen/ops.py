"""Queries over the element-wise op table (``optable.OPS``): arity, result dtypes, coverage.

Example::

    >>> from nuvec.codegen.ops import supports, result_dtype
    >>> supports("exp", "float16"), supports("exp", "int32"), supports("astype", "bool")
    (True, False, True)
    >>> result_dtype("less", ("int8", "int8"))
    'bool'
"""

from __future__ import annotations

from .optable import KIND_DTYPES, OPS

UNARY = tuple(o.name for o in OPS.values() if o.arity == 1)
BINARY = tuple(o.name for o in OPS.values() if o.arity == 2)
TERNARY = tuple(o.name for o in OPS.values() if o.arity == 3)

ARITY: dict[str, int] = {o.name: o.arity for o in OPS.values()}

BOOL_RESULT = frozenset(o.name for o in OPS.values() if o.result == "bool")
_RESULT = {o.name: o.result for o in OPS.values()}

FLOAT_DTYPES = KIND_DTYPES["f"]
INT_DTYPES = KIND_DTYPES["i"]

# dtype -> the ops whose kernels cover it
_TABLE: dict[str, frozenset[str]] = {
    d: frozenset(o.name for o in OPS.values() if k in o.kinds)
    for k, ds in KIND_DTYPES.items()
    for d in ds
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
    rule = _RESULT.get(op, "same")
    if rule == "astype":
        if astype_to is None:
            raise ValueError("result_dtype: astype needs the target dtype")
        return astype_to
    if rule == "bool":
        return "bool"
    if rule == "select":
        return arg_dtypes[1]
    if rule == "real" and arg_dtypes[0] == "complex64":
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
