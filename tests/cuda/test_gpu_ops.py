"""Operations, transforms, compile and streams on the GPU against the same code on the CPU.

Each case builds its inputs on the host, runs the function once under ``nv.stream(nv.cpu)`` and
once under ``nv.stream(nv.gpu)``, and compares: element-wise work and everything that only
moves data must agree exactly; float reductions, matmul, softmax and gradients within rounding
(a different summation order).

The op suite itself also runs with the GPU as the default device (``--device gpu``, see
tests/conftest.py) against NumPy; what stays here is what it cannot see: GPU results with the
CPU's bits, the GPU's storage, streams, transfers and primitive coverage.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import time

import ml_dtypes
import numpy as np
import pytest

import nuvec as nv
from devices import cuda_only

pytestmark = cuda_only
cp = pytest.importorskip("cupy")

BF16 = np.dtype(ml_dtypes.bfloat16)


def host(x):
    if isinstance(x, (list, tuple)):
        return [host(v) for v in x]
    if isinstance(x, dict):
        return {k: host(v) for k, v in x.items()}
    return np.asarray(x)


def _exact(a):
    """NumPy data as an nuvec array of the same dtype (nv.array narrows float64 as MLX)."""
    return nv.array(a, dtype=nv.float64) if np.asarray(a).dtype == np.float64 else nv.array(a)


def run_both(fn, *arrays):
    """``fn`` over ``arrays`` (NumPy) on the CPU, then on the GPU: (cpu result, gpu result)."""
    out = []
    for dev in (nv.cpu, nv.gpu):
        with nv.stream(dev):
            r = fn(*[_exact(a) for a in arrays])
            nv.eval(r)
            if dev == nv.gpu:
                for leaf in r if isinstance(r, (list, tuple)) else [r]:
                    if isinstance(leaf, nv.array):
                        assert leaf.stream.device == nv.gpu
                        assert isinstance(leaf._data, cp.ndarray), type(leaf._data)
            out.append(host(r))
    return out


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    if a.dtype.kind in "fc" or a.dtype == BF16:
        af, bf = (
            a.astype(np.complex128 if a.dtype.kind == "c" else np.float64),
            b.astype(np.complex128 if b.dtype.kind == "c" else np.float64),
        )
        np.testing.assert_array_equal(np.isnan(af), np.isnan(bf))
        ok = ~np.isnan(af)
        np.testing.assert_array_equal(af[ok], bf[ok])
    else:
        np.testing.assert_array_equal(a, b)


def close(a, b, rtol=1e-5, atol=1e-6):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol)


RNG = np.random.default_rng(0)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# -- element-wise through the ops (promotion, weak scalars, broadcasting) --------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64])
def test_elementwise_chain_matches_cpu_exactly(dtype):
    x, y = randn(64, 33, dtype=dtype), randn(33, dtype=dtype)

    def f(a, b):
        z = nv.exp(a) * b + 2.0
        z = nv.where(z > 1.5, nv.tanh(z), nv.sigmoid(-z))
        e = nv.erfinv(nv.tanh(a))
        return [z, nv.erf(a / 3), e, nv.maximum(a, b) ** 2, (a * 3).astype(nv.int32), a < b]

    c, g = run_both(f, x, y)
    for u, v in zip(c, g):
        same(v, u)  # float64 exp, tanh, sigmoid, erf, erfinv, power: nuvec's own (nv_math64.h)


def test_bfloat16_is_stored_as_uint16_bits():
    with nv.stream(nv.gpu):
        a = nv.array(np.array([1.5, -2.25, 3.0], dtype=BF16))
        b = a * 2
        nv.eval(b)
    assert b.dtype == nv.bfloat16
    assert b._data.dtype == np.uint16
    h = np.asarray(b)
    assert h.dtype == BF16 and h.astype(np.float32).tolist() == [3.0, -4.5, 6.0]
    assert b.tolist() == [3.0, -4.5, 6.0] and b[1].item() == -4.5


@pytest.mark.parametrize("axes", [(1, 0), (2, 0, 1), (1, 2, 0)])
def test_a_transposed_array_comes_to_the_host_in_its_layout(axes):
    x = np.arange(2 * 3 * 5, dtype=np.float32).reshape(2, 3, 5)
    x = x[0] if len(axes) == 2 else x
    with nv.stream(nv.gpu):
        t = nv.transpose(nv.array(x), axes)
        nv.eval(t)
    assert not t._data.flags.c_contiguous
    h = np.asarray(t)
    want = x.transpose(axes)
    assert h.strides == want.strides and np.array_equal(h, want)
    with nv.stream(nv.gpu):  # a strided view that is no permutation: a C-ordered copy
        s = nv.transpose(nv.array(x), axes)[..., ::2]
        nv.eval(s)
    assert np.array_equal(np.asarray(s), want[..., ::2])


def test_integer_and_bool_ops():
    a = RNG.integers(-100, 100, (50,)).astype(np.int32)
    b = RNG.integers(1, 7, (50,)).astype(np.int32)
    c, g = run_both(
        lambda x, y: [
            x // y,
            x % y,
            x << 2,
            x >> 1,
            x & y,
            ~x,
            x == y,
            nv.logical_and(x > 0, y > 2),
        ],
        a,
        b,
    )
    for u, v in zip(c, g):
        same(v, u)


# -- indexing --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["maximum", "minimum", "add", "multiply"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, BF16, np.int8])
def test_scatter_modes_with_repeated_and_scalar_indices(mode, dtype):
    x = (RNG.standard_normal((3, 4)) * 4).astype(dtype)
    v = (RNG.standard_normal(3) * 4).astype(dtype)
    idx = np.array([2, 0, 2], dtype=np.int32)
    c, g = run_both(
        lambda a, u, i: [getattr(a.at[i, 2], mode)(u), getattr(a.at[i], mode)(u[0])], x, v, idx
    )
    for u, w in zip(c, g):
        if mode in ("add", "multiply") and np.dtype(dtype) == BF16:
            close(w, u, rtol=1e-2, atol=1e-2)  # one rounding on the GPU, one per update on the CPU
        else:
            same(w, u)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16, np.int32, np.bool_])
@pytest.mark.parametrize(
    "shape,axis,width",
    [((6, 10), 1, 1), ((6, 10), 1, 3), ((4, 5, 3), 1, 1), ((4, 5, 3), 0, 2), ((7,), 0, 4)],
)
def test_along_axis_gathers_and_puts_with_the_cpus_values(dtype, shape, axis, width):
    """take_along_axis / put_along_axis (one kernel over the indices on the GPU), negative
    indices included, and the additive scatter of take_along_axis's gradient."""
    x = (RNG.standard_normal(shape) * 4).astype(dtype)
    ishape = shape[:axis] + (width,) + shape[axis + 1 :]
    idx = RNG.integers(-shape[axis], shape[axis], ishape).astype(np.int32)
    if width > 1:  # distinct positions along the axis: put_along_axis's result is defined
        idx = np.argsort(RNG.random(shape), axis=axis).take(range(width), axis=axis) - 1
        idx = idx.astype(np.int32)
    v = (RNG.standard_normal(ishape) * 4).astype(dtype)

    def f(a, i, u):
        out = [nv.take_along_axis(a, i, axis=axis), nv.put_along_axis(a, i, u, axis=axis)]
        if a.dtype in (nv.float32, nv.float64):
            out.append(nv.grad(lambda t: (nv.take_along_axis(t, i, axis=axis) * u).sum())(a))
        return out

    c, g = run_both(f, x, idx, v)
    for u, w in zip(c, g):
        same(w, u)


# -- random ----------------------------------------------------------------------------------


def test_random_bits_match_the_cpu():
    def f(k):
        k1, k2 = nv.random.split(k)
        return [
            nv.random.bits((5, 7), key=k1),
            nv.random.bits((9,), width=1, key=k2),
            nv.random.uniform(shape=(1000,), key=k1),
            nv.random.normal((33,), key=k2),
            nv.random.randint(0, 10, (50,), key=k1),
            nv.random.split(k, 4),
            nv.random.bits((3,), width=2, key=k2),
        ]

    with nv.stream(nv.cpu):
        key = np.asarray(nv.random.key(1234))
    c, g = run_both(f, key)
    for u, v in zip(c, g):
        same(v, u)


# -- transforms and compile -------------------------------------------------------------------


def _chain(x, y):
    z = x * 1.5 + y
    z = nv.where(z > 0, z, z * 0.1)
    z = nv.exp(-z * z) + nv.sqrt(nv.abs(y)) - nv.erf(x)
    return [z * x, nv.sum(z, axis=-1), (z * 2).astype(nv.bfloat16)]


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.float16])
def test_compiled_equals_uncompiled_bit_for_bit(dtype):
    x, y = randn(129, 257, dtype=dtype), randn(257, dtype=dtype)
    with nv.stream(nv.gpu):
        xa, ya = nv.array(x), nv.array(y)
        plain = host(_chain(xa, ya))
        f = nv.compile(_chain)
        first = host(f(xa, ya))
        again = host(f(xa, ya))
    for p, a, b in zip(plain, first, again):
        same(a, p)  # the sum too: the same reduction runs on the same data
        same(b, p)
    with nv.stream(nv.cpu):
        cpu = host(nv.compile(_chain)(nv.array(x), nv.array(y)))
    same(first[0], cpu[0])
    same(first[2], cpu[2])


def test_compile_fuses_into_gpu_kernels():
    from nuvec.backends.cuda import kernels

    x = randn(1000)
    f = nv.compile(lambda a: nv.tanh(nv.exp(a) * 2 + 1) - a * a)
    with nv.stream(nv.gpu):
        xa = nv.array(x)
        nv.eval(xa)
        f(xa)
        before = sum(kernels.stats()["launches"].values())
        r = f(xa)
        nv.eval(r)
        launches = sum(kernels.stats()["launches"].values()) - before
        plain = nv.tanh(nv.exp(xa) * 2 + 1) - xa * xa
        same(host(r), host(plain))
    assert launches == 1, f"the compiled function launched {launches} kernels"


# -- streams, synchronisation, transfers --------------------------------------------------


def test_evaluation_does_not_wait_for_the_device():
    from nuvec.backends.cuda import runtime

    with nv.stream(nv.gpu):
        a = nv.random.normal((4096, 4096), key=nv.random.key(0))
        nv.eval(a)
        nv.synchronize()
        b = a
        for _ in range(8):
            b = b @ a * 1e-3
        t = time.perf_counter()
        nv.eval(b)
        queued = time.perf_counter() - t
        cs = runtime.cuda_stream(b.stream)
        pending = not cs.done
        t = time.perf_counter()
        nv.synchronize()
        waited = time.perf_counter() - t
        assert cs.done
    assert pending, "eval waited for the GPU"
    assert waited > 0, (queued, waited)


def test_streams_order_dependent_work():
    s1, s2 = nv.new_stream(nv.gpu), nv.new_stream(nv.gpu)
    x = randn(2048, 2048)
    with nv.stream(s1):
        a = nv.array(x)
        for _ in range(4):
            a = nv.tanh(a @ a * 1e-2) + 1
    with nv.stream(s2):
        b = a * 2  # made on s2 from s1's result: s2 must wait for s1
    nv.eval(b)
    with nv.stream(nv.cpu):
        ac = nv.array(x)
        for _ in range(4):
            ac = nv.tanh(ac @ ac * 1e-2) + 1
        want = np.asarray(ac * 2)
    close(np.asarray(b), want, rtol=1e-4, atol=1e-4)
    assert b.stream == s2


def test_explicit_transfers_between_devices():
    from nuvec.backends.cuda.misc import transfer
    from nuvec.primitives.misc import Copy

    with nv.stream(nv.cpu):
        h = nv.arange(10).astype(nv.float32)
        nv.eval(h)
    d = transfer(h, nv.gpu)  # a node: nothing moved yet
    assert isinstance(d.primitive, Copy) and d.stream.device == nv.gpu
    with nv.stream(nv.gpu):
        e = d * 3
    nv.eval(e)
    assert isinstance(e._data, cp.ndarray) and isinstance(h._data, np.ndarray)
    back = transfer(e, nv.cpu)
    nv.eval(back)
    assert isinstance(back._data, np.ndarray)
    np.testing.assert_array_equal(back._data, np.arange(10, dtype=np.float32) * 3)


def test_every_primitive_runs_on_the_gpu():
    from nuvec.backends import registry
    from nuvec.core.primitive import Primitive
    import nuvec.backends.cpu  # noqa: F401  (the CPU backend registers host-staged collectives)
    import nuvec.primitives as P

    # composites another backend lowers to one primitive stay composites on the GPU
    composites = registry.backend("cpu").lowerings - registry.backend("gpu").lowerings
    # a user's Metal source (nv.fast.metal_kernel) runs on Metal alone, as MLX's
    other_gpu = {"MetalCustomKernel"}

    missing = []
    for info in pkgutil.iter_modules(P.__path__):
        mod = importlib.import_module(f"nuvec.primitives.{info.name}")
        for name, cls in inspect.getmembers(mod, inspect.isclass):
            if not issubclass(cls, Primitive):
                continue
            concrete = cls.infer is not Primitive.infer  # abstract bases define no infer
            if (
                concrete
                and not name.startswith("_")
                and name not in other_gpu
                and cls not in composites
                and cls.__module__ == mod.__name__
                and registry.implementation(cls, "gpu") is None
            ):
                missing.append(f"{mod.__name__}.{name}")
    assert not missing, f"primitives without a GPU implementation: {missing}"


def test_the_gpu_keeps_the_row_primitives_it_lowers():
    # on a GPU stream layer norm and the softmax's gradient stay one primitive each (the CUDA
    # backend runs them as row kernels); attention runs as its composite form
    from nuvec.primitives.norm import LayerNorm
    from nuvec.primitives.reduction import SoftmaxProduct

    with nv.stream(nv.gpu):
        x = nv.array(np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32))
        w = nv.ones((8,))
        y = nv.fast.layer_norm(x, w, None, 1e-5)
        assert isinstance(y._prim, LayerNorm)
        (g,) = nv.vjp(lambda x: nv.softmax(x, axis=-1), [x], [x])[1]
        assert isinstance(g._prim, SoftmaxProduct)
        q = nv.reshape(x, (1, 1, 4, 8))
        o = nv.fast.scaled_dot_product_attention(q, q, q, scale=0.3, mask=None)
        nv.eval(y, g, o)
