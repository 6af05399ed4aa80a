"""Normalisation layers: LayerNorm, RMSNorm, GroupNorm, InstanceNorm, BatchNorm.

All normalise over the last axis (features last, as in MLX), in the input's dtype.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> y = nn.LayerNorm(4)(nv.array([[1.0, 2.0, 3.0, 4.0]]))
>>> round(float(nv.mean(y)), 6), round(float(nv.mean(y * y)), 3)
(0.0, 1.0)
"""

from __future__ import annotations

import nuvec as nv

from .base import Module


def _check_eps(eps: float, name: str) -> None:
    if eps <= 0:
        raise ValueError(f"{name}: eps must be positive, got {eps}")


def _normalize(x, axis, eps: float):
    """``(x - mean) / sqrt(var + eps)`` over ``axis`` (biased variance)."""
    mean = nv.mean(x, axis=axis, keepdims=True)
    xc = x - mean
    var = nv.mean(xc * xc, axis=axis, keepdims=True)
    return xc * nv.rsqrt(var + eps)


def _check_last(x, dims: int, name: str) -> None:
    if x.ndim == 0 or x.shape[-1] != dims:
        raise ValueError(
            f"{name}: expected the last dimension to be {dims}, got input of shape {tuple(x.shape)}"
        )


class LayerNorm(Module):
    """Normalises the last axis to mean 0 and variance 1, then (``affine``) scales by
    ``weight`` (ones) and shifts by ``bias`` (zeros; omitted with ``bias=False``)."""

    def __init__(
        self, dims: int, eps: float = 1e-5, affine: bool = True, bias: bool = True
    ) -> None:
        super().__init__()
        _check_eps(eps, "LayerNorm")
        if affine:
            self.weight = nv.ones((dims,))
            if bias:
                self.bias = nv.zeros((dims,))
        self.dims = dims
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x):
        _check_last(x, self.dims, "LayerNorm")
        return nv.fast.layer_norm(x, self.get("weight"), self.get("bias"), self.eps)


class RMSNorm(Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last axis (``weight`` starts at ones)."""

    def __init__(self, dims: int, eps: float = 1e-5) -> None:
        super().__init__()
        _check_eps(eps, "RMSNorm")
        self.weight = nv.ones((dims,))
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"

    def __call__(self, x):
        _check_last(x, self.weight.shape[0], "RMSNorm")
        return nv.fast.rms_norm(x, self.weight, self.eps)


class GroupNorm(Module):
    """Normalises each of ``num_groups`` groups of the feature (last) axis over the group's
    features and all the spatial positions, per sample.

    By default (as MLX) feature ``c`` belongs to group ``c % num_groups``; with
    ``pytorch_compatible=True`` the groups are contiguous blocks of features (PyTorch's
    layout). ``affine`` adds a per-feature ``weight`` and ``bias``.
    """

    def __init__(
        self,
        num_groups: int,
        dims: int,
        eps: float = 1e-5,
        affine: bool = True,
        pytorch_compatible: bool = False,
    ) -> None:
        super().__init__()
        _check_eps(eps, "GroupNorm")
        if num_groups <= 0 or dims <= 0:
            raise ValueError(
                f"GroupNorm: num_groups and dims must be positive, got "
                f"num_groups={num_groups}, dims={dims}"
            )
        if dims % num_groups:
            raise ValueError(
                f"GroupNorm: dims ({dims}) must be divisible by num_groups ({num_groups})"
            )
        if affine:
            self.weight = nv.ones((dims,))
            self.bias = nv.zeros((dims,))
        self.num_groups = num_groups
        self.dims = dims
        self.eps = eps
        self.pytorch_compatible = pytorch_compatible

    def _extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.dims}, eps={self.eps}, affine={'weight' in self}, "
            f"pytorch_compatible={self.pytorch_compatible}"
        )

    def __call__(self, x):
        _check_last(x, self.dims, "GroupNorm")
        if x.ndim < 2:
            raise ValueError("GroupNorm: expects a batch axis first and features last")
        shape = x.shape
        g = self.num_groups
        n = shape[0]
        if self.pytorch_compatible:
            y = nv.reshape(x, (n, -1, g, self.dims // g))
            y = _normalize(y, (1, 3), self.eps)
        else:
            y = nv.reshape(x, (n, -1, g))
            y = _normalize(y, 1, self.eps)
        y = nv.reshape(y, shape)
        if "weight" in self:
            y = y * self.weight + self.bias
        return y


class InstanceNorm(Module):
    """Normalises each feature (last axis) of each sample over its spatial positions (all
    the axes between the first and the last): inputs ``(N, ..., C)`` of 3 or more
    dimensions. ``affine`` (off by default) adds a per-feature ``weight`` and ``bias``.

    >>> y = InstanceNorm(2)(nv.array([[[1.0, 5.0], [3.0, 7.0]]]))
    >>> [[round(v, 3) for v in row] for row in y[0].tolist()]
    [[-1.0, -1.0], [1.0, 1.0]]
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = False) -> None:
        super().__init__()
        _check_eps(eps, "InstanceNorm")
        if affine:
            self.weight = nv.ones((dims,))
            self.bias = nv.zeros((dims,))
        self.dims = dims
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x):
        if x.ndim < 3:
            raise ValueError(
                f"InstanceNorm: expects an input (N, ..., C) of at least 3 dimensions, got {x.ndim}"
            )
        _check_last(x, self.dims, "InstanceNorm")
        # statistics in float32 at least: a half-precision variance overflows at |x| ~ 256
        wide = nv.promote_types(x.dtype, nv.float32)
        y = nv.astype(
            _normalize(nv.astype(x, wide), tuple(range(1, x.ndim - 1)), self.eps), x.dtype
        )
        return self.weight * y + self.bias if "weight" in self else y


class BatchNorm(Module):
    """Normalises each feature (last axis) over the batch and spatial axes of ``(N, C)``,
    ``(N, L, C)`` or ``(N, H, W, C)`` inputs.

    In training mode it uses the batch's statistics and (``track_running_stats``) updates
    ``running_mean`` and ``running_var`` (unbiased) with ``momentum``; in evaluation mode it
    uses the running statistics. The running statistics are frozen members: part of the
    module's ``state`` and weights, never of its trainable parameters.
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
    ) -> None:
        super().__init__()
        _check_eps(eps, "BatchNorm")
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = nv.ones((num_features,))
            self.bias = nv.zeros((num_features,))
        if track_running_stats:
            self.running_mean = nv.zeros((num_features,))
            self.running_var = nv.ones((num_features,))
            self.freeze(keys=["running_mean", "running_var"], recurse=False)

    def unfreeze(self, *args, **kwargs) -> "BatchNorm":
        """As ``Module.unfreeze``, but the running statistics stay frozen."""
        super().unfreeze(*args, **kwargs)
        if self.track_running_stats:
            self.freeze(keys=["running_mean", "running_var"], recurse=False)
        return self

    def _extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={'weight' in self}, track_running_stats={self.track_running_stats}"
        )

    def __call__(self, x):
        if not 2 <= x.ndim <= 4:
            raise ValueError(f"BatchNorm: expects a 2-, 3- or 4-d input, got {x.ndim}-d")
        _check_last(x, self.num_features, "BatchNorm")
        axes = tuple(range(x.ndim - 1))
        count = 1
        for d in x.shape[:-1]:
            count *= d
        if self.training or not self.track_running_stats:
            if self.training and count < 2:
                raise ValueError("BatchNorm: training needs more than one value per feature")
            mean = nv.mean(x, axis=axes)
            xc = x - mean
            var = nv.mean(xc * xc, axis=axes)
            if self.training and self.track_running_stats:
                m = self.momentum
                bmean = nv.stop_gradient(mean)
                bvar = nv.stop_gradient(var) * (count / (count - 1))
                self.running_mean = (1 - m) * self.running_mean + m * bmean
                self.running_var = (1 - m) * self.running_var + m * bvar
            y = xc * nv.rsqrt(var + self.eps)
        else:
            y = (x - self.running_mean) * nv.rsqrt(self.running_var + self.eps)
        if "weight" in self:
            y = self.weight * y + self.bias
        return y
