"""The element-wise kernel IR: a kernel is a small DAG of element-wise nodes over its inputs.

Example::

    from nuvec.codegen.ir import KernelSpec, Node
    # out = exp(x) * 2.0  over float32
    spec = KernelSpec(
        inputs=("float32",),
        constants=(("float32", 0x40000000),),            # 2.0 as raw float32 bits
        nodes=(Node("exp", (("in", 0),), "float32"),
               Node("multiply", (("node", 0), ("const", 0)), "float32")),
        outputs=(1,))
    KernelSpec.single("add", ("float32", "float32"), "float32")   # a group of one

Every argument of a node has the same dtype (the core inserts ``astype`` nodes first), except
the condition of ``select``, which is bool. Each node's value is rounded to its dtype.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .ops import ARITY, check_node, result_dtype, supports  # noqa: F401 (re-exported)

DTYPES: tuple[str, ...] = (
    "bool",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
)

ITEMSIZE: dict[str, int] = {
    "bool": 1,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "complex64": 8,
}

_ARG_KINDS = ("in", "node", "const")


@dataclass(frozen=True)
class Node:
    """One element-wise operation: ``op`` over ``args``, producing ``dtype``."""

    op: str
    args: tuple[tuple[str, int], ...]
    dtype: str


@dataclass(frozen=True)
class KernelSpec:
    """A fused element-wise kernel (see the module docstring).

    ``constants`` are literal scalars as (dtype name, raw bits as an unsigned int); complex64
    bits are the 8 bytes in memory order read as a little-endian integer (real part in the low
    32 bits). The hash is computed once per object, so a spec is a cheap dictionary key.
    """

    inputs: tuple[str, ...]
    constants: tuple[tuple[str, int], ...]
    nodes: tuple[Node, ...]
    outputs: tuple[int, ...]
    # CUDA only: the GPU's approximate math functions, contraction, and float32 intermediates
    # in float16 / bfloat16 chains (``nv.compile(..., fast_math=True)``); other dialects ignore it
    fast: bool = False

    def __hash__(self) -> int:
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.inputs, self.constants, self.nodes, self.outputs, self.fast))
            object.__setattr__(self, "_hash", h)
        return h

    @staticmethod
    def single(op: str, in_dtypes: tuple[str, ...], out_dtype: str) -> "KernelSpec":
        """The kernel of one operation over its inputs in order (cached: same object back).

        >>> KernelSpec.single("less", ("int32", "int32"), "bool").nodes[0].op
        'less'
        """
        return _single(op, tuple(in_dtypes), out_dtype)

    def is_single(self) -> bool:
        """True when this is the kernel of one op over inputs 0..n-1 (a prebuildable kernel)."""
        if len(self.nodes) != 1 or self.outputs != (0,) or self.constants:
            return False
        return self.nodes[0].args == tuple(("in", i) for i in range(len(self.inputs)))

    def single_reader(self, p: int) -> int:
        """The node that reads input ``p``, if exactly one argument of one node does; else -1
        (where an output may reuse that input's buffer)."""
        found, n = -1, 0
        for j, node in enumerate(self.nodes):
            for kind, i in node.args:
                if kind == "in" and i == p:
                    n += 1
                    found = j
        return found if n == 1 else -1

    def depends(self, node: int, on: int) -> bool:
        """Whether node ``node`` depends on node ``on`` (or is it)."""
        stack, seen = [node], set()
        while stack:
            j = stack.pop()
            if j == on:
                return True
            if j in seen:
                continue
            seen.add(j)
            for kind, i in self.nodes[j].args:
                if kind == "node":
                    stack.append(i)
        return False

    def arg_dtype(self, arg: tuple[str, int]) -> str:
        kind, i = arg
        if kind == "in":
            return self.inputs[i]
        if kind == "node":
            return self.nodes[i].dtype
        return self.constants[i][0]

    def validate(self) -> None:
        """Raise ValueError naming the node and the problem if the spec is malformed."""
        for d in self.inputs:
            if d not in ITEMSIZE:
                raise ValueError(f"KernelSpec: unknown input dtype {d!r}")
        for d, bits in self.constants:
            if d not in ITEMSIZE:
                raise ValueError(f"KernelSpec: unknown constant dtype {d!r}")
            if not isinstance(bits, int) or bits < 0 or bits >> (8 * ITEMSIZE[d]):
                raise ValueError(f"KernelSpec: constant bits {bits!r} do not fit {d}")
        if not self.nodes:
            raise ValueError("KernelSpec: no nodes")
        for j, node in enumerate(self.nodes):
            if node.dtype not in ITEMSIZE:
                raise ValueError(f"KernelSpec node {j} ({node.op}): unknown dtype {node.dtype!r}")
            if node.op not in ARITY:
                raise ValueError(f"KernelSpec node {j}: unknown op {node.op!r}")
            if len(node.args) != ARITY[node.op]:
                raise ValueError(
                    f"KernelSpec node {j} ({node.op}): takes {ARITY[node.op]} "
                    f"arguments, got {len(node.args)}"
                )
            for kind, i in node.args:
                limit = {"in": len(self.inputs), "node": j, "const": len(self.constants)}.get(kind)
                if limit is None:
                    raise ValueError(f"KernelSpec node {j} ({node.op}): bad argument kind {kind!r}")
                if not 0 <= i < limit:
                    raise ValueError(
                        f"KernelSpec node {j} ({node.op}): argument ({kind!r}, {i}) out of range"
                    )
            check_node(
                node.op,
                tuple(self.arg_dtype(a) for a in node.args),
                node.dtype,
                where=f"KernelSpec node {j}",
            )
        if not self.outputs:
            raise ValueError("KernelSpec: no outputs")
        for o in self.outputs:
            if not 0 <= o < len(self.nodes):
                raise ValueError(f"KernelSpec: output {o} is not a node index")


@lru_cache(maxsize=None)
def _single(op: str, in_dtypes: tuple[str, ...], out_dtype: str) -> KernelSpec:
    spec = KernelSpec(
        inputs=in_dtypes,
        constants=(),
        nodes=(Node(op, tuple(("in", i) for i in range(len(in_dtypes))), out_dtype),),
        outputs=(0,),
    )
    return spec
