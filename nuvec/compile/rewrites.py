"""Rewrite rules that run before fusion, each where the backend's ``FusionPolicy`` takes it
(shaped traces only). A rule rewrites ``draft.steps`` and keeps every result's bits on the
backends that take it.

    rewrite(draft, policy)    # compile's rewrites pass: for each (flag, rule) in RULES the
                              # policy sets, rule(draft)

Adding a rule: a function here, one line in ``RULES``, its flag in ``FusionPolicy``, and the
flag set in the policies of the backends where its bits hold.
"""

from __future__ import annotations

from typing import Callable

from ..primitives.elementwise import Binary
from ..primitives.linalg import AddMM, Matmul, PermutedMatmul
from ..primitives.shape import Broadcast, Reshape, Transpose
from .draft import STEP, DStep, Draft
from .fuse import kernel_op


def split_addmm(draft: Draft) -> None:
    """``addmm(c, a, b)`` (alpha = beta = 1, float32 or float64) read only by element-wise
    steps becomes ``a @ b`` and an add of ``c``, which then fuses with its readers: a layer's bias
    add and activation take one kernel pass, as XLA's fusions do. The same where the one reader
    is a reshape that keeps the last axis (a Linear layer on (B, L, D) inputs) read only by
    element-wise steps: the product is reshaped and the add, after the reshape, fuses with
    those readers. The bits are the CPU addmm's, which adds ``c`` to the product in the
    product's dtype (so does CUDA's; a backend that rounds ``a @ b + c`` once inside the GEMM
    must not take this rule)."""
    dname = [d.name for d in draft.dtype]
    readers = draft.readers()
    old = draft.steps
    outputs = set(draft.outputs)

    def fusable(s: DStep) -> bool:
        return (
            len(s.outs) == 1
            and s.prim.elementwise
            and kernel_op(s.prim, [dname[a] for a in s.args]) is not None
        )

    def read_elementwise(v: int) -> bool:
        return bool(readers.get(v)) and all(fusable(old[r]) for r in readers[v])

    def reshaped(s: DStep) -> DStep | None:
        """The one reader of addmm ``s``: a reshape keeping the last axis, whose readers are
        all element-wise (else None)."""
        rs = readers.get(s.outs[0], [])
        if len(rs) != 1 or type(old[rs[0]].prim) is not Reshape or s.outs[0] in outputs:
            return None
        r = old[rs[0]]
        n = draft.shape[s.outs[0]][-1]
        shape = draft.shape[r.outs[0]]
        ok = len(shape) >= 1 and shape[-1] == n and draft.shape[s.args[0]] in ((n,), (1, n))
        return r if ok and read_elementwise(r.outs[0]) else None

    steps: list[DStep] = []
    dropped: set[int] = set()
    for i, s in enumerate(draft.steps):
        if i in dropped:
            continue
        out = s.outs[0]
        if (
            type(s.prim) is not AddMM
            or s.prim.alpha != 1.0
            or s.prim.beta != 1.0
            or dname[out] not in ("float32", "float64")
        ):
            steps.append(s)
            continue
        view = None if read_elementwise(out) else reshaped(s)
        if view is None and not read_elementwise(out):
            steps.append(s)
            continue
        c, a, b = s.args
        dtype = draft.dtype[out]
        product = draft.new_value(STEP, draft.shape[out], dtype)
        steps.append(DStep(Matmul(), (a, b), (product,), s.stream))
        if view is not None:  # the reshape moves before the add, which takes its output
            dropped.add(readers[out][0])
            out = view.outs[0]
            moved = draft.new_value(STEP, draft.shape[out], dtype)
            steps.append(DStep(view.prim, (product,), (moved,), view.stream))
            product = moved
        shape = draft.shape[out]
        if draft.shape[c] != shape:
            wide = draft.new_value(STEP, shape, dtype)
            steps.append(DStep(Broadcast(shape), (c,), (wide,), s.stream))
            c = wide
        steps.append(DStep(Binary("add"), (product, c), (out,), s.stream))
    draft.steps = steps


def permute_matmuls(draft: Draft) -> None:
    """A matmul read only through a chain of transposes (each read only by the next) that
    keeps the last axis last becomes one ``PermutedMatmul``: the CPU writes the product in the
    layout the chain ends in, so a reshape after it (attention's heads merged back, in the
    forward and the backward pass) is a view instead of a transposed copy. Same bits: each
    product is the same BLAS call, written with another row stride."""
    readers = draft.readers()
    steps = draft.steps
    outputs = set(draft.outputs)
    replace: dict[int, DStep] = {}  # id of a chain's last transpose -> its new step
    drop: set[int] = set()
    for s in draft.steps:
        if type(s.prim) is not Matmul or len(draft.shape[s.outs[0]]) < 3:
            continue
        chain, v = [], s.outs[0]
        while (
            v not in outputs
            and len(readers.get(v, ())) == 1
            and type(steps[readers[v][0]].prim) is Transpose
        ):
            chain.append(steps[readers[v][0]])
            v = chain[-1].outs[0]
        if not chain:
            continue
        axes = tuple(range(len(draft.shape[s.outs[0]])))
        for t in chain:  # output axis i of the chain is product axis axes[i]
            axes = tuple(axes[i] for i in t.prim.axes)
        if axes[-1] != len(axes) - 1 or axes == tuple(range(len(axes))):
            continue
        drop.add(id(s))
        drop.update(id(t) for t in chain[:-1])
        replace[id(chain[-1])] = DStep(PermutedMatmul(axes), s.args, chain[-1].outs, s.stream)
    if replace:
        draft.steps = [replace.get(id(s), s) for s in draft.steps if id(s) not in drop]


#: (FusionPolicy flag, rule), in the order they run
RULES: tuple[tuple[str, Callable[[Draft], None]], ...] = (
    ("split_addmm", split_addmm),
    ("permute_matmuls", permute_matmuls),
)


def rewrite(draft: Draft, policy) -> None:
    """Runs the rules ``policy`` takes on ``draft``."""
    for flag, rule in RULES:
        if getattr(policy, flag):
            rule(draft)
