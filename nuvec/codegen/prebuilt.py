"""The set of single-op kernels built ahead of time, and the generator's fingerprint.

    from nuvec.codegen.prebuilt import prebuilt_specs, prebuilt_sources, fingerprint
    len(prebuilt_specs())        # every supported (op, dtype) and every astype pair
    prebuilt_sources()           # their C sources, in chunks compiled into one library

A prebuilt library records ``fingerprint()`` (a hash of the generator's sources: IR, dialects,
headers, the op table's kernel fields); a runtime uses it only when the fingerprint matches
its own generator, so single ops and fused kernels always come from the same code.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib.resources import files

from .generator import kernel_name
from .source import generate_many
from .ir import DTYPES, KernelSpec
from .ops import ARITY, result_dtype, supports
from .optable import kernel_signature

# what the C kernels are made from (the other dialects do not change them)
_SOURCES = (
    "__init__.py",
    "generator.py",
    "ir.py",
    "ops.py",
    "source.py",
    "optable.py:kernel_signature",
    "nv_coeffs.h",
    "nv_math.h",
    "nv_coeffs64.h",
    "nv_math64.h",
    "nv_ops.h",
    "dialects/__init__.py",
    "dialects/base.py",
    "dialects/c.py",
)


@lru_cache(maxsize=None)
def fingerprint() -> str:
    """sha256 over the sources the C kernels are generated from (of the op table only the
    fields the kernels depend on, so its derivatives and stand-ins can change freely)."""
    h = hashlib.sha256()
    for name in _SOURCES:
        h.update(name.encode())
        h.update(b"\0")
        if name == "optable.py:kernel_signature":
            h.update(kernel_signature().encode())
        else:
            h.update(files(__package__).joinpath(*name.split("/")).read_bytes())
    return h.hexdigest()


def prebuilt_specs(dialect: str = "c") -> list[tuple[str, KernelSpec]]:
    """(name, spec) of every single-op kernel: each supported (op, dtype), all astype pairs."""
    specs = []
    for op, arity in ARITY.items():
        for d in DTYPES:
            if not supports(op, d, dialect):
                continue
            if op == "astype":
                specs += [
                    KernelSpec.single("astype", (d,), dst)
                    for dst in DTYPES
                    if supports("copy", dst, dialect)
                ]
                continue
            ins = ("bool", d, d) if op == "select" else (d,) * arity
            specs.append(KernelSpec.single(op, ins, result_dtype(op, ins)))
    return [(kernel_name(s), s) for s in specs]


def prebuilt_sources(chunks: int = 16) -> list[str]:
    """The C sources of every prebuilt kernel, in up to ``chunks`` translation units (compiled
    in parallel, linked into one library); the first also exports ``nv_prebuilt_stamp``, the
    ``fingerprint()`` they were generated with."""
    specs = prebuilt_specs()
    groups = [specs[i::chunks] for i in range(chunks)]
    sources = [generate_many(g, "c") for g in groups if g]
    sources[0] += f'\nNV_EXPORT const char nv_prebuilt_stamp[65] = "{fingerprint()}";\n'
    return sources
