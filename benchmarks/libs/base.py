"""The adapter interface every library implements, and a generic one for array libraries.

A workload asks the adapter for a *thunk*: a no-argument callable that runs the work once and
returns the materialised result (lazy libraries evaluate inside it). ``NotApplicable`` means the
library has no such feature by design (NumPy has no compiler); any other exception is recorded
by the worker as "not available" (ImportError, AttributeError, NotImplementedError) or "error".
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .. import workloads as W

Thunk = Callable[[], Any]


class NotApplicable(Exception):
    """The library has no such variant or operation (a fact about it, not a failure)."""


class Adapter:
    """Base adapter. Subclasses set ``name`` and ``eager``/``compiled`` variant labels."""

    name = "?"
    eager: str | None = None  # label of the eager variant, e.g. "jax"
    compiled: str | None = None  # label of the compiled variant, e.g. "jax.jit"

    def load(self) -> str:
        """Import the library; return its version."""
        raise NotImplementedError

    def variants(self, group: str) -> list[str]:
        """Variant labels this library offers for a workload group."""
        both = [v for v in (self.eager, self.compiled) if v]
        return {
            "eager": [self.eager] if self.eager else [],
            "fused": both,
            "overhead": both,
            "train": both,
            "memory": both,
            "first_call": [self.compiled] if self.compiled else [],
        }.get(group, [])

    def is_compiled(self, variant: str) -> bool:
        return variant == self.compiled

    def to_numpy(self, out: Any) -> np.ndarray:
        return np.asarray(out)

    # --- workloads (override in subclasses) ---
    def elementwise(self, op: str, xs: list[np.ndarray], variant: str) -> Thunk:
        raise NotApplicable("no element-wise ops")

    def chain(self, name: str, xs: list[np.ndarray], variant: str) -> Thunk:
        raise NotApplicable("no chains")

    def warm_runtime(self) -> None:
        """Start the library's compiler machinery on an unrelated tiny function (first-call
        runs)."""

    def first_call(self, x: np.ndarray, variant: str) -> Thunk:
        raise NotApplicable("no compiler")

    def compile_split(self, compiled_fn: Any) -> dict[str, Any] | None:
        """Where the first call's time went (trace/simplify/fuse/cc), if the library reports it."""
        return None

    def train(self, variant: str, case: str = "mlp_step") -> tuple[Thunk, Callable[[Any], float]]:
        """Return (one training step of ``case``, loss-to-float)."""
        raise NotApplicable("no autodiff")


class ArrayAdapter(Adapter):
    """Adapter for libraries with NumPy-like arrays, operators and (maybe) a compile function.

    Subclasses provide ``F`` (the namespace of ``workloads``), ``asarray``, ``sync`` (block until
    the value exists and return it) and ``compile_fn``.
    """

    F: Any = None

    def asarray(self, a: np.ndarray) -> Any:
        raise NotImplementedError

    def sync(self, out: Any) -> Any:
        return out

    def settle(self) -> None:
        """Wait for what the library still does off the calling thread after a first call
        (nuvec builds fused kernels on a worker thread), so that timing starts in the steady
        state, as it does for a library that compiles inside its first call."""

    def compile_fn(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        raise NotApplicable(f"{self.name} has no compiler")

    def _wrap(self, fn: Callable[..., Any], variant: str) -> Callable[..., Any]:
        if self.is_compiled(variant):
            return self.compile_fn(fn)
        if variant != self.eager:
            raise NotApplicable(f"{self.name} has no variant {variant}")
        return fn

    def _args(self, xs: list[np.ndarray]) -> list[Any]:
        args = [self.asarray(x) for x in xs]
        self.sync(args)
        return args

    def elementwise(self, op: str, xs: list[np.ndarray], variant: str) -> Thunk:
        f = getattr(self.F, op)
        args = self._args(xs)
        return lambda: self.sync(f(*args))

    def chain(self, name: str, xs: list[np.ndarray], variant: str) -> Thunk:
        fn = self._wrap(functools.partial(W.CHAINS[name].fn, self.F), variant)
        args = self._args(xs)
        return lambda: self.sync(fn(*args))

    def warm_runtime(self) -> None:
        if self.compiled:
            f = self.compile_fn(lambda a: a * 3.0 - 1.0)
            self.sync(f(*self._args([np.ones(8, np.float32)])))

    def first_call(self, x: np.ndarray, variant: str) -> Thunk:
        if not self.is_compiled(variant):
            raise NotApplicable("first-call latency is measured for compiled variants only")
        (arg,) = self._args([x])

        def thunk() -> Any:
            # compile inside: creating the wrapper is part of what a user pays for a new function
            self._last_compiled = self.compile_fn(functools.partial(W.ops200, self.F))
            return self.sync(self._last_compiled(arg))

        return thunk
