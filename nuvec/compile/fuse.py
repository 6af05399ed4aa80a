"""Fusion: chains of element-wise steps become one generated kernel (a ``Compiled`` step).

Groups are formed walking back from a group's last step (its root), highest step first, so a
step is decided after every step that could consume it. A step joins when

- it is element-wise, single-output, and the engine has a kernel for its op and dtype;
- every step that consumes it is in the group or (CPU) runs after the root: a group runs at
  its root's place, so a consumer in a group formed already counts at that group's root (the
  graph stays acyclic: no member of that group can feed this one, or it would have had a
  reader outside its group running before it). A value read after the group, by a later step
  or as a function output, becomes another output of the kernel (shapeless mode: no member
  is read outside, since its shape at replay may be smaller than the kernel's);
- the group stays within MAX_STEPS steps and MAX_ARRAYS kernel arrays (inputs + outputs);
- shaped mode: it has the root's shape.

Scalar constants (every element equal, not a tracer) are literals in the source; in shaped
mode a broadcast step feeding a member is read through (the kernel broadcasts the source
itself).

    fused = fuse(draft, shapeless=False, policy=backend.policy)  # rewrites draft.steps
    # (the policy says whether members read after the group join as outputs; compile's
    # pipeline, ``passes.py``, keeps the steps before it to run unfused while, or if, the
    # kernels cannot be built)
"""

from __future__ import annotations

import heapq

from ..backends.base import FusionPolicy
from ..codegen.ir import KernelSpec, Node
from ..codegen.ops import supports
from ..primitives.compiled import Compiled
from ..primitives.elementwise import AsType, Binary, Select, Unary
from ..primitives.shape import Broadcast
from .draft import CONST, DStep, Draft

MAX_STEPS = 32
MAX_ARRAYS = 24


def kernel_op(prim, arg_dtypes: list[str]) -> str | None:
    """The engine op of an element-wise primitive over these argument dtypes, if it has one."""
    t = type(prim)
    if t is Unary or t is Binary:
        op, d = prim.op, arg_dtypes[0]
    elif t is Select:
        op, d = "select", arg_dtypes[1]
    elif t is AsType:
        op, d = "astype", arg_dtypes[0]
    else:
        return None
    return op if supports(op, d) else None


def fuse(draft: Draft, shapeless: bool, policy: FusionPolicy) -> list[DStep]:
    """Replaces element-wise chains of ``draft`` by fused steps; returns those steps. The
    backend's ``policy`` says whether members read after the group may join as outputs
    (else a member's readers are all in its group, function outputs excepted)."""
    steps = draft.steps
    n = len(steps)
    if n < 2:
        return []
    dname = [d.name for d in draft.dtype]
    prod = draft.producers()
    ops: list[str | None] = []
    for s in steps:
        op = None
        if len(s.outs) == 1 and s.prim.elementwise:
            op = kernel_op(s.prim, [dname[a] for a in s.args])
        ops.append(op)
    readers = draft.readers()
    consumers = [{k for v in s.outs for k in readers.get(v, ())} for s in steps]
    outputs = set(draft.outputs)
    is_output = [any(o in outputs for o in s.outs) for s in steps]

    def literal(v: int):
        if draft.kind[v] != CONST or v not in draft.scalar_bytes:
            return None
        if shapeless and draft.shape[v] != ():
            return None  # a size-1 constant of higher rank still shapes the result
        c = draft.consts[draft.const_index[v]]
        if c._tracer:
            return None
        return (dname[v], int.from_bytes(draft.scalar_bytes[v], "little"))

    def source(v: int) -> int:
        """Reads through broadcast steps (shaped mode): the kernel broadcasts itself."""
        if shapeless:
            return v
        while True:
            j = prod.get(v)
            if j is None or type(steps[j].prim) is not Broadcast:
                return v
            v = steps[j].args[0]

    group_of = [-1] * n
    groups: dict[int, list[int]] = {}
    escaping = set(outputs)  # values read outside their group
    for root in range(n - 1, -1, -1):
        if group_of[root] != -1 or ops[root] is None:
            continue
        members = {root}
        root_shape = draft.shape[steps[root].outs[0]]
        ext: dict[int, None] = {}  # external array values, in order
        for a in steps[root].args:
            a = source(a)
            if literal(a) is None:
                ext[a] = None
        n_out = 1
        heap = [-j for j in {prod[a] for a in steps[root].args if a in prod}]
        heapq.heapify(heap)
        seen = set()
        while heap:
            j = -heapq.heappop(heap)
            if j in seen:
                continue
            seen.add(j)
            if (
                group_of[j] != -1
                or ops[j] is None
                or len(members) >= MAX_STEPS
                or (not shapeless and draft.shape[steps[j].outs[0]] != root_shape)
            ):
                continue
            # steps are met highest first, so no consumer above j can join later; a consumer
            # in a group formed already runs at that group's root
            later = [c for c in consumers[j] if c not in members]
            if (
                any((group_of[c] if group_of[c] != -1 else c) < root for c in later)
                or (later and not policy.read_after_outputs)
                or (shapeless and (later or is_output[j]))
            ):
                continue
            read_after = bool(later) or is_output[j]
            v = steps[j].outs[0]
            new = {source(a) for a in steps[j].args}
            new = {a for a in new if a not in ext and literal(a) is None}
            arrays = len(ext) - (1 if v in ext else 0) + len(new) + n_out + int(read_after)
            if arrays > MAX_ARRAYS:
                continue
            members.add(j)
            if read_after:
                n_out += 1
                escaping.add(v)
            ext.pop(v, None)
            for a in new:
                ext[a] = None
            for a in steps[j].args:
                p = prod.get(a)
                if p is not None and p not in seen:
                    heapq.heappush(heap, -p)
        if len(members) < 2 or not ext or len(ext) + n_out > MAX_ARRAYS:
            continue
        ordered = sorted(members)
        for m in ordered:
            group_of[m] = root
        groups[root] = ordered

    if not groups:
        return []
    fused: list[DStep] = []
    new_steps: list[DStep] = []
    for k, s in enumerate(steps):
        g = group_of[k]
        if g == -1:
            new_steps.append(s)
        elif g == k:
            f = _fused_step(
                draft,
                [steps[m] for m in groups[k]],
                [ops[m] for m in groups[k]],
                escaping,
                literal,
                source,
                dname,
            )
            fused.append(f)
            new_steps.append(f)
    draft.steps = new_steps
    draft.drop_unused()
    return fused


def _fused_step(draft, members, member_ops, escaping, literal, source, dname) -> DStep:
    """One Compiled step for ``members`` (ascending; the last is the root); the members whose
    values are in ``escaping`` are outputs too."""
    pos = {m.outs[0]: i for i, m in enumerate(members)}
    ins: dict[int, int] = {}  # value -> kernel input index
    lits: dict[int, int] = {}  # value -> literal index
    constants = []
    nodes = []
    wiring = []
    for m, op in zip(members, member_ops):
        args = []
        for a in m.args:
            if a in pos:
                args.append(("node", pos[a]))
                continue
            a = source(a)
            lit = literal(a)
            if lit is not None:
                if a not in lits:
                    lits[a] = len(constants)
                    constants.append(lit)
                args.append(("const", lits[a]))
            else:
                if a not in ins:
                    ins[a] = len(ins)
                args.append(("in", ins[a]))
        v = m.outs[0]
        nodes.append(Node(op, tuple(args), dname[v]))
        wiring.append((m.prim, tuple(args)))
    root = members[-1]
    outs = [m.outs[0] for m in members[:-1] if m.outs[0] in escaping] + [root.outs[0]]
    spec = KernelSpec(
        inputs=tuple(dname[a] for a in ins),
        constants=tuple(constants),
        nodes=tuple(nodes),
        outputs=tuple(pos[o] for o in outs),
    )
    return DStep(
        Compiled(spec, tuple(wiring)), tuple(ins), tuple(outs), root.stream, members=tuple(members)
    )
