"""The checks that run inside every process of an MPI launch (tests/distributed/test_dist_mpi.py).

    python -m nuvec.launch -n 4 tests/distributed/dist_worker.py OUT_DIR

Each process runs every check in order and writes ``OUT_DIR/rank<r>.json``: check name ->
"ok" or the failure's traceback. Each process's data is made from its rank, so every process
can compute what every other one holds and check a collective's result against NumPy. After
each check the processes compare (over mpi4py, outside nuvec) what they got where all must
agree bit for bit.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

import ml_dtypes
import numpy as np

import nuvec as nv

D = nv.distributed
BF16 = np.dtype(ml_dtypes.bfloat16)
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


class Ctx:
    def __init__(self, group) -> None:
        from mpi4py import MPI

        self.g = group
        self.rank = group.rank()
        self.size = group.size()
        self.comm = MPI.COMM_WORLD

    def same_everywhere(self, a: np.ndarray, what: str) -> None:
        """``a`` is bit-identical on every process."""
        mine = np.ascontiguousarray(a).tobytes()
        for r, other in enumerate(self.comm.allgather(mine)):
            assert other == mine, f"{what}: rank {r} got different bytes than rank {self.rank}"

    def calls(self, op: str, group=None) -> int:
        return (group or self.g)._comm.calls[op]


def data(r: int, shape, dtype, salt: int = 0) -> np.ndarray:
    """Rank ``r``'s array (any process can make any rank's)."""
    rng = np.random.default_rng(1000 * salt + r)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = (0, 50) if dtype.kind == "u" else (-50, 50)
        return rng.integers(max(lo, info.min), min(hi, info.max), size=shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def all_data(ctx: Ctx, shape, dtype, salt: int = 0) -> list[np.ndarray]:
    return [data(r, shape, dtype, salt) for r in range(ctx.size)]


TOL = {"float16": 5e-3, "bfloat16": 3e-2, "float32": 1e-6, "float64": 1e-13, "complex64": 1e-6}


def close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, want {want.dtype}"
    if got.dtype.kind in "fc" or got.dtype == BF16:
        rtol = TOL[got.dtype.name]
        np.testing.assert_allclose(
            got.astype(np.complex128 if got.dtype.kind == "c" else np.float64),
            want.astype(np.complex128 if want.dtype.kind == "c" else np.float64),
            rtol=rtol,
            atol=rtol * 4,
            err_msg=what,
        )
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


DTYPES = [
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "int32",
    "int64",
    "uint8",
    "int8",
    "bool",
    "complex64",
]


def np_dtype(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


# -- results of every collective --------------------------------------------------------------
def _exact(x, name: str):
    """NumPy data as an nuvec array of dtype ``name`` (nv.array narrows float64 as MLX)."""
    return nv.array(x, dtype=nv.bool_ if name == "bool" else getattr(nv, name))


@check
def all_sum_dtypes(ctx):
    for name in DTYPES:
        d = np_dtype(name)
        xs = all_data(ctx, (3, 5), d)
        got = np.asarray(D.all_sum(_exact(xs[ctx.rank], name)))
        if d == np.bool_:
            want = np.logical_or.reduce(xs)
        elif d == BF16 or d == np.float16:
            want = np.sum([x.astype(np.float64) for x in xs], axis=0).astype(d)
        else:
            want = np.sum(xs, axis=0, dtype=d)
        close(got, want, f"all_sum {name}")
        ctx.same_everywhere(got, f"all_sum {name}")


@check
def sum_scatter_dtypes(ctx):
    """Each process gets its block of axis 0 of the sum, in the arrays' own dtype."""
    n, r = ctx.size, ctx.rank
    for name in DTYPES:
        d = np_dtype(name)
        xs = all_data(ctx, (2 * n, 3), d, salt=60)
        got = np.asarray(D.sum_scatter(_exact(xs[r], name)))
        if d == np.bool_:
            total = np.logical_or.reduce(xs)
        elif d == BF16 or d == np.float16:
            total = np.sum([x.astype(np.float64) for x in xs], axis=0).astype(d)
        else:
            total = np.sum(xs, axis=0, dtype=d)
        close(got, total[2 * r : 2 * r + 2], f"sum_scatter {name}")
    try:
        D.sum_scatter(nv.ones((n + 1, 2)))
    except ValueError as e:
        assert "sum_scatter" in str(e) and "divisible" in str(e), e
    else:
        raise AssertionError("sum_scatter of an indivisible axis 0 did not raise")


@check
def sum_scatter_derivatives_and_vmap(ctx):
    n, r = ctx.size, ctx.rank
    x = data(r, (2 * n,), np.float32, 61)
    w = data(r, (2,), np.float32, 62)
    g = nv.grad(lambda v: nv.sum(D.sum_scatter(v) * nv.array(w)))(nv.array(x))
    want = np.zeros(2 * n, np.float32)
    want[2 * r : 2 * r + 2] = w  # the cotangent at this process's block
    np.testing.assert_array_equal(np.asarray(g), want)
    t = data(r, (2 * n,), np.float32, 63)
    _, (tan,) = nv.jvp(D.sum_scatter, [nv.array(x)], [nv.array(t)])
    ts = np.sum(all_data(ctx, (2 * n,), np.float32, 63), axis=0, dtype=np.float32)
    close(np.asarray(tan), ts[2 * r : 2 * r + 2], "jvp sum_scatter")
    xb = data(r, (3, n), np.float32, 64)  # a batch of 3 examples of shape (n,)
    got = np.asarray(nv.vmap(D.sum_scatter)(nv.array(xb)))
    total = np.sum(all_data(ctx, (3, n), np.float32, 64), axis=0, dtype=np.float32)
    close(got, total[:, r : r + 1], "vmap sum_scatter")
    f = nv.compile(lambda v: D.sum_scatter(v * 2) + 1)
    for _ in range(2):
        close(
            np.asarray(f(nv.array(x))),
            2
            * np.sum(all_data(ctx, (2 * n,), np.float32, 61), axis=0, dtype=np.float32)[
                2 * r : 2 * r + 2
            ]
            + 1,
            "compiled sum_scatter",
        )


@check
def all_max_min_dtypes(ctx):
    for name in DTYPES:
        if name == "complex64":
            continue
        d = np_dtype(name)
        xs = all_data(ctx, (4,), d, salt=1)
        x = _exact(xs[ctx.rank], name)
        hi, lo = np.asarray(D.all_max(x)), np.asarray(D.all_min(x))
        stack = np.stack([v.astype(np.float64) if d == BF16 else v for v in xs])
        np.testing.assert_array_equal(
            hi.astype(np.float64) if d == BF16 else hi, stack.max(axis=0), err_msg=f"all_max {name}"
        )
        np.testing.assert_array_equal(
            lo.astype(np.float64) if d == BF16 else lo, stack.min(axis=0), err_msg=f"all_min {name}"
        )
        assert hi.dtype == d and lo.dtype == d, (name, hi.dtype, lo.dtype)
    try:
        D.all_max(nv.array([1 + 1j]))
    except ValueError as e:
        assert "all_max" in str(e) and "complex64" in str(e), e
    else:
        raise AssertionError("all_max of complex values did not raise")


@check
def reductions_of_views_and_scalars(ctx):
    # a transposed (strided) input, a broadcast (zero-stride) input, a 0-d input, an empty one
    xs = all_data(ctx, (3, 4), np.float32, salt=2)
    t = nv.array(xs[ctx.rank]).T
    close(np.asarray(D.all_sum(t)), np.sum(xs, axis=0, dtype=np.float32).T, "strided all_sum")
    b = nv.broadcast_to(nv.array(float(ctx.rank + 1)), (2, 3))
    close(
        np.asarray(D.all_sum(b)),
        np.full((2, 3), ctx.size * (ctx.size + 1) / 2, np.float32),
        "broadcast all_sum",
    )
    s = D.all_max(nv.array(ctx.rank * 2, dtype=nv.int32))
    assert s.shape == () and s.item() == 2 * (ctx.size - 1), s
    e = D.all_sum(nv.zeros((0, 3)))
    assert e.shape == (0, 3), e.shape
    nv.eval(e)
    big = all_data(ctx, (700, 1000), np.float32, salt=60)  # 2.8 MB: an output placed off
    x = nv.array(big[ctx.rank])  # the input's page offset
    y = D.all_sum(x)
    close(np.asarray(y), np.sum(big, axis=0, dtype=np.float32), "2.8 MB all_sum")
    assert (np.asarray(y).ctypes.data - np.asarray(x).ctypes.data) % 4096 != 0


@check
def all_gather_results(ctx):
    for name in ("float32", "bfloat16", "int64", "bool"):
        d = np_dtype(name)
        xs = all_data(ctx, (2, 3), d, salt=3)
        got = np.asarray(D.all_gather(nv.array(xs[ctx.rank])))
        np.testing.assert_array_equal(got, np.concatenate(xs), err_msg=f"all_gather {name}")
        assert got.dtype == d
    z = D.all_gather(nv.array(float(ctx.rank)))
    assert z.shape == (ctx.size,) and z.tolist() == [float(r) for r in range(ctx.size)], z
    xs = all_data(ctx, (3, 2), np.float32, salt=4)
    got = np.asarray(D.all_gather(nv.array(xs[ctx.rank]).T))
    np.testing.assert_array_equal(got, np.concatenate([x.T for x in xs]))


@check
def send_recv_pairs(ctx):
    """Rank pairs (0,1), (2,3): the even one sends a 4 MiB array and a small one, the odd one
    receives them with recv and recv_like; then the other way round."""
    if ctx.size % 2:
        return
    big = (1024, 1024)
    peer = ctx.rank ^ 1
    even = ctx.rank % 2 == 0
    for direction in (0, 1):
        sender = even if direction == 0 else not even
        src = ctx.rank if sender else peer
        a, b = data(src, big, np.float32, salt=5 + direction), data(src, (3,), np.int16, salt=6)
        if sender:
            s1 = D.send(nv.array(a), peer)
            s2 = D.send(nv.array(b), peer)
            nv.eval(s1, s2)
            np.testing.assert_array_equal(np.asarray(s1), a)  # send's output is its input
        else:
            r1 = D.recv(big, nv.float32, peer)
            r2 = D.recv_like(nv.zeros((3,), dtype=nv.int16), peer)
            nv.eval(r1, r2)
            np.testing.assert_array_equal(np.asarray(r1), a)
            np.testing.assert_array_equal(np.asarray(r2), b)
            assert r2.dtype == nv.int16


@check
def send_recv_ring(ctx):
    """Every rank sends to the next and receives from the previous one (even ranks send
    first, so blocking sends cannot all wait at once); bfloat16 and a 0-d array."""
    if ctx.size % 2:
        return
    nxt, prv = (ctx.rank + 1) % ctx.size, (ctx.rank - 1) % ctx.size
    mine = data(ctx.rank, (5,), BF16, salt=7)
    s = D.send(nv.array(mine), nxt)
    r = D.recv((5,), nv.bfloat16, prv)
    s0 = D.send(nv.array(ctx.rank, dtype=nv.float64), nxt)
    r0 = D.recv((), nv.float64, prv)
    order = [s, r, s0, r0] if ctx.rank % 2 == 0 else [r, s, r0, s0]
    for a in order:
        nv.eval(a)
    np.testing.assert_array_equal(np.asarray(r), data(prv, (5,), BF16, salt=7))
    assert r0.shape == () and r0.item() == float(prv)


@check
def messages_cut_into_pieces(ctx):
    """With a 4 KiB limit per MPI call, reductions, scatters, sends and receives of 40 KB
    still arrive whole; a gather above the limit says so."""
    from nuvec.distributed.backends import mpi

    saved = mpi.CHUNK
    mpi.CHUNK = 4096
    try:
        xs = all_data(ctx, (10_001,), np.float32, salt=50)
        close(
            np.asarray(D.all_sum(nv.array(xs[ctx.rank]))),
            np.sum(xs, axis=0, dtype=np.float32),
            "chunked all_sum",
        )
        ss = all_data(ctx, (ctx.size * 2_500,), np.float32, salt=52)  # 10 KB blocks
        close(
            np.asarray(D.sum_scatter(nv.array(ss[ctx.rank]))),
            np.sum(ss, axis=0, dtype=np.float32)[ctx.rank * 2_500 : (ctx.rank + 1) * 2_500],
            "chunked sum_scatter",
        )
        hs = all_data(ctx, (5_000,), np.float16, salt=51)
        np.testing.assert_array_equal(
            np.asarray(D.all_max(nv.array(hs[ctx.rank]))), np.max(hs, axis=0)
        )
        if ctx.size % 2 == 0:
            peer = ctx.rank ^ 1
            if ctx.rank % 2 == 0:
                nv.eval(D.send(nv.array(xs[ctx.rank]), peer))
            else:
                got = D.recv((10_001,), nv.float32, peer)
                np.testing.assert_array_equal(np.asarray(got), xs[peer])
        try:
            nv.eval(D.all_gather(nv.array(xs[ctx.rank])))
        except ValueError as e:
            assert "all_gather" in str(e) and "4096" in str(e), e
        else:
            raise AssertionError("a gather above the limit did not raise")
    finally:
        mpi.CHUNK = saved


@check
def split_groups(ctx):
    color = ctx.rank % 2
    sub = ctx.g.split(color, key=ctx.size - ctx.rank)  # reversed order inside each half
    members = [r for r in range(ctx.size) if r % 2 == color]
    assert sub.size() == len(members), (sub.size(), members)
    assert sub.rank() == sorted(members, reverse=True).index(ctx.rank), sub.rank()
    got = D.all_sum(nv.array([float(ctx.rank)]), group=sub).tolist()
    if sub.size() > 1:
        assert got == [float(sum(members))], got
    gathered = D.all_gather(nv.array([ctx.rank]), group=sub).tolist()
    assert gathered == (sorted(members, reverse=True) if sub.size() > 1 else [ctx.rank]), gathered
    same = ctx.g.split(0)  # everyone, ranked as before
    assert (same.rank(), same.size()) == (ctx.rank, ctx.size)
    assert D.all_sum(nv.array(1), group=same).item() == ctx.size


@check
def average_gradients_trees(ctx):
    shapes = {"w": (4, 3), "b": (3,), "layers": [(2, 2), (5,)]}

    def tree(r):
        return {
            "w": data(r, (4, 3), np.float32, 8),
            "b": data(r, (3,), np.float32, 9),
            "layers": [data(r, (2, 2), np.float32, 10), data(r, (5,), np.float32, 11)],
        }

    trees = [tree(r) for r in range(ctx.size)]
    want = {
        "w": np.mean([t["w"] for t in trees], axis=0),
        "b": np.mean([t["b"] for t in trees], axis=0),
        "layers": [np.mean([t["layers"][i] for t in trees], axis=0) for i in range(2)],
    }
    mine = nv.utils.tree_map(nv.array, trees[ctx.rank])
    for size, ctype in ((32 * 1024**2, None), (16, None), (0, None), (1 << 20, nv.float16)):
        before = ctx.calls("all_sum")
        got = D.average_gradients(mine, all_reduce_size=size, communication_type=ctype)
        nv.eval(got)
        n_calls = ctx.calls("all_sum") - before
        expected_calls = {32 * 1024**2: 1, 16: 3, 0: 4, 1 << 20: 1}[size]
        assert n_calls == expected_calls, (size, n_calls)
        rtol = 2e-3 if ctype is not None else 1e-6
        for k in ("w", "b"):
            np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=rtol, atol=rtol)
            assert got[k].dtype == nv.float32 and got[k].shape == shapes[k]
        for i in range(2):
            np.testing.assert_allclose(
                np.asarray(got["layers"][i]), want["layers"][i], rtol=rtol, atol=rtol
            )


# -- gradients and vmap -------------------------------------------------------------------------
@check
def gradients_follow_mlx(ctx):
    r, n = ctx.rank, ctx.size
    x = data(r, (3,), np.float32, 12)
    w = data(r, (3,), np.float32, 13)
    # all_sum: the cotangent passes through unchanged
    g = nv.grad(lambda v: nv.sum(D.all_sum(v) * nv.array(w)))(nv.array(x))
    np.testing.assert_array_equal(np.asarray(g), w)
    # all_gather: this process's block of the cotangent
    c = np.arange(3 * n, dtype=np.float32)
    g = nv.grad(lambda v: nv.sum(D.all_gather(v) * nv.array(c)))(nv.array(x))
    np.testing.assert_array_equal(np.asarray(g), c[3 * r : 3 * r + 3])
    g0 = nv.grad(lambda v: nv.sum(D.all_gather(v) * nv.array(c[:n])))(nv.array(float(r)))
    assert g0.shape == () and g0.item() == c[r]
    # all_max / all_min: the cotangent where this process holds the extreme
    xs = all_data(ctx, (3,), np.float32, 12)
    for fn, ext in ((D.all_max, np.max), (D.all_min, np.min)):
        g = nv.grad(lambda v, fn=fn: nv.sum(fn(v) * nv.array(w)))(nv.array(x))
        np.testing.assert_array_equal(np.asarray(g), np.where(x == ext(xs, axis=0), w, 0))
    # jvp of all_sum: the sum of every process's tangent
    t = data(r, (3,), np.float32, 14)
    _, (tan,) = nv.jvp(lambda v: D.all_sum(v * 2), [nv.array(x)], [nv.array(t)])
    close(
        np.asarray(tan),
        2 * np.sum(all_data(ctx, (3,), np.float32, 14), axis=0, dtype=np.float32),
        "jvp all_sum",
    )
    _, (tan,) = nv.jvp(D.all_gather, [nv.array(x)], [nv.array(t)])
    np.testing.assert_array_equal(
        np.asarray(tan), np.concatenate(all_data(ctx, (3,), np.float32, 14))
    )
    # jvp of all_max: the tangent of the process holding the maximum
    _, (tan,) = nv.jvp(D.all_max, [nv.array(x)], [nv.array(t)])
    ts = all_data(ctx, (3,), np.float32, 14)
    want = np.array([ts[int(np.argmax([v[i] for v in xs]))][i] for i in range(3)], np.float32)
    np.testing.assert_allclose(np.asarray(tan), want, rtol=1e-6)


@check
def vmap_matches_loop(ctx):
    r = ctx.rank
    xb = data(r, (4, 3), np.float32, 15)  # batch of 4 along axis 0
    allb = all_data(ctx, (4, 3), np.float32, 15)
    got = np.asarray(nv.vmap(D.all_sum)(nv.array(xb)))
    close(got, np.sum(allb, axis=0, dtype=np.float32), "vmap all_sum")
    got = np.asarray(nv.vmap(D.all_gather, in_axes=1)(nv.array(xb)))  # examples of shape (4,)
    loop = np.stack([np.concatenate([b[:, j] for b in allb]) for j in range(3)])
    np.testing.assert_array_equal(got, loop)
    got = np.asarray(nv.vmap(D.all_gather)(nv.array(xb[:, 0])))  # 0-d examples
    np.testing.assert_array_equal(got, np.stack([b[:, 0] for b in allb], axis=1))


# -- compile ----------------------------------------------------------------------------------
@check
def compiled_equal_all_sums_both_communicate(ctx):
    f = nv.compile(lambda x: D.all_sum(x) * 2 + D.all_sum(x))
    xs = all_data(ctx, (6,), np.float32, 16)
    want = np.sum(xs, axis=0, dtype=np.float32)
    before = ctx.calls("all_sum")
    for _ in range(3):
        close(np.asarray(f(nv.array(xs[ctx.rank]))), want * 3, "compiled all_sum")
    assert ctx.calls("all_sum") - before == 6, ctx.calls("all_sum") - before
    assert f.stats()["traces"] == 1
    steps = [s.split(" = ")[1] for s in f.inspect(nv.array(xs[ctx.rank])).steps]
    assert sum(s.startswith("all_sum") for s in steps) == 2, steps
    # not fused: the element-wise work after the reductions forms kernels without them
    for grp in f.inspect(nv.array(xs[ctx.rank])).groups:
        assert not any(op.startswith("all_") for op in grp.ops), grp.ops


@check
def compiled_collective_of_constant_not_folded(ctx):
    c = nv.array([float(ctx.rank + 1)] * 3)
    state = {"k": 0}

    def f(x):
        state["k"] += 1
        return x + D.all_sum(c) + D.all_max(nv.array(float(ctx.rank)))

    cf = nv.compile(f)
    before = (ctx.calls("all_sum"), ctx.calls("all_max"))
    tot = ctx.size * (ctx.size + 1) / 2 + ctx.size - 1
    for i in range(3):
        assert np.asarray(cf(nv.full((3,), float(i)))).tolist() == [tot + i] * 3
    assert state["k"] == 1
    assert (ctx.calls("all_sum") - before[0], ctx.calls("all_max") - before[1]) == (3, 3)
    # fused elsewhere, never the collective: the output is element-wise over the reductions
    steps = [s.split(" = ")[1] for s in cf.inspect(nv.full((3,), 0.0)).steps]
    assert any(s.startswith("all_sum") for s in steps) and any(
        s.startswith("all_max") for s in steps
    ), steps


@check
def compiled_two_equal_recvs_receive_two_messages(ctx):
    if ctx.size % 2:
        return
    peer = ctx.rank ^ 1
    template = nv.zeros((4,))
    if ctx.rank % 2 == 0:
        send2 = nv.compile(lambda a, b: (D.send(a, peer), D.send(b, peer)))
        for i in range(2):
            nv.eval(send2(nv.full((4,), float(i)), nv.full((4,), float(i + 10))))
    else:
        recv2 = nv.compile(lambda t: (D.recv_like(t, peer), D.recv_like(t, peer)))
        for i in range(2):
            a, b = recv2(template)
            assert np.asarray(a).tolist() == [float(i)] * 4, a
            assert np.asarray(b).tolist() == [float(i + 10)] * 4, b
        assert ctx.calls("recv") >= 4


@check
def compiled_shapeless(ctx):
    f = nv.compile(lambda x: D.all_sum(x) + D.all_sum(x) * 0.5, shapeless=True)
    before = ctx.calls("all_sum")
    for n in (3, 7, 2):
        xs = all_data(ctx, (n,), np.float32, 17 + n)
        close(
            np.asarray(f(nv.array(xs[ctx.rank]))),
            np.sum(xs, axis=0, dtype=np.float32) * 1.5,
            f"shapeless all_sum n={n}",
        )
    assert f.stats()["traces"] == 1, f.stats()
    assert ctx.calls("all_sum") - before == 6
    gth = nv.compile(lambda x: D.all_gather(x * 2), shapeless=True)
    for n in (1, 3):
        xs = all_data(ctx, (n, 2), np.float32, 30 + n)
        np.testing.assert_array_equal(
            np.asarray(gth(nv.array(xs[ctx.rank]))), np.concatenate(xs) * 2
        )
    assert gth.stats()["traces"] == 1
    if ctx.size % 2 == 0:
        peer = ctx.rank ^ 1
        bad = nv.compile(lambda t: D.recv_like(t, peer) + t, shapeless=True)
        try:
            bad(nv.zeros((2,)))
        except ValueError as e:
            assert "recv" in str(e), e
        else:
            raise AssertionError("a shapeless recv did not raise")


@check
def compiled_training_step_state(ctx):
    """A compiled step with gradients averaged inside keeps the processes' parameters equal."""
    w = {"w": nv.zeros((3,))}
    xs = data(ctx.rank, (5, 3), np.float32, 40)
    ys = data(ctx.rank, (5,), np.float32, 41)

    def loss(p, x, y):
        return nv.mean((x @ p["w"] - y) ** 2)

    @nv.compile
    def step(p, x, y):
        val, g = nv.value_and_grad(loss)(p, x, y)
        g = D.average_gradients(g)
        return D.all_sum(val) / ctx.size, {"w": p["w"] - 0.1 * g["w"]}

    for _ in range(3):
        val, w = step(w, nv.array(xs), nv.array(ys))
        nv.eval(val, w)
    ctx.same_everywhere(np.asarray(w["w"]), "parameters after compiled steps")
    # the same three steps on the whole batch, in one process's NumPy
    X = np.concatenate(all_data(ctx, (5, 3), np.float32, 40)).astype(np.float64)
    Y = np.concatenate(all_data(ctx, (5,), np.float32, 41)).astype(np.float64)
    p = np.zeros(3)
    for _ in range(3):
        p = p - 0.1 * (2 / len(Y)) * X.T @ (X @ p - Y)
    np.testing.assert_allclose(np.asarray(w["w"]), p, rtol=1e-5, atol=1e-6)


def main(out_dir: str) -> int:
    g = D.init(strict=True)
    ctx = Ctx(g)
    results = {"size": ctx.size, "backend": g.backend}
    only = os.environ.get("DIST_CHECKS")
    for fn in CHECKS:
        if only and fn.__name__ not in only.split(","):
            continue
        try:
            fn(ctx)
            results[fn.__name__] = "ok"
        except Exception:
            results[fn.__name__] = traceback.format_exc()
        ctx.comm.Barrier()
    with open(os.path.join(out_dir, f"rank{ctx.rank}.json"), "w") as f:
        json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
