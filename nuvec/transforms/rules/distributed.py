"""Transform rules of the primitives of ``nuvec.primitives.distributed``."""

from __future__ import annotations

from ... import ops
from ...core.array import Array
from ...primitives.distributed import AllGather, AllReduce, Recv, Send, SumScatter


def _all_reduce_vjp(prim, primals, cotangents, argnums, outputs):
    (g,) = cotangents
    if prim.op == "sum":
        return [g]
    mask = ops.equal(primals[0], outputs[0])
    return [ops.where(mask, g, ops.zeros_like(g))]


def _all_reduce_jvp(prim, primals, tangents, argnums):
    (t,) = tangents
    s = primals[0]._stream
    if prim.op == "sum":
        return [Array.make(AllReduce("sum", prim.group), [t], s)]
    x = primals[0]
    y = Array.make(AllReduce(prim.op, prim.group), [x], s)
    mask = ops.equal(x, y)
    total = Array.make(AllReduce("sum", prim.group), [ops.where(mask, t, ops.zeros_like(t))], s)
    holders = Array.make(AllReduce("sum", prim.group), [ops.astype(mask, t._dtype)], s)
    return [total / holders]


def _all_reduce_vmap(prim, inputs, axes):
    # element-wise across processes: the batch axis stays where it is
    return [Array.make(AllReduce(prim.op, prim.group), inputs, inputs[0]._stream)], list(axes)


def _all_gather_vjp(prim, primals, cotangents, argnums, outputs):
    (g,) = cotangents
    x = primals[0]
    r = prim.group.rank()
    if not x._shape:
        return [ops.reshape(g[r : r + 1], ())]
    d = x._shape[0]
    return [g[r * d : (r + 1) * d]]


def _all_gather_jvp(prim, primals, tangents, argnums):
    return [Array.make(AllGather(prim.group), [tangents[0]], primals[0]._stream)]


def _all_gather_vmap(prim, inputs, axes):
    (x,), (ax,) = inputs, axes
    if ax is None:
        return [Array.make(prim, [x], x._stream)], [None]
    # gather concatenates each example's axis 0: put the batch axis behind it
    if x.ndim == 1:
        x = ops.expand_dims(x, 0)  # 0-d examples: one row each
    else:
        x = ops.moveaxis(x, ax, 1)
    return [Array.make(AllGather(prim.group), [x], x._stream)], [1]


def _sum_scatter_vjp(prim, primals, cotangents, argnums, outputs):
    (g,) = cotangents
    n, r = prim.group.size(), prim.group.rank()
    pad = [(r * g.shape[0], (n - 1 - r) * g.shape[0])] + [(0, 0)] * (g.ndim - 1)
    return [ops.pad(g, pad)]


def _sum_scatter_jvp(prim, primals, tangents, argnums):
    return [Array.make(SumScatter(prim.group), [tangents[0]], primals[0]._stream)]


def _sum_scatter_vmap(prim, inputs, axes):
    (x,), (ax,) = inputs, axes
    if ax is None:
        return [Array.make(prim, [x], x._stream)], [None]
    if x.ndim == 1:
        raise ValueError("sum_scatter: cannot scatter 0-d examples (they have no axis 0)")
    x = ops.moveaxis(x, ax, 1)  # each example's axis 0 first, the batch axis behind it
    return [Array.make(SumScatter(prim.group), [x], x._stream)], [1]


def _send_vjp(prim, primals, cotangents, argnums, outputs):
    raise NotImplementedError("send: has no gradient (as in MLX)")


def _send_jvp(prim, primals, tangents, argnums):
    raise NotImplementedError("send: has no forward-mode derivative (as in MLX)")


def _send_vmap(prim, inputs, axes):
    return [Array.make(Send(prim.dst, prim.group), inputs, inputs[0]._stream)], list(axes)


def _recv_vjp(prim, primals, cotangents, argnums, outputs):
    return []  # no inputs to send a cotangent to


def _recv_jvp(prim, primals, tangents, argnums):
    return [ops.zeros(prim.shape, prim.dtype)]  # a received value does not depend on inputs


def _recv_vmap(prim, inputs, axes):
    raise NotImplementedError(
        "recv: cannot be vmapped (it has no input to map over; receive the batched array instead)"
    )


VJP = {
    AllReduce: _all_reduce_vjp,
    AllGather: _all_gather_vjp,
    SumScatter: _sum_scatter_vjp,
    Send: _send_vjp,
    Recv: _recv_vjp,
}
JVP = {
    AllReduce: _all_reduce_jvp,
    AllGather: _all_gather_jvp,
    SumScatter: _sum_scatter_jvp,
    Send: _send_jvp,
    Recv: _recv_jvp,
}
VMAP = {
    AllReduce: _all_reduce_vmap,
    AllGather: _all_gather_vmap,
    SumScatter: _sum_scatter_vmap,
    Send: _send_vmap,
    Recv: _recv_vmap,
}
