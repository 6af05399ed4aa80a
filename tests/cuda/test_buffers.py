"""The per-call bookkeeping of a recorded CUDA executable (nuvec/backends/cuda/_buffers.pyx),
on stand-ins for CuPy arrays, so that it runs without a GPU: a buffer is overwritten only when
no one else sees it, an array handed out earlier and still held gets a copy of its own, and
an array no one holds is handed out again."""

from __future__ import annotations

import numpy as np

from nuvec.backends.cuda._buffers import Buffer, copies_of, outputs, reclaim_all
from nuvec.core.array import Array


class _Mem:
    pass


class _Pointer:
    def __init__(self) -> None:
        self.mem = _Mem()
        self.ptr = id(self)


class _Flags:
    c_contiguous = True


class _Data:
    """What a Buffer reads of a CuPy array: its memory pointer, base, layout and copy."""

    def __init__(self, shape=(4,), dtype=np.float32) -> None:
        self.data = _Pointer()
        self.base = None
        self.shape = shape
        self.dtype = np.dtype(dtype)
        self.flags = _Flags()
        self.nbytes = 16

    def copy(self) -> "_Data":
        return _Data(self.shape, self.dtype)


def _lent(b: Buffer) -> Array:
    """An array over ``b`` as a launch hands it out, held by nothing but the buffer."""
    a = Array.__new__(Array)
    a._data = b.data
    a._readers = 3
    b.lent = [a]
    return a


def _settled() -> Buffer:
    b = Buffer(_Data())
    b.settle()
    return b


def test_an_array_no_one_holds_is_handed_out_again() -> None:
    b = _settled()
    assert b.reclaim()
    _lent(b)  # the caller dropped it (the name below is only the list's)
    assert b.reclaim()
    a = b.hand_out((4,), None, None)
    assert a._data is b.data and a._readers == 0 and b.lent == [a]


def test_an_array_still_held_gets_a_copy_before_the_buffer_is_overwritten() -> None:
    b = _settled()
    held = _lent(b)
    assert b.reclaim()
    assert held._data is not b.data  # its own copy: a reference kept keeps its value
    assert b.lent == []


def test_keep_is_the_state_array_updated_in_place() -> None:
    b = _settled()
    state = _lent(b)
    assert b.reclaim(state)
    assert state._data is b.data and b.lent == [state]


def test_a_view_of_the_buffer_blocks_the_overwrite() -> None:
    for view_of in ("data", "pointer", "memory"):
        b = _settled()
        d = b.data
        view = {"data": d, "pointer": d.data, "memory": d.data.mem}[view_of]
        del d
        assert not b.reclaim(), view_of
        del view
        assert b.reclaim(), view_of


def test_reclaim_all_counts_detached_arrays_or_refuses() -> None:
    b1, b2 = _settled(), _settled()
    held = _lent(b1)
    assert reclaim_all([b1, b2], {}) == 1 and held._data is not b1.data
    state = _lent(b2)
    assert reclaim_all([b1, b2], {id(b2): state}) == 0 and state._data is b2.data
    view = b1.data.data
    assert reclaim_all([b1, b2], {}) == -1
    del view


def test_copies_of_skips_what_the_graph_already_reads() -> None:
    ins = [_settled() for _ in range(3)]
    xs = [Array.__new__(Array) for _ in range(3)]
    xs[0]._data = ins[0].data  # the state the graph wrote: read in place
    xs[1]._data = _Data()  # a new array: copied in
    xs[2]._data = _Data()
    src = [None, None, None]
    copies = copies_of(ins, xs, {0: 5}, src)
    assert [c[0] for c in copies] == [1, 2] and copies[0][1] is ins[1]
    import weakref

    src[2] = (weakref.ref(xs[2]), id(xs[2]._data), xs[2]._data.data.ptr)  # copied last call
    assert [c[0] for c in copies_of(ins, xs, {0: 5}, src)] == [1]
    xs[1]._data = _Data(shape=(5,))
    assert copies_of(ins, xs, {0: 5}, src) is None


def test_outputs_follow_the_plan() -> None:
    b = _settled()
    a = _lent(b)
    x = Array.__new__(Array)
    plan = [(0, b, (4,), None), (2, 0), (3, 0, True)]
    out = outputs(plan, [x], None)
    assert out[0] is a and out[1] is a and out[2] is x
