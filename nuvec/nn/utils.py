"""Transformations of functions of a model (``nn.value_and_grad``, ``checkpoint``) and
gradient helpers for distributed training (``average_gradients``,
``clip_grad_norm_sharded``).

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> model = nn.Linear(3, 1)
>>> def loss_fn(model, x, y):
...     return nv.mean(nv.square(model(x) - y))
>>> loss, grads = nn.value_and_grad(model, loss_fn)(model, nv.ones((4, 3)), nv.zeros((4, 1)))
>>> sorted(grads)
['bias', 'weight']
"""

from __future__ import annotations

from functools import wraps
from typing import Any, Callable

import nuvec as nv
from nuvec.utils import tree_map, tree_reduce

from .layers.base import Module
from ..distributed.average import average_gradients  # noqa: F401  (MLX's nn.utils name)


def value_and_grad(model: Module, fn: Callable) -> Callable:
    """``fn``'s value and its gradient with respect to ``model``'s trainable parameters.

    The returned function takes ``fn``'s arguments and returns ``(value, grads)``, with
    ``grads`` a tree like ``model.trainable_parameters()``. While it runs, the model holds the
    parameters being differentiated; afterwards it holds them again as before."""
    if not isinstance(model, Module):
        raise TypeError(
            f"nn.value_and_grad: model must be an nn.Module, got {type(model).__name__}"
        )

    def with_params(params, *args, **kwargs):
        model.update(params)
        return fn(*args, **kwargs)

    vg = nv.value_and_grad(with_params)

    @wraps(fn)
    def wrapped(*args, **kwargs):
        params = model.trainable_parameters()
        try:
            return vg(params, *args, **kwargs)
        finally:
            # the model must not keep the transform's tracers as its parameters
            model.update(params)

    return wrapped


def checkpoint(module: Module, fn: Callable | None = None) -> Callable:
    """Returns a function that calls ``module`` (or ``fn``). MLX recomputes it in the
    backward pass to save memory; here it is the plain call (same values and gradients)."""
    target = fn if fn is not None else module

    @wraps(target)
    def call(*args, **kwargs):
        return target(*args, **kwargs)

    return call


def clip_grad_norm_sharded(gradients: Any, max_norm: float, group=None) -> tuple:
    """``optimizers.clip_grad_norm`` for gradients sharded over ``group`` (each process
    holds a part, as with ``nn.fully_shard``): the global norm sums every process's squared
    norms. Returns ``(clipped local gradients, global norm)``.

    >>> g, n = clip_grad_norm_sharded({"w": nv.array([3.0, 4.0])}, 1.0)
    >>> round(n.item(), 4), [round(v, 4) for v in g["w"].tolist()]
    (5.0, [0.6, 0.8])
    """
    if max_norm < 0:
        raise ValueError(f"clip_grad_norm_sharded: max_norm must be >= 0, got {max_norm}")
    local = tree_reduce(lambda acc, g: acc + nv.sum(nv.square(g)), gradients, nv.array(0.0))
    norm = nv.sqrt(nv.distributed.all_sum(local, group=group))
    scale = nv.minimum(max_norm / (norm + 1e-6), 1.0)
    return tree_map(lambda g: g * scale, gradients), norm
