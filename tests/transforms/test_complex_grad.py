"""Gradients of complex functions follow MLX's convention: for a real loss L(z) the gradient
is dL/dRe(z) + i dL/dIm(z) (a holomorphic f's vjp is g * conj(f'(z))). Checked against
central differences along the real and imaginary directions, and against MLX's rules."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv

RNG = np.random.default_rng(3)
Z = (RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))).astype(np.complex64)
W = (RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))).astype(np.complex64)
M = (RNG.standard_normal((4, 2)) + 1j * RNG.standard_normal((4, 2))).astype(np.complex64)

FUNCTIONS = {
    "exp": lambda z: nv.exp(z),
    "log": lambda z: nv.log(z),
    "sin": lambda z: nv.sin(z),
    "tanh": lambda z: nv.tanh(z),
    "square": lambda z: nv.square(z),
    "sqrt": lambda z: nv.sqrt(z),
    "multiply": lambda z: z * nv.array(W),
    "divide": lambda z: nv.array(W) / z,
    "matmul": lambda z: z @ nv.array(M),
    "prod": lambda z: nv.prod(z, axis=1),
    "prod_all": lambda z: nv.prod(z * 0.5),
    "cumprod": lambda z: nv.cumprod(z, axis=1),
    "conjugate": lambda z: nv.conjugate(z) * z,
    "abs": lambda z: nv.abs(z).astype(nv.complex64),
    "real_imag": lambda z: (nv.real(z) * 2 + nv.imag(z) * 3).astype(nv.complex64),
}


def _loss(f, z):
    """A real loss that mixes both parts of ``f``'s output."""
    out = f(z)
    return nv.sum(nv.real(out) * 0.7 + nv.imag(out) * 0.3)


def _numeric(f, z, eps=1e-3):
    z = z.astype(np.complex128)
    g = np.zeros(z.shape, np.complex128)
    for idx in np.ndindex(z.shape):
        for step, part in ((eps, 1.0), (1j * eps, 1j)):
            plus, minus = z.copy(), z.copy()
            plus[idx] += step
            minus[idx] -= step
            lp = _loss(f, nv.array(plus.astype(np.complex64))).item()
            lm = _loss(f, nv.array(minus.astype(np.complex64))).item()
            g[idx] += part * (lp - lm) / (2 * eps)
    return g


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_complex_gradient_is_dre_plus_i_dim(name):
    f = FUNCTIONS[name]
    g = nv.grad(lambda z: _loss(f, z))(nv.array(Z))
    assert g.dtype == nv.complex64
    np.testing.assert_allclose(np.array(g), _numeric(f, Z), rtol=2e-2, atol=2e-2)


def test_complex_vjps_match_mlx_rules():
    z, ct = nv.array(Z), nv.array(W)
    _, (v,) = nv.vjp(nv.exp, [z], [ct])
    np.testing.assert_allclose(np.array(v), W * np.conj(np.exp(Z)), rtol=1e-5)
    _, (v,) = nv.vjp(lambda x: x.prod(axis=0), [z[:2]], [ct[0]])
    expected = nv.stack([nv.conj(z[1]) * ct[0], nv.conj(z[0]) * ct[0]])
    assert nv.array_equal(v, expected).item()  # the product of the others, exactly
    assert nv.grad(lambda x: (2.0 * nv.imag(x)).sum())(z).tolist()[0][0] == 2j
    assert nv.grad(lambda x: (2.0 * nv.real(x)).sum())(z).tolist()[0][0] == 2


def test_real_prod_gradient_with_zeros():
    x = nv.array([[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]])
    g = nv.grad(lambda a: nv.sum(nv.prod(a, axis=1)))(x)
    assert g.tolist() == [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [6.0, 3.0, 2.0]]
    g = nv.grad(lambda a: nv.prod(a[2:]))(x)  # over every axis
    assert g.tolist()[2] == [6.0, 3.0, 2.0]
    g = nv.grad(lambda a: nv.sum(nv.prod(a.reshape(3, 3, 1), axis=(0, 2))))(x)
    assert g.tolist() == [[0.0, 0.0, 12.0], [2.0, 0.0, 9.0], [0.0, 0.0, 12.0]]
