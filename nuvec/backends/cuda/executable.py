"""A compiled function's tape as one CUDA executable: a static memory plan and a recorded
CUDA graph, launched once per call.

A training step replays tens of steps (cuBLAS products, reductions, fused kernels); launched
one by one from Python each costs host time while the GPU waits. Once warm, the tape is
recorded as a CUDA graph and every later call launches it with one call:

* memory plan: every buffer a step allocates while the graph records comes from a memory pool
  of the executable's own over one arena (``_Arena``): blocks freed by one step are reused by
  later ones, and the offsets are fixed from then on. Matmuls use nuvec's own cuBLAS handle
  (``gemm``), whose workspace was set when the handle was made;
* inputs: the graph reads each input from a buffer of its own; a call copies an input in (one
  device-to-device copy) unless it is the array copied last time, or the state the graph wrote;
* state fed back: where a call's input is an output of the call before (a model's parameters
  and an optimizer's moments in ``nv.compile(step, inputs=state, outputs=state)``, the random
  key, or ``params = step(params)``), the graph writes the new value straight into a buffer
  the next call reads, so the state never moves (donation without copies, as JAX's
  ``donate_argnums``). In a stateful call, whose write-back replaces the state's arrays, the
  new values go into the old values' own buffers (one graph, one set of buffers): a value
  that a later step still reads (or that an output is a view of) is written to scratch and
  copied over at the end of the graph, and a state array that someone else still holds (its
  reference count says so) gets a copy of its own first. Elsewhere (a functional call: the
  caller holds its arguments during the call) two graphs are recorded that read the state
  from one set of buffers and write the new state into the other. Outputs the function
  returns unchanged (a learning rate, an unused key) are the inputs themselves, outside the
  graph;
* outputs: handed out as arrays over the graph's buffers. Before a graph writes a buffer again,
  the executable checks (reference counts of the buffer, its memory pointer and its memory)
  that no one else can see it: an array handed out earlier that is still held gets a copy of
  its own first, so a reference kept across calls keeps its value; a buffer someone made a
  view of makes that call replay plainly.

Calls before the ``WARM_CALLS``-th, calls with an input that is not C-contiguous, a call made
while another thread runs the executable, and every call after a failed recording (a step that
reads data on the host, say) replay the tape plainly: the same kernels on the same data, so
the same bits. While it records, other callers of the executable wait; other work queued on
the same stream by other threads during that moment would be recorded too (CUDA records a
stream, not a thread), so warm a step up before sharing it between threads. ``describe()``
(``f.stats()["executable"]``) says which, and why. Set ``NUVEC_CUDA_GRAPHS=0``
to turn recording off.

    Executable(tape, cuda_stream)    # nuvec.backends.cuda.replay.Replay makes it
"""

from __future__ import annotations

import os
import sys
import threading
import weakref

import cupy as cp

from ...primitives.compiled import Compiled
from ..runs import independent_runs
from . import kernels
from ._buffers import Buffer as _Buffer
from ._buffers import copies_of, outputs, reclaim_all
from .runtime import storage_dtype

WARM_CALLS = 3  # calls 1 and 2 replay plainly (and build every kernel); call 3 records
_RELAXED = getattr(cp.cuda.runtime, "streamCaptureModeRelaxed", 2)  # allocations allowed
_ALIGN = 512
_rc = sys.getrefcount


def why_not(tape) -> str | None:
    """Why ``tape`` never becomes an executable, or None when it may."""
    if os.environ.get("NUVEC_CUDA_GRAPHS", "1") == "0":
        return "turned off (NUVEC_CUDA_GRAPHS=0)"
    if not tape.eager_ok:
        return (
            "replays as graph nodes: a step has no implementation on this device, runs on "
            "another stream, or the function captured a traced array"
        )
    if tape.shapeless:
        return "shapeless: shapes are inferred again on every call"
    if len(tape.steps) < 2:
        return "a single step: launched directly"
    return None


class _Arena:
    """The raw allocator of an executable's memory pool: consecutive blocks of one device
    allocation (another, as large again, only if a recording needs more than planned)."""

    def __init__(self, size: int) -> None:
        self.size = max(size, 1 << 20)
        self.chunks: list = [cp.cuda.Memory(self.size)]  # made before recording starts
        self.used = 0

    def __call__(self, n: int):
        n = -(-n // _ALIGN) * _ALIGN
        last = self.chunks[-1]
        if self.used + n > last.size:
            last = cp.cuda.Memory(max(n, self.size))
            self.chunks.append(last)
            self.used = 0
        mem = cp.cuda.memory.UnownedMemory(last.ptr + self.used, n, last)
        self.used += n
        return cp.cuda.MemoryPointer(mem, 0)

    def holds(self, x) -> bool:
        p = x.data.ptr
        return any(c.ptr <= p < c.ptr + c.size for c in self.chunks)

    @property
    def nbytes(self) -> int:
        return sum(c.size for c in self.chunks)


class _Graph:
    """One recording: the graph, its memory pool and the buffers it reads and writes."""

    __slots__ = ("graph", "pool", "arena", "ins", "outs", "scratch", "written", "plan")

    def __init__(self, graph, pool, arena, ins: list, outs: dict, scratch: list) -> None:
        self.graph = graph
        self.pool = pool
        self.arena = arena
        self.ins = ins  # per input: the _Buffer the graph reads (None: an input it never reads)
        self.outs = outs  # per output slot: the _Buffer the graph writes
        self.scratch = scratch  # buffers only the graph uses (kept alive with it)
        self.written = list({id(b): b for b in outs.values()}.values())  # each buffer once
        self.plan: list | None = None  # how each output is made (``Executable._plan``)


class Executable:
    """The executable of a tape on a CUDA stream (see the module docstring)."""

    def __init__(self, tape, stream: cp.cuda.Stream) -> None:
        self.tape = tape
        self.stream = stream
        self.calls = 0
        self.graphs: list[_Graph] = []
        self.failed = False
        self.reason: str | None = None  # why the tape is not recorded
        self.lock = threading.Lock()
        self.prev: list = []  # weak references to the last plain replay's outputs
        self.fed: dict[int, int] = {}  # input position -> output slot fed back into it
        self.plain_in: list[int] = []  # inputs copied in (not fed back)
        self.src: list = []  # per input: (array weakref, data id, pointer) copied last
        self.parity = 0
        self.launches = 0
        self.fallbacks = 0
        self.last_fallback: str | None = None
        self.copies = 0
        self.detached = 0
        self.n_state = 0  # stateful calls: inputs below this are the state's leaves
        self.in_place = False  # the state's new values go into its own buffers (one graph)
        self.two_sets: str | None = None  # why the state is fed back between two sets
        self.copied_back: list = []  # in place: inputs whose new value is copied in at the end
        # runs of independent fused steps (first, end), and how many the graph launches as
        # one kernel each
        self.runs = dict(independent_runs(tape.steps, _fused))
        self.runs_joined = 0
        # in place: an input's references when only the state holds it
        self.base: dict[int, int] = {}

    def stateful(self, n_state: int) -> None:
        """Says that the first ``n_state`` inputs are a stateful step's state leaves, which
        the step's write-back replaces after every call (``nv.compile(inputs=, outputs=)``):
        where only the state holds them, their new values may go into their own buffers."""
        self.n_state = n_state

    # -- the call ----------------------------------------------------------------------

    def __call__(self, inputs: list) -> list:
        if self.failed:
            return self.tape.replay_data(inputs)
        if not self.lock.acquire(blocking=False):
            if self.graphs:
                return self._plain(inputs, "another thread is running the executable")
            # warming up or recording: one call at a time (work another thread queued on the
            # stream while it records would be recorded too)
            self.lock.acquire()
        try:
            if not self.graphs:
                self.calls += 1
                if self.calls < WARM_CALLS:
                    outs = self.tape.replay_data(inputs)
                    self.prev = [weakref.ref(o) for o in outs]
                    return outs
                if not self._record(inputs):
                    return self.tape.replay_data(inputs)
            outs = self._launch(inputs)
            return outs if outs is not None else self.tape.replay_data(inputs)
        finally:
            self.lock.release()

    def _plain(self, inputs: list, why: str) -> list:
        self.fallbacks += 1
        self.last_fallback = why
        return self.tape.replay_data(inputs)

    def describe(self) -> dict:
        """What the executable does (``f.stats()["executable"]``)."""
        state = "recorded" if self.graphs else ("not recorded" if self.failed else "warming up")
        out = {
            "state": state,
            "reason": self.reason,
            "graphs": len(self.graphs),
            "launches": self.launches,
            "state_fed_back": len(self.fed),
            "state_in_place": self.in_place,
            "state_copied_back": len(self.copied_back),
            "state_two_sets": self.two_sets,
            "fused_runs_joined": self.runs_joined,
            "inputs_copied": self.copies,
            "arrays_detached": self.detached,
            "plain_replays": self.fallbacks,
            "last_plain_replay": self.last_fallback,
        }
        if self.graphs:
            out["arena_bytes"] = sum(g.arena.nbytes for g in self.graphs)
        return out

    # -- recording ---------------------------------------------------------------------

    def _record(self, inputs: list) -> bool:
        tape = self.tape
        # references to each input now, before any local name holds one (see _sole_inputs)
        refs = [_rc(inputs[i]) for i in range(len(inputs))]
        read = tape.read_inputs
        if not all(inputs[i]._data.flags.c_contiguous for i in read):  # try on a later call
            self.calls -= 1
            self.last_fallback = "an input is not C-contiguous"
            return False
        n_in = tape.n_inputs
        first_step = n_in + len(tape.consts)
        step_outs = {s for s in tape.outputs if s >= first_step}
        prev = [w() for w in self.prev]
        fed: dict[int, int] = {}
        taken: set = set()
        for i, x in enumerate(inputs):
            for j, o in enumerate(prev):
                slot = tape.outputs[j]
                if o is x and slot in step_outs and slot not in taken:
                    fed[i] = slot
                    taken.add(slot)
                    break
        del prev
        self.prev = []
        plain = [i for i in range(n_in) if i not in fed]
        self._prepare_runs(inputs)
        with self.stream:
            # an input no step reads (returned as it is) gets no buffer: None in ``ins``
            shared = {i: _Buffer(cp.empty_like(inputs[i]._data)) for i in plain if i in read}
            sets = [{i: _Buffer(cp.empty_like(inputs[i]._data)) for i in fed} for _ in range(2)]
        graphs: list = []
        uses: dict = {}
        self.in_place, self.two_sets, self.copied_back = False, None, {}
        try:
            ins = [sets[0][i] if i in fed else shared.get(i) for i in range(n_in)]
            graphs.append(self._capture(ins, {fed[i]: sets[1][i] for i in fed}, uses))
            why = self._in_place_blocker(fed, uses) if fed else "no state fed back"
            if why is None:
                # one graph over one set: each new state value goes into its old buffer, or
                # (where a later step still reads the old value) into a scratch buffer copied
                # over at the end of the graph
                late = uses["late"]
                scratch = {fed[i]: _Buffer(cp.empty_like(inputs[i]._data)) for i in late}
                targets = {fed[i]: scratch.get(fed[i], sets[0][i]) for i in fed}
                back = {fed[i]: sets[0][i] for i in late}
                try:
                    g = self._capture(ins, targets, copy_back=back)
                except Exception as e:  # noqa: BLE001 - keep the two-set recording
                    why = f"the in-place recording failed: {str(e)[:200]}"
                else:
                    graphs = [g]
                    self.in_place, self.copied_back = True, late
                    e_min = min(refs[i] for i in fed)
                    last = n_in - 1  # a caller's loop may still name the last input
                    self.base = {
                        i: refs[i] if i == last and refs[i] <= e_min + 2 else e_min for i in fed
                    }
            if not self.in_place and fed:
                self.two_sets = why
                ins = [sets[1][i] if i in fed else shared.get(i) for i in range(n_in)]
                graphs.append(self._capture(ins, {fed[i]: sets[0][i] for i in fed}))
        except Exception as e:  # noqa: BLE001 - a step that cannot be recorded: replay plainly
            self.failed = True
            self.reason = f"cannot be recorded: {str(e)[:300]}"
            return False
        for g in graphs:
            for b in list(g.ins) + list(g.outs.values()):
                if b is not None:
                    b.settle()
        self.graphs, self.fed, self.plain_in = graphs, fed, plain
        self.src = [None] * n_in
        return True

    def _prepare_runs(self, inputs: list) -> None:
        """Builds the kernels that launch each run of independent fused steps at once (for
        the operands' usual layout: size-1 ones broadcast, the others contiguous), before
        recording starts."""
        tape = self.tape
        sizes = [x.size for x in inputs] + [c.size for c in tape.consts]
        sizes += [0] * (tape.n_slots - len(sizes))
        for st in tape.steps:
            n = 1
            for d in st.shape:
                n *= d
            sizes[st.out : st.out + st.nout] = [n] * st.nout
        for first, end in self.runs.items():
            members = tuple(
                (st.prim.spec, tuple(int(sizes[a] == 1) for a in st.args))
                for st in tape.steps[first:end]
            )
            kernels.prepare_group(members)

    def _estimate(self) -> int:
        """Bytes the steps' outputs take, each once: the arena's first size."""
        total = 0
        for st in self.tape.steps:
            n = 1
            for d in st.shape:
                n *= d
            total += st.nout * n * max(storage_dtype(d).itemsize for d in st.dtypes)
        return total + total // 4

    def _in_place_blocker(self, fed: dict, uses: dict) -> str | None:
        """Why the state fed back cannot go into its own buffers (None: it can), from what the
        first recording saw (``_steps``' ``uses``): only a stateful call's state, which its
        write-back replaces (a caller holds its other arguments during the call). Sets
        ``uses["late"]``: the inputs whose new value must wait until the end of the graph
        (a later step reads the old value or a view of it, the step that makes it reads the
        old value in another layout, or an output is a view of it)."""
        if not self.n_state:
            return "not a stateful call (the caller holds its arguments during the call)"
        late = []
        for i, slot in fed.items():
            if i >= self.n_state:
                return f"input {i} is an argument, not a state leaf"
            k = uses["made_by"].get(slot)
            if k is None:
                return f"input {i}: its new value is not made by a step"
            if (
                any(i in r for r in uses["reads"][k + 1 :])
                or i in uses["unsafe"].get(k, ())
                or i in uses["out_alias"]
            ):
                late.append(i)
        uses["late"] = late
        return None

    def _capture(
        self, ins: list, targets: dict, uses: dict | None = None, copy_back: dict | None = None
    ) -> _Graph:
        arena = _Arena(self._estimate())
        pool = cp.cuda.MemoryPool(arena)
        cs = self.stream
        with cs, cp.cuda.using_allocator(pool.malloc):
            cs.begin_capture(mode=_RELAXED)
            try:
                datas = [None if b is None else b.data for b in ins]
                values = self._steps(datas, targets, arena, uses)
                for slot, b in (copy_back or {}).items():  # after every read of the old value
                    b.data[...] = targets[slot].data
            except BaseException:
                try:
                    cs.end_capture()
                except Exception:  # noqa: BLE001 - the step's error is the one to report
                    pass
                raise
            graph = cs.end_capture()
        outs = {}
        for slot, v in values.items():
            outs[slot] = targets[slot] if slot in targets else _Buffer(v)
        scratch = []
        for slot, b in (copy_back or {}).items():
            scratch.append(outs[slot])
            outs[slot] = b
        return _Graph(graph, pool, arena, ins, outs, scratch)

    def _steps(self, datas_in: list, targets: dict, arena: _Arena, uses=None) -> dict:
        """Runs the tape's steps on ``datas_in`` (while recording), writing each output slot
        in ``targets`` into its buffer; returns the value of every output slot of a step.
        ``uses`` (a dict, filled when given): per step the inputs whose memory it reads
        (``reads``), the step that makes each target slot (``made_by``), the inputs a step
        reads in another layout than its own output's or that its copied-over result shares
        memory with (``unsafe``), and the inputs the outputs share memory with
        (``out_alias``)."""
        tape = self.tape
        n_in = tape.n_inputs
        mems = {id(d.data.mem): i for i, d in enumerate(datas_in) if d is not None and d.size}
        if uses is not None:
            uses.update(reads=[], made_by={}, unsafe={}, out_alias=set())

        def alias(d) -> int | None:
            if d is None or not hasattr(d, "data") or not d.size:
                return None
            return mems.get(id(d.data.mem))

        values = [None] * tape.n_slots
        values[:n_in] = datas_in
        values[n_in : n_in + len(tape.const_data)] = tape.const_data
        runs = self.runs
        self.runs_joined = 0
        grouped: dict = {}  # step -> its outputs, made by the run's one launch
        for k, step in enumerate(tape.steps):
            datas = [values[i] for i in step.args]
            mine = [t for t in range(step.nout) if step.out + t in targets]
            if k in runs:
                grouped = _launch_run(tape.steps, k, runs[k], values, targets)
                self.runs_joined += bool(grouped)
            try:
                if k in grouped:
                    res = grouped.pop(k)
                    mine = []
                elif mine and step.kernel is not None and isinstance(step.prim, Compiled):
                    outs = [
                        targets[step.out + t].data
                        if step.out + t in targets
                        else cp.empty(step.shape, storage_dtype(step.dtypes[t]))
                        for t in range(step.nout)
                    ]
                    res = step.kernel(datas, step.shape, outs)
                    mine = []
                elif step.kernel is not None:
                    res = step.kernel(datas, step.shape)
                else:
                    res = step.impl(step.prim, datas, step.node)
            except Exception as e:
                name = getattr(step.prim, "name", type(step.prim).__name__)
                raise RuntimeError(f"step {k} ({name}): {type(e).__name__}: {e}") from e
            if uses is not None:
                read = {alias(d) for d in datas} - {None}
                uses["reads"].append(read)
                bad = set()
                for t in range(step.nout):
                    if step.out + t in targets:
                        uses["made_by"][step.out + t] = k
                if mine:  # copied over after the step: its result must not be an input's memory
                    bad |= {alias(res[t]) for t in mine} - {None}
                elif any(step.out + t in targets for t in range(step.nout)):
                    for d in datas:  # written directly: an input read at the same index only
                        i = alias(d)
                        if i is not None and not _same_layout(d, datas_in[i], step.shape):
                            bad.add(i)
                if bad:
                    uses["unsafe"][k] = bad
            for t in range(step.nout):
                values[step.out + t] = res[t]
            for t in mine:  # made by a step that allocates its own output: copied over
                targets[step.out + t].data[...] = res[t]
                values[step.out + t] = targets[step.out + t].data
            for i in step.release:
                values[i] = None
        first_step = n_in + len(tape.consts)
        out = {}
        for slot in tape.outputs:
            if slot >= first_step and slot not in out:
                v = values[slot]
                if uses is not None and slot not in targets:
                    i = alias(v)
                    if i is not None:
                        uses["out_alias"].add(i)
                if slot not in targets and not arena.holds(v):
                    v = v.copy()  # a view of an input or a constant: a buffer of its own
                out[slot] = v
            elif uses is not None and slot < n_in:
                uses["out_alias"].add(slot)
        return out

    # -- launching ---------------------------------------------------------------------

    def _launch(self, inputs: list) -> list | None:
        keep = self._sole_inputs(inputs) if self.in_place else {}
        k = self.parity
        fed = self.fed
        if len(self.graphs) == 2:
            g = self.graphs[k]
            if not all(inputs[i]._data is g.ins[i].data for i in fed):
                other = self.graphs[1 - k]
                if all(inputs[i]._data is other.ins[i].data for i in fed):
                    k = 1 - k
        g = self.graphs[k]
        copies = copies_of(g.ins, inputs, fed, self.src)
        if copies is None:
            self.fallbacks += 1
            self.last_fallback = "an input is not C-contiguous"
            return None
        cs = self.stream
        with cs:
            written = g.written
            if copies:
                extra = [b for i, b, x, d in copies if i in fed and b not in written]
                if extra:
                    written = written + extra
            detached = reclaim_all(written, keep)
            if detached < 0:
                self.fallbacks += 1
                self.last_fallback = "an earlier result has a view that the graph would overwrite"
                return None
            self.detached += detached
            for i, b, x, d in copies:
                if d.nbytes:
                    b.data.data.copy_from_device_async(d.data, d.nbytes, cs)
                if i not in fed:
                    self.src[i] = (weakref.ref(x), id(d), d.data.ptr)
            self.copies += len(copies)
            g.graph.launch(cs)
        self.launches += 1
        self.parity = 1 - k if len(self.graphs) == 2 else 0
        return self._outputs(g, inputs)

    def _sole_inputs(self, inputs: list) -> dict:
        """In place: the state arrays whose buffer the graph may overwrite, by the id of that
        buffer: the array is the one handed out over it, and it has as many references as a
        state array that only the state held had when the step was recorded, plus the one of
        the buffer's list of lent arrays. (Measured before any local name holds an input, as
        ``_record`` measured.) The others get a copy of their own before the launch."""
        g = self.graphs[0]
        keep = {}
        base = self.base
        for i in base:
            if _rc(inputs[i]) == base[i] + 1 and inputs[i]._data is g.ins[i].data:
                keep[id(g.ins[i])] = inputs[i]
        return keep

    def _plan(self, g: _Graph) -> list:
        """How ``_outputs`` makes each output, worked out once per graph: (0, buffer, shape,
        dtype) an array over a buffer the graph writes, (1, buffer, shape, dtype) another
        array over a buffer already handed out in this call (a value returned twice), (2, j)
        the same array as output j, (3, slot, same) an input (itself, or a new array over its
        data), (4, constant, data) a constant."""
        tape = self.tape
        n_in, n_c = tape.n_inputs, len(tape.consts)
        plan: list = []
        seen: set = set()
        for j, slot in enumerate(tape.outputs):
            p = tape.out_plan[j]
            if p >= 0:
                plan.append((2, p))
            elif slot < n_in:
                plan.append((3, slot, p == -2))
            elif slot < n_in + n_c:
                plan.append((4, tape.consts[slot - n_in], tape.const_data[slot - n_in]))
            else:
                b = g.outs[slot]
                first = slot not in seen
                seen.add(slot)
                plan.append((0 if first else 1, b, tuple(b.data.shape), tape.out_dtypes[j]))
        g.plan = plan
        return plan

    def _outputs(self, g: _Graph, inputs: list) -> list:
        """The output arrays, as ``Tape._outputs`` makes them."""
        plan = g.plan if g.plan is not None else self._plan(g)
        return outputs(plan, inputs, self.tape.stream)


def _fused(step) -> bool:
    """Whether a tape step is a fused kernel with a launcher (``independent_runs``)."""
    return step.kernel is not None and isinstance(step.prim, Compiled)


def _launch_run(steps: list, first: int, end: int, values: list, targets: dict) -> dict:
    """Launches the fused steps ``first .. end - 1`` (independent of each other: the tape's
    ``independent_runs``) as one kernel where their operands allow (``kernels.run_group``);
    returns each step's outputs, or {} where they run one by one. Outputs in ``targets`` are
    written into their buffers. Not where one of the steps writes a buffer that another
    reads (the state updated in place): in one launch that read could come after the write."""
    parts = []
    writes: dict = {}  # memory written into a target -> the step writing it
    for k in range(first, end):
        st = steps[k]
        outs = []
        for t in range(st.nout):
            b = targets.get(st.out + t)
            if b is None:
                outs.append(cp.empty(st.shape, storage_dtype(st.dtypes[t])))
            else:
                outs.append(b.data)
                writes[id(b.data.data.mem)] = k
        parts.append((st.prim.spec, [values[i] for i in st.args], st.shape, outs))
    if writes:
        for k, (_, ins, _, _) in zip(range(first, end), parts):
            if any(writes.get(id(x.data.mem), k) != k for x in ins if x.size):
                return {}
    if not kernels.run_group(parts):
        return {}
    return {k: p[3] for k, p in zip(range(first, end), parts)}


def _same_layout(d, buf, shape) -> bool:
    """Whether a fused kernel's operand ``d`` over an input's buffer ``buf`` reads element e
    where it writes element e of an output of ``shape`` (the whole buffer, as laid out)."""
    return (
        d.data.ptr == buf.data.ptr
        and d.dtype == buf.dtype
        and tuple(d.shape) == tuple(shape) == tuple(buf.shape)
        and d.strides == buf.strides
    )
