"""Operations, transforms, compile and streams on the GPU against the same code on the CPU.

Each case builds its inputs on the host, runs the function once under ``nv.stream(nv.cpu)`` and
once under ``nv.stream(nv.gpu)``, and compares: element-wise work and everything that only
moves data must agree exactly; float reductions, matmul, softmax and gradients within rounding
(a different summation order).
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
        return [z, nv.erf(a / 3), nv.maximum(a, b) ** 2, (a * 3).astype(nv.int32), a < b]

    c, g = run_both(f, x, y)
    for u, v in zip(c, g):
        if np.dtype(dtype) == np.float64 and u.dtype == np.float64:
            close(v, u, rtol=1e-14, atol=0)  # float64 exp/tanh/erf: the C library vs CUDA's
        else:
            same(v, u)


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


# -- shape, indexing --------------------------------------------------------------------------


def test_shape_ops():
    x = randn(4, 6, 5)

    def f(a):
        return [
            nv.transpose(a, (2, 0, 1)) + 0,
            a[1:3, ::2, ::-1] * 1,
            nv.reshape(a, (24, 5)),
            nv.concatenate([a, a * 2], axis=1),
            nv.pad(a, ((1, 0), (0, 2), (1, 1))),
            nv.expand_dims(a, 1),
            nv.squeeze(a[:, :1], 1),
            nv.flatten(a, 1),
            nv.broadcast_to(a[:, :1], (4, 6, 5)) + 0,
            nv.stack([a, a]),
            nv.tile(a, (1, 2, 1)),
            nv.stop_gradient(a),
        ]

    c, g = run_both(f, x)
    for u, v in zip(c, g):
        same(v, u)


def test_indexing_gather_and_scatter():
    x = randn(8, 5)
    idx = np.array([3, 0, 7, 3], dtype=np.int32)
    along = RNG.integers(0, 5, (8, 3)).astype(np.int32)

    def f(a, i, j):
        b = a.at[i].add(1.0)  # repeated index 3: both additions count
        m = a.at[i].maximum(0.5)
        p = a.at[nv.array([1, 2, 2], dtype=nv.int32)].multiply(2.0)
        s = a.astype(nv.int32).at[i].add(1)
        t = (a > 0).at[i].add(True)
        return [
            a[i],
            a[:, 2],
            nv.take(a, i, axis=0),
            nv.take_along_axis(a, j, 1),
            nv.put_along_axis(a, j[:, :1], -1.0, 1),
            b,
            m,
            p,
            s,
            t,
            a[i, 1:3],
            a[nv.array([-1, -8], dtype=nv.int32)],
        ]

    c, g = run_both(f, x, idx, along)
    for u, v in zip(c, g):
        same(v, u)


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_scatter_add_has_the_cpus_bits_every_run(dtype):
    # an embedding's gradient: many updates per row, in an order that matters in the last bits
    x = randn(7, 33).astype(dtype)
    idx = RNG.integers(-7, 7, 500).astype(np.int32)
    upd = (RNG.standard_normal((500, 33)) * 10.0 ** RNG.integers(-3, 4, (500, 1))).astype(dtype)

    def f(a, i, u):
        return a.at[i].add(u)

    c, g = run_both(f, x, idx, upd)
    same(g, c)
    _, g2 = run_both(f, x, idx, upd)
    same(g2, g)


def test_setitem_on_gpu():
    with nv.stream(nv.gpu):
        a = nv.zeros((3, 4))
        a[1] = nv.ones((4,)) * 2
        a[:, 0] = 7
        h = np.asarray(a)
    want = np.zeros((3, 4), np.float32)
    want[1] = 2
    want[:, 0] = 7
    np.testing.assert_array_equal(h, want)


# -- reductions, scans, sort, linalg, random -----------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int32, np.bool_])
def test_reductions(dtype):
    if dtype == np.bool_:
        x = RNG.integers(0, 2, (7, 9, 4)).astype(bool)
    elif dtype == np.int32:
        x = RNG.integers(-50, 50, (7, 9, 4)).astype(np.int32)
    else:
        x = randn(7, 9, 4, dtype=dtype)

    def f(a):
        r = [
            nv.sum(a),
            nv.sum(a, axis=1),
            nv.max(a, axis=(0, 2)),
            nv.min(a, axis=2, keepdims=True),
            nv.all(a, axis=0),
            nv.any(a),
            nv.argmax(a, axis=1),
            nv.argmin(a, axis=0, keepdims=True),
        ]
        if dtype != np.bool_:
            r += [
                nv.prod(a[:2, :2], axis=1),
                nv.cumsum(a, axis=1),
                nv.cummax(a, axis=2),
                nv.cummin(a, axis=0, reverse=True),
                nv.cumsum(a, axis=2, inclusive=False),
            ]
        if dtype in (np.float32, BF16):
            r += [
                nv.mean(a, axis=0),
                nv.var(a, axis=1),
                nv.logsumexp(a, axis=2),
                nv.softmax(a, axis=1),
                nv.logcumsumexp(a, axis=1),
                nv.cumprod(a[:, :3], axis=1),
            ]
        return r

    c, g = run_both(f, x)
    for u, v in zip(c, g):
        if u.dtype.kind in "fV" and u.dtype != np.bool_:
            tol = 1e-2 if dtype == BF16 else 1e-5
            close(v, u, rtol=tol, atol=tol)
        else:
            same(v, u)


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int32, np.float16])
def test_sorting(dtype):
    x = (RNG.integers(-20, 20, (6, 40)) if dtype == np.int32 else randn(6, 40)).astype(dtype)
    if dtype != np.int32:
        x[0, 3] = np.nan
    c, g = run_both(
        lambda a: [
            nv.sort(a, axis=1),
            nv.sort(a, axis=0),
            nv.argsort(a, axis=1),
            nv.topk(a, 5, axis=1),
        ],
        x,
    )
    for u, v in zip(c[:2], g[:2]):
        same(v, u)
    # stable argsort: equal keys keep their order, so the permutation itself matches
    same(g[2], c[2])
    # the top 5 as sets (NumPy sorts bfloat16 NaNs unreliably: compare in float32)
    same(np.sort(g[3].astype(np.float32), axis=1), np.sort(c[3].astype(np.float32), axis=1))
    with nv.stream(nv.gpu):
        a = nv.array(x)
        p = np.asarray(nv.partition(a, 7, axis=1)).astype(np.float64)
        ip = np.asarray(nv.argpartition(a, 7, axis=1))
    s = np.sort(x.astype(np.float64), axis=1)
    np.testing.assert_array_equal(np.isnan(p[:, 7]), np.isnan(s[:, 7]))
    ok = ~np.isnan(s[:, 7])
    np.testing.assert_array_equal(p[ok, 7], s[ok, 7])
    assert all(sorted(r.tolist()) == list(range(40)) for r in ip)


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.float16, np.int32, np.float64])
def test_matmul(dtype):
    if dtype == np.int32:
        a, b = (RNG.integers(-9, 9, s).astype(np.int32) for s in ((3, 20, 30), (30, 17)))
    else:
        a, b = randn(3, 20, 30, dtype=dtype), randn(30, 17, dtype=dtype)
    bias = randn(17, dtype=dtype) if dtype != np.int32 else np.arange(17, dtype=np.int32)
    c, g = run_both(
        lambda x, y, z: [
            x @ y,
            nv.addmm(z, x, y, alpha=2.0, beta=0.5) if dtype != np.int32 else x @ y + z,
            x[0] @ y[:, 0],
        ],
        a,
        b,
        bias,
    )
    for u, v in zip(c, g):
        if dtype == np.int32:
            same(v, u)
        else:
            tol = {
                np.dtype(np.float32): 1e-5,
                BF16: 1e-2,
                np.dtype(np.float16): 1e-3,
                np.dtype(np.float64): 1e-12,
            }[np.dtype(dtype)]
            close(v, u, rtol=tol, atol=tol * 10)


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


def _loss(w, x):
    h = nv.tanh(x @ w["a"] + w["b"])
    return nv.mean(nv.logsumexp(h, axis=1)) + nv.sum(w["a"] ** 2) * 1e-3


def test_grad_vjp_jvp_vmap():
    w = {"a": randn(6, 4), "b": randn(4)}
    x = randn(5, 6)
    out = []
    for dev in (nv.cpu, nv.gpu):
        with nv.stream(dev):
            wa = {k: nv.array(v) for k, v in w.items()}
            xa = nv.array(x)
            val, grads = nv.value_and_grad(_loss)(wa, xa)
            _, jv = nv.jvp(lambda a: nv.sin(a) * a, [xa], [nv.ones_like(xa)])
            vm = nv.vmap(lambda r: nv.sum(r * r))(xa)
            out.append(host([val, grads["a"], grads["b"], jv[0], vm]))
    for u, v in zip(*out):
        close(v, u, rtol=1e-5, atol=1e-6)


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


def test_compiled_grad_step_on_gpu():
    w = {"a": randn(6, 4), "b": randn(4)}
    x = randn(5, 6)
    res = []
    for fn in (nv.value_and_grad(_loss), nv.compile(nv.value_and_grad(_loss))):
        with nv.stream(nv.gpu):
            val, g = fn({k: nv.array(v) for k, v in w.items()}, nv.array(x))
            res.append(host([val, g["a"], g["b"]]))
    for u, v in zip(*res):
        close(v, u, rtol=1e-6, atol=1e-7)


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
                and cls not in composites
                and cls.__module__ == mod.__name__
                and registry.implementation(cls, "gpu") is None
            ):
                missing.append(f"{mod.__name__}.{name}")
    assert not missing, f"primitives without a GPU implementation: {missing}"


def test_the_cpu_only_primitives_stay_off_the_gpu():
    # on a GPU stream layer norm and the softmax's gradient are the composite forms
    from nuvec.primitives.norm import LayerNorm
    from nuvec.primitives.reduction import SoftmaxProduct

    with nv.stream(nv.gpu):
        x = nv.array(np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32))
        w = nv.ones((8,))
        assert not isinstance(nv.fast.layer_norm(x, w, None, 1e-5)._prim, LayerNorm)
        (g,) = nv.vjp(lambda x: nv.softmax(x, axis=-1), [x], [x])[1]
        assert not isinstance(g._prim, SoftmaxProduct)
        q = nv.reshape(x, (1, 1, 4, 8))
        o = nv.fast.scaled_dot_product_attention(q, q, q, scale=0.3, mask=None)
        nv.eval(g, o)
