"""Primitives outside the families: gradient stops, explicit copies, dependencies, and the
forwarding primitives that carry a composite's own transform rules."""

from __future__ import annotations

from ..core.primitive import Primitive


class StopGradient(Primitive):
    """The identity, with a zero gradient. Compile keeps it (an outer transform must see it)."""

    __slots__ = ()
    name = "stop_gradient"

    def infer(self, inputs):
        return [(inputs[0]._shape, inputs[0]._dtype)]


StopGradient.differentiable = False  # transforms skip it: no cotangent or tangent flows through


class Unbatched(Primitive):
    """The identity on an argument that an operation cannot map over (``op`` and
    ``argument`` name it): its vmap rule refuses a batched input, as MLX's primitive for that
    operation does, where the operation is built from others that would map over it."""

    __slots__ = ("op", "argument")
    name = "unbatched"

    def __init__(self, op: str, argument: str) -> None:
        self.op = op
        self.argument = argument

    @property
    def params(self) -> tuple:
        return (self.op, self.argument)

    def infer(self, inputs):
        return [(inputs[0]._shape, inputs[0]._dtype)]


class Copy(Primitive):
    """The identity as a node of its own: transforms make their tracer copies of inputs with it
    (so a copy of an unevaluated array stays connected to that array's graph)."""

    __slots__ = ()
    name = "copy"
    view = True

    def infer(self, inputs):
        return [(inputs[0]._shape, inputs[0]._dtype)]


class Forwarding(Primitive):
    """A primitive whose outputs are its inputs after the first ``n_in``, unchanged: values
    that their own graph computes, tagged with the transform rules of the whole computation.
    Transforms see only the first ``n_in`` inputs (``transform_inputs``); evaluation passes the
    rest through, and compile and export read through it."""

    __slots__ = ()
    n_in: int  # a slot of each subclass

    @property
    def transform_inputs(self) -> int:
        return self.n_in

    def forwarded(self, inputs) -> list:
        """The (shape, dtype) of the forwarded inputs: a subclass's ``infer``."""
        return [(x._shape, x._dtype) for x in inputs[self.n_in :]]


class CustomFunction(Forwarding):
    """The outputs of a ``nv.custom_function`` call while an argument is being traced.

    Inputs: the call's ``n_in`` array arguments, then the outputs of the function traced on
    them (so evaluation runs the function's own graph). Outputs: those traced outputs, unchanged.
    Transforms see only the first ``n_in`` inputs (``transform_inputs``) and ask ``fn`` (the
    ``custom_function`` object) for the rules: the user's overrides, or the transform of the
    function itself.
    """

    __slots__ = ("fn", "call", "n_in")
    name = "custom_function"

    def __init__(self, fn, call, n_in: int) -> None:
        self.fn = fn  # the custom_function object (its overrides and its function)
        self.call = call  # (arguments TreeDef, keyword arguments) of this call
        self.n_in = n_in

    @property
    def params(self) -> tuple:
        # identity, not structure: two calls of one custom function are not interchangeable
        # unless their traced graphs are (compile's CSE compares the inputs too)
        return (id(self.fn), id(self.call))

    def infer(self, inputs):
        return self.forwarded(inputs)
