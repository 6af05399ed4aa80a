"""Attention's softmax on the CPU as one pass per row (``ScaledSoftmax``: the scores scaled
and masked inside it): results and every gradient agree with the composite form, compiled
equals eager bit for bit, and what it does not cover keeps the composite."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn
from nuvec.primitives.reduction import ScaledSoftmax, SoftmaxProduct
from nuvec.transforms.rules.reduction import softmax_product_composite

RNG = np.random.default_rng(9)
pytestmark = pytest.mark.usefixtures("cpu_device")  # the primitive is the CPU's
SCALE = 32**-0.5


def qkv(b=2, h=3, length=7, d=5, dtype=np.float32):
    return [
        nv.array(
            RNG.standard_normal((b, h, length, d)).astype(dtype),
            dtype=getattr(nv, np.dtype(dtype).name),
        )
        for _ in range(3)
    ]


def composite(q, k, v, mask):
    s = (q * SCALE) @ nv.swapaxes(k, -1, -2)
    if mask is not None:
        s = s + mask
    return nv.softmax(s, axis=-1) @ v


def sdpa(q, k, v, mask):
    return nv.fast.scaled_dot_product_attention(q, k, v, scale=SCALE, mask=mask)


def close(a, b, rel=1e-5):
    a, b = np.asarray(a), np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rel, atol=rel * np.abs(b).max())


MASKS = {
    "none": lambda n: None,
    "causal (additive)": lambda n: nn.MultiHeadAttention.create_additive_causal_mask(n),
    "per batch and head": lambda n: nv.array(RNG.standard_normal((2, 3, n, n)).astype(np.float32)),
    "per key": lambda n: nv.array(RNG.standard_normal((n,)).astype(np.float32)),
}


@pytest.mark.parametrize("kind", MASKS)
def test_values_and_gradients_agree_with_the_composite(kind):
    q, k, v = qkv()
    mask = MASKS[kind](7)
    out = sdpa(q, k, v, mask)
    assert any(isinstance(p, ScaledSoftmax) for p in _prims(out))
    close(out, composite(q, k, v, mask))
    ct = nv.array(RNG.standard_normal(out.shape).astype(np.float32))
    args = [q, k, v] + ([mask] if mask is not None else [])
    n = len(args)

    def loss(fn):
        return lambda *a: (fn(a[0], a[1], a[2], a[3] if n == 4 else None) * ct).sum()

    got = nv.grad(loss(sdpa), argnums=tuple(range(n)))(*args)
    want = nv.grad(loss(composite), argnums=tuple(range(n)))(*args)
    for g1, g0 in zip(got, want):
        close(g1, g0, 1e-4)
    t = [nv.array(RNG.standard_normal(a.shape).astype(np.float32)) for a in args]
    j1 = nv.jvp(lambda *a: sdpa(a[0], a[1], a[2], a[3] if n == 4 else None), args, t)[1][0]
    j0 = nv.jvp(lambda *a: composite(a[0], a[1], a[2], a[3] if n == 4 else None), args, t)[1][0]
    close(j1, j0, 1e-4)
    close(nv.vmap(lambda q: sdpa(q, k, v, mask))(q), nv.vmap(lambda q: composite(q, k, v, mask))(q))


def test_compiled_gradients_equal_eager_bit_for_bit():
    q, k, v = qkv(length=64, d=32)
    mask = MASKS["causal (additive)"](64)

    def grads(q, k, v):
        return nv.grad(lambda q, k, v: (sdpa(q, k, v, mask) ** 2).sum(), argnums=(0, 1, 2))(q, k, v)

    eager = [np.asarray(g).tobytes() for g in grads(q, k, v)]
    f = nv.compile(grads)
    f(q, k, v)
    assert [np.asarray(g).tobytes() for g in f(q, k, v)] == eager


def test_the_scaled_softmax_product_has_the_composite_bits():
    y = nv.softmax(nv.array(RNG.standard_normal((6, 70)).astype(np.float32)), axis=-1)
    g = nv.array(RNG.standard_normal((6, 70)).astype(np.float32))
    got = Array_make(SoftmaxProduct(SCALE), [y, g])
    assert (
        np.asarray(got).tobytes()
        == np.asarray(softmax_product_composite(y, g, (1,), SCALE)).tobytes()
    )


def test_what_it_does_not_cover_keeps_the_composite():
    q, k, v = qkv()
    bool_mask = nv.array(RNG.random((7, 7)) < 0.8)
    for mask in (bool_mask, "causal"):
        assert not any(isinstance(p, ScaledSoftmax) for p in _prims(sdpa(q, k, v, mask)))
    q64, k64, v64 = qkv(dtype=np.float64)
    assert not any(isinstance(p, ScaledSoftmax) for p in _prims(sdpa(q64, k64, v64, None)))
    close(sdpa(q, k, v, bool_mask), composite(q, k, v, nv.where(bool_mask, 0.0, -np.inf)))


def Array_make(prim, inputs):
    from nuvec.core.array import Array

    return Array.make(prim, inputs)


def _prims(out):
    seen, stack, found = set(), [out], []
    while stack:
        a = stack.pop()
        if id(a) in seen or a._prim is None:
            continue
        seen.add(id(a))
        found.append(a._prim)
        stack.extend(a._inputs)
    return found
