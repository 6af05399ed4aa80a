"""The element-wise op table: every record is complete, and what it says holds.

Each record's NumPy stand-in agrees with the generated kernel it stands in for, its fast
variant names a function the CUDA source defines or CUDA provides, and the sets other modules
derive from the table match what the primitives and the generator do.
"""

import numpy as np
import pytest
import scipy.special

import nuvec as nv
from nuvec.backends.cpu import kernels
from nuvec.codegen import generate
from nuvec.codegen.ir import KernelSpec
from nuvec.codegen.ops import result_dtype, supports
from nuvec.codegen.optable import KIND_DTYPES, OPS, ElementwiseOp, fast_functions
from nuvec.primitives.elementwise import PREDICATES, Binary, Unary

RNG = np.random.default_rng(7)


def test_records_are_well_formed():
    for name, rec in OPS.items():
        assert isinstance(rec, ElementwiseOp) and rec.name == name
        assert rec.arity in (1, 2, 3)
        assert rec.kinds and set(rec.kinds) <= set(KIND_DTYPES), name
        assert rec.result in ("same", "bool", "real", "select", "astype"), name
        assert rec.inputs in ("promote", "float", "bool", "integer"), name
        assert rec.cost >= 1
        if rec.derivative_reads_out:
            assert rec.derivative is not None, name
        if rec.vjp is not None or rec.jvp is not None:
            assert rec.vjp is not None and rec.jvp is not None, name


@pytest.mark.parametrize("op", sorted(set(OPS) - {"astype"}))
def test_stand_in_resolves(op):
    f = OPS[op].stand_in(np, lambda: scipy.special)
    assert callable(f)


def _sample(op: str, arity: int) -> list[np.ndarray]:
    # inside every op's domain: (0.1, 0.9) for the first operand, (0.5, 1.5) for the others
    a = RNG.uniform(0.1, 0.9, 257).astype(np.float32)
    rest = [RNG.uniform(0.5, 1.5, 257).astype(np.float32) for _ in range(arity - 1)]
    return [a, *rest]


@pytest.mark.parametrize(
    "op",
    sorted(
        o
        for o, r in OPS.items()
        if "f" in r.kinds and r.arity < 3 and o != "astype" and r.numpy is not None
    ),
)
def test_stand_in_agrees_with_the_kernel(op):
    rec = OPS[op]
    xs = _sample(op, rec.arity)
    ins = ("float32",) * rec.arity
    (got,) = kernels.run(KernelSpec.single(op, ins, result_dtype(op, ins)), xs, xs[0].shape)
    with np.errstate(all="ignore"):
        want = np.asarray(rec.stand_in(np, lambda: scipy.special)(*xs))
    assert got.dtype == want.dtype or (got.dtype == np.bool_ and want.dtype == np.bool_)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-6)


def test_coverage_comes_from_kinds():
    for name, rec in OPS.items():
        for kind, dtypes in KIND_DTYPES.items():
            for d in dtypes:
                assert supports(name, d) == (kind in rec.kinds), (name, d)


def test_predicates_are_the_bool_results():
    assert PREDICATES == {o for o, r in OPS.items() if r.result == "bool"}
    for o, r in OPS.items():
        if r.arity == 1 and o != "astype":
            assert Unary(o).differentiable == r.differentiable
        elif r.arity == 2:
            assert Binary(o).differentiable == r.differentiable


def test_fast_variants_exist_in_cuda_source():
    fast = fast_functions("cuda")
    assert fast and all(op in OPS for op in fast)
    src = generate(KernelSpec.single("exp", ("float32",), "float32"), "cuda")
    for op, fn in fast.items():
        # nuvec's own fast helpers are defined in the source; the rest are CUDA intrinsics
        # (double underscore) or libdevice functions (a C name with an f suffix)
        assert fn in src or fn.startswith("__") or fn.endswith("f"), (op, fn)


@pytest.mark.parametrize("op", sorted(o for o, r in OPS.items() if r.doc))
def test_public_functions_use_the_record(op):
    rec = OPS[op]
    fn = getattr(nv, op, None)
    if fn is None or fn.__doc__ != rec.doc:
        # functions with checks of their own (power, remainder) wrap the record's function
        from nuvec.ops import elementwise as ew

        fn = getattr(ew, "_" + op)
    assert fn.__doc__ == rec.doc
    if rec.real_only:
        with pytest.raises(ValueError, match=op):
            fn(nv.array([1 + 1j]))
