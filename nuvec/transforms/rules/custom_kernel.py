"""Transform rules of the primitives of ``nuvec.primitives.custom_kernel``."""

from __future__ import annotations

from ...primitives.custom_kernel import _UserKernel


def _user_kernel_vjp(prim, primals, cotangents, argnums, outputs):
    raise ValueError(
        f"{prim.api} {prim.name_}: a user kernel has no gradient (wrap it "
        "in nv.custom_function to give it one)"
    )


def _user_kernel_jvp(prim, primals, tangents, argnums):
    raise ValueError(f"{prim.api} {prim.name_}: a user kernel has no derivative")


def _user_kernel_vmap(prim, inputs, axes):
    raise ValueError(
        f"{prim.api} {prim.name_}: a user kernel cannot be vmapped (its grid is fixed)"
    )


VJP = {
    _UserKernel: _user_kernel_vjp,
}
JVP = {
    _UserKernel: _user_kernel_jvp,
}
VMAP = {
    _UserKernel: _user_kernel_vmap,
}
