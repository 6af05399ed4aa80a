"""Whether a shapeless compile trace is running in this thread, and where its nodes came from.

Under a shapeless trace (``nv.compile(f, shapeless=True)``) the operations record nodes that
re-infer their shapes from their inputs at every replay (a reshape keeps its -1, a slice its
Python bounds, ``zeros_like`` its argument, ``mean`` its element count as a node), and they
never skip a node because it is an identity at the traced shape. They do so only for arrays
that depend on the trace's inputs (tracers); constants keep the eager forms.

    with shapeless.tracing(inputs=placeholders):
        out = fun(*placeholders)
        conditions = shapeless.conditions()   # the shape comparisons the trace's branches took
    if shapeless.relative(x): ...          # record a shape-relative node for x

A comparison of sizes of the inputs (``if x.shape[0] > 2:``) is answered with its traced
outcome and recorded as a condition: a compiled function replays the trace only for shapes
where every condition comes out the same, and traces again for the others, as ``jax.jit``
retraces for a new static value (MLX bakes the traced outcome into every replay).
"""

from __future__ import annotations

import operator
import os
import sys
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Iterator, NoReturn, Sequence

_local = threading.local()
#: shapeless traces running now, in any thread: an eager call skips ``note`` while it is 0
running = 0
_running_lock = threading.Lock()
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def active() -> bool:
    """Whether this thread runs a shapeless trace."""
    return getattr(_local, "on", False)


def relative(x) -> bool:
    """Whether an operation on ``x`` must record a shape-relative node: a shapeless trace
    runs and ``x`` depends on its inputs."""
    return x._tracer and getattr(_local, "on", False)


@contextmanager
def tracing(on: bool = True, inputs: Sequence = ()) -> Iterator[dict]:
    """Marks a shapeless trace (``on``) of a function of ``inputs`` (its placeholders) in this
    thread; yields the origins of the nodes it made with a size in their parameters
    (``{id(array): "file:line" or None}``, see ``note``)."""
    global running
    saved = (
        getattr(_local, "on", False),
        getattr(_local, "origins", None),
        getattr(_local, "derived", None),
        getattr(_local, "inputs", None),
        getattr(_local, "conditions", None),
    )
    _local.on, _local.origins, _local.derived = on, {}, {}
    _local.inputs = {id(a): k for k, a in enumerate(inputs)}
    _local.conditions = []
    with _running_lock:
        running += on
    try:
        yield _local.origins
    finally:
        (_local.on, _local.origins, _local.derived, _local.inputs, _local.conditions) = saved
        with _running_lock:
            running -= on


def conditions() -> tuple | None:
    """The conditions this thread's shapeless trace recorded so far (see ``Size``), each
    ``(op, left, right, outcome)`` with ``symbolic`` expressions of the inputs' dimensions;
    None where there are none."""
    found = getattr(_local, "conditions", None)
    return tuple(found) if found else None


def hold(conds: tuple, shapes: Sequence) -> bool:
    """Whether every condition of ``conds`` has its traced outcome for inputs of ``shapes``
    (False where a shape has too few dimensions for one)."""
    try:
        return all(
            _COMPARE[op](evaluate(a, shapes), evaluate(b, shapes)) is r for op, a, b, r in conds
        )
    except (IndexError, ValueError, ZeroDivisionError):
        return False


def describe(cond: tuple) -> str:
    """A condition as it reads: ``input 1's dim 0 <= 2 (True at the trace)``."""
    op, a, b, r = cond
    return f"{_show(a)} {op} {_show(b)} ({r} at the trace)"


def _show(expr) -> str:
    if type(expr) is int:
        return str(expr)
    if expr[0] == "dim":
        return f"input {expr[1]}'s dim {expr[2]}"
    if expr[0] == "check":
        return _show(expr[1])
    return f"({_show(expr[1])} {expr[0]} {_show(expr[2])})"


def derive(a, frame) -> None:
    """Marks the constant ``a`` as made by nuvec's own code (``frame``: the creation's caller)
    during a shapeless trace, so of a shape computed from traced shapes: a shapeless replay
    may broadcast its one value to the replayed shape. A user's constant keeps its shape."""
    if getattr(_local, "on", False) and not from_user(frame):
        _local.derived[id(a)] = a


def derived(a) -> bool:
    """Whether ``derive`` marked ``a`` in this thread's shapeless trace."""
    d = getattr(_local, "derived", None)
    return d is not None and id(a) in d


def note(a) -> None:
    """Records that this shapeless trace made ``a`` (a node whose parameters hold a size, which
    may have come from a traced shape), with the user's line that made it ("file:line", None
    where there is none), so that the shapeless refusal can name it. A node made before the
    trace (a module's lazy parameters) holds no traced size and is not recorded."""
    if not getattr(_local, "on", False):
        return
    f: FrameType | None = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
        f = f.f_back
    _local.origins[id(a)] = f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else None


def refuse_traced(x, op: str, what: str) -> None:
    """Under a shapeless trace on which ``x`` depends, the ValueError for an operation that
    takes ``what`` from ``x``'s traced shape, so that no replay on another shape could be
    right (a gather of positions counted at the trace, say)."""
    if relative(x):
        raise ValueError(
            f"{op}: under nv.compile(shapeless=True) {what} would come from the traced shape "
            f"{x._shape}{_user_line()}, so it cannot be replayed on other shapes; compile this "
            "function without shapeless=True"
        )


def from_user(frame) -> bool:
    """Whether ``frame`` (the caller of a public entry point) is user code, outside nuvec."""
    return frame is not None and not frame.f_code.co_filename.startswith(_PACKAGE)


def _user_line() -> str:
    f: FrameType | None = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
        f = f.f_back
    return f" (at {f.f_code.co_filename}:{f.f_lineno})" if f is not None else ""


class Size:
    """A size read from ``x.shape`` in the traced function under a shapeless trace: the traced
    value (``value``, what printing shows) with where it came from and its integer arithmetic
    (``+ - * // %`` with ints and other sizes), so ``x.reshape(x.shape[0] * x.shape[1], -1)``
    replays on any shape. A comparison with an int or another size of the inputs gives its
    traced outcome and records it as a condition of the trace (see the module's docstring).
    Any other use (``int()``, an index, a float, a size of an intermediate array in a
    comparison, an operation that takes a shape other than reshape) would bake the traced
    value, so it raises a ValueError naming the line instead. Not an int subclass: C code reads
    an int subclass's value without asking it.

    ``expr``: ``("dim", array, axis)``, ``(op, left, right)`` of expressions and ints, or
    ``("check", expr, (low, what))`` (``at_least``).
    """

    __slots__ = ("value", "expr")

    def __init__(self, value: int, expr) -> None:
        self.value = value
        self.expr = expr

    def __repr__(self) -> str:
        return repr(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def _refuse(self, *_args, **_kwargs) -> NoReturn:
        raise ValueError(
            "nv.compile(shapeless=True): a size read from an array's .shape (traced as "
            f"{self.value}){_user_line()} is used where its traced value would be "
            "baked into the compiled function (int(), an index, a float, a shape argument "
            "other than reshape's, a comparison with a size of an intermediate array); "
            "compile this function without shapeless=True, or keep the size in reshape, "
            "integer arithmetic and comparisons of the inputs' sizes"
        )

    def _compare(self, other, op: str) -> bool:
        if isinstance(other, Size):
            right, value = other.expr, other.value
        elif type(other) is int:
            right, value = other, other
        else:
            self._refuse()
        inputs, found = getattr(_local, "inputs", None), getattr(_local, "conditions", None)
        if inputs is None or found is None:  # a size kept past its trace
            self._refuse()
        a, b = _of_inputs(self.expr, inputs), _of_inputs(right, inputs)
        if a is None or b is None:  # a size of an intermediate array: no check before a replay
            self._refuse()
        outcome = _COMPARE[op](self.value, value)
        found.append((op, a, b, outcome))
        return outcome

    def __eq__(self, o):
        return self._compare(o, "==")

    def __ne__(self, o):
        return self._compare(o, "!=")

    def __lt__(self, o):
        return self._compare(o, "<")

    def __le__(self, o):
        return self._compare(o, "<=")

    def __gt__(self, o):
        return self._compare(o, ">")

    def __ge__(self, o):
        return self._compare(o, ">=")

    def __bool__(self):
        return self._compare(0, "!=")

    __hash__ = _refuse
    __index__ = __int__ = __float__ = __complex__ = __truediv__ = __rtruediv__ = _refuse
    __pow__ = __rpow__ = __divmod__ = __rdivmod__ = __abs__ = __round__ = _refuse
    __trunc__ = __floor__ = __ceil__ = __invert__ = _refuse
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _refuse
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = _refuse

    def _op(self, other, op: str, swap: bool = False):
        if isinstance(other, Size):
            o = other.expr
        elif type(other) is int:
            o = other
        else:
            return NotImplemented
        a, b = (o, self.expr) if swap else (self.expr, o)
        v = other.value if isinstance(other, Size) else other
        va, vb = (v, self.value) if swap else (self.value, v)
        return Size(_APPLY[op](va, vb), (op, a, b))

    def __add__(self, o):
        return self._op(o, "+")

    def __radd__(self, o):
        return self._op(o, "+", True)

    def __sub__(self, o):
        return self._op(o, "-")

    def __rsub__(self, o):
        return self._op(o, "-", True)

    def __mul__(self, o):
        return self._op(o, "*")

    def __rmul__(self, o):
        return self._op(o, "*", True)

    def __floordiv__(self, o):
        return self._op(o, "//")

    def __rfloordiv__(self, o):
        return self._op(o, "//", True)

    def __mod__(self, o):
        return self._op(o, "%")

    def __rmod__(self, o):
        return self._op(o, "%", True)

    def __neg__(self):
        return Size(-self.value, ("-", 0, self.expr))

    def __pos__(self):
        return self


_APPLY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
}


_COMPARE = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _of_inputs(expr, inputs: dict):
    """``expr`` with each array replaced by its position among the trace's inputs, or None if
    it reads a dimension of another array."""
    if type(expr) is int:
        return expr
    if expr[0] == "dim":
        k = inputs.get(id(expr[1]))
        return None if k is None else ("dim", k, expr[2])
    if expr[0] == "check":
        inner = _of_inputs(expr[1], inputs)
        return None if inner is None else ("check", inner, expr[2])
    a, b = _of_inputs(expr[1], inputs), _of_inputs(expr[2], inputs)
    return None if a is None or b is None else (expr[0], a, b)


def at_least(size, low: int, what: str):
    """``size`` (an int or a Size) required to be at least ``low``, at the trace and again at
    each replay; ``what`` begins the ValueError otherwise (``"conv1d: the output length"``)."""
    value = size.value if isinstance(size, Size) else size
    if value < low:
        raise ValueError(f"{what} is {value}, less than {low}")
    return Size(value, ("check", size.expr, (low, what))) if isinstance(size, Size) else size


def sizes(a) -> tuple:
    """``a``'s shape for nuvec's own size arithmetic: Sizes under a shapeless trace that ``a``
    depends on (so that a reshape to them follows each replay), its ints otherwise."""
    return user_shape(a) if relative(a) else a._shape


def user_shape(a) -> tuple:
    """``a.shape`` as user code sees it under a shapeless trace: Sizes (see ``Size``)."""
    return tuple(Size(d, ("dim", a, i)) for i, d in enumerate(a._shape))


def symbolic(expr, arrays: list):
    """``expr`` with its arrays replaced by their positions in ``arrays`` (appended)."""
    if type(expr) is int:
        return expr
    if expr[0] == "dim":
        k = next((i for i, x in enumerate(arrays) if x is expr[1]), None)
        if k is None:
            arrays.append(expr[1])
            k = len(arrays) - 1
        return ("dim", k, expr[2])
    if expr[0] == "check":
        return ("check", symbolic(expr[1], arrays), expr[2])
    return (expr[0], symbolic(expr[1], arrays), symbolic(expr[2], arrays))


def evaluate(expr, shapes) -> int:
    """The value of a ``symbolic`` expression for the arrays' ``shapes``."""
    if type(expr) is int:
        return expr
    if expr[0] == "dim":
        return shapes[expr[1]][expr[2]]
    if expr[0] == "check":
        value, (low, what) = evaluate(expr[1], shapes), expr[2]
        if value < low:
            raise ValueError(f"{what} is {value} at this shapeless replay, less than {low}")
        return value
    a, b = evaluate(expr[1], shapes), evaluate(expr[2], shapes)
    if expr[0] in ("//", "%") and b == 0:
        raise ZeroDivisionError("integer division or modulo by zero (a size of a shapeless replay)")
    return _APPLY[expr[0]](a, b)
