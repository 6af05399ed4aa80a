"""``Module``: the base class of every layer (MLX's ``mlx.nn.Module`` semantics).

A module is a ``dict``. Attributes that are arrays, dicts, lists or tuples are stored as dict
items, so the module is a tree (a pytree) of its parameters and sub-modules; other attributes
(ints, floats, callables) are plain Python attributes. Keys that start with ``_`` are never
parameters.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> from nuvec.utils import tree_flatten
>>> class MLP(nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.layers = [nn.Linear(4, 8), nn.Linear(8, 2)]
...     def __call__(self, x):
...         return self.layers[1](nn.relu(self.layers[0](x)))
>>> sorted(k for k, _ in tree_flatten(MLP().parameters()))
['layers.0.bias', 'layers.0.weight', 'layers.1.bias', 'layers.1.weight']
"""

from __future__ import annotations

import textwrap
from typing import Any, Callable, Optional, Union

import nuvec as nv
from nuvec.utils import tree_flatten, tree_unflatten

from ...files import load_arrays, save_arrays

Filter = Callable[["Module", str, Any], bool]


def _is_floating(dtype) -> bool:
    return nv.issubdtype(dtype, nv.floating)


class Module(dict):
    """Base class for layers and models: parameters and sub-modules are its dict items."""

    __call__: Callable

    def __init__(self) -> None:
        super().__init__()
        self._no_grad: set = set()
        self._training = True

    # -- attribute access: tree-like members live in the dict ----------------------------
    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {key!r}"
            ) from None

    def __setattr__(self, key: str, val: Any) -> None:
        if isinstance(val, (nv.array, dict, list, tuple)):
            # a plain attribute of that name would shadow the dict item: drop it
            if key in self.__dict__:
                del self.__dict__[key]
            self[key] = val
        else:
            super().__setattr__(key, val)
            self.pop(key, None)

    def __delattr__(self, key: str) -> None:
        if key in self:
            del self[key]
        else:
            super().__delattr__(key)

    # dict equality would compare arrays element-wise; modules are equal only to themselves
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__  # type: ignore[assignment]

    @property
    def training(self) -> bool:
        """True in training mode (see ``train()`` / ``eval()``)."""
        return self._training

    @property
    def state(self) -> "Module":
        """The module itself: its whole tree (parameters and buffers such as running means),
        for ``nv.compile(..., inputs=model.state, outputs=model.state)``."""
        return self

    def _extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = tree_flatten(self.children(), is_leaf=self.is_module)
        head = f"{type(self).__name__}({self._extra_repr()}"
        if not children:
            return head + ")"
        body = "\n".join(f"({k}): {v!r}" for k, v in children)
        return head + "\n" + textwrap.indent(body, "  ") + "\n)"

    # -- filters ---------------------------------------------------------------------------
    @staticmethod
    def is_module(value: Any) -> bool:
        return isinstance(value, Module)

    @staticmethod
    def valid_child_filter(module: "Module", key: str, value: Any) -> bool:
        return isinstance(value, (dict, list))

    @staticmethod
    def valid_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        return isinstance(value, (dict, list, nv.array)) and not key.startswith("_")

    @staticmethod
    def trainable_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        return Module.valid_parameter_filter(module, key, value) and key not in module._no_grad

    def filter_and_map(
        self,
        filter_fn: Filter,
        map_fn: Optional[Callable] = None,
        is_leaf_fn: Optional[Filter] = None,
    ) -> dict:
        """The tree of this module's members that pass ``filter_fn(module, key, value)``, with
        ``map_fn`` applied to each leaf (``is_leaf_fn(module, key, value)`` says what a leaf
        is; by default anything that is not a module, dict or list).

        Keys inside nested dicts and lists are dotted (``"layers.0"``) when passed to
        ``filter_fn``, which is how freezing one element of a list works."""
        map_fn = map_fn or (lambda x: x)
        is_leaf_fn = is_leaf_fn or (lambda m, k, v: not isinstance(v, (Module, dict, list)))
        return {
            k: _unwrap(self, k, v, filter_fn, map_fn, is_leaf_fn)
            for k, v in self.items()
            if filter_fn(self, k, v)
        }

    # -- views of the tree -----------------------------------------------------------------
    def parameters(self) -> dict:
        """All parameters (arrays), frozen or not, as nested dicts and lists."""
        return self.filter_and_map(self.valid_parameter_filter)

    def trainable_parameters(self) -> dict:
        """The parameters that are not frozen."""
        return self.filter_and_map(self.trainable_parameter_filter)

    def children(self) -> dict:
        """The direct sub-modules (inside dicts and lists as well)."""
        return self.filter_and_map(
            self.valid_child_filter, is_leaf_fn=lambda m, k, v: isinstance(v, Module)
        )

    def leaf_modules(self) -> dict:
        """The sub-modules that have no sub-modules of their own."""

        def is_leaf_module(m, k, v):
            return isinstance(v, Module) and not tree_flatten(v.children())

        return self.filter_and_map(self.valid_child_filter, is_leaf_fn=is_leaf_module)

    def apply_to_modules(self, apply_fn: Callable[[str, "Module"], Any]) -> "Module":
        """Calls ``apply_fn(path, module)`` on this module (path ``""``) and every
        sub-module (``"layers.0"``...)."""
        stack: list[tuple[str, Module]] = [("", self)]
        while stack:
            prefix, mod = stack.pop()
            apply_fn(prefix, mod)
            sub = tree_flatten(mod.children(), is_leaf=self.is_module)
            stack.extend((f"{prefix}.{k}" if prefix else k, m) for k, m in sub)
        return self

    def modules(self) -> list["Module"]:
        """This module and all its sub-modules."""
        out: list[Module] = []
        self.apply_to_modules(lambda k, m: out.append(m))
        return out

    def named_modules(self) -> list[tuple[str, "Module"]]:
        """``(path, module)`` for this module (path ``""``) and all its sub-modules."""
        out: list[tuple[str, Module]] = []
        self.apply_to_modules(lambda k, m: out.append((k, m)))
        return out

    # -- changing the tree -----------------------------------------------------------------
    def update(self, parameters: dict, strict: bool = True) -> "Module":  # type: ignore[override]
        """Replaces parameters with those in ``parameters`` (a full or partial tree like
        ``parameters()``). With ``strict``, a name the module lacks or a non-array where an
        array is is a ValueError."""
        _update(self, parameters, strict, "update")
        return self

    def apply(self, map_fn: Callable[[Any], Any], filter_fn: Optional[Filter] = None) -> "Module":
        """Maps the parameters through ``map_fn`` in place, e.g.
        ``model.apply(lambda p: p.astype(nv.float16))``."""
        filter_fn = filter_fn or Module.valid_parameter_filter
        self.update(self.filter_and_map(filter_fn, map_fn))
        return self

    def update_modules(self, modules: dict, strict: bool = True) -> "Module":
        """Replaces sub-modules with those in ``modules`` (a partial tree like
        ``children()``)."""
        _update_modules(self, modules, strict)
        return self

    def set_dtype(self, dtype, predicate: Optional[Callable] = _is_floating) -> None:
        """Casts the parameters whose dtype passes ``predicate`` (by default the floating
        ones, so integer parameters keep their dtype); ``predicate=None`` casts them all.

        >>> import nuvec.nn as nn
        >>> lin = nn.Linear(2, 2)
        >>> lin.set_dtype(nv.bfloat16)
        >>> lin.weight.dtype
        nuvec.bfloat16
        """
        if predicate is None:

            def predicate(_):
                return True

        self.apply(lambda x: nv.astype(x, dtype) if predicate(x.dtype) else x)

    # -- freezing --------------------------------------------------------------------------
    def _validate_keys(self, keys, strict: bool) -> list:
        keys = keys if isinstance(keys, list) else [keys]
        if strict:
            for k in keys:
                if k not in self:
                    raise KeyError(f"{type(self).__name__} has no member {k!r}")
        return keys

    def _validate_keys_anywhere(self, keys) -> None:
        keys = keys if isinstance(keys, list) else [keys]
        mods = self.modules()
        for k in keys:
            if not any(k in m for m in mods):
                raise KeyError(f"{type(self).__name__}: no module has a member {k!r}")

    def freeze(
        self, *, recurse: bool = True, keys: Union[str, list, None] = None, strict: bool = False
    ) -> "Module":
        """Freezes parameters (no gradients are computed for them): all of them, or only
        those named ``keys`` (e.g. ``model.freeze(keys="bias")``); in sub-modules too
        unless ``recurse=False``. ``strict`` checks that the keys exist."""

        def freeze_one(_, m: Module) -> None:
            local = keys
            if local is None:
                own = m.filter_and_map(
                    lambda mm, k, v: (
                        not isinstance(v, Module) and mm.valid_parameter_filter(mm, k, v)
                    )
                )
                local = [k for k, _ in tree_flatten(own)]
            m._no_grad.update(m._validate_keys(local, strict_here))

        strict_here = strict
        if recurse:
            if strict and keys is not None:
                self._validate_keys_anywhere(keys)
                strict_here = False
            self.apply_to_modules(freeze_one)
        else:
            freeze_one("", self)
        return self

    def unfreeze(
        self, *, recurse: bool = True, keys: Union[str, list, None] = None, strict: bool = False
    ) -> "Module":
        """Undoes ``freeze`` for all parameters or those named ``keys``."""

        def unfreeze_one(_, m: Module) -> None:
            if keys is None:
                m._no_grad.clear()
            else:
                m._no_grad.difference_update(m._validate_keys(keys, strict_here))

        strict_here = strict
        if recurse:
            if strict and keys is not None:
                self._validate_keys_anywhere(keys)
                strict_here = False
            self.apply_to_modules(unfreeze_one)
        else:
            unfreeze_one("", self)
        return self

    # -- modes -----------------------------------------------------------------------------
    def _set_training_mode(self, mode: bool) -> None:
        self._training = mode

    def train(self, mode: bool = True) -> "Module":
        """Training mode (Dropout drops, BatchNorm uses batch statistics) for this module and
        its sub-modules."""
        self.apply_to_modules(lambda _, m: m._set_training_mode(mode))
        return self

    def eval(self) -> "Module":
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    # -- files -----------------------------------------------------------------------------
    def save_weights(self, file: str) -> None:
        """Saves the parameters to ``file`` (``.npz`` or ``.safetensors``), keys dotted
        (``"layers.0.weight"``)."""

        save_arrays(str(file), dict(tree_flatten(self.parameters())), "save_weights")

    def load_weights(self, file_or_weights, strict: bool = True) -> "Module":
        """Loads parameters from a ``.npz`` / ``.safetensors`` file or a list of
        ``(name, array)`` pairs.

        With ``strict`` (the default) the names must be exactly the model's and each shape
        must match, else a ValueError lists what is extra, missing or mis-shaped; without it,
        only the names the model has are loaded."""
        weights = file_or_weights
        if isinstance(weights, (str, bytes)) or hasattr(weights, "__fspath__"):
            weights = list(load_arrays(str(weights), "load_weights").items())
        elif isinstance(weights, dict):
            weights = list(weights.items())
        if strict:
            _check_weights(dict(weights), dict(tree_flatten(self.parameters())))
        else:
            have = dict(tree_flatten(self.parameters()))
            weights = [(k, v) for k, v in weights if k in have]
        if weights:
            self.update(tree_unflatten(list(weights)), strict=False)
        return self


def _check_weights(new: dict, current: dict) -> None:
    extra = sorted(new.keys() - current.keys())
    missing = sorted(current.keys() - new.keys())
    problems = []
    if extra:
        problems.append(f"{len(extra)} not in the model: {', '.join(extra)}")
    if missing:
        problems.append(f"{len(missing)} missing: {', '.join(missing)}")
    for k in sorted(current.keys() & new.keys()):
        v = new[k]
        if not isinstance(v, nv.array):
            problems.append(f"{k} is a {type(v).__name__}, not an array")
        elif tuple(v.shape) != tuple(current[k].shape):
            problems.append(
                f"{k} has shape {tuple(v.shape)}, the model has {tuple(current[k].shape)}"
            )
    if problems:
        raise ValueError(
            "load_weights: the weights do not match the model: "
            + "; ".join(problems)
            + " (pass strict=False to load what matches)"
        )


def _unwrap(
    model: Module, key: str, value: Any, filter_fn: Filter, map_fn: Callable, is_leaf_fn: Filter
) -> Any:
    if is_leaf_fn(model, key, value):
        return map_fn(value)
    if isinstance(value, Module):
        return {
            k: _unwrap(value, k, v, filter_fn, map_fn, is_leaf_fn)
            for k, v in value.items()
            if filter_fn(value, k, v)
        }
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            sub = f"{key}.{k}"
            out[k] = (
                _unwrap(model, sub, v, filter_fn, map_fn, is_leaf_fn)
                if filter_fn(model, sub, v)
                else {}
            )
        return out
    if isinstance(value, list):
        lst = []
        for i, v in enumerate(value):
            sub = f"{key}.{i}"
            lst.append(
                _unwrap(model, sub, v, filter_fn, map_fn, is_leaf_fn)
                if filter_fn(model, sub, v)
                else {}
            )
        return lst
    raise TypeError(
        f"Module: unexpected member {key!r} of type {type(value).__name__} "
        "while walking the module tree"
    )


def _items(dst, src, strict: bool, what: str):
    """Pairs (index or key, new value) of ``src`` that exist in ``dst``."""
    if isinstance(src, dict):
        if not isinstance(dst, dict):
            if strict:
                raise ValueError(f"{what}: got a dict where the module has a {type(dst).__name__}")
            return
        for k, v in src.items():
            if k in dst:
                yield k, v
            elif strict:
                raise ValueError(f"{what}: the module has no member named {k!r}")
    elif isinstance(src, (list, tuple)):
        if not isinstance(dst, (list, tuple)):
            if strict:
                raise ValueError(f"{what}: got a list where the module has a {type(dst).__name__}")
            return
        for i, v in enumerate(src):
            if i < len(dst):
                yield i, v
            elif strict:
                raise ValueError(
                    f"{what}: list index {i} is out of range for a member of length {len(dst)}"
                )
    elif strict:
        raise ValueError(f"{what}: expected a dict or list, got {type(src).__name__}")


def _update(dst, src, strict: bool, what: str) -> None:
    for k, new in list(_items(dst, src, strict, what)):
        cur = dst[k]
        if isinstance(cur, nv.array):
            if strict and not isinstance(new, nv.array):
                raise ValueError(f"{what}: {k!r} must be an array, got {type(new).__name__}")
            _set(dst, k, new)
        elif isinstance(cur, (dict, list, tuple)):
            _update(cur, new, strict, what)


def _update_modules(dst, src, strict: bool) -> None:
    for k, new in list(_items(dst, src, strict, "update_modules")):
        cur = dst[k]
        if isinstance(cur, Module) and isinstance(new, Module):
            _set(dst, k, new)
        elif isinstance(cur, (dict, list, tuple)):
            _update_modules(cur, new, strict)
        elif strict and not (isinstance(new, dict) and not new):
            raise ValueError(f"update_modules: {k!r} is not a module (got {type(new).__name__})")


def _set(dst, k, value) -> None:
    if isinstance(dst, tuple):
        raise TypeError(f"Module: cannot replace item {k} of a tuple member; use a list")
    dst[k] = value
