"""What every dialect shares: literals, loads and stores of each dtype, the per-element body."""

from __future__ import annotations

import math
import struct

from ..generator import CTYPE, STYPE, body, library_source
from ..ir import KernelSpec
from ..ops import supports


class Dialect:
    """Base of the three dialects; subclasses write ``prelude`` and ``kernel``."""

    name = "base"

    # ---- literals ----
    def f32_literal(self, bits: int) -> str:
        v = struct.unpack("<f", struct.pack("<I", bits))[0]
        if not math.isfinite(v):
            return f"nv_u2f({bits:#x}u)"
        return f"{v.hex()}f" if v != 0 else ("-0.0f" if bits >> 31 else "0.0f")

    def f64_literal(self, bits: int) -> str:
        v = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if not math.isfinite(v):
            return f"nv_u2d({bits:#x}ull)"
        return v.hex() if v != 0 else ("-0.0" if bits >> 63 else "0.0")

    # ---- memory <-> registers ----
    @staticmethod
    def load(dtype: str, ref: str) -> str:
        if dtype == "bool":
            return f"(uint8_t)({ref} != 0)"  # any nonzero byte is True
        if dtype == "float16":
            return f"nv_f16_to_f32({ref})"
        if dtype == "bfloat16":
            return f"nv_bf16_to_f32({ref})"
        return ref

    @staticmethod
    def store(dtype: str, value: str) -> str:
        if dtype == "float16":
            return f"nv_f32_to_f16({value})"
        if dtype == "bfloat16":
            return f"nv_f32_to_bf16({value})"
        return value

    ctype = staticmethod(lambda d: CTYPE[d])
    stype = staticmethod(lambda d: STYPE[d])

    def check(self, spec: KernelSpec) -> None:
        """Raise ValueError if this dialect cannot hold a dtype of the spec."""
        for d in list(spec.inputs) + [n.dtype for n in spec.nodes] + [c[0] for c in spec.constants]:
            if not supports("copy", d, self.name):
                raise ValueError(f"generate: dtype {d} is not available in the {self.name} dialect")

    def library(self) -> str:
        return library_source()

    def body(self, spec: KernelSpec):
        return body(spec, self)

    # ---- to be provided ----
    def prelude(self) -> str:
        raise NotImplementedError

    def kernel(self, name: str, spec: KernelSpec) -> str:
        raise NotImplementedError

    def module(self, kernels: list[tuple[str, KernelSpec]]) -> str:
        parts = [self.prelude(), self.library()]
        parts += [self.kernel(name, spec) for name, spec in kernels]
        return "\n".join(parts)


def indent(lines: list[str], n: int) -> str:
    pad = " " * n
    return "\n".join(pad + ln for ln in lines)
