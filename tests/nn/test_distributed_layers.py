"""The sharded layers: in one process (where each equals its plain counterpart) and on 2 MPI
processes (tests/nn/dist_nn_worker.py, started by nuvec.launch) against the full layers."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn
from nuvec.nn.layers.distributed import shard_inplace, shard_linear

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORKER_CHECKS = [
    "all_to_sharded_linear",
    "sharded_to_all_linear",
    "fused_segments",
    "quantized_sharded_linears",
    "fully_sharded_module",
]


def test_one_process_layers_equal_the_linear():
    nv.random.seed(0)
    lin = nn.Linear(4, 6)
    x = nv.array(np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32))
    for sharding in ("all-to-sharded", "sharded-to-all"):
        s = shard_linear(lin, sharding)
        np.testing.assert_allclose(np.asarray(s(x)), np.asarray(lin(x)), rtol=1e-6, atol=1e-6)
        g = nv.grad(lambda v, s=s: s(v).sum())(x)
        np.testing.assert_allclose(
            np.asarray(g), np.asarray(nv.grad(lambda v: lin(v).sum())(x)), rtol=1e-6
        )
    assert (
        repr(nn.AllToShardedLinear(4, 6))
        == "AllToShardedLinear(input_dims=4, output_dims=6, bias=True)"
    )
    assert "bias" not in nn.ShardedToAllLinear(4, 6, bias=False)
    assert nn.fully_shard(lin) is lin  # one process: nothing to shard
    before = np.asarray(lin.weight)
    shard_inplace(lin, "all-to-sharded")
    np.testing.assert_array_equal(np.asarray(lin.weight), before)
    with pytest.raises(ValueError, match="sharding"):
        shard_linear(lin, "rows")
    with pytest.raises(TypeError, match="Linear"):
        shard_linear(nn.ReLU(), "all-to-sharded")


def test_one_process_quantized_twins_equal_the_quantized_linear():
    nv.random.seed(0)
    x = nv.array(np.random.default_rng(1).standard_normal((2, 128)).astype(np.float32))
    for bits in (2, 3, 4, 8):
        q = nn.Linear(128, 64).to_quantized(bits=bits)
        for sharding, cls in [
            ("all-to-sharded", nn.QuantizedAllToShardedLinear),
            ("sharded-to-all", nn.QuantizedShardedToAllLinear),
        ]:
            s = shard_linear(q, sharding)
            assert type(s) is cls and s.weight.shape == q.weight.shape
            np.testing.assert_array_equal(np.asarray(s(x)), np.asarray(q(x)))
            s.unfreeze()
            assert not nv.utils.tree_flatten(s.trainable_parameters())
            assert repr(s).endswith(
                f"input_dims=128, output_dims=64, bias=True, "
                f"group_size=64, bits={bits}, mode=affine)"
            )


def test_clip_grad_norm_sharded_one_process():
    g = {"a": nv.array([3.0, 0.0]), "b": [nv.array([[4.0]])]}
    clipped, norm = nn.utils.clip_grad_norm_sharded(g, 1.0)
    assert norm.item() == pytest.approx(5.0)
    np.testing.assert_allclose(np.asarray(clipped["a"]), [0.6, 0.0], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(clipped["b"][0]), [[0.8]], rtol=1e-5)
    with pytest.raises(ValueError, match="max_norm"):
        nn.utils.clip_grad_norm_sharded(g, -1.0)


MISSING = [
    what
    for what, ok in (
        ("mpirun", shutil.which("mpirun") or shutil.which("mpiexec")),
        ("mpi4py", importlib.util.find_spec("mpi4py")),
    )
    if not ok
]


@pytest.fixture(scope="module")
def two_process_results(tmp_path_factory):
    if MISSING:
        pytest.skip(f"{' and '.join(MISSING)} not installed (.ci/run installs them)")
    out = tmp_path_factory.mktemp("nn_mpi2")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "nuvec.launch",
            "-n",
            "2",
            str(HERE / "dist_nn_worker.py"),
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    files = [out / f"rank{r}.json" for r in range(2)]
    if p.returncode != 0 or not all(f.exists() for f in files):
        pytest.fail(
            f"the 2-process run failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
        )
    return [json.loads(f.read_text()) for f in files]


@pytest.mark.parametrize("name", WORKER_CHECKS)
def test_on_two_processes(two_process_results, name):
    bad = {
        r: res.get(name, "not run")
        for r, res in enumerate(two_process_results)
        if res.get(name) != "ok"
    }
    assert not bad, "\n".join(f"rank {r}:\n{tb}" for r, tb in bad.items())
