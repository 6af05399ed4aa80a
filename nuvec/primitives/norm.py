"""Layer norm as one primitive (``nv.fast.layer_norm`` on the CPU): ``LayerNorm`` and its
backward pass ``LayerNormVJP``, each one pass over the rows of the last axis.

The forward pass has the bits of the composite form (``ops.composites.layer_norm_composite``:
mean, centre, variance, ``rsqrt``, scale, shift) on C-contiguous data (NumPy sums a strided
axis in another order: the CPU makes such an ``x`` contiguous first); the backward pass
recomputes the statistics from ``x`` and returns ``dx`` and, for a weight and a bias, their
gradients summed over the rows:

    y = Array.make(LayerNorm(eps, True, True), [x, w, b])
    dx, dw, db = Array.make_multi(LayerNormVJP(eps, True, True), [x, w, g])

Higher derivatives, forward mode and vmap go through the composite form (its expansion in
``nuvec.transforms.rules.norm``), whose rules the element-wise and reduction primitives
already have.
"""

from __future__ import annotations

from ._common import Expanding


class _Norm(Expanding):
    """The parameters layer norm's primitives share: eps, and whether there are a weight and a
    bias."""

    __slots__ = ("eps", "has_weight", "has_bias")

    def __init__(self, eps: float, has_weight: bool, has_bias: bool) -> None:
        self.eps = float(eps)
        self.has_weight = bool(has_weight)
        self.has_bias = bool(has_bias)

    @property
    def params(self) -> tuple:
        return (self.eps, self.has_weight, self.has_bias)


class LayerNorm(_Norm):
    """Layer norm over the last axis of ``x`` (float32 or float64), with an optional weight and
    bias of that axis's length and dtype."""

    __slots__ = ()
    name = "layer_norm"

    def infer(self, inputs):
        return [(inputs[0]._shape, inputs[0]._dtype)]


class LayerNormVJP(_Norm):
    """The backward pass of ``LayerNorm``: inputs ``[x, w?, g]``, outputs ``[dx, dw?, db?]``
    (``dw``, ``db`` summed over every axis but the last)."""

    __slots__ = ()
    name = "layer_norm_vjp"

    def infer(self, inputs):
        x = inputs[0]
        n = x._shape[-1:]
        return (
            [(x._shape, x._dtype)]
            + [(n, x._dtype)] * self.has_weight
            + [(n, x._dtype)] * self.has_bias
        )
