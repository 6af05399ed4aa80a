"""In-place state updates for compiled stateful steps, on a backend that lends buffers (the CPU).

``nv.compile(step, inputs=state, outputs=state)`` replaces each state array by the tape's new
one after every call, so an optimizer's fused update (``p, m, v -> p', m', v'``) would write
three fresh buffers per parameter while the old ones die right after the call. When nothing
else can see an old state array, its buffer can take the new value instead, as JAX's
``donate_argnums`` does: half the memory traffic of the update (no write-allocate of fresh
lines), and a working set that stays in cache.

Two halves:

- ``plan(tape, n_state)`` (once per tape) finds the fused steps that may write an output into
  a state input's buffer: the input is read there once, by one node of the kernel that the
  output depends on (so each element is read before it is written, as ``_finalize``'s
  donation of intermediates requires), with the output's shape and dtype, neither the input
  nor any array that may share its memory is read by a later step or returned, and no later
  step can raise (an error leaves the state unchanged). Those steps' kernels are wrapped
  (``_Donating``), disarmed.
- ``Plan.arm(ins)`` (every call, before the replay) arms the wrapped kernels for the inputs
  whose buffer only the state refers to: the state container holds the array, the array
  holds the NumPy data, the data owns its memory (or holds a buffer-cache Buffer nobody else
  holds). ``Plan.disarm()`` after the replay.

A step whose primitive has an in-place form on the device (``registry.register_into``: a
scatter, the KV cache's ``slice_update`` in a decode step) may write into its first argument's
buffer the same way: that argument is a state input read by no other step (nor by any array
sharing its memory made before it) and not returned. Such a step may come before steps that
can raise: it records how to undo its write (the overwritten elements), and ``Plan.rollback``
restores them, last first, when the replay fails, so the state is still left unchanged.

A step traced into another tape (another entry, the fused tape swapped in) gets its own plan.
"""

from __future__ import annotations

from threading import get_ident as _get_ident
from typing import Any, Optional

from .. import tree_ext as _ext  # type: ignore[attr-defined]  # a Cython module
from ..backends import registry

# Steps whose output never shares memory with an input: matmuls write a new buffer, and so
# do fused kernels (or they reuse a dying intermediate, never an input). Every other step is
# assumed to maybe return a view of its inputs (shape ops, copies, reductions over no axes).
_FRESH = frozenset({"matmul", "addmm"})

# Steps that cannot fail on valid data: once a kernel has written into a state buffer, the
# replay must finish, or the state would not be left unchanged on an error. A donating
# kernel therefore comes after every step that may raise (index checks, custom functions,
# collectives, anything not listed here).
_SAFE = frozenset(
    {
        "matmul",
        "addmm",
        "copy",
        "stop_gradient",
        "transpose",
        "reshape",
        "broadcast_to",
        "expand_dims",
        "squeeze",
        "flatten",
        "sum",
        "prod",
        "max",
        "min",
        "logsumexp",
        "softmax",
        "astype",
    }
)

# whether a state leaf and its buffer are held by the state alone (and the call's lists of
# leaves): reference counts, read in Cython (nuvec/tree_ext.pyx)
_sole_held = _ext.sole_held


class _Donating:
    """A fused kernel that, while armed (for the thread that armed it: another thread may
    replay the same tape on other data), writes output ``o`` into argument ``p``'s buffer
    for each armed ``(p, o)``; otherwise it is the kernel itself."""

    __slots__ = ("kernel", "nout", "pairs", "armed", "thread", "uses")

    def __init__(self, kernel: Any, nout: int) -> None:
        self.kernel = kernel
        self.nout = nout
        self.pairs: list[tuple[int, int, int]] = []  # (argument, output, state input slot)
        self.armed: tuple = ()
        self.thread = 0
        self.uses = 0

    def __call__(self, datas: list, shape: tuple, outs: Optional[list] = None) -> list:
        if self.armed and self.thread == _get_ident():
            outs = list(outs) if outs is not None else [None] * self.nout
            for p, o in self.armed:
                if outs[o] is None:
                    outs[o] = datas[p]
            self.uses += 1
        if outs is None:
            return self.kernel(datas, shape)
        return self.kernel(datas, shape, outs)

    def __getattr__(self, name: str) -> Any:  # name, source, address: the kernel's
        return getattr(self.kernel, name)


class _InPlace:
    """A step's implementation that, while armed (for the thread that armed it), runs the
    primitive's in-place form on its first argument and logs the undo in ``log``;
    otherwise it is the implementation itself."""

    __slots__ = ("impl", "into", "armed", "thread", "uses", "log")

    def __init__(self, impl: Any, into: Any, log: list) -> None:
        self.impl = impl
        self.into = into
        self.armed = False
        self.thread = 0
        self.uses = 0
        self.log = log

    def __call__(self, prim: Any, datas: list, node: Any) -> list:
        if self.armed and self.thread == _get_ident():
            outs, undo = self.into(prim, datas, node)
            self.log.append(undo)
            self.uses += 1
            return outs
        return self.impl(prim, datas, node)


class Plan:
    """Which state inputs of one tape may lend their buffer, and to which kernels or
    in-place steps."""

    __slots__ = (
        "tape",
        "by_input",
        "wrappers",
        "proven",
        "steps_by_input",
        "in_place",
        "log",
        "all_armed",
    )

    def __init__(self, tape: Any) -> None:
        self.tape = tape
        self.by_input: dict[int, list[tuple[_Donating, int, int]]] = {}
        self.wrappers: list[_Donating] = []
        self.steps_by_input: dict[int, _InPlace] = {}
        self.in_place: list[_InPlace] = []
        self.log: list = []  # the armed in-place steps' undos, in the order they ran
        self.proven = False  # a call's state write-back succeeded: arming is safe
        self.all_armed: Optional[list] = None  # (wrapper, pairs) when every input lends

    def arm(self, ins: list) -> bool:
        """Arms the kernels for the state inputs (arrays in ``ins``) that only the state
        holds; True when any was armed (call ``disarm`` after the replay)."""
        if not self.proven or not (self.by_input or self.steps_by_input):
            return False
        base = self.tape.donation_base
        by_input = self.by_input
        held = _sole_held(ins, by_input, base)
        if len(held) == len(by_input) and self.all_armed is not None:
            armed = self.all_armed  # the usual case, made once
        else:
            pairs_of: dict[_Donating, list] = {}
            for i in held:
                for w, p, o in by_input[i]:
                    pairs_of.setdefault(w, []).append((p, o))
            armed = [(w, tuple(pairs)) for w, pairs in pairs_of.items()]
            if len(held) == len(by_input):
                self.all_armed = armed
        me = _get_ident()
        for w, pairs in armed:
            w.thread = me
            w.armed = pairs
        steps = 0
        for i in _sole_held(ins, self.steps_by_input, base) if self.steps_by_input else ():
            st = self.steps_by_input[i]
            st.thread = me
            st.armed = True
            steps += 1
        return bool(armed) or steps > 0

    def rollback(self) -> None:
        """Puts back what the in-place steps of a failed replay overwrote, last first."""
        log = self.log
        while log:
            log.pop()()

    def disarm(self) -> None:
        for w in self.wrappers:
            w.armed = ()
        for st in self.in_place:
            st.armed = False
        self.log.clear()

    @property
    def donations(self) -> int:
        """Kernel calls that wrote into a state input's buffer (for tests and stats)."""
        return sum(w.uses for w in self.wrappers) + sum(st.uses for st in self.in_place)


def plan(tape: Any, n_state: int) -> Plan:
    """The in-place plan of ``tape`` whose first ``n_state`` inputs are the state's leaves
    (wraps the kernels it uses; see the module docstring)."""
    pl = Plan(tape)
    if not (tape.eager_ok and tape.donation_base is not None and not tape.shapeless):
        return pl  # the backend lends no buffers
    steps = tape.steps
    draft = tape.draft  # the tape's input slot i is the draft's value i
    n_state = min(n_state, tape.n_inputs)
    # the slots that may share memory with each state input, and where each slot is read
    alias: dict[int, set[int]] = {s: {s} for s in range(n_state)}
    sources: dict[int, set[int]] = {s: {s} for s in range(n_state)}  # slot -> state inputs
    reads: dict[int, list[int]] = {}
    into: dict[int, tuple[Any, set[int]]] = {}  # step -> (in-place form, aliases before it)
    for k, st in enumerate(steps):
        for a in st.args:
            reads.setdefault(a, []).append(k)
        if st.kernel is None and st.args and st.args[0] < n_state:
            fn = registry.implementation_into(type(st.prim), st.stream.device.type.value)
            if fn is not None:
                into[k] = (fn, set(alias[st.args[0]]))
        if st.kernel is not None or st.prim.name in _FRESH:
            continue
        srcs: set[int] = set()
        for a in st.args:
            srcs |= sources.get(a, set())
        for j in range(st.nout if srcs else 0):
            sources[st.out + j] = srcs
            for s in srcs:
                alias[s].add(st.out + j)
    outputs = set(tape.outputs)
    taken: set[tuple[int, int]] = set()
    last_risky = -1
    for k, st in enumerate(steps):
        if not (st.kernel is not None or st.prim.elementwise or st.prim.name in _SAFE):
            last_risky = k
    for k, st in enumerate(steps):
        spec = getattr(st.prim, "spec", None)
        if st.kernel is None or spec is None or k < last_risky:
            continue
        for p, s in enumerate(st.args):
            if s >= n_state or st.args.count(s) != 1:
                continue
            group = alias[s]
            if group & outputs or any(a in group for a in st.args if a != s):
                continue  # returned, or shared with another argument of this kernel
            if any(r > k for a in group for r in reads.get(a, ())):
                continue  # read after this step
            reader = spec.single_reader(p)
            if reader < 0 or tuple(draft.shape[s]) != tuple(st.shape):
                continue
            for o in range(st.nout):
                if (k, o) in taken or (st.donate and any(o == q for _, q in st.donate)):
                    continue
                if st.dtypes[o] != draft.dtype[s] or not spec.depends(spec.outputs[o], reader):
                    continue
                w = st.kernel
                if not isinstance(w, _Donating):
                    w = st.kernel = _Donating(st.kernel, st.nout)
                    pl.wrappers.append(w)
                w.pairs.append((p, o, s))
                pl.by_input.setdefault(s, []).append((w, p, o))
                taken.add((k, o))
                break
    for k, (fn, group) in into.items():
        st = steps[k]
        s = st.args[0]
        if s in pl.steps_by_input or s in pl.by_input:
            continue
        if st.args.count(s) != 1 or any(a in group for a in st.args[1:]):
            continue  # the update or an index shares the target's memory
        if group & outputs or any(r != k for a in group for r in reads.get(a, ()) if r >= k):
            continue  # returned, or read at or after this step by another one
        if tuple(draft.shape[s]) != tuple(st.shape) or st.dtypes[0] != draft.dtype[s]:
            continue
        w = _InPlace(st.impl, fn, pl.log)
        st.impl = w
        pl.in_place.append(w)
        pl.steps_by_input[s] = w
    return pl
