"""What every Metal implementation shares: the device, command queues, kernel caches,
argument binding, and registration for the "gpu" device.

Data. An array evaluated on the Apple GPU holds a ``memory.MetalArray``: a NumPy array in a
shared shim buffer plus the dispatch that writes it. Kernels read their inputs in place (any
view of a shim buffer: slices, transposes, broadcasts); NumPy inputs (constants, CPU results)
are copied into a shared buffer first, once (an array on a GPU stream keeps the copy).

Queues. Each nuvec GPU ``Stream`` has one shim command stream (a Metal command queue).
Dispatches of one stream run in order, and each is committed at once so the GPU starts while
Python goes on. A ticket (the count of dispatches so far) marks each result; reading one
(``MetalArray.get``) waits only if the stream has not been seen to finish that ticket. An input
made on another stream is waited for before the dispatch (no cross-queue events).

Registration: ``@gpu(PrimClass)`` records ``fn(prim, datas, node)`` in ``IMPLS``; every input
arrives as a MetalArray in shared memory. Nothing is registered with the registry on import
(a CUDA machine imports this module too): ``nuvec.backends.metal.install`` registers ``IMPLS``
for "gpu" and then, through ``register_fallbacks``, for every primitive with a CPU
implementation and no Metal one, that CPU implementation over the same memory (after waiting
for its inputs); its results are wrapped without a copy.

Tests swap the device with ``use_device`` (the shim's host device plus an emulated dispatcher
on Linux); nothing here needs Metal until a kernel is dispatched.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

import numpy as np

from ...codegen.generator import kernel_name
from ...codegen.source import generate, generate_many
from ...codegen.ir import KernelSpec
from . import layout, memory, shim
from .memory import MetalArray

__all__ = [
    "Queue",
    "device",
    "limits",
    "queue",
    "use_device",
    "synchronize",
    "resolve_args",
    "launch",
    "elementwise_kernel",
    "prepare",
    "matmul_kernel",
    "as_input",
    "gpu",
    "IMPLS",
    "on_cpu",
    "host_impl",
    "register_fallbacks",
]


class Queue:
    """A shim command stream and how far the GPU is known to have got in it.

    >>> q = Queue(stream)        # stream: shim.Stream (or anything with its methods)
    >>> t = q.dispatch(kernel, args, (n, 1, 1))
    >>> q.wait_for(t)            # returns at once if an earlier wait already covered t
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.encoded = 0  # dispatches so far (the last ticket handed out)
        self.done = 0  # every ticket <= done has finished

    def dispatch(
        self,
        kernel: Any,
        args: dict,
        grid: tuple,
        threadgroup: tuple = (0, 0, 0),
        mode: str = "threads",
    ) -> int:
        """Encodes and commits one dispatch; returns its ticket."""
        with self.lock:
            self.stream.dispatch(kernel, args, grid, threadgroup, mode)
            self.encoded += 1
            self.stream.commit()
            return self.encoded

    def wait_for(self, ticket: int) -> None:
        """Blocks until dispatch ``ticket`` has finished (ShimError if the GPU failed)."""
        if self.done >= ticket:
            return
        with self.lock:
            if self.done >= ticket:
                return
            target = self.encoded
            self.stream.synchronize()
            self.done = target

    def synchronize(self) -> None:
        self.wait_for(self.encoded)


class _State:
    lock = threading.RLock()
    device: Any = None
    limits: dict | None = None
    queues: dict = {}
    libraries: dict = {}  # KernelSpec -> (library, name)
    kernels: dict = {}  # (KernelSpec | "mm", variant | dtype) -> kernel
    mm_library: Any = None


def device() -> Any:
    """The Metal device (opened on first use; ``use_device`` replaces it in tests)."""
    d = _State.device
    if d is None:
        with _State.lock:
            if _State.device is None:
                _State.device = shim.Device.open()
            d = _State.device
    return d


def limits() -> dict:
    lim = _State.limits
    if lim is None:
        lim = _State.limits = device().limits
    return lim


@contextlib.contextmanager
def use_device(dev: Any) -> Iterator[Any]:
    """Runs the backend on ``dev`` (an object with shim.Device's methods) with fresh caches;
    restores the previous state after. For tests."""
    with _State.lock:
        saved = (
            _State.device,
            _State.limits,
            _State.queues,
            _State.libraries,
            _State.kernels,
            _State.mm_library,
        )
        _State.device, _State.limits, _State.queues = dev, None, {}
        _State.libraries, _State.kernels, _State.mm_library = {}, {}, None
    try:
        yield dev
    finally:
        with _State.lock:
            (
                _State.device,
                _State.limits,
                _State.queues,
                _State.libraries,
                _State.kernels,
                _State.mm_library,
            ) = saved


def queue(stream: Any) -> Queue:
    """The Queue of nuvec stream ``stream`` (made on first use)."""
    q = _State.queues.get(stream)
    if q is None:
        with _State.lock:
            q = _State.queues.get(stream)
            if q is None:
                q = _State.queues[stream] = Queue(device().stream())
    return q


def synchronize(stream: Any = None) -> None:
    """Waits for the work queued on ``stream`` (every stream when None)."""
    if stream is not None:
        q = _State.queues.get(stream)
        if q is not None:
            q.synchronize()
        return
    for q in list(_State.queues.values()):
        q.synchronize()


# ----------------------------------------------------------------------------- kernels

_NAMES: dict[KernelSpec, str] = {}


def name_of(spec: KernelSpec) -> str:
    """The kernel base name of ``spec`` (cached: a fused spec's name is a hash)."""
    n = _NAMES.get(spec)
    if n is None:
        n = _NAMES[spec] = kernel_name(spec)
    return n


def elementwise_kernel(spec: KernelSpec, variant: str) -> tuple[Any, str]:
    """(pipeline, kernel base name) of ``spec``'s ``variant`` entry (compiled on first use,
    all three variants in one library; the shim caches libraries by source hash)."""
    key = (spec, variant)
    k = _State.kernels.get(key)
    name = name_of(spec)
    if k is None:
        lib = _State.libraries.get(spec)
        if lib is None:
            lib = device().compile(generate(spec, "metal", name), math_mode="safe")
            _State.libraries[spec] = lib
        k = _State.kernels.setdefault(key, lib.kernel(f"{name}_{variant}"))
    return k, name


def prepare(specs) -> int:
    """Compiles the kernels of ``specs`` not compiled yet in ONE library (what a compiled
    function's trace needs); returns how many specs were compiled."""
    todo = [s for s in dict.fromkeys(specs) if s not in _State.libraries]
    if not todo:
        return 0
    named = [(name_of(s), s) for s in todo]
    lib = device().compile(generate_many(named, "metal"), math_mode="safe")
    for _, s in named:
        _State.libraries.setdefault(s, lib)
    return len(todo)


def matmul_kernel(dtype: str) -> Any:
    """The pipeline of ``nv_mm_<dtype>`` (layout.matmul_source, compiled once)."""
    key = ("mm", dtype)
    k = _State.kernels.get(key)
    if k is None:
        with _State.lock:
            if _State.mm_library is None:
                _State.mm_library = device().compile(layout.matmul_source(), math_mode="safe")
        k = _State.kernels.setdefault(key, _State.mm_library.kernel(f"nv_mm_{dtype}"))
    return k


# ----------------------------------------------------------------------------- arguments


def resolve_args(plan: layout.Launch, arrays: list, dev: Any, max_constant: int) -> dict:
    """The shim arguments of ``plan``: each ArrayRef becomes (Buffer, byte offset of the
    array's first element); constants stay bytes up to ``max_constant`` bytes (Metal's
    setBytes limit), larger ones go into a new buffer (the shim keeps it alive while used)."""
    out: dict[int, Any] = {}
    for slot, v in plan.args.items():
        if isinstance(v, layout.ArrayRef):
            a = arrays[v.index]
            a = a.array if isinstance(a, MetalArray) else a
            loc = memory.locate(a)
            if loc is None:
                raise ValueError(f"{plan.kernel}: argument {slot} is not in a shared buffer")
            if loc[1] % a.itemsize:
                raise ValueError(f"{plan.kernel}: argument {slot} is not element-aligned")
            out[slot] = loc
        elif len(v) <= max_constant:
            out[slot] = bytes(v)
        else:
            out[slot] = (dev.buffer_from(bytes(v)), 0)
    return out


def launch(plan: layout.Launch, arrays: list, q: Queue, kernel: Any) -> int:
    """Dispatches ``plan`` over ``arrays`` (inputs, then outputs) on ``q``; returns the ticket."""
    args = resolve_args(plan, arrays, device(), limits()["max_constant_argument_length"])
    return q.dispatch(kernel, args, plan.grid, plan.threadgroup, plan.mode)


def as_input(data: Any, q: Queue) -> MetalArray:
    """``data`` (a MetalArray or NumPy data) readable by a kernel on ``q``: in a shared
    buffer, element-aligned, and finished if another queue writes it."""
    if isinstance(data, MetalArray):
        pend = data.pending
        if pend is not None and pend is not q:
            data.wait()
        if not memory.is_addressable(data.array):
            data.wait()
            data.array = memory.to_shared(device(), data.array)
        return data
    a = np.asarray(data)
    if not memory.is_addressable(a):
        a = memory.to_shared(device(), a)
    return MetalArray(a)


# ----------------------------------------------------------------------------- registration

IMPLS: dict[type, Callable] = {}  # primitive type -> Metal "gpu" implementation


def gpu(prim_type: type) -> Callable[[Callable], Callable]:
    """Records ``fn(prim, datas, node)`` as ``prim_type``'s Metal implementation in ``IMPLS``
    (``nuvec.backends.metal.install`` registers them for "gpu"); ``datas`` arrive as
    MetalArrays in shared memory (see the module docstring)."""

    def deco(fn: Callable) -> Callable:
        def run(prim, datas, node, fn=fn):
            q = queue(node._stream)
            ins = node._inputs
            datas = list(datas)
            for i, d in enumerate(datas):
                m = as_input(d, q)
                if m is not d and i < len(ins):
                    x = ins[i]
                    if x._data is d and x._stream.device.type.value == "gpu":
                        x._data = m  # upload once: later readers find the shared copy
                datas[i] = m
            return fn(prim, datas, node)

        run.__name__ = f"metal_{fn.__name__}"
        run.__wrapped__ = fn
        IMPLS[prim_type] = run
        return fn

    return deco


def on_cpu(prim, datas: list, node, cpu_fn: Callable | None = None) -> list:
    """Runs ``prim`` through its CPU implementation over the same memory: waits for the
    inputs, reads them in place, wraps the results (already computed) without a copy."""
    if cpu_fn is None:
        from .. import cpu  # noqa: F401  (registers the CPU implementations)
        from ..registry import _IMPLS

        cpu_fn = _IMPLS[("cpu", type(prim))]
    host = [d.get() if isinstance(d, MetalArray) else d for d in datas]
    outs = cpu_fn(prim, host, node)
    return [o if isinstance(o, MetalArray) else MetalArray(np.asarray(o)) for o in outs]


def host_impl(cpu_fn: Callable) -> Callable:
    """The "gpu" implementation of a primitive Metal has no kernel for: ``cpu_fn`` on the
    unified memory (``on_cpu``)."""

    def run(prim, datas, node, cpu_fn=cpu_fn):
        return on_cpu(prim, list(datas), node, cpu_fn)

    run.__name__ = f"metal_on_cpu_{getattr(cpu_fn, '__name__', 'impl')}"
    run.__wrapped__ = cpu_fn
    return run


def register_fallbacks(
    impls: dict, register: Callable[[type, Callable], None], metal: dict | None = None
) -> list[type]:
    """For every (``"cpu"``, primitive) in ``impls`` that has no Metal kernel (not in
    ``metal``, by default ``IMPLS``), registers ``host_impl`` of its CPU implementation through
    ``register(prim_type, fn)``, replacing any other "gpu" entry (the host-staged collectives
    are written for CUDA); returns those primitive types."""
    metal = IMPLS if metal is None else metal
    done = []
    for (dev, prim_type), fn in list(impls.items()):
        if dev == "cpu" and prim_type not in metal:
            register(prim_type, host_impl(fn))
            done.append(prim_type)
    return done
