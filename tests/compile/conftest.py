"""Helpers shared by the nv.compile tests."""

from __future__ import annotations

import contextlib

import ml_dtypes
import numpy as np
import pytest

from nuvec.compile import passes as _passes

BF16 = np.dtype(ml_dtypes.bfloat16)


@contextlib.contextmanager
def unfused():
    """Compile without fusion (to look at the simplified steps alone)."""
    prev = _passes.FUSE[0]
    _passes.FUSE[0] = False
    try:
        yield
    finally:
        _passes.FUSE[0] = prev


def bits(a) -> np.ndarray:
    """The raw bits of an array's values (so NaN payloads and -0.0 compare exactly)."""
    h = np.asarray(a)
    if h.dtype == np.bool_:
        return h.view(np.uint8)
    return (
        np.ascontiguousarray(h).view(f"u{h.dtype.itemsize}")
        if h.dtype.kind in "fcV" or h.dtype == BF16
        else h
    )


def assert_same(got, want) -> None:
    """Equal dtype, shape and bits."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(bits(got), bits(want))


def entry_of(f):
    """The only cached entry of a compiled function."""
    assert len(f.cache) == 1, f"{len(f.cache)} entries"
    return next(iter(f.cache.values()))


def step_names(f, *args) -> list[str]:
    return [s.split(" = ")[1].split("(")[0] for s in f.inspect(*args).steps]


@pytest.fixture
def no_fusion():
    with unfused():
        yield


def assert_topological(tape) -> None:
    """Every step reads only slots defined before it (inputs, constants, earlier steps)."""
    defined = set(range(tape.n_inputs + len(tape.consts)))
    for st in tape.steps:
        for a in st.args:
            assert a in defined, f"{st} reads slot {a} before it is made"
        defined.update(range(st.out, st.out + st.nout))
    for o in tape.outputs:
        assert o in defined


def fused_specs(f):
    """The KernelSpecs of the fused steps of a compiled function's only entry."""
    return [st.prim.spec for st in entry_of(f).tape.steps if st.prim.name == "compiled"]


@pytest.fixture(autouse=True)
def kernels_in_the_call():
    """Tests look at fused tapes right after the first call: build kernels in the call (one
    test checks the background mode itself)."""
    from nuvec.compile import background

    prev = background.set_background_kernels(False)
    yield
    background.wait_for_kernels()
    background.set_background_kernels(prev)
