"""Compiled stateful steps: ``nv.compile(step, inputs=state, outputs=state)``.

The arrays of the ``inputs`` tree (for example ``[model.state, optimizer.state]``) and the
global random key (``nv.random.state``) are traced inputs; after each call the ``outputs`` tree
is updated in place from the tape's outputs, and so is the random key, so a dropout inside the
step advances the key exactly as an uncompiled call would.

- The trace swaps placeholders into the state's containers, runs the step, reads the state it
  left, and puts every container back as it was: the state is never changed by a trace.
- A step that changes the state's structure (an optimizer creating its slots at the first
  update) retraces once; one that changes it on two consecutive calls is an error.
- The new arrays are stored straight into the state's containers (``WriteBack``) while the
  step keeps the structure and the containers are the same objects; otherwise the state is
  rebuilt and merged in.
- On any error the state is unchanged (the write-back is undone if it fails half-way). The
  step runs at the call, on evaluated inputs, so its errors surface there.
"""

from __future__ import annotations

import time
from typing import Any

from .. import tree_ext as _ext  # type: ignore[attr-defined]  # a Cython module
from ..core.array import Array, original, recording_rebinds
from ..core.evaluate import evaluate
from ..core.device import current_stream
from ..core.shapeless import conditions as shape_conditions
from ..core.shapeless import tracing as shapeless_tracing
from ..transforms._trace import tracing
from ..tree import LEAF, flatten, unflatten
from ..tree import _STATIC as STATIC
from . import inplace
from .signature import Signature, miss_reason, walk
from .trace import _check_hashable, fun_name, make_entry, random_state, store


def _trees(cf) -> tuple[Any, Any, list]:
    """The (input, output) state trees, the random key's list added where it is missing, and
    every list and dict in them (``containers``: one walk when they are the same tree)."""
    rs = random_state()
    tin, tout = cf.state_in, cf.state_out
    same = tout is tin
    conts = containers(tin) if same else containers(tin, tout)
    if rs is None:
        return (tin, None), (tout, None), conts
    present = _ext.holds_object(conts, rs)
    if same:
        has_in = has_out = present
    else:
        has_in, has_out = (_holds(tin, rs), _holds(tout, rs)) if present else (False, False)
    if not present:
        conts.append(rs)
    return (tin, None if has_in else rs), (tout, None if has_out else rs), conts


# -- containers ----------------------------------------------------------------------------


# the container walk, the modules' modes and the state key are Cython (nuvec/tree_ext.pyx):
# every stateful call makes them
_modes_of, _state_key = _ext.modes_of, _ext.state_key


def containers(*trees: Any) -> list:
    """Every list and dict reachable in ``trees`` (each once)."""
    return _ext.containers(trees)


def _holds(tree: Any, target: list) -> bool:
    """Whether the list ``target`` is reachable in ``tree`` (the container walk's lists)."""
    return _ext.holds_object(_ext.containers((tree,)), target)


def snapshot(conts: list) -> list:
    return [(c, dict(c) if isinstance(c, dict) else list(c)) for c in conts]


def restore(snap: list) -> None:
    for c, items in snap:
        if isinstance(c, dict):
            dict.clear(c)
            dict.update(c, items)
        else:
            list.__setitem__(c, slice(None), items)


def merge_into(old: Any, new: Any, path: str) -> None:
    """Makes the containers of ``old`` hold ``new``'s contents, in place (``new`` has the
    same container types; its structure may differ: keys added or removed)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in [k for k in old if k not in new]:
            del old[k]
        for k, v in new.items():
            if k in old and _mergeable(old[k], v):
                merge_into(old[k], v, f"{path}[{k!r}]")
            elif k not in old or old[k] is not v:
                old[k] = v
    elif isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            old[:] = new
            return
        for i, v in enumerate(new):
            if _mergeable(old[i], v):
                merge_into(old[i], v, f"{path}[{i}]")
            elif old[i] is not v:
                old[i] = v
    elif isinstance(old, tuple) and isinstance(new, tuple) and len(old) == len(new):
        for i, (o, v) in enumerate(zip(old, new)):
            if _mergeable(o, v):
                merge_into(o, v, f"{path}[{i}]")
            elif o is not v and (isinstance(o, Array) or isinstance(v, Array)):
                raise ValueError(
                    f"nv.compile: the state array at {path}[{i}] is held in a "
                    "tuple, which cannot be updated in place; hold compiled state "
                    "in lists or dicts"
                )
    elif old is not new:
        raise ValueError(
            f"nv.compile: the state at {path} cannot be updated in place "
            f"({type(old).__name__} -> {type(new).__name__})"
        )


def _mergeable(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return True
    return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)


# -- the write-back plan -------------------------------------------------------------------


class WriteBack:
    """Where each state array lives (container, key), for an entry whose step keeps the
    state's structure: the new arrays are stored there directly instead of rebuilding the tree
    and merging it (``unflatten`` + ``merge_into``: 40 us a call for a 3-layer MLP's state).
    It holds while the trees are made of the same containers, in the same order, as when it
    was made; the entry's key already pins the structure."""

    __slots__ = ("conts", "slots")

    def __init__(self, conts: list, slots: list) -> None:
        self.conts = conts
        self.slots = slots

    def holds(self, conts: list) -> bool:
        return _ext.same_objects(conts, self.conts)

    def write(self, arrays: list) -> None:
        """Stores ``arrays``; on any error puts the old arrays back and re-raises."""
        _ext.store(self.slots, arrays)


def _slots(node: Any, obj: Any, parent: Any, key: Any, out: list) -> bool:
    """Appends (container, key) of each array of ``obj`` (structure ``node``) in flatten
    order; False where an array is held by a tuple or at the top (not assignable)."""
    if node is LEAF:
        if not isinstance(parent, (list, dict)):
            return False
        out.append((parent, key))
        return True
    kind = node[0]
    if kind is STATIC:
        return True
    if isinstance(obj, dict):
        pairs = zip(node[1], node[2])
    else:
        pairs = enumerate(node[1])
    for k, child in pairs:
        if not _slots(child, obj[k], obj, k, out):
            return False
    return True


def _writeback(entry, tout: Any, conts: list, s_leaves: list):
    """The entry's WriteBack for these trees, or None where the tree must be merged."""
    if entry.info["changes"] or entry.post_def.num_leaves != len(s_leaves):
        return None
    slots: list = []
    if not _slots(entry.post_def.node, tout, None, None, slots) or len(slots) != len(s_leaves):
        return None
    for (c, k), a in zip(slots, s_leaves):  # the slots hold the arrays the call read
        if c[k] is not a:
            return None
    return WriteBack(conts, slots)


# -- the call ------------------------------------------------------------------------------


# the structure ``flatten`` gives a None leaf (the state tree's missing random key)
_NONE_NODE = _ext.flat(None, [])


def _state_walk(cf) -> tuple[Any, list, Any, list]:
    """(input tree, its arrays, its structure, its lists and dicts) of a step whose input and
    output state are one tree, in one walk: ``_trees`` and ``flatten`` of its input tree.
    The structure is ``flatten``'s node (a plain tuple: the cache key compares it in C)."""
    tree = cf.state_in
    s_leaves: list = []
    conts: list = []
    node = _ext.flat_listed(tree, s_leaves, conts)
    rs = random_state()
    if rs is not None and not _ext.holds_object(conts, rs):
        return (tree, rs), s_leaves, (tuple, (node, _ext.flat_listed(rs, s_leaves, conts))), conts
    return (tree, None), s_leaves, (tuple, (node, _NONE_NODE)), conts


def _prepare(cf, args: tuple, kwargs: dict):
    """(input tree, output tree, state leaves, argument leaves, key, containers of both
    trees), or None when an array is being traced by a transform."""
    same = cf.state_out is cf.state_in  # then both trees have the same containers
    if same:
        tin, s_leaves, s_def, conts = _state_walk(cf)
        tout = tin
    else:
        tin, tout, conts = _trees(cf)
        s_leaves, s_def = flatten(tin)
    skey = [s_def, _modes_of(conts if same else containers(tin))]
    if not _state_key(s_leaves, skey):  # a state array traced by a transform
        return None
    a_leaves: list = []
    a_key = cf.key_of(args, kwargs, a_leaves, 0)
    if a_key is None:
        return None
    out_def_pre = None
    if cf.state_out is not cf.state_in:
        out_def_pre = flatten(tout)[1]
    return tin, tout, s_leaves, a_leaves, (tuple(skey), out_def_pre, a_key), conts


def entry_for(cf, args: tuple, kwargs: dict):
    """The entry a stateful call with these arguments uses (traced now if needed)."""
    p = _prepare(cf, args, kwargs)
    if p is None:
        raise ValueError("inspect: an argument or the state is being traced by a transform")
    tin, tout, s_leaves, a_leaves, key, _ = p
    entry = cf.lookup(key, s_leaves + a_leaves)
    return (
        entry if entry is not None else _miss(cf, key, args, kwargs, tin, tout, s_leaves, a_leaves)
    )


def call_stateful(cf, args: tuple, kwargs: dict) -> Any:
    p = _prepare(cf, args, kwargs)
    if p is None:  # inside a transform: run the step itself
        return cf.fun(*args, **kwargs)
    tin, tout, s_leaves, a_leaves, key, conts = p
    ins = s_leaves + a_leaves
    entry = cf.lookup(key, ins)
    if entry is None:
        entry = _miss(cf, key, args, kwargs, tin, tout, s_leaves, a_leaves)
    elif entry.ready is not None:
        entry.wait_ready()  # a later call: wait for the fused kernels being built
    if entry.info["changes"] and cf.changed_last:
        raise ValueError(
            f"nv.compile({_name(cf)}): the structure of the compiled state changed on two "
            "consecutive calls (e.g. an optimizer creating its slots); initialise the optimizer "
            "first (opt.init(model.trainable_parameters())) so the state keeps one structure, "
            "or make changing values arrays. The state is unchanged."
        )
    lazy = _ext.unevaluated(ins)
    if lazy:
        # Run the step now, on computed inputs: its errors surface in this call (while the
        # state can still be left unchanged), and state arrays never pile up lazy graphs
        # from call to call (the random key's chain of splits, for one).
        evaluate(lazy)
    tape = entry.tape  # read once: the kernel worker may swap in the fused tape
    pl = _inplace_plan(entry, tape, len(s_leaves))
    if pl.arm(ins):
        try:
            outs = tape.run(ins)
        except BaseException:
            pl.rollback()  # state buffers written in place get their old elements back
            raise
        finally:
            pl.disarm()
    else:
        outs = tape.run(ins)
    n_out = entry.n_out
    result = entry.build(outs[:n_out])
    wb = entry.info.get("writeback")  # None: not made yet; False: merge instead
    if wb is None or (wb is not False and not wb.holds(conts)):
        wb = None
        if cf.state_out is cf.state_in:
            wb = _writeback(entry, tout, conts, s_leaves)
        entry.info["writeback"] = wb = wb or False
    if wb is not False:
        wb.write(outs[n_out:])
    else:
        new_state = unflatten(entry.post_def, outs[n_out:])
        snap = snapshot(conts)
        try:
            merge_into(tout, new_state, "state")
        except BaseException:
            restore(snap)
            raise
    pl.proven = True  # the write-back works: later calls may update in place
    cf.changed_last = entry.info["changes"]
    cf.last_key = key
    return result


def _inplace_plan(entry, tape, n_state: int) -> "inplace.Plan":
    """The in-place update plan of ``tape`` (made at its first call, kept in ``entry.info``)."""
    pl = entry.info.get("inplace")
    if pl is None or pl.tape is not tape:
        pl = entry.info["inplace"] = inplace.plan(tape, n_state)
        told = getattr(tape.executable, "stateful", None)
        if told is not None:  # a backend's executable (a CUDA graph) updates in place itself
            told(n_state)
    return pl


def _modes(tree: Any) -> tuple:
    """The mode flags of the modules in ``tree`` (training, frozen parameters): not part of
    the tree structure, but they change what the step computes, so they key the trace."""
    return _modes_of(containers(tree))


def _name(cf) -> str:
    return fun_name(cf.fun)


def _miss(cf, key, args, kwargs, tin, tout, s_leaves, a_leaves):
    with cf.trace_lock:
        entry = cf.lookup(key, s_leaves + a_leaves)
        if entry is not None:
            return entry
        sig = Signature.of(
            args,
            kwargs,
            a_leaves,
            cf.shapeless,
            extra=list(walk(tin, "state"))
            + [("the modules' modes (training, frozen)", "static", _modes(tin))],
        )
        _check_hashable(cf, key, sig)
        cf.statistics.missed(miss_reason(cf, sig, key, s_leaves + a_leaves))
        t0 = time.perf_counter()
        stream = current_stream()
        ph_s = [Array.placeholder(a._shape, a._dtype, stream) for a in s_leaves]
        ph_a = [Array.placeholder(a._shape, a._dtype, stream) for a in a_leaves]
        fast = not kwargs and all(type(a) is Array for a in args)
        if fast:
            targs, tkwargs = tuple(ph_a), {}
        else:
            _, td = flatten((args, kwargs) if kwargs else args)
            rebuilt = unflatten(td, ph_a)
            targs, tkwargs = rebuilt if kwargs else (rebuilt, {})
        snap = snapshot(containers(tin, tout))
        _, s_def = flatten(tin)
        pre_out_def = flatten(tout)[1]
        cf.statistics.traced()
        try:
            merge_into(tin, unflatten(s_def, ph_s), "state")
            with (
                tracing(),
                recording_rebinds() as rebound,
                shapeless_tracing(cf.shapeless, ph_s + ph_a) as origins,
            ):
                out = cf.fun(*targs, **tkwargs)
                conditions = shape_conditions()
            ph_s = [original(p, rebound) for p in ph_s]  # ``x[i] = v`` rebinds an input
            ph_a = [original(p, rebound) for p in ph_a]
            out_leaves, out_def = flatten(out)
            post_leaves, post_def = flatten(tout)
        finally:
            restore(snap)
        entry = make_entry(
            cf,
            ph_s + ph_a,
            out,
            list(out_leaves) + list(post_leaves),
            out_def,
            stream,
            t0,
            n_out=len(out_leaves),
            origins=origins,
        )
        entry.conditions = conditions
        entry.post_def = post_def
        entry.pre_def = pre_out_def
        entry.info["changes"] = post_def != pre_out_def
        entry.sig = sig
        store(cf, key, entry)
        return entry
