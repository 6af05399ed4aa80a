"""A kernel's full source: the generator's body in one of the dialects (which build on the
generator, so the choice of dialect sits above both)."""

from __future__ import annotations

from .dialects import DIALECTS
from .generator import kernel_name
from .ir import KernelSpec


def _dialect(name: str):
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(
            f"generate: unknown dialect {name!r}; expected one of {sorted(DIALECTS)}"
        ) from None


def generate(spec: KernelSpec, dialect: str = "c", name: str | None = None) -> str:
    """Full, self-contained source of the kernel for ``spec`` in ``dialect``.

    >>> src = generate(KernelSpec.single("add", ("int8", "int8"), "int8"), "c", "my_add")
    >>> "void my_add(" in src
    True
    """
    spec.validate()
    d = _dialect(dialect)
    d.check(spec)
    return d.module([(name or kernel_name(spec), spec)])


def generate_many(kernels: list[tuple[str, KernelSpec]], dialect: str = "c") -> str:
    """One source holding several kernels (the prelude and library once)."""
    d = _dialect(dialect)
    for _, spec in kernels:
        spec.validate()
        d.check(spec)
    return d.module(kernels)
