"""The checks of the sharded layers inside each process of an MPI launch
(tests/nn/test_distributed_layers.py):

    python -m nuvec.launch -n 2 tests/nn/dist_nn_worker.py OUT_DIR

Every process builds the same full layers (same seed) and checks its sharded layer against
the full one in NumPy; it writes ``OUT_DIR/rank<r>.json``: check name -> "ok" or the traceback.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

import numpy as np

import nuvec as nv
import nuvec.nn as nn
from nuvec.nn.layers.distributed import shard_linear

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def npa(x):
    return np.asarray(x, np.float64)


def close(a, b, what):
    np.testing.assert_allclose(npa(a), b, rtol=1e-5, atol=1e-5, err_msg=what)


@check
def all_to_sharded_linear(g):
    n, r = g.size(), g.rank()
    nv.random.seed(0)
    full = nn.Linear(3, 4 * n)
    x = nv.array(np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32))
    lin = nn.AllToShardedLinear.from_linear(full, group=g)
    rows = slice(4 * r, 4 * r + 4)
    close(lin.weight, npa(full.weight)[rows], "weight shard")
    close(lin(x), npa(full(x))[:, rows], "output shard")
    # the input's gradient sums the shards': that of the whole output
    gx = nv.grad(lambda v: lin(v).sum())(x)
    close(gx, npa(nv.grad(lambda v: full(v).sum())(x)), "input gradient")
    assert repr(lin).startswith(f"AllToShardedLinear(input_dims=3, output_dims={4 * n}")


@check
def sharded_to_all_linear(g):
    n, r = g.size(), g.rank()
    nv.random.seed(0)
    full = nn.Linear(2 * n, 5)
    x = np.random.default_rng(2).standard_normal((3, 2 * n)).astype(np.float32)
    lin = shard_linear(full, "sharded-to-all", group=g)
    cols = slice(2 * r, 2 * r + 2)
    close(lin.weight, npa(full.weight)[:, cols], "weight shard")
    close(lin.bias, npa(full.bias), "bias whole")
    close(lin(nv.array(x[:, cols])), npa(full(nv.array(x))), "whole output")


@check
def fused_segments(g):
    n, r = g.size(), g.rank()
    nv.random.seed(0)
    full = nn.Linear(2, 3 * 2 * n)  # a fused QKV of three blocks of 2n rows
    lin = shard_linear(full, "all-to-sharded", segments=3, group=g)
    w = npa(full.weight)
    want = np.concatenate([blk[2 * r : 2 * r + 2] for blk in np.split(w, 3)])
    close(lin.weight, want, "each segment sharded")


@check
def quantized_sharded_linears(g):
    n, r = g.size(), g.rank()
    nv.random.seed(0)
    q = nn.Linear(64 * n, 8 * n).to_quantized(group_size=32, bits=4)
    x = np.random.default_rng(3).standard_normal((2, 64 * n)).astype(np.float32)
    full = npa(q(nv.array(x)))
    a = shard_linear(q, "all-to-sharded", group=g)
    assert isinstance(a, nn.QuantizedAllToShardedLinear)
    close(a(nv.array(x)), full[:, 8 * r : 8 * r + 8], "quantized output shard")
    b = shard_linear(q, "sharded-to-all", group=g)
    assert isinstance(b, nn.QuantizedShardedToAllLinear)
    close(b(nv.array(x[:, 64 * r : 64 * r + 64])), full, "quantized whole output")
    assert not nv.utils.tree_flatten(b.trainable_parameters())


@check
def fully_sharded_module(g):
    n, r = g.size(), g.rank()
    nv.random.seed(0)
    model = nn.Sequential(nn.Linear(3, 2 * n), nn.ReLU(), nn.Linear(2 * n, 2 * n))
    ref = nn.Sequential(nn.Linear(3, 2 * n), nn.ReLU(), nn.Linear(2 * n, 2 * n))
    ref.update(model.parameters())
    full = {k: npa(v) for k, v in nv.utils.tree_flatten(model.parameters())}
    sharded = nn.fully_shard(model, group=g)
    assert isinstance(sharded, nn.FullyShardedModule)
    for k, v in nv.utils.tree_flatten(sharded.module.parameters()):
        rows = full[k].shape[0] // n
        close(v, full[k][r * rows : (r + 1) * rows], f"shard of {k}")
    # each process's own batch; the shards' gradients are the batch-mean's shards
    xs = [
        np.random.default_rng(10 + q).standard_normal((4, 3)).astype(np.float32) for q in range(n)
    ]
    close(sharded(nv.array(xs[r])), npa(ref(nv.array(xs[r]))), "forward with gathered weights")

    def loss(m, v):
        return (m(v) ** 2).mean()

    _, grads = nn.value_and_grad(sharded, loss)(sharded, nv.array(xs[r]))
    ref_grads = [
        dict(nv.utils.tree_flatten(nn.value_and_grad(ref, loss)(ref, nv.array(x))[1])) for x in xs
    ]
    for k, v in nv.utils.tree_flatten(grads):
        key = k[len("module.") :]
        mean = np.mean([npa(rg[key]) for rg in ref_grads], axis=0)
        rows = mean.shape[0] // n
        close(v, mean[r * rows : (r + 1) * rows], f"gradient shard of {key}")
    # clipping with the norm over all the shards
    clipped, norm = nn.utils.clip_grad_norm_sharded(grads, 1e-3, group=g)
    total = sum(float((npa(v) ** 2).sum()) for _, v in nv.utils.tree_flatten(grads))
    total = nv.distributed.all_sum(nv.array(total), group=g).item()
    assert abs(norm.item() - np.sqrt(total)) < 1e-4 * np.sqrt(total)
    for (_, a), (_, b) in zip(nv.utils.tree_flatten(clipped), nv.utils.tree_flatten(grads)):
        close(a, npa(b) * 1e-3 / (np.sqrt(total) + 1e-6), "clipped")


def main(out_dir: str) -> int:
    g = nv.distributed.init(strict=True)
    results = {"size": g.size()}
    for fn in CHECKS:
        try:
            fn(g)
            results[fn.__name__] = "ok"
        except Exception:
            results[fn.__name__] = traceback.format_exc()
    with open(os.path.join(out_dir, f"rank{g.rank()}.json"), "w") as f:
        json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
