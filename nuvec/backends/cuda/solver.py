"""MLX's factorisations on the GPU: cuSOLVER through CuPy (qr, svd, inv, cholesky, eigh
batched over leading axes; the LU factorisation and the triangular inverse one matrix at a
time through cupyx.scipy.linalg). eig has no general cuSOLVER routine in every CuPy: where
CuPy lacks ``linalg.eig`` the matrices go to the host's LAPACK and back. As on the CPU, a
singular input of inv/tri_inv raises RuntimeError (which waits for the factorisation's
status), and cholesky does not check definiteness."""

from __future__ import annotations

import cupy as cp
import numpy as np

from ...primitives.linalg import LUF, QRF, SVD, Cholesky, Eig, Eigh, Inverse
from ..cpu.lapack import row_permutation
from .runtime import finish, gpu


def _matrices(a):
    return a.reshape((-1,) + a.shape[-2:])


@gpu(QRF)
def _qr(prim, ins, node):
    q, r = cp.linalg.qr(ins[0], mode="reduced")
    return [finish(q, node._dtype), finish(r, node._dtype)]


@gpu(SVD)
def _svd(prim, ins, node):
    sib = node.siblings
    if prim.compute_uv:
        u, s, vt = cp.linalg.svd(ins[0], full_matrices=True, compute_uv=True)
        return [finish(u, sib[0]._dtype), finish(s, sib[1]._dtype), finish(vt, sib[2]._dtype)]
    return [finish(cp.linalg.svd(ins[0], compute_uv=False), node._dtype)]


def _tri_inv(a, upper: bool):
    from cupyx.scipy.linalg import solve_triangular

    tri = cp.triu(a) if upper else cp.tril(a)
    if a.shape[-1] and bool((cp.diagonal(tri, axis1=-2, axis2=-1) == 0).any()):
        raise RuntimeError("tri_inv: the matrix is singular")  # LAPACK trtri's info > 0
    out = cp.empty_like(tri)
    flat, dst = _matrices(tri), _matrices(out)
    n = a.shape[-1]
    if n:
        eye = cp.eye(n, dtype=a.dtype)
        for i in range(flat.shape[0]):
            dst[i] = solve_triangular(flat[i], eye, lower=not upper)
    return out


@gpu(Inverse)
def _inverse(prim, ins, node):
    a = ins[0]
    if prim.tri:
        return [finish(_tri_inv(a, prim.upper), node._dtype)]
    import cupyx

    try:
        with cupyx.errstate(linalg="raise"):  # getrf's info checked, as LAPACK's on the CPU
            r = cp.linalg.inv(a)
    except np.linalg.LinAlgError:
        raise RuntimeError("inv: the matrix is singular") from None
    return [finish(r, node._dtype)]


@gpu(Cholesky)
def _cholesky(prim, ins, node):
    a = ins[0]
    if prim.upper:  # a = u.T @ u from a's upper triangle: the lower factor of a.T, transposed
        r = cp.triu(cp.swapaxes(cp.linalg.cholesky(cp.swapaxes(a, -1, -2)), -1, -2))
    else:
        r = cp.tril(cp.linalg.cholesky(a))
    return [finish(r, node._dtype)]


@gpu(Eig)
def _eig(prim, ins, node):
    c64 = np.complex64
    a = ins[0]
    if hasattr(cp.linalg, "eig"):
        if prim.vectors:
            w, v = cp.linalg.eig(a)
            return [w.astype(c64), v.astype(c64)]
        return [cp.linalg.eigvals(a).astype(c64)]
    h = cp.asnumpy(a)
    if prim.vectors:
        w, v = np.linalg.eig(h)
        return [cp.asarray(w.astype(c64)), cp.asarray(v.astype(c64))]
    return [cp.asarray(np.linalg.eigvals(h).astype(c64))]


@gpu(Eigh)
def _eigh(prim, ins, node):
    if prim.vectors:
        w, v = cp.linalg.eigh(ins[0], UPLO=prim.uplo)
        return [finish(w, node.siblings[0]._dtype), finish(v, node.siblings[1]._dtype)]
    return [finish(cp.linalg.eigvalsh(ins[0], UPLO=prim.uplo), node._dtype)]


@gpu(LUF)
def _lu(prim, ins, node):
    from cupyx.scipy.linalg import lu_factor

    a = ins[0]
    m, n = a.shape[-2:]
    k = min(m, n)
    lu = a.copy()
    piv = cp.zeros(a.shape[:-2] + (k,), dtype=cp.int32)
    if lu.size:
        flat, pflat = _matrices(lu), piv.reshape(-1, k)
        for i in range(flat.shape[0]):
            f, p = lu_factor(flat[i], check_finite=False)
            flat[i], pflat[i] = f, p
    perm = row_permutation(cp.asnumpy(piv), m)  # small: the pivots' swaps on the host
    return [lu, piv.astype(cp.uint32), cp.asarray(perm)]
