"""``CustomKernel`` and ``MetalCustomKernel``: a user's kernel source (``nv.fast.cuda_kernel``,
``nv.fast.metal_kernel``) as a graph node; its parameters are the full source and launch, so
equal kernels share a compiled module. The CUDA backend runs the first, the Metal backend the
second; neither has derivative rules."""

from __future__ import annotations

from ..core.primitive import Primitive


class _UserKernel(Primitive):
    """What both user-kernel primitives share: the kernel's name and source, its outputs as
    declared, its launch, and no rules."""

    __slots__ = ("name_", "source", "output_specs", "grid", "threadgroup", "init_value")
    api = ""  # the public function's name, for the errors
    differentiable = False
    effectful = True  # user code may do anything: never folded or merged

    def __init__(self, name, source, output_specs, grid, threadgroup, init_value) -> None:
        self.name_ = name
        self.source = source
        self.output_specs = output_specs  # ((shape, dtype), ...)
        self.grid = grid
        self.threadgroup = threadgroup
        self.init_value = init_value

    @property
    def params(self) -> tuple:
        """The shared parameters; each kind adds its own after them."""
        return (
            self.name_,
            self.source,
            self.output_specs,
            self.grid,
            self.threadgroup,
            self.init_value,
        )

    def infer(self, inputs):
        return [(tuple(s), d) for s, d in self.output_specs]


class CustomKernel(_UserKernel):
    __slots__ = ("shared_memory", "contiguous")
    name = "custom_kernel"
    api = "cuda_kernel"

    def __init__(
        self,
        name: str,
        source: str,
        output_specs: tuple,
        grid: tuple,
        threadgroup: tuple,
        init_value,
        shared_memory: int,
        contiguous: bool = True,
    ) -> None:
        super().__init__(name, source, output_specs, grid, threadgroup, init_value)
        self.shared_memory = int(shared_memory)
        self.contiguous = bool(contiguous)

    @property
    def params(self) -> tuple:
        return super().params + (self.shared_memory, self.contiguous)


class MetalCustomKernel(_UserKernel):
    """A user's Metal kernel (``nv.fast.metal_kernel``): the full generated source, the entry
    point's name, the launch (grid in threads), how many argument slots each input takes
    (itself, then its shape / strides / ndim where the source reads them) and which of those
    three each input has. Only the Metal backend runs it."""

    __slots__ = ("slots", "shape_info", "contiguous", "math_mode")
    name = "metal_kernel"
    api = "metal_kernel"

    def __init__(
        self,
        name: str,
        source: str,
        output_specs: tuple,
        grid: tuple,
        threadgroup: tuple,
        init_value,
        slots: tuple,
        shape_info: tuple,
        contiguous: bool = True,
        math_mode: str = "safe",
    ) -> None:
        super().__init__(name, source, output_specs, grid, threadgroup, init_value)
        self.slots = slots
        self.shape_info = shape_info
        self.contiguous = bool(contiguous)
        self.math_mode = math_mode

    @property
    def params(self) -> tuple:
        return super().params + (self.slots, self.shape_info, self.contiguous, self.math_mode)
