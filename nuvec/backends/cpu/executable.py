"""A compiled function's tape as one CPU executable: a static memory plan and steps bound
ahead of time, replayed from Cython (``_executable.pyx``).

``Tape._eager`` replays a tape through Python: per step a list of operands, a kernel call that
checks and lays out every operand and takes its output from the buffer cache, or the step's
implementation. The executable plans that work once:

* kinds of steps: an element-wise or fused kernel (``ELT``) fills its launch at its first run
  and later calls replay it on the step's operand pointers; a float32/float64 product
  (``matmul``, ``addmm`` with its bias add, a product written in a permuted layout: ``GEMM``)
  is planned once and called through CBLAS by address; a sum, max or min that
  ``reduction.py`` runs through a row kernel (``ROW``) calls ``_rows.reduce_rows``; so does a
  float32 logsumexp over the innermost axis (``LSE``: ``_rows``' one pass per row, then NumPy's
  log of the sums in place and the shift added, as ``reduction._logsumexp``);
  ``take_along_axis`` (``GATHER_AXIS``) and its additive scatter (``SCATTER_AXIS``: its
  gradient, ``np.add.at``'s order) over C-contiguous operands copy and add elements in C, after
  a bounds check whose failure runs the implementation (which raises its error); a view
  (``VIEW``: transpose, reshape, ...) whose first run returned a view at its operand's
  address is that address afterwards (made as an array only where a Python step reads it or
  it is returned); any other step (``PY``: other gathers and scatters, layer norm...) calls
  its implementation with the planned operands. Layouts are fixed by the first run: the
  inputs' are checked at each call, a ``PY`` result's when it is made, and an op whose
  operands differ runs through its generic path on that call;
* memory plan: every intermediate that a step run in C (not ``PY`` or ``VIEW``) makes lives
  at a fixed offset of one arena per executable; slots whose lifetimes do not overlap share
  memory (an output takes a dying operand's place where the tape's donation rule allows it,
  as ``Tape._run_donating`` does: ``Tape.donations`` counts those). A ``PY`` or ``VIEW``
  step's result may be a view of its operands, so an arena slot such a step reads stays
  alive as long as anything made from it; an output of the tape is never in the arena (a new
  buffer per call; a ``PY`` result over the arena is copied when it is returned);
* a stateful step's in-place updates (``compile.inplace``): a kernel wrapped to write a new
  state value into the old one's buffer does so here too, for the thread that armed it, and
  the in-place steps' undo log is kept, so a failed step leaves the state unchanged. The
  wrappers are made at the step's first call: ``stateful`` plans again then.

The same kernels run on the same operands in the same order, so the bits are the eager
replay's. One call at a time runs the executable (its arena and pointer tables are shared); a
call made while another thread runs it, or whose inputs are laid out otherwise than at its
first call, replays the tape plainly. ``NUVEC_CPU_EXECUTABLE=0`` turns it off.

    ex = build(tape)              # CpuBackend.executable; None where the tape keeps its replay
    outs = ex(inputs)
"""

from __future__ import annotations

import collections
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...primitives.indexing import GatherAxis, ScatterAxis
from ...primitives.linalg import AddMM, Matmul, PermutedMatmul
from ...primitives.reduction import LogSumExp, Reduce
from .. import registry
from . import kernels
from ._eltwise import Kernel
from ._executable import Executable
from .linalg import _ADD
from .reduction import _SHIFTED_EXP, _address

ELT, GEMM, PY, VIEW, ROW, LSE, GATHER_AXIS, SCATTER_AXIS = range(8)
IN_C = (ELT, GEMM, ROW, LSE, GATHER_AXIS, SCATTER_AXIS)  # kinds whose outputs are in the arena
ARENA, NEW, INTO = 0, 1, 2
ROW_MIN, ROW_MAX, ROW_SUM, ROW_COLS = 0, 1, 2, 3  # _rows.pxd's jobs
# steps whose implementation returns a view of their operand (where it can)
_VIEWS = frozenset(
    {"transpose", "reshape", "flatten", "expand_dims", "squeeze", "broadcast_to", "stop_gradient"}
)
_ALIGN = 64
_PRODUCTS = (Matmul, AddMM, PermutedMatmul)
_BLAS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


def why_not(tape) -> str | None:
    """Why ``tape`` replays its steps itself rather than through an executable (None: it
    does not)."""
    if os.environ.get("NUVEC_CPU_EXECUTABLE", "1") == "0":
        return "turned off (NUVEC_CPU_EXECUTABLE=0)"
    if not tape.eager_ok:
        return "replays as graph nodes (a step has no CPU implementation, or a traced array)"
    if tape.shapeless:
        return "shapeless: shapes are inferred again on every call"
    if len(tape.steps) < 2:
        return "a single step: run directly"
    return None


def build(tape) -> Executable | None:
    """The executable of ``tape``, or None (``why_not``)."""
    if why_not(tape) is not None:
        return None
    return Executable(tape, plan)


@dataclass
class OpPlan:
    """One step as the executable runs it (read once by ``_executable.Executable``)."""

    kind: int
    args: tuple  # operand slots (GEMM: a, b; an INTO add: the product, the bias)
    out: int  # first output slot
    nout: int
    shape: tuple
    descrs: list  # the outputs' NumPy dtypes
    dest: tuple = ()  # per output: ARENA, NEW, or INTO + p: into operand p (ELT and GEMM)
    kernel: Any = None
    wrapper: Any = None  # compile.inplace's kernel wrapper (it says when to write in place)
    impl: Any = None
    prim: Any = None
    node: Any = None
    perm: tuple | None = None  # PermutedMatmul: the product is written in this transpose
    release: tuple = ()  # slots whose values drop after the op
    checked: tuple = ()  # operand slots made by PY steps (their layout is checked per call)
    read_by_c: list = field(default_factory=list)  # PY: per output, read by an op by address
    eager: bool = False  # VIEW: its result is read as an array (by a PY step, or returned)
    what: int = 0  # ROW: the job, its dtype, its row length (COLS: columns) and row count
    f64: bool = False
    rn: int = 0
    rrows: int = 0
    shifted_exp: int = 0  # LSE: the address of reduction.py's shifted-exp kernel
    along: tuple = ()  # GATHER_AXIS, SCATTER_AXIS: (outer, axis length, index length, inner)
    itemsize: int = 0  # ... the data's element size, and whether the indices are int64
    idx64: bool = False


@dataclass
class Plan:
    ops: list
    arena: np.ndarray
    template: list  # per slot: constant data, arena view, or None
    donations: int  # outputs placed over a dying operand, per call
    steps: int = 0
    in_c: int = 0
    python: dict = field(default_factory=dict)  # primitive name -> steps run in Python


def _kernel_of(step) -> tuple[Any, Any]:
    """(kernel, in-place wrapper) of a step that runs one generated kernel, else (None, None)."""
    k = step.kernel
    if k is None:
        k = getattr(step.impl, "kernel", None)  # a single op's specialized implementation
    if isinstance(k, Kernel):
        return k, None
    inner = getattr(k, "kernel", None)
    if isinstance(inner, Kernel) and hasattr(k, "armed"):
        return inner, k
    return None, None


def _product(step, draft) -> bool:
    """Whether a step is a product the executable calls through CBLAS itself."""
    prim = step.prim
    if type(prim) not in _PRODUCTS or step.nout != 1:
        return False
    want = np.dtype(step.dtypes[0].np)
    if want not in _BLAS_DTYPES:
        return False
    if any(np.dtype(draft.dtype[a].np) != want for a in step.source.args):
        return False
    if type(prim) is AddMM:
        return prim.alpha == 1.0 and prim.beta in (0.0, 1.0)
    return True


def _row_job(step, draft) -> tuple | None:
    """(job, float64, n, rows) where a step is a reduction that ``reduction._reduce`` runs
    through a row kernel (for a C-contiguous operand: checked at the first run), else None."""
    prim = step.prim
    if type(prim) is not Reduce or prim.op not in ("sum", "max", "min") or not prim.axes:
        return None
    x = step.source.args[0]
    dtype, shape = np.dtype(draft.dtype[x].np), tuple(draft.shape[x])
    nd, size = len(shape), int(np.prod(shape, dtype=np.int64))
    if dtype not in _BLAS_DTYPES or np.dtype(step.dtypes[0].np) != dtype or not size:
        return None
    axes = sorted({a % nd for a in prim.axes})
    f64 = dtype.itemsize == 8
    if axes == [nd - 1]:  # the innermost rows
        job = {"sum": ROW_SUM, "max": ROW_MAX, "min": ROW_MIN}[prim.op]
        return job, f64, shape[-1], size // shape[-1]
    k = len(axes)
    cols = size // max(int(np.prod(shape[:k], dtype=np.int64)), 1)
    if prim.op == "sum" and axes == list(range(k)) and k < nd and cols >= 2:
        return ROW_COLS, f64, cols, size // cols  # sums over the leading axes
    return None


def _plain_impl(step) -> bool:
    """Whether a step runs its primitive's registered CPU implementation (not a wrapper, such
    as a stateful step's in-place form)."""
    return step.impl is registry.implementation(type(step.prim), "cpu")


def _lse_job(step, draft) -> tuple | None:
    """(row length, rows) where a step is a float32 logsumexp over the innermost axis of a
    non-empty operand (``reduction._logsumexp``'s row-kernel case), else None."""
    prim = step.prim
    if type(prim) is not LogSumExp or step.nout != 1 or not _plain_impl(step):
        return None
    x = step.source.args[0]
    shape = tuple(draft.shape[x])
    nd = len(shape)
    f32 = np.dtype(np.float32)
    if np.dtype(draft.dtype[x].np) != f32 or np.dtype(step.dtypes[0].np) != f32 or not nd:
        return None
    if sorted({a % nd for a in prim.axes}) != [nd - 1]:
        return None
    size = int(np.prod(shape, dtype=np.int64))
    if not size:
        return None
    return shape[-1], size // shape[-1]


def _along_job(step, draft) -> tuple | None:
    """((outer, axis length, index length, inner), element size, int64 indices) where a step
    is a ``take_along_axis`` or an additive ``put_along_axis`` the executable runs itself (one
    dtype of 1, 2, 4 or 8 bytes, floats for the scatter; int32 or int64 indices), else None."""
    prim = step.prim
    if type(prim) not in (GatherAxis, ScatterAxis) or step.nout != 1 or not _plain_impl(step):
        return None
    src = step.source.args
    a, idx = src[0], src[1]
    shape, ishape = tuple(draft.shape[a]), tuple(draft.shape[idx])
    dtype, itype = np.dtype(draft.dtype[a].np), np.dtype(draft.dtype[idx].np)
    if itype not in _INDEX_DTYPES or np.dtype(step.dtypes[0].np) != dtype:
        return None
    if type(prim) is ScatterAxis:
        if prim.mode != "add" or dtype not in _BLAS_DTYPES:
            return None
        if np.dtype(draft.dtype[src[2]].np) != dtype or tuple(draft.shape[src[2]]) != ishape:
            return None
    elif dtype.itemsize not in (1, 2, 4, 8) or dtype.kind not in "biuf":
        return None
    nd = len(shape)
    if not nd or len(ishape) != nd:
        return None
    ax = prim.axis % nd
    outer = int(np.prod(shape[:ax], dtype=np.int64))
    inner = int(np.prod(shape[ax + 1 :], dtype=np.int64))
    if not shape[ax] or not outer * ishape[ax] * inner:
        return None
    return (outer, shape[ax], ishape[ax], inner), dtype.itemsize, itype.itemsize == 8


def plan(tape) -> Plan:
    """The executable's plan of ``tape`` (its steps as they are now: a stateful step's
    in-place wrappers included)."""
    steps = tape.steps
    draft = tape.draft
    n_in, n_c = tape.n_inputs, len(tape.consts)
    first_step = n_in + n_c
    outputs = set(tape.outputs)
    kinds = []
    for st in steps:
        kernel, _ = _kernel_of(st)
        if len(st.shape) > 32 or len(st.args) + st.nout > 32:  # _executable.pyx's limits
            kinds.append(PY)
        elif kernel is not None:
            kinds.append(ELT)
        elif _product(st, draft):
            kinds.append(GEMM)
        elif _row_job(st, draft) is not None:
            kinds.append(ROW)
        elif _lse_job(st, draft) is not None:
            kinds.append(LSE)
        elif _along_job(st, draft) is not None:
            kinds.append(GATHER_AXIS if type(st.prim) is GatherAxis else SCATTER_AXIS)
        elif st.prim.name in _VIEWS and len(st.args) == 1 and st.nout == 1:
            kinds.append(VIEW)
        else:
            kinds.append(PY)
    # which slot lives where: arena for what the steps run in C make (outputs aside)
    made_by_c: dict[int, bool] = {}
    for st, kind in zip(steps, kinds):
        for o in range(st.nout):
            made_by_c[st.out + o] = kind in IN_C
    in_arena = {s for s, c in made_by_c.items() if c and s not in outputs}
    # an output that a fused kernel writes over its dying operand (``Step.donate``), made by
    # an ELT or GEMM step and read only there: that operand gets a new buffer each call too,
    # and the kernel writes the output into it (as the eager replay does)
    readers: dict[int, int] = collections.Counter(a for st in steps for a in st.args)
    into: dict[tuple, int] = {}  # (step, output) -> operand position
    for k, (st, kind) in enumerate(zip(steps, kinds)):
        if kind != ELT or not st.donate:
            continue
        for p, o in st.donate:
            a = st.args[p]
            if st.out + o in outputs and a in in_arena and readers[a] == 1:
                in_arena.discard(a)
                into[k, o] = p
    # roots: the arena slots a value may share memory with (a PY step's result may be a view)
    roots: dict[int, set] = {s: {s} for s in in_arena}
    for st, kind in zip(steps, kinds):
        if kind in (PY, VIEW):
            r: set = set()
            for a in st.args:
                r |= roots.get(a, set())
            for o in range(st.nout):
                roots[st.out + o] = r
    n = len(steps)
    end = {s: -1 for s in in_arena}  # the last step using the slot's memory
    for k, st in enumerate(steps):
        for s in in_arena.intersection(range(st.out, st.out + st.nout)):
            end[s] = max(end[s], k)
        for a in st.args:
            for s in roots.get(a, ()):
                end[s] = max(end[s], k)
    for o in outputs:  # a returned view of an arena slot: kept to the end (copied out)
        for s in roots.get(o, ()):
            end[s] = n
    read_by_c = {a for st, kind in zip(steps, kinds) if kind != PY for a in st.args}
    # a VIEW read as an array (by a PY step, or returned) is made as one; so is its operand
    # if that is a VIEW too
    eager: set = set(outputs)
    for st, kind in reversed(list(zip(steps, kinds))):
        if kind == PY or (kind == VIEW and st.out in eager):
            eager.update(st.args)
    # a VIEW that runs by address may be made later from its operand (``_value``): operands
    # of views stay in the call's values to its end
    kept = in_arena | {st.args[0] for st, kind in zip(steps, kinds) if kind == VIEW}
    layout = _layouts(steps)
    offsets, size, donations = _assign(steps, kinds, layout, in_arena, end)
    donations += len(into)
    arena = np.empty(size + _ALIGN, np.uint8)
    skip = (-arena.ctypes.data) % _ALIGN
    template: list = [None] * tape.n_slots
    for i, d in enumerate(tape.const_data):
        template[n_in + i] = d
    for s in in_arena:
        shape, dtype, nbytes = layout[s]
        view = arena[skip + offsets[s] : skip + offsets[s] + nbytes]
        template[s] = view.view(dtype).reshape(shape)
    ops = []
    python: collections.Counter = collections.Counter()
    for k, (st, kind) in enumerate(zip(steps, kinds)):
        descrs = [np.dtype(d.np) for d in st.dtypes]
        release = tuple(s for s in st.release if s >= first_step and s not in kept)
        checked = tuple(a for a in st.args if a >= first_step and not made_by_c.get(a, True))
        dest = tuple(
            INTO + into[k, o] if (k, o) in into else ARENA if st.out + o in in_arena else NEW
            for o in range(st.nout)
        )
        step = dict(
            out=st.out,
            nout=st.nout,
            shape=tuple(st.shape),
            descrs=descrs,
            impl=st.impl,
            prim=st.prim,
            node=st.node,
            release=release,
        )
        placed = dict(step, dest=dest, checked=checked)  # a step C runs on its operands
        if kind == ELT:
            kernel, wrapper = _kernel_of(st)
            ops.append(OpPlan(ELT, st.args, kernel=kernel, wrapper=wrapper, **placed))
        elif kind == GEMM:
            prim = st.prim
            ab = st.args[1:] if type(prim) is AddMM else st.args
            perm = None
            if type(prim) is PermutedMatmul:
                perm = tuple(sorted(range(len(prim.axes)), key=prim.axes.__getitem__))
            add = type(prim) is AddMM and prim.beta == 1.0
            product = dict(placed, release=()) if add else placed  # (the add releases)
            ops.append(OpPlan(GEMM, ab, perm=perm, **product))
            if add:  # the bias add, in place, by the kernel addmm's implementation uses
                bias = dict(placed, dest=(INTO + 0,))
                ops.append(OpPlan(ELT, (st.out, st.args[0]), kernel=_add_kernel(descrs[0]), **bias))
        elif kind == ROW:
            what, f64, rn, rrows = _row_job(st, draft)  # type: ignore[misc]
            ops.append(OpPlan(ROW, st.args, what=what, f64=f64, rn=rn, rrows=rrows, **placed))
        elif kind == LSE:
            rn, rrows = _lse_job(st, draft)  # type: ignore[misc]
            shifted_exp = _address(_SHIFTED_EXP)
            ops.append(OpPlan(LSE, st.args, rn=rn, rrows=rrows, shifted_exp=shifted_exp, **placed))
        elif kind in (GATHER_AXIS, SCATTER_AXIS):
            along, itemsize, idx64 = _along_job(st, draft)  # type: ignore[misc]
            ops.append(OpPlan(kind, st.args, along=along, itemsize=itemsize, idx64=idx64, **placed))
        elif kind == VIEW:
            eager_view = st.out in eager
            ops.append(
                OpPlan(VIEW, st.args, checked=checked, eager=eager_view, read_by_c=[True], **step)
            )
        else:
            python[st.prim.name] += 1
            read = [st.out + o in read_by_c for o in range(st.nout)]
            ops.append(OpPlan(PY, st.args, read_by_c=read, **step))
    in_c = sum(kind != PY for kind in kinds)  # (a VIEW that turns out not to be one: Python)
    return Plan(ops, arena, template, donations, len(steps), in_c, dict(python))


def _add_kernel(dtype: np.dtype) -> Kernel:
    return kernels.get_kernel(_ADD[dtype])


def _layouts(steps) -> dict:
    """slot -> (shape, NumPy dtype, bytes) of every step output."""
    out = {}
    for st in steps:
        for o in range(st.nout):
            shape = tuple(st.node.siblings[o]._shape) if st.nout > 1 else tuple(st.shape)
            dtype = np.dtype(st.dtypes[o].np)
            out[st.out + o] = (shape, dtype, _nbytes(shape, dtype))
    return out


def _nbytes(shape: tuple, dtype: np.dtype) -> int:
    n = dtype.itemsize
    for d in shape:
        n *= d
    return n


def _assign(steps, kinds, layout: dict, in_arena: set, end: dict) -> tuple[dict, int, int]:
    """Arena offsets of the slots in ``in_arena``: each step's outputs are placed before the
    memory of the slots whose last use it is comes free, but for an output that takes a dying
    operand's place where the tape's donation rule allows it (``Step.donate``: read once
    there, same shape and dtype, the output's elements depend on it). Returns (offsets, arena
    size, donations per call)."""
    free: dict[int, list] = collections.defaultdict(list)  # block size -> offsets
    offsets: dict[int, int] = {}
    block: dict[int, int] = {}  # slot -> its block's size
    top = 0
    donations = 0
    dies: dict[int, list] = collections.defaultdict(list)
    for s, k in end.items():
        dies[k].append(s)
    for k, (st, kind) in enumerate(zip(steps, kinds)):
        taken: set = set()
        for o in range(st.nout):
            s = st.out + o
            if s not in in_arena:
                continue
            size = -(-max(layout[s][2], 1) // _ALIGN) * _ALIGN
            donor = None
            if kind == ELT and st.donate:
                for p, q in st.donate:
                    a = st.args[p]
                    if (
                        q == o
                        and a in in_arena
                        and end[a] == k
                        and a not in taken
                        and block.get(a) == size
                    ):
                        donor = a
                        break
            if donor is not None:
                taken.add(donor)
                offsets[s] = offsets[donor]
                donations += 1
            elif free[size]:
                offsets[s] = free[size].pop()
            else:
                offsets[s] = top
                top += size
            block[s] = size
        for s in dies.get(k, ()):
            if s not in taken:
                free[block[s]].append(offsets[s])
    return offsets, top, donations


def describe(tape) -> dict:
    """What runs ``tape`` (``f.stats()["executable"]``)."""
    ex = tape.executable
    if ex is None:
        return {"state": "replays its steps", "reason": why_not(tape)}
    p = ex.plan
    if p is None:
        return {"state": "planned at its first call", "reason": None}
    return {
        "state": "executable",
        "steps": p.steps,
        "steps_in_c": p.in_c,
        "steps_in_python": p.python,
        "ops_unbound": ex.unbound(),  # bound neither at their first run nor later
        "arena_bytes": int(p.arena.size),
        "donations_per_call": p.donations,
        "calls": ex.calls,
        "plain_replays": ex.plain_replays,
        "last_plain_replay": ex.last_plain_replay,
    }
