# cython: language_level=3
"""A compiled function's cache entry (``Entry``: one trace's tape and how to rebuild its
outputs), made by the miss path (``trace.py``, ``state.py``) and run by the call path
(``_runtime.pyx``); its fields are declared in ``_entry.pxd`` so that the call path reads
them in C."""

from ..tree import unflatten


# How outputs are rebuilt: one array, a flat tuple of arrays, or a tree.
OUT_ONE = 0
OUT_TUPLE = 1
OUT_TREE = 2


cdef class Entry:
    """One cached trace: the tape, how to rebuild the outputs, and what it was traced for."""

    cpdef wait_ready(self):
        """Waits for the fused kernels being built for this entry (then its tape is the
        fused one, or the unfused one if they could not be built)."""
        ev = self.ready
        if ev is not None:
            ev.wait()
            self.ready = None

    cpdef object build(self, list outs):
        if self.out_kind == 0:
            return outs[0]
        if self.out_kind == 1:
            return tuple(outs)
        return unflatten(self.out_def, outs[:self.n_out] if len(outs) != self.n_out else outs)
