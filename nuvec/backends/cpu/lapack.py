"""MLX's factorisations on the CPU: LAPACK through NumPy (qr, svd, inv, cholesky, eig, eigh,
all batched over leading axes) and SciPy (the LU factorisation and the triangular inverse,
``getrf``, ``trtri`` and ``potrf``, one matrix at a time). Results keep the input's precision;
eig's are complex64 as MLX's. A singular matrix given to inv or tri_inv raises RuntimeError
naming the function (MLX's LAPACK failure); cholesky, as MLX's, does not check definiteness."""

from __future__ import annotations

import numpy as np

from ...primitives.linalg import LUF, QRF, SVD, Cholesky, Eig, Eigh, Inverse
from ..registry import register

_U32 = np.dtype(np.uint32)


def _fail(name: str, why: str):
    return ValueError(f"{name}: {why}")


@register(QRF)
def _qr(prim, ins, node):
    q, r = np.linalg.qr(ins[0], mode="reduced")
    return [q, r]


@register(SVD)
def _svd(prim, ins, node):
    a = ins[0]
    if prim.compute_uv:
        u, s, vt = np.linalg.svd(a, full_matrices=True, compute_uv=True)
        return [u, s.astype(node.siblings[1]._dtype.np, copy=False), vt]
    return [np.linalg.svd(a, compute_uv=False).astype(node._dtype.np, copy=False)]


def _matrices(a: np.ndarray) -> np.ndarray:
    return a.reshape((-1,) + a.shape[-2:])


def _tri_inv(a: np.ndarray, upper: bool) -> np.ndarray:
    from scipy.linalg import lapack

    tri = np.triu(a) if upper else np.tril(a)
    out = np.empty_like(tri)
    flat, dst = _matrices(tri), _matrices(out)
    if flat.shape[-1]:
        (trtri,) = lapack.get_lapack_funcs(("trtri",), (flat,))
        for i, m in enumerate(flat):
            inv, info = trtri(m, lower=0 if upper else 1)
            if info > 0:
                raise RuntimeError("tri_inv: the matrix is singular")
            dst[i] = inv
    # trtri leaves the other triangle as it found it: zero it (MLX's result is triangular)
    return np.triu(out) if upper else np.tril(out)


@register(Inverse)
def _inverse(prim, ins, node):
    a = ins[0]
    if prim.tri:
        return [_tri_inv(a, prim.upper)]
    try:
        return [np.linalg.inv(a)]
    except np.linalg.LinAlgError:
        raise RuntimeError("inv: the matrix is singular") from None


@register(Cholesky)
def _cholesky(prim, ins, node):
    # LAPACK's potrf one matrix at a time. As MLX's, a matrix that is not positive definite
    # is not an error: potrf stops at the first non-positive pivot and leaves the rest of
    # the factor as it stands (for a singular semi-definite matrix that pivot is a rounding
    # residue and the factor still reproduces the matrix)
    from scipy.linalg import lapack

    a = ins[0]
    out = np.zeros_like(a)
    flat, dst = _matrices(a), _matrices(out)
    if flat.shape[-1]:
        (potrf,) = lapack.get_lapack_funcs(("potrf",), (flat,))
        for i, m in enumerate(flat):
            c, info = potrf(m, lower=0 if prim.upper else 1, clean=1)
            if info < 0:  # pragma: no cover - an argument LAPACK refused
                raise _fail("cholesky", f"LAPACK's potrf failed with code {info}")
            dst[i] = c
    return [out]


@register(Eig)
def _eig(prim, ins, node):
    c64 = np.dtype(np.complex64)
    try:
        if prim.vectors:
            w, v = np.linalg.eig(ins[0])
            return [w.astype(c64), v.astype(c64)]
        return [np.linalg.eigvals(ins[0]).astype(c64)]
    except np.linalg.LinAlgError:
        raise _fail("eig", "the eigenvalue iteration did not converge") from None


@register(Eigh)
def _eigh(prim, ins, node):
    try:
        if prim.vectors:
            w, v = np.linalg.eigh(ins[0], UPLO=prim.uplo)
            return [w.astype(node._dtype.np, copy=False), v]
        return [np.linalg.eigvalsh(ins[0], UPLO=prim.uplo).astype(node._dtype.np, copy=False)]
    except np.linalg.LinAlgError:
        raise _fail("eigh", "the eigenvalue iteration did not converge") from None


def row_permutation(pivots: np.ndarray, m: int) -> np.ndarray:
    """``perm`` with ``a = l[perm] @ u`` from LAPACK's pivots (row i swapped with pivots[i],
    in order), over leading axes."""
    lead = pivots.shape[:-1]
    count = int(np.prod(lead, dtype=np.int64))
    flat = np.broadcast_to(np.arange(m, dtype=np.int64), (count, m)).copy()
    piv = pivots.reshape(count, pivots.shape[-1]).astype(np.int64)
    idx = np.arange(count)
    for i in range(piv.shape[1]):
        j = piv[:, i]
        a, b = flat[idx, i].copy(), flat[idx, j].copy()
        flat[idx, i], flat[idx, j] = b, a
    # flat[k] is the row of a that ends in row k of l @ u; its inverse maps rows of a to l
    return np.argsort(flat, axis=-1).reshape(lead + (m,)).astype(_U32)


@register(LUF)
def _lu(prim, ins, node):
    from scipy.linalg import lapack

    a = ins[0]
    m, n = a.shape[-2:]
    k = min(m, n)
    lu = np.array(a, copy=True)
    piv = np.zeros(a.shape[:-2] + (k,), dtype=np.int64)
    if lu.size:
        flat, pflat = _matrices(lu), piv.reshape(-1, k)
        (getrf,) = lapack.get_lapack_funcs(("getrf",), (flat,))
        for i, mat in enumerate(flat):
            f, p, info = getrf(mat)
            if info < 0:  # pragma: no cover - an argument LAPACK refused
                raise _fail("lu", f"LAPACK's getrf failed with code {info}")
            flat[i], pflat[i] = f, p  # info > 0 (a zero pivot) still factors, as MLX's
    return [lu, piv.astype(_U32), row_permutation(piv, m)]
