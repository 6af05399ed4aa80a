"""``nv.fast.metal_kernel``: a user's Metal Shading Language kernel body, given a generated
signature as MLX's ``mx.fast.metal_kernel`` writes it, run through the Swift shim.

The source generation is plain Python and runs anywhere; launching needs a Metal device
(``nv.metal.is_available()``). What is generated for ``metal_kernel("k", ["a"], ["out"], src)``
called on a float32 ``a`` with 16 elements::

    [[kernel]] void custom_kernel_k_float_float(
      const device float* a [[buffer(0)]],
      device float* out [[buffer(1)]],
      uint3 thread_position_in_grid [[thread_position_in_grid]]) {
    <src>
    }

* each input: ``const device T* name`` (``constant`` instead of ``device`` below 8 elements,
  ``T&`` for a 0-d input), then ``name_shape`` (``const constant int*``), ``name_strides``
  (``const constant int64_t*``, in elements) and ``name_ndim`` (``const constant int&``)
  where the source names them (not for 0-d inputs);
* each output: ``device T* name`` (``device atomic<T>*`` with ``atomic_outputs``);
* the Metal attributes the source names (``thread_position_in_grid``,
  ``threads_per_threadgroup``, ...) as trailing parameters of MLX's types;
* ``template=[("T", nv.float32), ("N", 4), ("B", True)]``: ``template <typename T, int N,
  bool B>`` before the kernel and an explicit instantiation named by ``[[host_name]]``;
* the kernel's name carries the template values and the dtypes of inputs and outputs, so one
  name always maps to one source.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence

from . import metal
from .core import dtypes as dt
from .core.array import Array
from .core.device import Device, DeviceType, resolve_stream
from .ops.creation import array
from .primitives.custom_kernel import MetalCustomKernel

__all__ = ["MetalKernel", "metal_type", "METAL_ATTRIBUTES", "PRELUDE"]

# MSL spelling of each dtype Metal has (no float64; complex64 is not in Metal's library).
_METAL_TYPES = {
    "bool": "bool",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "float16": "float16_t",
    "bfloat16": "bfloat16_t",
    "float32": "float",
}

# The attributes a kernel may read, with the type MLX declares them with; one is declared
# when its name occurs in the source.
METAL_ATTRIBUTES = (
    ("dispatch_quadgroups_per_threadgroup", "uint"),
    ("dispatch_simdgroups_per_threadgroup", "uint"),
    ("dispatch_threads_per_threadgroup", "uint3"),
    ("grid_origin", "uint3"),
    ("grid_size", "uint3"),
    ("quadgroup_index_in_threadgroup", "uint"),
    ("quadgroups_per_threadgroup", "uint"),
    ("simdgroup_index_in_threadgroup", "uint"),
    ("simdgroups_per_threadgroup", "uint"),
    ("thread_execution_width", "uint"),
    ("thread_index_in_quadgroup", "uint"),
    ("thread_index_in_simdgroup", "uint"),
    ("thread_index_in_threadgroup", "uint"),
    ("thread_position_in_grid", "uint3"),
    ("thread_position_in_threadgroup", "uint3"),
    ("threadgroup_position_in_grid", "uint3"),
    ("threadgroups_per_grid", "uint3"),
    ("threads_per_grid", "uint3"),
    ("threads_per_simdgroup", "uint"),
    ("threads_per_threadgroup", "uint3"),
)

# Compiled before the user's header: the standard library and the type names the generated
# signature uses (bfloat exists from MSL 3.1).
PRELUDE = """#include <metal_stdlib>
#include <metal_atomic>
using namespace metal;
typedef half float16_t;
#if __METAL_VERSION__ >= 310
typedef bfloat bfloat16_t;
#endif
"""

# Inputs with fewer elements than this go in the constant address space (as MLX).
_CONSTANT_BELOW = 8
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WHERE = "fast.metal_kernel"


def metal_type(dtype: Any, what: str, name: str = "") -> str:
    """The MSL type name of ``dtype``; ValueError naming ``what`` for a dtype Metal lacks."""
    d = dt.to_dtype(dtype)
    t = _METAL_TYPES.get(d.name)
    if t is None:
        label = f"{_WHERE} {name}" if name else _WHERE
        raise ValueError(
            f"{label}: {what} has dtype {d.name}, which Metal kernels cannot use "
            f"(supported: {', '.join(_METAL_TYPES)})"
        )
    return t


def _names(value: Any, arg: str, allow_empty: bool) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"{_WHERE}: {arg} must be a list of names, got {type(value).__name__}")
    names = list(value)
    for n in names:
        if not isinstance(n, str) or not _IDENT.match(n):
            raise ValueError(f"{_WHERE}: {arg} holds {n!r}, which is not an identifier")
    if not names and not allow_empty:
        raise ValueError(f"{_WHERE}: {arg} is empty; at least one output is needed")
    return names


def _triple(value: Any, arg: str, name: str) -> tuple[int, int, int]:
    try:
        t = tuple(value)
    except TypeError:
        t = ()
    if len(t) != 3 or not all(isinstance(v, int) and not isinstance(v, bool) for v in t):
        raise ValueError(f"{_WHERE} {name}: {arg} must be 3 ints (x, y, z), got {value!r}")
    if any(v < 1 for v in t):
        raise ValueError(f"{_WHERE} {name}: {arg} must be positive in every axis, got {t}")
    return t


def _template_value(tname: str, value: Any, name: str) -> tuple[str, str]:
    """(MSL parameter kind, the value as the instantiation spells it)."""
    if isinstance(value, bool):
        return "bool", str(int(value))  # MLX writes bools as 0 / 1
    if isinstance(value, int):
        return "int", str(value)
    if isinstance(value, dt.Dtype):
        return "typename", metal_type(value, f"template argument {tname}", name)
    raise ValueError(
        f"{_WHERE} {name}: template argument {tname} must be a dtype, an int or a bool, "
        f"got {type(value).__name__}"
    )


def _math_mode(options: Any, name: str) -> str:
    """The ``math_mode`` of MLX's ``compile_options`` dict ("safe" by default)."""
    if options is None:
        return "safe"
    if not isinstance(options, dict):
        raise ValueError(
            f"{_WHERE} {name}: compile_options must be a dict, got {type(options).__name__}"
        )
    mode = "safe"
    for key, value in options.items():
        if key != "math_mode":
            raise ValueError(f"{_WHERE} {name}: compile_options has no option {key!r}")
        if value not in ("safe", "relaxed", "fast"):
            raise ValueError(
                f"{_WHERE} {name}: compile_options math_mode must be 'safe', 'relaxed' or "
                f"'fast', got {value!r}"
            )
        mode = value
    return mode


class MetalKernel:
    """What ``nv.fast.metal_kernel`` returns: call it with ``inputs``, ``grid``,
    ``threadgroup``, ``output_shapes``, ``output_dtypes`` (and optionally ``template``,
    ``init_value``, ``verbose``, ``stream``) to launch; ``source_for`` gives the source a
    call would compile, without launching (it needs no Metal)."""

    def __init__(
        self,
        name: str,
        input_names: Sequence[str],
        output_names: Sequence[str],
        source: str,
        header: str = "",
        ensure_row_contiguous: bool = True,
        atomic_outputs: bool = False,
        compile_options: Optional[dict] = None,
    ) -> None:
        if not isinstance(name, str) or not _IDENT.match(name):
            raise ValueError(f"{_WHERE}: name must be an identifier, got {name!r}")
        self.input_names = _names(input_names, "input_names", True)
        self.output_names = _names(output_names, "output_names", False)
        dup = {n for n in self.input_names + self.output_names}
        if len(dup) != len(self.input_names) + len(self.output_names):
            raise ValueError(f"{_WHERE} {name}: input and output names must all differ")
        if not isinstance(source, str):
            raise TypeError(f"{_WHERE} {name}: source must be a str, got {type(source).__name__}")
        if not isinstance(header, str):
            raise TypeError(f"{_WHERE} {name}: header must be a str, got {type(header).__name__}")
        self.math_mode = _math_mode(compile_options, name)
        self.name = name
        self.source = source
        self.header = header
        self.ensure_row_contiguous = bool(ensure_row_contiguous)
        self.atomic_outputs = bool(atomic_outputs)
        # which of name_shape / name_strides / name_ndim the body reads, per input
        self.shape_info = [
            tuple(f"{n}{suffix}" in source for suffix in ("_shape", "_strides", "_ndim"))
            for n in self.input_names
        ]
        self.attributes = [f"  {t} {a} [[{a}]]" for a, t in METAL_ATTRIBUTES if a in source]

    # ------------------------------------------------------------------ generation

    def kernel_name(self, inputs: Sequence[Any], output_dtypes: Sequence[Any], template) -> str:
        """The entry point's name: ``custom_kernel_<name>``, the template values, then one
        part per input dtype (``s`` suffix: 0-d, ``c``: in constant memory) and output dtype."""
        parts = [f"custom_kernel_{self.name}"]
        if template:
            parts.append("_" + "_".join(v for _, _, v in template))
        for n, a in zip(self.input_names, inputs):
            t = metal_type(a.dtype, f"input {n}", self.name)
            if a.ndim == 0:
                t += "s"
            elif a.size < _CONSTANT_BELOW:
                t += "c"
            parts.append(t)
        parts += [
            metal_type(d, f"output {n}", self.name)
            for n, d in zip(self.output_names, output_dtypes)
        ]
        return "_".join(parts)

    def _template(self, template) -> list[tuple[str, str, str]]:
        if template is None:
            return []
        if isinstance(template, dict):
            template = list(template.items())
        out = []
        seen = set(self.input_names + self.output_names)
        for item in template:
            if not (isinstance(item, (tuple, list)) and len(item) == 2):
                raise ValueError(
                    f"{_WHERE} {self.name}: template entries are (name, value) pairs, got {item!r}"
                )
            tname, value = item
            if not isinstance(tname, str) or not _IDENT.match(tname) or tname in seen:
                raise ValueError(
                    f"{_WHERE} {self.name}: template name {tname!r} must be a new identifier"
                )
            seen.add(tname)
            kind, spelled = _template_value(tname, value, self.name)
            out.append((tname, kind, spelled))
        return out

    def generate(
        self, inputs: Sequence[Any], output_dtypes: Sequence[Any], template=None
    ) -> tuple[str, str, list[int]]:
        """(entry-point name, generated source without the prelude, for each input the
        number of argument slots it takes). ``inputs`` need ``dtype``, ``ndim`` and ``size``."""
        targs = self._template(template)
        kname = self.kernel_name(inputs, output_dtypes, targs)
        lines = []
        if targs:
            lines.append("template <" + ", ".join(f"{k} {n}" for n, k, _ in targs) + ">")
        lines.append(f"[[kernel]] void {kname}(")
        params, slots, index = [], [], 0
        for n, a, (shp, strd, nd) in zip(self.input_names, inputs, self.shape_info):
            t = metal_type(a.dtype, f"input {n}", self.name)
            space = "constant" if a.size < _CONSTANT_BELOW else "device"
            ref = "&" if a.ndim == 0 else "*"
            params.append(f"  const {space} {t}{ref} {n} [[buffer({index})]]")
            index += 1
            used = 1
            if a.ndim > 0:
                for flag, decl, suffix in (
                    (shp, "const constant int*", "_shape"),
                    (strd, "const constant int64_t*", "_strides"),
                    (nd, "const constant int&", "_ndim"),
                ):
                    if flag:
                        params.append(f"  {decl} {n}{suffix} [[buffer({index})]]")
                        index += 1
                        used += 1
            slots.append(used)
        for n, d in zip(self.output_names, output_dtypes):
            t = metal_type(d, f"output {n}", self.name)
            if self.atomic_outputs:
                t = f"atomic<{t}>"
            params.append(f"  device {t}* {n} [[buffer({index})]]")
            index += 1
        params += self.attributes
        text = self.header + "\n".join(lines) + "\n" + ",\n".join(params) + ") {\n"
        text += self.source + "\n}\n"
        if targs:
            inst = kname + "<" + ", ".join(v for _, _, v in targs) + ">"
            text += f'\ntemplate [[host_name("{kname}")]] [[kernel]] decltype({inst}) {inst};\n'
        return kname, text, slots

    def source_for(self, inputs: Sequence[Any], output_dtypes: Sequence[Any], template=None) -> str:
        """The generated source (user header, signature, body, instantiation) for a call
        with these inputs, output dtypes and template; what ``verbose=True`` prints."""
        return self.generate(inputs, output_dtypes, template)[1]

    # ------------------------------------------------------------------ launch

    def __call__(
        self,
        *,
        inputs: Sequence[Any],
        output_shapes: Sequence[Sequence[int]],
        output_dtypes: Sequence[Any],
        grid: Sequence[int],
        threadgroup: Sequence[int],
        template: Optional[Sequence] = None,
        init_value: Optional[float] = None,
        verbose: bool = False,
        stream: Any = None,
    ) -> list:
        name = self.name
        inputs, output_shapes, output_dtypes = (
            list(inputs),
            list(output_shapes),
            list(output_dtypes),
        )
        for arg, got, want in (
            ("inputs", len(inputs), len(self.input_names)),
            ("output_shapes", len(output_shapes), len(self.output_names)),
            ("output_dtypes", len(output_dtypes), len(self.output_names)),
        ):
            if got != want:
                raise ValueError(f"{_WHERE} {name}: {arg} has {got} entries, expected {want}")
        shapes = []
        for n, s in zip(self.output_names, output_shapes):
            try:
                shp = tuple(int(x) for x in s)
            except (TypeError, ValueError):
                raise ValueError(
                    f"{_WHERE} {name}: output_shapes entry for {n} must be a sequence of "
                    f"ints, got {s!r}"
                ) from None
            if any(x < 0 for x in shp):
                raise ValueError(f"{_WHERE} {name}: output_shapes entry for {n} is negative: {shp}")
            shapes.append(shp)
        dtypes = [dt.to_dtype(d) for d in output_dtypes]
        g = _triple(grid, "grid", name)
        tg = _triple(threadgroup, "threadgroup", name)
        if init_value is not None and (
            isinstance(init_value, bool) or not isinstance(init_value, (int, float))
        ):
            raise ValueError(
                f"{_WHERE} {name}: init_value must be a number or None, got {init_value!r}"
            )
        arrays = [a if isinstance(a, Array) else array(a) for a in inputs]
        kname, text, slots = self.generate(arrays, dtypes, template)
        if verbose:
            print(f"Generated source code for `{name}`:\n```\n{text}\n```")

        if not metal.is_available():
            raise RuntimeError(
                f"{_WHERE} {name}: Metal is not available here "
                f"({metal.unavailable_reason()}); user Metal kernels run on an Apple GPU only"
            )
        # as MLX: no stream given means the GPU's default stream, not the default device's
        st = resolve_stream(Device(DeviceType.gpu) if stream is None else stream)
        if st.device.type.value != "gpu":
            raise ValueError(
                f"{_WHERE} {name}: runs on the GPU only (the stream is on {st.device})"
            )
        prim = MetalCustomKernel(
            kname,
            PRELUDE + text,
            tuple(zip(shapes, dtypes)),
            g,
            tg,
            None if init_value is None else float(init_value),
            tuple(slots),
            tuple(self.shape_info),
            self.ensure_row_contiguous,
            self.math_mode,
        )
        return Array.make_multi(prim, arrays, st)
