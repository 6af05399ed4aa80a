"""Layers whose parameters are spread over the processes of an ``nv.distributed`` group:
tensor-parallel linears (``AllToShardedLinear``, ``ShardedToAllLinear`` and their quantized
twins, ``shard_linear``, ``shard_inplace``) and fully sharded data parallelism
(``fully_shard``).

With a group of one process every layer here computes what its plain counterpart computes.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> from nuvec.nn.layers.distributed import shard_linear
>>> lin = nn.Linear(4, 6)
>>> sharded = shard_linear(lin, "all-to-sharded")
>>> bool(nv.allclose(sharded(nv.ones((2, 4))), lin(nv.ones((2, 4)))))
True
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable, Sequence, Union

import nuvec as nv
from nuvec.utils import tree_flatten, tree_map_with_path, tree_unflatten

from .base import Module
from .linear import Linear
from .quantized import QuantizedLinear, _Quantized

Segments = Union[int, Sequence[int], Sequence[float]]


def _group(group):
    return group if group is not None else nv.distributed.init()


@lru_cache
def sum_gradients(group) -> Callable:
    """The identity whose gradient is summed over ``group`` (each process holds the
    gradient of its own shard of the output)."""
    if group.size() == 1:
        return lambda x: x

    @nv.custom_function
    def f(x):
        return x

    @f.vjp
    def f_vjp(x, cotangent, output):
        return nv.distributed.all_sum(cotangent, group=group)

    return f


def _split(weight, segments: Segments, axis: int) -> list:
    """``nv.split`` that also takes fractions of the axis as split points."""
    if isinstance(segments, int) or isinstance(segments[0], int):
        return nv.split(weight, segments, axis=axis)
    n = weight.shape[axis]
    return nv.split(weight, [int(s * n) for s in segments], axis=axis)


def _shard(parameters: dict, predicate: Callable, group) -> dict:
    """``parameters`` with each array the predicate names (``predicate(path, w)`` -> an
    axis, ``(axis, segments)`` or None) cut into ``group.size()`` parts along the axis (each
    of ``segments`` separately, for fused weights), keeping this process's part."""
    n, r = group.size(), group.rank()

    def shard_one(path, w):
        if not isinstance(w, nv.array):
            return w
        s = predicate(path, w)
        if s is None:
            return w
        if isinstance(s, int):
            axis, segments = s, 1
        elif isinstance(s, tuple):
            axis, segments = s
        else:
            raise ValueError(
                f"shard: the sharding function must return an int or "
                f"(axis, segments), got {s!r} for {path!r}"
            )
        parts = [_split(seg, n, axis)[r] for seg in _split(w, segments, axis)]
        return nv.concatenate(parts, axis=axis)

    return tree_map_with_path(shard_one, parameters)


def _all_to_sharded(segments: Segments) -> Callable:
    """Shards the output features: weight rows (axis -2) and the bias."""

    def predicate(path, w):
        return (-1, segments) if path.endswith("bias") else (max(w.ndim - 2, 0), segments)

    return predicate


def _sharded_to_all(segments: Segments) -> Callable:
    """Shards the input features: weight columns; the bias stays whole."""

    def predicate(path, w):
        return None if path.endswith("bias") else (-1, segments)

    return predicate


_SHARDINGS = ("all-to-sharded", "sharded-to-all")


def _predicate(sharding: str, segments: Segments, name: str) -> Callable:
    if sharding not in _SHARDINGS:
        raise ValueError(f"{name}: sharding must be one of {_SHARDINGS}, got {sharding!r}")
    return _all_to_sharded(segments) if sharding == "all-to-sharded" else _sharded_to_all(segments)


def shard_inplace(
    module: Module, sharding: Union[str, Callable], *, segments: Segments = 1, group=None
) -> None:
    """Replaces ``module``'s parameters by this process's shards (the module's computation
    is unchanged). ``sharding``: ``"all-to-sharded"``, ``"sharded-to-all"`` or a predicate
    ``(path, weight) -> axis | (axis, segments) | None``; ``segments`` splits fused weights
    (e.g. 3 for a fused QKV projection)."""
    if isinstance(sharding, str):
        sharding = _predicate(sharding, segments, "shard_inplace")
    module.update(_shard(module.parameters(), sharding, _group(group)))


def shard_linear(module: Module, sharding: str, *, segments: Segments = 1, group=None):
    """A new sharded layer from ``module`` (a ``Linear`` or ``QuantizedLinear``):
    ``AllToShardedLinear`` or ``ShardedToAllLinear`` (or their quantized twins), holding this
    process's shard of its parameters."""
    _predicate(sharding, segments, "shard_linear")
    all_to_sharded = sharding == "all-to-sharded"
    if isinstance(module, Linear):
        dense = AllToShardedLinear if all_to_sharded else ShardedToAllLinear
        return dense.from_linear(module, segments=segments, group=group)
    if isinstance(module, QuantizedLinear):
        quantized = QuantizedAllToShardedLinear if all_to_sharded else QuantizedShardedToAllLinear
        return quantized.from_quantized_linear(module, segments=segments, group=group)
    raise TypeError(
        f"shard_linear: expected an nn.Linear or nn.QuantizedLinear, got {type(module).__name__}"
    )


class _ShardedLinear(Module):
    _sharding = ""

    @staticmethod
    def _shapes(input_dims: int, output_dims: int, n: int) -> tuple:
        raise NotImplementedError

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True, group=None) -> None:
        super().__init__()
        self.group = _group(group)
        n = self.group.size()
        w_shape, b_shape = self._shapes(input_dims, output_dims, n)
        scale = math.sqrt(1.0 / input_dims)
        self.weight = nv.random.uniform(low=-scale, high=scale, shape=w_shape)
        if bias:
            self.bias = nv.random.uniform(low=-scale, high=scale, shape=b_shape)

    @classmethod
    def from_linear(cls, linear_layer: Module, *, segments: Segments = 1, group=None):
        """The sharded layer holding this process's shard of ``linear_layer``."""
        group = _group(group)
        output_dims, input_dims = linear_layer.weight.shape
        layer = cls(input_dims, output_dims, "bias" in linear_layer, group)
        layer.update(
            _shard(
                linear_layer.parameters(), _predicate(cls._sharding, segments, cls.__name__), group
            )
        )
        return layer


class AllToShardedLinear(_ShardedLinear):
    """A linear layer whose output features are split over the group: each process computes
    its ``output_dims / size`` of them from the whole input. The input's gradient is summed
    over the group."""

    _sharding = "all-to-sharded"

    @staticmethod
    def _shapes(input_dims: int, output_dims: int, n: int) -> tuple:
        if output_dims % n:
            raise ValueError(
                f"AllToShardedLinear: cannot shard {output_dims} output features over {n} processes"
            )
        return (output_dims // n, input_dims), (output_dims // n,)

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        return (
            f"input_dims={in_dims}, output_dims={out_dims * self.group.size()}, "
            f"bias={'bias' in self}"
        )

    def __call__(self, x):
        x = sum_gradients(self.group)(x)
        y = x @ self.weight.T
        return y + self.bias if "bias" in self else y


class ShardedToAllLinear(_ShardedLinear):
    """A linear layer whose input features are split over the group: each process multiplies
    its ``input_dims / size`` of them and the partial products are summed over the group, so
    every process gets the whole output."""

    _sharding = "sharded-to-all"

    @staticmethod
    def _shapes(input_dims: int, output_dims: int, n: int) -> tuple:
        if input_dims % n:
            raise ValueError(
                f"ShardedToAllLinear: cannot shard {input_dims} input features over {n} processes"
            )
        return (output_dims, input_dims // n), (output_dims,)

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        return (
            f"input_dims={in_dims * self.group.size()}, output_dims={out_dims}, "
            f"bias={'bias' in self}"
        )

    def __call__(self, x):
        y = nv.distributed.all_sum(x @ self.weight.T, group=self.group)
        return y + self.bias if "bias" in self else y


class _QuantizedShardedLinear(_Quantized):
    """The quantized twins: the shard's weight is quantized (``nv.quantize``) and, as in
    ``QuantizedLinear``, the parameters are frozen."""

    _sharding = ""
    _dense = _ShardedLinear

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        bias: bool = True,
        group_size: int = 64,
        bits: int = 4,
        mode: str = "affine",
        group=None,
    ) -> None:
        super().__init__()
        self.group = _group(group)
        self.group_size, self.bits, self.mode = group_size, bits, mode
        w_shape, b_shape = self._dense._shapes(input_dims, output_dims, self.group.size())
        scale = math.sqrt(1.0 / input_dims)
        weight = nv.random.uniform(low=-scale, high=scale, shape=w_shape)
        self.weight, self.scales, *biases = nv.quantize(weight, group_size, bits, mode=mode)
        self.biases = biases[0] if biases else None
        if bias:
            self.bias = nv.zeros(b_shape)
        self.freeze()

    def unfreeze(self, *args, **kwargs) -> "_QuantizedShardedLinear":
        """As ``Module.unfreeze``, but this layer's own parameters stay frozen."""
        super().unfreeze(*args, **kwargs)
        self.freeze(recurse=False)
        return self

    def _dims(self) -> tuple:
        """(input_dims, output_dims) of the whole (unsharded) layer."""
        out_dims, packed = self.weight.shape
        in_dims = packed * 32 // self.bits
        if self._sharding == "all-to-sharded":
            return in_dims, out_dims * self.group.size()
        return in_dims * self.group.size(), out_dims

    def _extra_repr(self) -> str:
        i, o = self._dims()
        return f"input_dims={i}, output_dims={o}, bias={'bias' in self}, {self._extra()}"

    @classmethod
    def from_quantized_linear(
        cls, quantized_linear_layer: Module, *, segments: Segments = 1, group=None
    ):
        """The sharded layer holding this process's shard of ``quantized_linear_layer``."""
        group = _group(group)
        q = quantized_linear_layer
        output_dims, packed = q.weight.shape
        layer = cls(
            packed * 32 // q.bits,
            output_dims,
            "bias" in q,
            group_size=q.group_size,
            bits=q.bits,
            mode=getattr(q, "mode", "affine"),
            group=group,
        )
        layer.update(
            _shard(q.parameters(), _predicate(cls._sharding, segments, cls.__name__), group)
        )
        return layer


class QuantizedAllToShardedLinear(_QuantizedShardedLinear):
    """``AllToShardedLinear`` with a quantized weight (frozen parameters)."""

    _sharding = "all-to-sharded"
    _dense = AllToShardedLinear

    def __call__(self, x):
        y = self._matmul(sum_gradients(self.group)(x))
        return y + self["bias"] if "bias" in self else y


class QuantizedShardedToAllLinear(_QuantizedShardedLinear):
    """``ShardedToAllLinear`` with a quantized weight (frozen parameters)."""

    _sharding = "sharded-to-all"
    _dense = ShardedToAllLinear

    def __call__(self, x):
        y = nv.distributed.all_sum(self._matmul(x), group=self.group)
        return y + self["bias"] if "bias" in self else y


# -- fully sharded data parallelism --------------------------------------------------------
def _gather_fn(group, full_shapes: list, shard_sizes: list, compute_dtype) -> Callable:
    """All shards gathered into the full parameters in one ``all_gather``; its vjp sums the
    full gradients over the group and keeps this process's part (divided by the size, so
    the shards' gradients average the processes' as data parallelism does)."""
    n, rank = group.size(), group.rank()
    offsets = [0]
    for s in shard_sizes:
        offsets.append(offsets[-1] + s)
    shard_shapes = [(shape[0] // n,) + tuple(shape[1:]) for shape in full_shapes]

    def cast(x, dtype):
        return x if dtype is None or x.dtype == dtype else x.astype(dtype)

    @nv.custom_function
    def gather(shards):
        flat = nv.concatenate([cast(s.reshape(1, -1), compute_dtype) for s in shards], axis=1)
        full = nv.distributed.all_gather(flat, group=group)
        parts = nv.split(full, offsets[1:-1], axis=1)
        return [p.reshape(shape) for p, shape in zip(parts, full_shapes)]

    @gather.vjp
    def gather_vjp(shards, cotangents, outputs):
        full = nv.concatenate([c.reshape(n, -1) for c in cotangents], axis=1)
        mine = nv.distributed.all_sum(full, group=group)[rank : rank + 1] / n
        parts = nv.split(mine, offsets[1:-1], axis=1)
        return [cast(p.reshape(shape), s.dtype) for p, shape, s in zip(parts, shard_shapes, shards)]

    return gather


def _shardable(module, key, value) -> bool:
    return not isinstance(value, FullyShardedModule) and Module.valid_parameter_filter(
        module, key, value
    )


class FullyShardedModule(Module):
    """Wraps ``module`` so that each process keeps only its part (along axis 0) of every
    parameter: calls gather the full parameters first (cast to ``compute_dtype`` if given),
    and the gradients come back as the shards' (averaged over the group). Every parameter's
    axis 0 must be divisible by the group's size. Made by ``fully_shard``."""

    def __init__(self, module: Module, group=None, compute_dtype=None) -> None:
        super().__init__()
        group = _group(group)
        n = group.size()
        params = module.filter_and_map(_shardable)
        flat = tree_flatten(params)
        for path, a in flat:
            if a.ndim == 0:
                raise ValueError(f"fully_shard: cannot shard the scalar parameter {path!r}")
            if a.shape[0] % n:
                raise ValueError(
                    f"fully_shard: cannot shard parameter {path!r} of shape "
                    f"{tuple(a.shape)} over {n} processes: axis 0 must be "
                    f"divisible by {n}"
                )
        self.__dict__["_paths"] = [k for k, _ in flat]
        full_shapes = [tuple(a.shape) for _, a in flat]
        shard_sizes = [a.size // n for _, a in flat]
        module.update(_shard(params, lambda p, w: 0, group))
        self.module = module
        self.__dict__["_gather"] = _gather_fn(group, full_shapes, shard_sizes, compute_dtype)

    def _extra_repr(self) -> str:
        return f"num_sharded_params={len(self._paths)}"

    def _gathered_call(self, fn: Callable, *args, **kwargs) -> Any:
        shard_tree = self.module.filter_and_map(_shardable)
        shards = [a for _, a in tree_flatten(shard_tree)]
        fulls = self._gather(shards)
        self.module.update(tree_unflatten(list(zip(self._paths, fulls))))
        try:
            return fn(*args, **kwargs)
        finally:
            self.module.update(shard_tree)

    def __call__(self, *args, **kwargs):
        return self._gathered_call(self.module, *args, **kwargs)

    def as_linear(self, *args, **kwargs):
        """The wrapped module's ``as_linear`` (tied embeddings) with the full parameters."""
        return self._gathered_call(self.module.as_linear, *args, **kwargs)


def fully_shard(module: Module, *, group=None, compute_dtype=None) -> Module:
    """``module`` wrapped in a ``FullyShardedModule``; unchanged when the group has one
    process, the module is already wrapped or it has no parameters to shard."""
    group = _group(group)
    if group.size() == 1 or isinstance(module, FullyShardedModule):
        return module
    wrapped = FullyShardedModule(module, group=group, compute_dtype=compute_dtype)
    return wrapped if wrapped._paths else module
