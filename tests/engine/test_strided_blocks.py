"""The strided function of a costly kernel runs its math in blocks through the contiguous loop
(nuvec/codegen/dialects/c.py): every layout (steps of any sign, broadcast operands beside strided
ones, rows shorter and longer than a block, outputs at a step or in place over their input) gives
the bits of the same kernel on contiguous copies."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from engine_util import assert_bits_equal, values
from nuvec.backends.cpu import kernels
from nuvec.codegen.generator import kernel_name
from nuvec.codegen.ir import KernelSpec

RNG = np.random.default_rng(11)

CASES = [  # costly kernels (blocked), then a cheap one (the direct loop) for contrast
    ("tanh", ("float32",), "float32"),
    ("sigmoid", ("bfloat16",), "bfloat16"),
    ("expm1", ("float16",), "float16"),
    ("logaddexp", ("float64", "float64"), "float64"),
    ("divide", ("float32", "float32"), "float32"),
    ("exp", ("complex64",), "complex64"),
    ("add", ("int16", "int16"), "int16"),
]


def _contig(spec: KernelSpec, ins: list[np.ndarray], shape) -> list[np.ndarray]:
    full = [np.array(np.broadcast_to(x, shape), order="C") for x in ins]
    return kernels.run(spec, full, shape)


@pytest.mark.parametrize("op,ins,out", CASES)
@pytest.mark.parametrize("n", [1, 31, 32, 255, 256, 257, 700])
def test_steps_and_broadcasts_match_contiguous(op, ins, out, n) -> None:
    spec = KernelSpec.single(op, ins, out)
    rows = 3
    base = [values(d, rows * n * 3, RNG).reshape(rows, n * 3) for d in ins]
    layouts = [
        [b[:, ::3] for b in base],  # step 3
        [b[::-1, ::-3] for b in base],  # negative steps
        [b[:, :n].T.copy().T for b in base],  # columns: a transposed copy
    ]
    if len(ins) == 2:  # one operand broadcast along the row beside a strided one
        layouts.append([base[0][:, ::3], base[1][:, :1]])
        layouts.append([base[0][:1, ::3], base[1][:, ::3]])
    for arrs in layouts:
        shape = np.broadcast_shapes(*[a.shape for a in arrs])
        got = kernels.run(spec, arrs, shape)
        want = _contig(spec, arrs, shape)
        for g, w in zip(got, want):
            assert_bits_equal(g, w, f"{op} n={n}")


def _call(spec: KernelSpec, ptrs: list[int], steps: list[int], n: int) -> None:
    """The exported C function with explicit pointers and steps (strided outputs too, which
    the launcher never makes: it writes C-contiguous outputs)."""
    lib = kernels._load_prebuilt()
    assert lib is not None, "the prebuilt kernels are not built"
    fn = getattr(lib, kernel_name(spec))
    fn.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
    fn(n, (ctypes.c_void_p * len(ptrs))(*ptrs), (ctypes.c_int64 * len(steps))(*steps))


@pytest.mark.parametrize("op,ins,out", CASES[:3])
@pytest.mark.parametrize("n", [5, 300, 1000])
def test_strided_outputs_and_in_place(op, ins, out, n) -> None:
    spec = KernelSpec.single(op, ins, out)
    base = values(ins[0], 2 * n, RNG)
    want = _contig(spec, [base[::2]], (n,))[0]
    # an output at a negative step
    dst = np.zeros(3 * n, want.dtype)
    size = want.itemsize
    _call(spec, [base.ctypes.data, dst.ctypes.data + (3 * n - 1) * size], [2 * size, -3 * size], n)
    assert_bits_equal(dst[::-3][:n], want, f"{op} step -3 output")
    # in place: the output exactly over its strided input
    _call(spec, [base.ctypes.data, base.ctypes.data], [2 * size, 2 * size], n)
    assert_bits_equal(base[::2], want, f"{op} in place")
