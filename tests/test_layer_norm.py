"""nv.fast.layer_norm as one primitive on the CPU (float32, float64): the forward pass has the
composite form's bits; the backward pass (its own formula) agrees with the composite's
gradients, gives the same bits on any number of threads and compiled or not; every transform
goes through."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv
from nuvec.backends.cpu import kernels
from nuvec.ops.composites import layer_norm_composite as composite
from nuvec.primitives.norm import LayerNorm

RNG = np.random.default_rng(5)
pytestmark = pytest.mark.usefixtures("cpu_device")  # the primitive is the CPU's


def arrays(shape, dims, scale=1.0):
    x = (RNG.standard_normal(shape + (dims,)) * scale + 3.0).astype(np.float32)
    w = RNG.standard_normal(dims).astype(np.float32)
    b = RNG.standard_normal(dims).astype(np.float32)
    return nv.array(x), nv.array(w), nv.array(b)


def bits(a) -> bytes:
    return np.asarray(a).tobytes()


def uses_primitive(x, w, b) -> bool:
    return isinstance(nv.fast.layer_norm(x, w, b, 1e-5)._prim, LayerNorm)


@pytest.mark.parametrize("dims", [1, 2, 7, 64, 128, 513, 1100])
@pytest.mark.parametrize("params", ["both", "weight", "bias", "none"])
def test_forward_has_the_composite_bits(dims, params):
    x, w, b = arrays((3, 5), dims, scale=10.0)
    w = w if params in ("both", "weight") else None
    b = b if params in ("both", "bias") else None
    assert uses_primitive(x, w, b)
    assert bits(nv.fast.layer_norm(x, w, b, 1e-5)) == bits(composite(x, w, b, 1e-5))


def test_forward_special_values_and_views():
    x, w, b = arrays((4,), 16)
    xs = np.asarray(x).copy()
    xs[0, 3], xs[1, :], xs[2, 0] = np.nan, 7.0, np.inf  # NaN, a constant row, inf
    x = nv.array(xs)
    assert bits(nv.fast.layer_norm(x, w, b, 1e-5)) == bits(composite(x, w, b, 1e-5))
    t = nv.transpose(arrays((16,), 4)[0])  # not contiguous: the bits of a contiguous copy
    c = nv.array(np.ascontiguousarray(np.asarray(t)))
    assert bits(nv.fast.layer_norm(t, w, b, 1e-5)) == bits(composite(c, w, b, 1e-5))


@pytest.mark.parametrize("params", ["both", "weight", "bias", "none"])
def test_gradients_agree_with_the_composite(params):
    x, w, b = arrays((6, 9), 48)
    w = w if params in ("both", "weight") else None
    b = b if params in ("both", "bias") else None
    ct = nv.array(RNG.standard_normal((6, 9, 48)).astype(np.float32))
    args = [a for a in (x, w, b) if a is not None]

    def loss(fn):
        def f(*a):
            it = iter(a[1:])
            ww = next(it) if w is not None else None
            bb = next(it) if b is not None else None
            return (fn(a[0], ww, bb, 1e-5) * ct).sum()

        return f

    got = nv.grad(loss(nv.fast.layer_norm), argnums=tuple(range(len(args))))(*args)
    want = nv.grad(loss(composite), argnums=tuple(range(len(args))))(*args)
    for g1, g0 in zip(got, want):
        g1, g0 = np.asarray(g1), np.asarray(g0)
        np.testing.assert_allclose(g1, g0, rtol=2e-4, atol=2e-4 * np.abs(g0).max())


def test_backward_bits_do_not_depend_on_threads_or_compile():
    x, w, b = arrays((40, 30), 64)

    def grads(x, w, b):
        return nv.grad(
            lambda x, w, b: (nv.fast.layer_norm(x, w, b, 1e-5) ** 2).sum(), argnums=(0, 1, 2)
        )(x, w, b)

    prev = kernels.set_num_threads(1)
    try:
        one = [bits(g) for g in grads(x, w, b)]
        kernels.set_num_threads(2)
        two = [bits(g) for g in grads(x, w, b)]
        compiled = nv.compile(grads)
        compiled(x, w, b)
        again = [bits(g) for g in compiled(x, w, b)]
    finally:
        kernels.set_num_threads(prev)
    assert one == two == again


def test_forward_mode_vmap_second_order_and_shapeless():
    x, w, b = arrays((4, 5), 6)
    t = nv.array(RNG.standard_normal((4, 5, 6)).astype(np.float32))
    ln = lambda x: nv.fast.layer_norm(x, w, b, 1e-5)  # noqa: E731
    lc = lambda x: composite(x, w, b, 1e-5)  # noqa: E731
    assert bits(nv.jvp(ln, [x], [t])[1][0]) == bits(nv.jvp(lc, [x], [t])[1][0])
    assert bits(nv.vmap(ln, in_axes=1)(x)) == bits(nv.vmap(lc, in_axes=1)(x))
    h1 = nv.grad(lambda x: (nv.grad(lambda x: (ln(x) ** 3).sum())(x) ** 2).sum())(x)
    h0 = nv.grad(lambda x: (nv.grad(lambda x: (lc(x) ** 3).sum())(x) ** 2).sum())(x)
    np.testing.assert_allclose(
        np.asarray(h1), np.asarray(h0), rtol=1e-3, atol=1e-3 * np.abs(np.asarray(h0)).max()
    )
    f = nv.compile(ln, shapeless=True)
    for n in (4, 2):
        assert bits(f(x[:n])) == bits(lc(x[:n]))


def test_float64_and_other_dtypes():
    x, w, b = arrays((3,), 8)
    x64, w64 = nv.astype(x, nv.float64), nv.astype(w, nv.float64)
    assert uses_primitive(x64, w64, None)
    assert bits(nv.fast.layer_norm(x64, w64, None, 1e-5)) == bits(composite(x64, w64, None, 1e-5))
    half = nv.astype(x, nv.float16)
    assert not uses_primitive(half, None, None)  # the composite form
    assert not uses_primitive(x, nv.astype(w, nv.float16), None)
    assert not uses_primitive(x, w64, None)


def test_the_avx512_build_has_the_baseline_bits():
    # nv_norm.c is built twice (baseline x86-64 and AVX-512); _rows picks one at import
    from nuvec.backends.cpu import _rows

    if not _rows.use_avx512(True):
        pytest.skip("this processor (or compiler) has no AVX-512 build of nv_norm.c")
    results = {}
    data = {d: [nv.astype(a, d) for a in arrays((33, 5), 100)] for d in (np.float32, np.float64)}
    try:
        for on in (False, True):
            _rows.use_avx512(on)
            for x, w, b in data.values():
                y = nv.fast.layer_norm(x, w, b, 1e-5)
                g = nv.grad(
                    lambda x, w, b: (nv.fast.layer_norm(x, w, b, 1e-5) ** 2).sum(),
                    argnums=(0, 1, 2),
                )(x, w, b)
                s = nv.vjp(lambda x: nv.softmax(x, axis=-1), [x], [x * 0.5])[1][0]
                results.setdefault(on, []).extend(bits(a) for a in (y, *g, s))
    finally:
        _rows.use_avx512(True)
    assert results[False] == results[True]
