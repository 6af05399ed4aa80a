# cython: language_level=3
"""The per-call path of a compiled function: key, cache lookup, replay, outputs.

A call builds its key from the arguments (the default stream; then, for positional arrays
only, each one's dtype and shape -- or rank when shapeless --; otherwise the tree structure
with its static leaves, and each array's dtype and shape), looks it up in the function's own
LRU cache, and replays the tape it finds. A miss goes to the slow path (``trace.py``), which
traces, simplifies, fuses and stores a new entry.
"""
cimport cython

import threading
from collections import OrderedDict

from ..backends.base import CompileOptions
from ..core.array import Array
from ..core import device as _device
from ..core.shapeless import hold as _hold
from ..tree import flatten
from . import report, state, trace
from .background import pending
from ._entry cimport Entry
from ._tape cimport Tape

cdef object _Array = Array
cdef object _state = _device._state
cdef object _cached_default = _device._cached_default
cdef object _current_stream = _device.current_stream

# compile on/off for the whole process (nv.disable_compile / nv.enable_compile)
cdef bint _enabled = True
# traces made by every compiled function in this process (a test diagnostic)
cdef Py_ssize_t _traces = 0


def set_enabled(bint on) -> None:
    global _enabled
    _enabled = on


def trace_count() -> int:
    """How many traces compiled functions have made in this process (a test diagnostic)."""
    return _traces


@cython.final
cdef class Statistics:
    """What one compiled function has done (``f.stats()`` reads it): cache hits and misses,
    traces (and those not cached: they held an outer transform's tracer), why the last miss
    missed, the last trace's timings, whether the retrace warning was given."""
    cdef public Py_ssize_t hits, misses, traces, uncached
    cdef public object last_miss
    cdef public dict timings
    cdef public bint warned

    def __init__(self):
        self.hits = self.misses = self.traces = self.uncached = 0
        self.last_miss = None
        self.timings = {}
        self.warned = False

    def missed(self, reason: str) -> None:
        """A call missed the cache, for ``reason``."""
        self.misses += 1
        self.last_miss = reason

    def traced(self) -> None:
        """The function was traced (counted here and in ``trace_count()``)."""
        global _traces
        self.traces += 1
        _traces += 1



cdef inline object _stream():
    s = _state.stream
    if s is None:
        s = _cached_default[0]
        if s is None:
            s = _current_stream()
    return s


cdef inline bint _same_key(object a, object b):
    if a is None:
        return False
    try:
        return a == b
    except Exception:      # a static argument whose == is not a bool (the slow path explains)
        return False


cdef Entry _holding(Entry e, list leaves):
    """``e``, or the first of its alternatives, whose shape conditions hold for ``leaves``."""
    cdef list shapes = None
    while e is not None:
        if e.conditions is None:
            return e
        if shapes is None:
            shapes = [a._shape for a in leaves]
        if _hold(e.conditions, shapes):
            return e
        e = e.alternative
    return None


cdef class CompiledFunction:
    """A compiled function (made by ``nv.compile``): call it like the function it wraps.

    Extras: ``stats()`` (hits, misses, traces, the reason of the last miss, timings of the
    last trace), ``inspect(*args, **kwargs)`` (what compile made for these arguments),
    ``clear_cache()``.

    What it was made with is read-only (``fun``, ``shapeless``, ``capacity``, ``options``,
    ``warn_traces``, the state trees); its counts are one ``Statistics`` record
    (``statistics``); the cache and the last call's key are what the call path keeps.
    """
    cdef readonly object fun
    cdef readonly bint shapeless
    cdef readonly Py_ssize_t capacity
    cdef readonly object options        # a backends.base.CompileOptions
    cdef readonly object warn_traces
    cdef readonly object state_in
    cdef readonly object state_out
    cdef readonly bint stateful
    cdef readonly Statistics statistics
    cdef readonly object cache
    cdef readonly object evicted        # recently evicted keys (miss reasons only)
    cdef readonly object lock
    cdef readonly object trace_lock
    cdef tuple mru
    cdef public object last_key
    cdef public bint changed_last       # stateful: the last call changed the state's structure
    cdef dict __dict__
    cdef object __weakref__

    def __init__(self, fun, *, shapeless=False, capacity=64, inputs=None, outputs=None,
                 warn_traces=None, fast_math=False):
        self.fun = fun
        self.options = CompileOptions(fast_math=bool(fast_math))   # fast_math: CUDA only
        self.shapeless = shapeless
        self.capacity = capacity
        self.cache = OrderedDict()
        self.lock = threading.Lock()
        self.trace_lock = threading.RLock()
        self.statistics = Statistics()
        self.last_key = None
        self.mru = (None, None)     # (key, entry) of the last call: one atomic tuple
        self.warn_traces = warn_traces
        self.state_in = inputs
        self.state_out = outputs
        self.stateful = inputs is not None or outputs is not None
        self.changed_last = False
        self.evicted = OrderedDict()   # recently evicted keys (miss reasons only)

    def __get__(self, obj, objtype):
        """A compiled function used as a method binds like one."""
        if obj is None:
            return self
        import types
        return types.MethodType(self, obj)

    def __call__(self, *args, **kwargs):
        cdef list leaves
        cdef object key
        cdef Entry entry
        cdef Tape tape
        if not _enabled:
            return self.fun(*args, **kwargs)
        if self.stateful:
            return state.call_stateful(self, args, kwargs)
        leaves = []
        key = self.key_of(args, kwargs, leaves, 0)
        if key is None:       # an argument is being traced: run the function itself
            return self.fun(*args, **kwargs)
        mru = self.mru
        entry = None
        if _same_key(mru[0], key):
            # the signature of the last call: already the most recently used entry
            entry = <Entry>mru[1]
            if entry.conditions is not None:
                entry = _holding(entry, leaves)
            if entry is not None:
                self.statistics.hits += 1
        if entry is None:
            entry = self.lookup(key, leaves)
            if entry is None:
                entry = trace.miss(self, key, args, kwargs, leaves)   # inserts (and sets mru)
                self.last_key = key
                # the call that traced never waits for the C compiler: fused steps whose
                # kernels are still being built run their operations one by one
                tape = entry.tape     # owned: see below
                return entry.build(tape.call(leaves))
            self.mru = (key, entry)
            self.last_key = key
        if entry.ready is not None:
            entry.wait_ready()   # a later call: the fused kernels are worth the wait
        # Read the tape once, into a reference this call owns. ``entry.tape.run(...)`` would
        # pass the attribute borrowed, and the kernel worker may store the fused tape into
        # ``entry.tape`` while this replay runs (its kernels release the GIL): that store
        # frees the tape being replayed unless the call holds it.
        tape = entry.tape
        return entry.build(tape.call(leaves))

    cpdef object key_of(self, tuple args, dict kwargs, list leaves, Py_ssize_t exact):
        """The cache key of a call, filling ``leaves`` with its arrays; None when an array is
        a tracer. The first ``exact`` leaves are keyed by shape even when shapeless."""
        cdef list key = [id(_stream())]
        cdef object a
        cdef bint shapeless = self.shapeless
        cdef Py_ssize_t i = 0
        if not kwargs:
            if len(args) == 1 and exact == 0:
                a = args[0]
                if type(a) is _Array:
                    if a._tracer:
                        return None
                    leaves.append(a)
                    return (key[0], a._dtype.name, len(a._shape) if shapeless else a._shape)
            for a in args:
                if type(a) is not _Array:
                    break
                if a._tracer:
                    return None
                key.append(a._dtype.name)
                key.append(len(a._shape) if shapeless and i >= exact else a._shape)
                leaves.append(a)
                i += 1
            else:
                return tuple(key)
            del leaves[:]
            key = [id(_stream())]
            i = 0
        flat, td = flatten((args, kwargs) if kwargs else args)
        key.append(td)
        for a in flat:
            if a._tracer:
                return None
            key.append(a._dtype.name)
            key.append(len(a._shape) if shapeless and i >= exact else a._shape)
            leaves.append(a)
            i += 1
        return tuple(key)

    cpdef object lookup(self, object key, list leaves=None):
        """The cached entry of ``key`` (marked most recently used), or None; of a shapeless
        key, the one whose shape conditions hold for ``leaves``.

        Reads take no lock: each OrderedDict operation is atomic under the GIL, and an entry
        evicted between the two is still a valid tape (it is simply used once more). Inserts
        and evictions hold ``lock``."""
        cdef object e
        try:
            e = self.cache.get(key)
        except TypeError:
            return None    # an unhashable static argument: the slow path explains it
        if e is not None and (<Entry>e).conditions is not None:
            e = _holding(e, leaves) if leaves is not None else None
        if e is not None:
            try:
                self.cache.move_to_end(key)
            except KeyError:
                pass
            self.statistics.hits += 1
        return e

    def insert(self, key, entry) -> None:
        if self.capacity <= 0:
            return
        with self.lock:
            if entry.conditions is not None:  # the key's earlier traces, for other conditions
                head = self.cache.get(key)
                if head is not None and head is not entry:
                    entry.alternative = head
            self.cache[key] = entry
            self.cache.move_to_end(key)
            self.mru = (key, entry)
            while len(self.cache) > self.capacity:
                old, _ = self.cache.popitem(last=False)
                self.evicted[old] = None
                if len(self.evicted) > 256:
                    self.evicted.popitem(last=False)

    def run_entry(self, Entry entry, list leaves):
        cdef Tape tape = entry.tape      # owned for the replay (see __call__)
        return tape.run(leaves)

    def stats(self) -> dict:
        """Cache statistics: ``hits``, ``misses``, ``traces``, ``uncached_traces``,
        ``entries``, ``capacity``, ``last_miss`` (the reason of the last miss); the last
        trace's timings in seconds (``trace_s``: running the function on placeholders;
        ``simplify_s``, ``fuse_s``, ``kernel_compile_s``, ``finalize_s``; ``pass_s``: each
        pass of the pipeline; ``simplify_cpu_s``, ``finalize_cpu_s``;
        ``first_call_s_before_compiler``), its ``steps``, ``fused_kernels`` and
        ``kernels_in_background``; ``kernels_pending`` (builds queued in the process); and,
        where the backend has one, ``executable`` (what runs the last call's tape).

        >>> import nuvec as nv
        >>> f = nv.compile(lambda x: x + 1)
        >>> _ = f(nv.ones((3,))); _ = f(nv.ones((3,))); _ = f(nv.ones((4,)))
        >>> s = f.stats(); (s["hits"], s["misses"], s["last_miss"])
        (1, 2, 'argument 0: shape (3,) -> (4,)')
        """
        cdef Statistics st = self.statistics
        out = {"hits": st.hits, "misses": st.misses, "traces": st.traces,
               "uncached_traces": st.uncached, "entries": len(self.cache),
               "capacity": self.capacity, "last_miss": st.last_miss}
        out.update(st.timings)
        out["kernels_pending"] = pending()
        try:
            entry = self.cache.get(self.last_key)
        except TypeError:
            entry = None
        if entry is not None:      # the last call's executable (GPU): recorded, or why not
            ex = report.executable_stats(entry.tape)
            if ex is not None:
                out["executable"] = ex
        return out

    def clear_cache(self) -> None:
        """Forgets every trace (the next call traces again)."""
        with self.lock:
            self.cache.clear()
            self.mru = (None, None)

    def inspect(self, *args, **kwargs):
        """What compile made for these arguments (tracing them if needed): a ``CompileReport``
        with the simplified steps, the fused groups and each kernel's generated source.

        >>> import nuvec as nv
        >>> f = nv.compile(lambda x: nv.exp(x) * 2 + 1)
        >>> r = f.inspect(nv.ones((4,)))
        >>> [g.ops for g in r.groups]
        [('exp', 'multiply', 'add')]
        """
        return report.inspect_call(self, args, kwargs)

    def __repr__(self):
        return f"<compiled function {getattr(self.fun, '__qualname__', self.fun)!r}>"
