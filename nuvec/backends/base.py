"""What a backend is: one ``Backend`` object per device kind, listed in ``registry.BACKENDS``.

compile, ``nv.fast`` and the primitives ask the backend of a stream what it can do (fuse,
lower a composite to one primitive, replay a tape on its data) and never name a device:

    b = registry.backend_of(stream)
    b.policy.fuses, b.dialect, b.data_type
    launchers = b.prepare(specs, CompileOptions(fast_math=False))  # spec -> kernel(datas, shape)
    b.supports(LayerNorm(1e-5, True, True), [x, w, b])       # else the graph keeps the composite

A backend's folder registers its primitive implementations (``registry.register``) when its
package is imported; its ``backend.py`` holds the object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..codegen import generator, source
from ..codegen.errors import KernelCompileError as KernelCompileError  # re-exported


@dataclass(frozen=True)
class CompileOptions:
    """What ``nv.compile``'s caller asked for that a backend may honour."""

    fast_math: bool = False


@dataclass(frozen=True)
class FusionPolicy:
    """Which of compile's rewrites a backend takes (each keeps the results' bits on it)."""

    #: element-wise chains become one generated kernel
    fuses: bool = False
    #: a member read after its group (by a later step) becomes another output of the kernel
    read_after_outputs: bool = False
    #: ``addmm`` read only by element-wise steps becomes a product plus a fusable add (the
    #: backend's addmm adds in the product's dtype, so the bits are the same)
    split_addmm: bool = False
    #: a product read only through transposes becomes ``PermutedMatmul`` (written in their
    #: layout); needs ``PermutedMatmul`` in the backend's lowerings
    permute_matmuls: bool = False
    #: reductions move right after the step making their argument (cache locality)
    hoist_reductions: bool = False
    #: fused steps move as late as their readers allow, so that independent ones are
    #: consecutive (the backend launches such a run as one kernel)
    gather_kernels: bool = False
    #: ``fast_math=True`` gives approximate kernels (otherwise the option is ignored)
    fast_math: bool = False
    #: fused kernels may be built on the worker thread while the unfused tape runs
    background_kernels: bool = False


class Backend:
    """A device kind's backend (subclassed once per folder; see the module docstring)."""

    #: "cpu", "cuda", "metal"
    name: str = ""
    #: the device type whose streams it runs ("cpu" or "gpu")
    device_type: str = ""
    #: the codegen dialect of its element-wise kernels ("c", "cuda", "metal")
    dialect: str = ""
    #: the array type its implementations take and return
    data_type: type = object
    policy: FusionPolicy = FusionPolicy()
    #: composite primitives (``primitives._common.Expanding``) it may run as one primitive
    lowerings: frozenset = frozenset()
    #: a compiled tape may replay directly on ``data_type`` data (no graph nodes)
    replays: bool = False
    #: the buffer type a fused kernel may overwrite when the replay holds the only reference
    #: (donation of intermediates and of state inputs); None: never
    donation_base: type | None = None
    #: a Python scalar operand becomes an evaluated zero-stride view of the other operand's
    #: shape (nothing to broadcast at evaluation); else a 0-d constant
    broadcast_scalars: bool = False

    def is_available(self) -> bool:
        return True

    def unavailable_reason(self) -> str:
        return ""

    def upload(self, host: Any, dtype: Any = None) -> Any:
        """Host (NumPy) data as this backend's data."""
        raise NotImplementedError(f"{self.name}: upload")

    def to_host(self, data: Any, dtype: Any = None) -> Any:
        """This backend's data as NumPy (``dtype``: the array's nuvec dtype)."""
        raise NotImplementedError(f"{self.name}: to_host")

    def synchronize(self, stream: Any = None) -> None:
        """Waits for the work queued on ``stream`` (every stream when None)."""

    def prepare(self, specs: Sequence[Any], options: CompileOptions) -> dict:
        """Builds the kernels of ``specs`` (fused KernelSpecs) together; returns ``{spec:
        launcher}`` with ``launcher(datas, shape[, outs]) -> outputs``, or ``{}`` when fused
        steps run through the registered ``Compiled`` implementation. Raises
        ``KernelCompileError`` when they cannot be built."""
        return {}

    def ready(self, specs: Sequence[Any]) -> bool:
        """Whether ``prepare(specs, ...)`` would run no compiler (background building)."""
        return True

    def source(self, spec: Any) -> str:
        """The generated source of one fused kernel (what ``inspect`` shows)."""
        return source.generate(spec, self.dialect, generator.kernel_name(spec))

    def replay_constants(self, consts: list) -> list:
        """The data of a tape's constants for a direct replay (uploaded once, not per call);
        an entry of another type keeps the tape off the direct path."""
        return [c._data for c in consts]

    def executable(self, tape: Any) -> Callable[[list], list] | None:
        """A runnable form of ``tape`` for direct replays (``run(inputs) -> outputs``), or
        None: the tape replays its steps itself."""
        return None

    def describe_executable(self, tape: Any) -> dict | None:
        """What runs ``tape`` (``f.stats()["executable"]``), or None: nothing to say."""
        return None

    def supports(self, prim: Any, inputs: Sequence[Any]) -> bool:
        """Whether this backend runs the composite primitive ``prim`` on ``inputs`` as one
        primitive (MLX's ``use_fallback`` negated); else the graph keeps the composite."""
        return False

    def __repr__(self) -> str:
        return f"<{self.name} backend>"
