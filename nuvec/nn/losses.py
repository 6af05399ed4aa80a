"""Loss functions (MLX's ``mlx.nn.losses``), each with ``reduction`` = ``"none"`` |
``"mean"`` | ``"sum"`` (defaults as in MLX).

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> logits = nv.array([[2.0, 0.0], [0.0, 2.0]])
>>> round(nn.losses.cross_entropy(logits, nv.array([0, 1]), reduction="mean").item(), 4)
0.1269
"""

from __future__ import annotations

import math
from typing import Literal

import nuvec as nv

Reduction = Literal["none", "mean", "sum"]


def _reduce(loss, reduction: str, name: str):
    if reduction == "mean":
        return nv.mean(loss)
    if reduction == "sum":
        return nv.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def _same_shape(a, b, what_a: str, what_b: str, name: str) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(
            f"{name}: {what_a} shape {tuple(a.shape)} does not match {what_b} "
            f"shape {tuple(b.shape)}"
        )


def _weighted(loss, weights, name: str):
    if weights is None:
        return loss
    if tuple(weights.shape) != tuple(loss.shape):
        raise ValueError(
            f"{name}: weights of shape {tuple(weights.shape)} do not match the "
            f"loss's shape {tuple(loss.shape)}"
        )
    return loss * weights


def _gather(x, idx, axis: int):
    """``x`` at index ``idx`` along ``axis`` (``idx`` has ``x``'s shape without ``axis``)."""
    return nv.squeeze(nv.take_along_axis(x, nv.expand_dims(idx, axis), axis=axis), axis)


def cross_entropy(
    logits,
    targets,
    weights=None,
    axis: int = -1,
    label_smoothing: float = 0.0,
    reduction: Reduction = "none",
    *,
    class_weights=None,
):
    """Cross entropy between ``logits`` and ``targets``: class indices (``logits``'s shape
    without ``axis``) or probabilities (``logits``'s shape).

    ``label_smoothing`` ``s`` in ``[0, 1)`` trains towards ``(1 - s) * target + s / C``.
    ``weights`` (the loss's shape) weighs each element, as in MLX. ``class_weights``
    (``(C,)``, a nuvec extension) weighs each class ``c`` of the target distribution ``q``:
    the loss is ``sum_c w_c q_c (logsumexp(z) - z_c)`` (for index targets without smoothing,
    ``w[target] * loss``). ``"mean"`` is then the plain mean over elements.
    """
    name = "cross_entropy"
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"{name}: label_smoothing must be in [0, 1), got {label_smoothing}")
    ax = axis % logits.ndim if -logits.ndim <= axis < logits.ndim else None
    if ax is None:
        raise ValueError(
            f"{name}: axis {axis} is out of range for logits of shape {tuple(logits.shape)}"
        )
    probs = targets.ndim == logits.ndim
    reduced = tuple(logits.shape[:ax]) + tuple(logits.shape[ax + 1 :])
    if probs:
        _same_shape(targets, logits, "targets", "logits", name)
    elif tuple(targets.shape) != reduced:
        raise ValueError(
            f"{name}: class-index targets must have shape {reduced} (the logits' "
            f"shape without axis {axis}), got {tuple(targets.shape)}"
        )
    num_classes = logits.shape[ax]
    # subtract the max (no gradient) so logsumexp and the scores share one safe shift
    z = logits - nv.stop_gradient(nv.max(logits, axis=ax, keepdims=True))
    lse = nv.logsumexp(z, axis=ax)
    if class_weights is not None:
        if tuple(class_weights.shape) != (num_classes,):
            raise ValueError(
                f"{name}: class_weights must have shape ({num_classes},), got "
                f"{tuple(class_weights.shape)}"
            )
        cw = nv.reshape(class_weights, (num_classes,) + (1,) * (logits.ndim - 1 - ax))
        wnll = cw * (nv.expand_dims(lse, ax) - z)  # weighted per-class -log p
        loss = nv.sum(targets * wnll, axis=ax) if probs else _gather(wnll, targets, ax)
        if label_smoothing > 0:
            loss = (1 - label_smoothing) * loss + (label_smoothing / num_classes) * nv.sum(
                wnll, axis=ax
            )
    else:
        score = nv.sum(z * targets, axis=ax) if probs else _gather(z, targets, ax)
        if label_smoothing > 0:
            loss = lse - (1 - label_smoothing) * score - label_smoothing * nv.mean(z, axis=ax)
        else:
            loss = lse - score
    loss = _weighted(loss, weights, name)
    return _reduce(loss, reduction, name)


def binary_cross_entropy(
    inputs, targets, weights=None, with_logits: bool = True, reduction: Reduction = "mean"
):
    """Binary cross entropy. ``inputs`` are logits (``with_logits``, computed stably) or
    probabilities (log terms clipped at -100, as PyTorch and MLX do)."""
    name = "binary_cross_entropy"
    _same_shape(inputs, targets, "inputs", "targets", name)
    if with_logits:
        loss = nv.logaddexp(0.0, inputs) - inputs * targets
    else:
        log_p = nv.maximum(nv.log(inputs), -100.0)
        log_q = nv.maximum(nv.log(1 - inputs), -100.0)
        loss = -(targets * log_p + (1 - targets) * log_q)
    return _reduce(_weighted(loss, weights, name), reduction, name)


def nll_loss(inputs, targets, axis: int = -1, reduction: Reduction = "none"):
    """Negative log-likelihood: ``-inputs[target]`` along ``axis`` (``inputs`` are
    log-probabilities)."""
    if targets.ndim != inputs.ndim - 1:
        raise ValueError(
            f"nll_loss: targets must have one dimension less than inputs, got "
            f"shapes {tuple(targets.shape)} and {tuple(inputs.shape)}"
        )
    return _reduce(-_gather(inputs, targets, axis), reduction, "nll_loss")


def mse_loss(predictions, targets, reduction: Reduction = "mean"):
    """Mean squared error: ``(predictions - targets)^2``."""
    _same_shape(predictions, targets, "predictions", "targets", "mse_loss")
    return _reduce(nv.square(predictions - targets), reduction, "mse_loss")


def l1_loss(predictions, targets, reduction: Reduction = "mean"):
    """Absolute error ``|predictions - targets|``."""
    _same_shape(predictions, targets, "predictions", "targets", "l1_loss")
    return _reduce(nv.abs(predictions - targets), reduction, "l1_loss")


def smooth_l1_loss(predictions, targets, beta: float = 1.0, reduction: Reduction = "mean"):
    """``0.5 d^2 / beta`` where ``d = |predictions - targets| < beta``, else
    ``d - 0.5 beta``."""
    _same_shape(predictions, targets, "predictions", "targets", "smooth_l1_loss")
    d = nv.abs(predictions - targets)
    loss = nv.where(d < beta, 0.5 * nv.square(d) / beta, d - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


def huber_loss(inputs, targets, delta: float = 1.0, reduction: Reduction = "none"):
    """``0.5 e^2`` for ``|e| <= delta``, ``delta (|e| - 0.5 delta)`` beyond
    (``e = inputs - targets``)."""
    a = nv.abs(inputs - targets)
    quad = nv.minimum(a, delta)
    loss = 0.5 * nv.square(quad) + delta * (a - quad)
    return _reduce(loss, reduction, "huber_loss")


def kl_div_loss(inputs, targets, axis: int = -1, reduction: Reduction = "none"):
    """Kullback-Leibler divergence ``sum(exp(t) (t - x))`` along ``axis``; ``inputs`` ``x``
    and ``targets`` ``t`` are log-probabilities."""
    loss = nv.sum(nv.exp(targets) * (targets - inputs), axis=axis)
    return _reduce(loss, reduction, "kl_div_loss")


def cosine_similarity_loss(x1, x2, axis: int = 1, eps: float = 1e-8, reduction: Reduction = "none"):
    """Cosine similarity ``sum(x1 * x2) / max(|x1| |x2|, eps)`` along ``axis``."""
    _same_shape(x1, x2, "x1", "x2", "cosine_similarity_loss")
    n1 = nv.sqrt(nv.sum(nv.square(x1), axis=axis))
    n2 = nv.sqrt(nv.sum(nv.square(x2), axis=axis))
    loss = nv.sum(x1 * x2, axis=axis) / nv.maximum(n1 * n2, eps)
    return _reduce(loss, reduction, "cosine_similarity_loss")


def hinge_loss(inputs, targets, reduction: Reduction = "none"):
    """``max(1 - inputs * targets, 0)`` (targets are -1 or 1)."""
    return _reduce(nv.maximum(1 - inputs * targets, 0), reduction, "hinge_loss")


def log_cosh_loss(inputs, targets, reduction: Reduction = "none"):
    """``log(cosh(inputs - targets))``, computed stably."""
    e = inputs - targets
    return _reduce(nv.logaddexp(e, -e) - math.log(2), reduction, "log_cosh_loss")


def gaussian_nll_loss(
    inputs, targets, vars, full: bool = False, eps: float = 1e-6, reduction: Reduction = "mean"
):
    """Gaussian negative log-likelihood with predicted means ``inputs`` and variances
    ``vars`` (clamped to ``eps``); ``full`` adds the constant ``0.5 log(2 pi)``."""
    name = "gaussian_nll_loss"
    _same_shape(inputs, targets, "inputs", "targets", name)
    _same_shape(inputs, vars, "inputs", "vars", name)
    v = nv.maximum(vars, eps)
    loss = 0.5 * (nv.log(v) + nv.square(targets - inputs) / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, name)


def margin_ranking_loss(
    inputs1, inputs2, targets, margin: float = 0.0, reduction: Reduction = "none"
):
    """``max(0, -targets * (inputs1 - inputs2) + margin)``."""
    name = "margin_ranking_loss"
    _same_shape(inputs1, inputs2, "inputs1", "inputs2", name)
    _same_shape(inputs1, targets, "inputs1", "targets", name)
    return _reduce(nv.maximum(0, -targets * (inputs1 - inputs2) + margin), reduction, name)


def triplet_loss(
    anchors,
    positives,
    negatives,
    axis: int = -1,
    p: int = 2,
    margin: float = 1.0,
    eps: float = 1e-6,
    reduction: Reduction = "none",
):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the ``p``-norm distance along
    ``axis`` (``eps`` added inside the root)."""

    def dist(u, v):
        return nv.power(nv.sum(nv.power(nv.abs(u - v), p), axis=axis) + eps, 1.0 / p)

    loss = nv.maximum(dist(anchors, positives) - dist(anchors, negatives) + margin, 0)
    return _reduce(loss, reduction, "triplet_loss")


__all__ = [
    "cross_entropy",
    "binary_cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "kl_div_loss",
    "cosine_similarity_loss",
    "hinge_loss",
    "log_cosh_loss",
    "gaussian_nll_loss",
    "margin_ranking_loss",
    "triplet_loss",
]
