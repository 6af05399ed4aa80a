"""Helpers for the transform tests: finite differences and dense Jacobians."""

import numpy as np

import nuvec as nv


def exact(x, dtype=None):
    """``nv.array`` keeping a NumPy array's own dtype: float64 data stays float64 (alone,
    ``nv.array`` makes it float32, as MLX), as finite differences need."""
    if dtype is None and isinstance(x, (np.ndarray, np.generic)):
        dtype = x.dtype
    return nv.array(x, dtype)


def numeric_grad(f, args, eps=1e-6):
    """Central finite differences of scalar ``f(*nv arrays)`` w.r.t. each float64 argument."""
    base = [np.array(a, dtype=np.float64) for a in args]
    grads = []
    for k, a in enumerate(base):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [b.copy() for b in base]
            minus = [b.copy() for b in base]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            fp = f(*[exact(p) for p in plus]).item()
            fm = f(*[exact(m) for m in minus]).item()
            g[idx] = (fp - fm) / (2 * eps)
        grads.append(g)
    return grads


def jacobian_by_vjp(f, x):
    """Dense Jacobian (out.size x x.size) of ``f`` at ``x`` from one vjp per output element."""
    out = f(x)
    rows = []
    for i in range(out.size):
        ct = np.zeros(out.size)
        ct[i] = 1.0
        _, (g,) = nv.vjp(f, [x], [exact(ct.reshape(out.shape)).astype(out.dtype)])
        rows.append(np.array(g).ravel())
    return np.stack(rows)


def jacobian_by_jvp(f, x):
    """Dense Jacobian from one jvp per input element."""
    cols = []
    for j in range(x.size):
        t = np.zeros(x.size)
        t[j] = 1.0
        _, (d,) = nv.jvp(f, [x], [exact(t.reshape(x.shape)).astype(x.dtype)])
        cols.append(np.array(d).ravel())
    return np.stack(cols, axis=1)
