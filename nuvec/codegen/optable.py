"""One record per element-wise op: everything nuvec knows about it outside its math.

``OPS`` maps an op's name (the engine's, the primitive's and the public function's) to an
``ElementwiseOp``. The generator, the primitives, the derivative rules, the public functions
and the backends read it; adding an op is one entry here, its ``nv_<op>_<suffix>`` functions
in ``nv_ops.h`` / ``nv_math.h`` and its public function in ``ops/elementwise.py``.

Example::

    >>> from nuvec.codegen.optable import OPS
    >>> OPS["exp"].arity, OPS["exp"].kinds, OPS["less"].result
    (1, 'fc', 'bool')

Derivative rules are written with the public ops, which this module (the lowest layer) does
not import: each rule takes the ``nuvec.ops`` namespace as its first argument, ``nv``. A
unary ``derivative(nv, x, out)`` gives f'(x); a binary one ``(nv, a, b, out)`` gives the two
partials, each an array, a Python float, or None for the identity (which saves a multiply).
``vjp(nv, x, g, out)`` / ``jvp(nv, x, t)`` replace the product with the derivative where an
op is linear or maps complex to real. The prebuilt kernels' fingerprint covers only the
fields the generated code depends on (``kernel_signature``), so editing a derivative or a
stand-in does not make them stale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

#: Letters of ``ElementwiseOp.kinds``, and the dtypes each one covers.
KIND_DTYPES: dict[str, tuple[str, ...]] = {
    "b": ("bool",),
    "i": ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"),
    "f": ("float16", "bfloat16", "float32", "float64"),
    "c": ("complex64",),
}

#: A NumPy / CuPy stand-in: a function's name in the array module (``"special.NAME"``: in
#: scipy.special / cupyx.scipy.special), or ``f(xp, *args)`` given the array module.
StandIn = str | Callable[..., Any] | None


@dataclass(frozen=True, eq=False)
class ElementwiseOp:
    """What nuvec knows about one element-wise op (see the module docstring)."""

    name: str
    arity: int
    #: dtype coverage of the generated kernels: letters of KIND_DTYPES (for select the
    #: values' dtype, for astype the source's)
    kinds: str
    #: result dtype: "same" (the arguments'), "bool", "real" (complex64 gives float32),
    #: "select" (the values'), "astype" (the target)
    result: str = "same"
    #: float32 result on float16 / bfloat16 arguments already in the narrow format (the
    #: generator does not round it again)
    exact_narrow: bool = False
    #: cost of one element in adds (the CPU's thread split)
    cost: int = 1
    #: per dialect, the approximate float32 function of a fast-math kernel
    fast: Mapping[str, str] = field(default_factory=dict)
    #: (function, guard): a cheaper float32 function with the same bits as ``nv_<op>_f32``
    #: wherever ``guard`` (of the same arguments, in nv_math.h) is 0; the C kernels run it over
    #: blocks of elements that all clear the guard, and ``nv_<op>_f32`` over the other blocks
    split: tuple[str, str] | None = None
    #: as ``split`` for float64: (function, guard) of nuvec's float64 library (nv_math64.h),
    #: the same bits as ``nv_<op>_f64`` wherever the guard is 0
    split_f64: tuple[str, str] | None = None
    #: as ``split`` for the integer dtypes of 32 and 64 bits: (function, guard) with ``{s}`` for
    #: the dtype's suffix (nv_ops.h, the C dialect's forms)
    split_int: tuple[str, str] | None = None
    #: the integer widths ``split_int`` applies to
    split_int_bits: tuple[int, ...] = (32, 64)
    derivative: Callable[..., Any] | None = None
    #: whether ``derivative`` reads the output (the jvp recomputes it then)
    derivative_reads_out: bool = False
    vjp: Callable[..., Any] | None = None
    jvp: Callable[..., Any] | None = None
    #: NumPy stand-in (where a kernel lacks a dtype); ``cupy``: CuPy's, where it differs
    numpy: StandIn = None
    cupy: StandIn = None
    #: how the public function prepares its operands: "promote" (MLX's promotion), "float"
    #: (integers become float32), "bool" (operands become bool), "integer" (integers and
    #: bools only)
    inputs: str = "promote"
    #: input kinds the public function accepts (TypeError otherwise); None: any
    accepts: str | None = None
    #: MLX refuses complex inputs (ValueError)
    real_only: bool = False
    #: the public function's docstring
    doc: str = ""

    @property
    def differentiable(self) -> bool:
        """Whether transforms walk through the op (ops without a rule have zero derivatives
        almost everywhere, or bool / integer results)."""
        return self.derivative is not None or self.vjp is not None

    def dtypes(self) -> tuple[str, ...]:
        """The dtypes the generated kernels cover."""
        return tuple(d for k in self.kinds for d in KIND_DTYPES[k])

    def stand_in(self, xp: Any, special: Callable[[], Any], cupy: bool = False) -> Callable:
        """The stand-in as a function of arrays: ``xp`` the array module, ``special()`` its
        scipy.special (loaded only when needed); ``cupy`` picks CuPy's where it differs."""
        s = self.cupy if cupy and self.cupy is not None else self.numpy
        if s is None:
            raise NotImplementedError(f"{self.name}: no NumPy stand-in")
        if callable(s):
            return lambda *args: s(xp, *args)
        if s.startswith("special."):
            return getattr(special(), s[len("special.") :])
        return getattr(xp, s)


# ---- derivative rules ---------------------------------------------------------------------

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0


def _abs_vjp(nv, x, g, out):
    if x._dtype.kind != "c":
        return g * nv.sign(x)
    return nv.astype(g, "complex64") * x / nv.astype(out, "complex64")


def _abs_jvp(nv, x, t):
    if x._dtype.kind != "c":
        return t * nv.sign(x)
    return nv.real(nv.conjugate(x) * t) / nv.abs(x)


def _power_partials(nv, a, b, out):
    # guards keep 0 ** 0 and 0 ** b (b > 0) finite, as the limits are
    da = nv.where(b == 0, 0.0, b * nv.power(a, b - 1.0))
    db = nv.where(a == 0, 0.0, out * nv.log(nv.where(a == 0, 1.0, a)))
    return da, db


def _extremum_partials(first: Callable) -> Callable:
    """maximum / minimum: the gradient goes to the chosen operand, split evenly on ties."""

    def partials(nv, a, b, out):
        da = nv.where(first(a, b), 1.0, nv.where(a == b, 0.5, 0.0))
        return nv.astype(da, a._dtype), 1.0 - nv.astype(da, a._dtype)

    return partials


def _arctan2_partials(nv, a, b, out):
    r = nv.reciprocal(nv.square(a) + nv.square(b))
    return b * r, -a * r


# ---- the table ----------------------------------------------------------------------------

#: The cost class of a transcendental function or a division loop, in adds.
COSTLY = 12
_CUDA = "cuda"


def _trig_split(name: str) -> tuple[str, str]:
    """sin, cos, tan: the Cody-Waite reduction alone, below NV_TRIG_SMALL (nv_math.h)."""
    return (f"nv_{name}_small_f32", "nv_trig_large_f32")


def _trig_split_f64(name: str) -> tuple[str, str]:
    """float64 sin, cos, tan: the Cody-Waite reduction alone, below NV_TRIG_SMALL_D
    (nv_math64.h)."""
    return (f"nv_{name}_small_f64", "nv_trig_large_f64")


def _log_split(name: str) -> tuple[str, str]:
    """log, log2, log10: no subnormal scaling and no limits where x is positive and normal."""
    return (f"nv_{name}_regular_f32", "nv_log_irregular_f32")


def _fmod_split(name: str, suffix: str = "f32") -> tuple[str, str]:
    """floor_divide, remainder: fmod as one division and an fma where |a| < 2^22 |b| (float64:
    2^51)."""
    return (f"nv_{name}_small_{suffix}", f"nv_fmod_large_{suffix}")


def _div_split(name: str) -> tuple[str, str]:
    """floor_divide, remainder of 64-bit integers: one float64 quotient where both operands are
    below 2^51 in magnitude (unsigned: 2^52), not two and a correction."""
    return (f"nv_{name}_small_{{s}}", "nv_div_large_{s}")


def _float_doc(name: str) -> str:
    return f"Element-wise {name} (integer inputs become float32)."


def _transcendental(
    name: str, kinds: str, derivative, *, reads_out=False, fast=None, real_only=False, **kw
):
    """A float function of one argument whose public function turns integers into float32."""
    return ElementwiseOp(
        name,
        1,
        kinds,
        cost=COSTLY,
        fast={_CUDA: fast} if fast else {},
        derivative=derivative,
        derivative_reads_out=reads_out,
        numpy=kw.pop("numpy", name),
        inputs="float",
        real_only=real_only,
        doc=_float_doc(name),
        **kw,
    )


def _predicate(name: str, kinds: str, arity: int = 1, **kw) -> ElementwiseOp:
    return ElementwiseOp(name, arity, kinds, result="bool", numpy=name, **kw)


def _table() -> dict[str, ElementwiseOp]:
    t = _transcendental
    ops = [
        # -- unary ------------------------------------------------------------------------------
        ElementwiseOp(
            "abs",
            1,
            "bifc",
            result="real",
            exact_narrow=True,
            vjp=_abs_vjp,
            jvp=_abs_jvp,
            numpy="abs",
            doc="Element-wise absolute value.",
        ),
        ElementwiseOp(
            "negative",
            1,
            "ifc",
            exact_narrow=True,
            vjp=lambda nv, x, g, out: -g,
            jvp=lambda nv, x, t: -t,
            numpy="negative",
            accepts="uifc",
            doc="Element-wise negation.",
        ),
        ElementwiseOp(
            "sign",
            1,
            "if",
            exact_narrow=True,
            numpy="sign",
            accepts="uifc",
            doc="Element-wise sign (-1, 0 or 1).",
        ),
        ElementwiseOp(
            "sqrt",
            1,
            "fc",
            derivative=lambda nv, x, out: nv.reciprocal(out * 2.0),
            derivative_reads_out=True,
            numpy="sqrt",
            inputs="float",
            doc=_float_doc("sqrt"),
        ),
        ElementwiseOp(
            "rsqrt",
            1,
            "f",
            derivative=lambda nv, x, out: out * -0.5 / x,
            derivative_reads_out=True,
            numpy=lambda xp, x: 1 / xp.sqrt(x),
            inputs="float",
            doc=_float_doc("rsqrt"),
        ),
        ElementwiseOp(
            "square",
            1,
            "ifc",
            derivative=lambda nv, x, out: x * 2.0,
            numpy="square",
            doc="Element-wise square.",
        ),
        ElementwiseOp(
            "reciprocal",
            1,
            "f",
            derivative=lambda nv, x, out: -nv.square(out),
            derivative_reads_out=True,
            numpy=lambda xp, x: 1 / x,
            cupy="reciprocal",
            inputs="float",
            doc=_float_doc("reciprocal"),
        ),
        t("exp", "fc", lambda nv, x, out: out, reads_out=True, fast="__expf"),
        t(
            "expm1",
            "f",
            lambda nv, x, out: out + 1.0,
            reads_out=True,
            fast="expm1f",
            real_only=True,
        ),
        t("log", "fc", lambda nv, x, out: nv.reciprocal(x), fast="__logf", split=_log_split("log")),
        t(
            "log1p",
            "f",
            lambda nv, x, out: nv.reciprocal(x + 1.0),
            fast="log1pf",
            split=("nv_log1p_regular_f32", "nv_log1p_irregular_f32"),
        ),
        t(
            "log2",
            "f",
            lambda nv, x, out: nv.reciprocal(x * _LN2),
            fast="__log2f",
            split=_log_split("log2"),
        ),
        t(
            "log10",
            "f",
            lambda nv, x, out: nv.reciprocal(x * _LN10),
            fast="__log10f",
            split=_log_split("log10"),
        ),
        t(
            "sin",
            "fc",
            lambda nv, x, out: nv.cos(x),
            fast="__sinf",
            split=_trig_split("sin"),
            split_f64=_trig_split_f64("sin"),
        ),
        t(
            "cos",
            "fc",
            lambda nv, x, out: -nv.sin(x),
            fast="__cosf",
            split=_trig_split("cos"),
            split_f64=_trig_split_f64("cos"),
        ),
        t(
            "tan",
            "f",
            lambda nv, x, out: nv.square(out) + 1.0,
            reads_out=True,
            fast="__tanf",
            split=_trig_split("tan"),
            split_f64=_trig_split_f64("tan"),
        ),
        t("arcsin", "f", lambda nv, x, out: nv.rsqrt(1.0 - nv.square(x))),
        t("arccos", "f", lambda nv, x, out: -nv.rsqrt(1.0 - nv.square(x))),
        t("arctan", "f", lambda nv, x, out: nv.reciprocal(nv.square(x) + 1.0)),
        t("sinh", "f", lambda nv, x, out: nv.cosh(x), fast="sinhf"),
        t("cosh", "f", lambda nv, x, out: nv.sinh(x), fast="coshf"),
        t("tanh", "f", lambda nv, x, out: 1.0 - nv.square(out), reads_out=True, fast="tanhf"),
        t("arcsinh", "f", lambda nv, x, out: nv.rsqrt(nv.square(x) + 1.0)),
        t("arccosh", "f", lambda nv, x, out: nv.rsqrt(nv.square(x) - 1.0)),
        t("arctanh", "f", lambda nv, x, out: nv.reciprocal(1.0 - nv.square(x))),
        t(
            "sigmoid",
            "f",
            lambda nv, x, out: out * (1.0 - out),
            reads_out=True,
            fast="nv_fast_sigmoid",
            real_only=True,
            numpy=lambda xp, x: 1 / (1 + xp.exp(-x)),
            cupy="special.expit",
        ),
        t(
            "erf",
            "f",
            lambda nv, x, out: nv.exp(-nv.square(x)) * _TWO_OVER_SQRT_PI,
            fast="erff",
            real_only=True,
            numpy="special.erf",
        ),
        t(
            "erfinv",
            "f",
            lambda nv, x, out: nv.exp(nv.square(out)) * _SQRT_PI_OVER_TWO,
            reads_out=True,
            real_only=True,
            numpy="special.erfinv",
        ),
        ElementwiseOp("floor", 1, "if", exact_narrow=True, numpy="floor"),
        ElementwiseOp("ceil", 1, "if", exact_narrow=True, numpy="ceil"),
        ElementwiseOp("round", 1, "if", exact_narrow=True, numpy="round"),
        _predicate("logical_not", "bif"),
        ElementwiseOp(
            "bitwise_invert",
            1,
            "bi",
            numpy="invert",
            accepts="uib",
            doc="Bitwise NOT of integers (logical NOT of bools).",
        ),
        _predicate("isnan", "bifc"),
        _predicate("isinf", "bifc"),
        _predicate("isposinf", "bif"),
        _predicate("isneginf", "bif"),
        _predicate("isfinite", "bifc"),
        ElementwiseOp(
            "real",
            1,
            "bifc",
            result="real",
            exact_narrow=True,
            # complex -> float: the cotangent enters the real part
            vjp=lambda nv, x, g, out: nv.astype(g, "complex64"),
            jvp=lambda nv, x, t: nv.real(t),
            numpy="real",
        ),
        ElementwiseOp(
            "imag",
            1,
            "bifc",
            result="real",
            exact_narrow=True,
            # the adjoint of dz -> Im(dz)
            vjp=lambda nv, x, g, out: nv.astype(g, "complex64") * complex(0.0, 1.0),
            jvp=lambda nv, x, t: nv.imag(t),
            numpy="imag",
        ),
        ElementwiseOp(
            "conjugate",
            1,
            "bifc",
            exact_narrow=True,
            vjp=lambda nv, x, g, out: nv.conjugate(g),
            jvp=lambda nv, x, t: nv.conjugate(t),
            numpy="conjugate",
            doc="Complex conjugate.",
        ),
        ElementwiseOp(
            "copy",
            1,
            "bifc",
            exact_narrow=True,
            vjp=lambda nv, x, g, out: g,
            jvp=lambda nv, x, t: t,
            numpy="copy",
        ),
        # rules and stand-ins of the AsType primitive are its own (they need the target)
        ElementwiseOp("astype", 1, "bifc", result="astype"),
        # -- binary -----------------------------------------------------------------------------
        ElementwiseOp(
            "add",
            2,
            "bifc",
            derivative=lambda nv, a, b, out: (None, None),
            numpy="add",
            doc="Element-wise sum.",
        ),
        ElementwiseOp(
            "subtract",
            2,
            "ifc",
            derivative=lambda nv, a, b, out: (None, -1.0),
            numpy="subtract",
            doc="Element-wise difference.",
        ),
        ElementwiseOp(
            "multiply",
            2,
            "bifc",
            derivative=lambda nv, a, b, out: (b, a),
            numpy="multiply",
            doc="Element-wise product.",
        ),
        ElementwiseOp(
            "divide",
            2,
            "fc",
            derivative=lambda nv, a, b, out: (nv.reciprocal(b), -out / b),
            derivative_reads_out=True,
            numpy="divide",
            inputs="float",
            doc="Element-wise true division (integers become float32).",
        ),
        ElementwiseOp(
            "floor_divide",
            2,
            "if",
            cost=COSTLY,
            split=_fmod_split("floor_divide"),
            split_f64=_fmod_split("floor_divide", "f64"),
            split_int=_div_split("floor_divide"),
            split_int_bits=(64,),
            derivative=lambda nv, a, b, out: (0.0, 0.0),
            numpy="floor_divide",
            doc="Element-wise floor division.",
        ),
        ElementwiseOp(
            "remainder",
            2,
            "if",
            cost=COSTLY,
            split=_fmod_split("remainder"),
            split_f64=_fmod_split("remainder", "f64"),
            split_int=_div_split("remainder"),
            split_int_bits=(64,),
            derivative=lambda nv, a, b, out: (None, -nv.floor(a / b)),
            numpy="remainder",
            doc="Element-wise remainder with the divisor's sign.",
        ),
        ElementwiseOp(
            "power",
            2,
            "if",
            cost=COSTLY,
            fast={_CUDA: "__powf"},
            # x > 0 normal, y finite and results far from overflow and underflow, where the
            # limits and the three-step scaling are not needed (nv_math.h)
            split=("nv_pow_regular_f32", "nv_pow_irregular_f32"),
            # exponents below 2^8: 8 squarings, not one per bit of the type
            split_int=("nv_power_small_{s}", "nv_power_large_{s}"),
            derivative=_power_partials,
            derivative_reads_out=True,
            numpy="power",
            doc="Element-wise power.",
        ),
        ElementwiseOp(
            "maximum",
            2,
            "bif",
            exact_narrow=True,
            derivative=_extremum_partials(lambda a, b: a > b),
            numpy="maximum",
            doc="Element-wise maximum (NaN propagates).",
        ),
        ElementwiseOp(
            "minimum",
            2,
            "bif",
            exact_narrow=True,
            derivative=_extremum_partials(lambda a, b: a < b),
            numpy="minimum",
            doc="Element-wise minimum (NaN propagates).",
        ),
        _predicate("equal", "bifc", 2, doc="Element-wise ==."),
        _predicate("not_equal", "bifc", 2, doc="Element-wise !=."),
        _predicate("less", "bif", 2, doc="Element-wise <."),
        _predicate("less_equal", "bif", 2, doc="Element-wise <=."),
        _predicate("greater", "bif", 2, doc="Element-wise >."),
        _predicate("greater_equal", "bif", 2, doc="Element-wise >=."),
        _predicate(
            "logical_and", "bif", 2, inputs="bool", doc="Element-wise AND (inputs become bool)."
        ),
        _predicate(
            "logical_or", "bif", 2, inputs="bool", doc="Element-wise OR (inputs become bool)."
        ),
        ElementwiseOp(
            "logaddexp",
            2,
            "f",
            cost=COSTLY,
            derivative=lambda nv, a, b, out: (nv.exp(a - out), nv.exp(b - out)),
            derivative_reads_out=True,
            numpy="logaddexp",
            inputs="float",
        ),
        ElementwiseOp(
            "arctan2",
            2,
            "f",
            cost=COSTLY,
            derivative=_arctan2_partials,
            numpy="arctan2",
            inputs="float",
        ),
        ElementwiseOp(
            "bitwise_and",
            2,
            "bi",
            numpy="bitwise_and",
            inputs="integer",
            doc="Element-wise bitwise AND.",
        ),
        ElementwiseOp(
            "bitwise_or",
            2,
            "bi",
            numpy="bitwise_or",
            inputs="integer",
            doc="Element-wise bitwise OR.",
        ),
        ElementwiseOp(
            "bitwise_xor",
            2,
            "bi",
            numpy="bitwise_xor",
            inputs="integer",
            doc="Element-wise bitwise XOR.",
        ),
        ElementwiseOp(
            "left_shift", 2, "i", numpy="left_shift", inputs="integer", doc="Element-wise a << b."
        ),
        ElementwiseOp(
            "right_shift",
            2,
            "i",
            numpy="right_shift",
            inputs="integer",
            doc="Element-wise a >> b.",
        ),
        # -- ternary ----------------------------------------------------------------------------
        # rules of the Select primitive are its own (the condition takes no gradient)
        ElementwiseOp("select", 3, "bifc", result="select", exact_narrow=True, numpy="where"),
    ]
    return {o.name: o for o in ops}


#: Every element-wise op, by name, in the engine's order (unary, binary, ternary).
OPS: dict[str, ElementwiseOp] = _table()


def kernel_signature() -> str:
    """The fields the generated C code depends on, for the prebuilt kernels' fingerprint."""
    ops = [
        (
            o.name,
            o.arity,
            o.kinds,
            o.result,
            o.exact_narrow,
            o.split,
            o.split_f64,
            o.split_int,
            o.split_int_bits,
        )
        for o in OPS.values()
    ]
    return repr((KIND_DTYPES, ops))


def fast_functions(dialect: str) -> dict[str, str]:
    """op -> the ``dialect``'s approximate float32 function of a fast-math kernel."""
    return {o.name: o.fast[dialect] for o in OPS.values() if dialect in o.fast}
