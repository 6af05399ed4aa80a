"""The NCCL backend on one GPU: a one-rank communicator runs every collective on device memory
(through the graph's primitives, which the ops skip for a group of one), against NumPy.

The runs on several GPUs need a machine with several (tests/distributed runs the same checks
over MPI on the CPU).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nuvec as nv
from nuvec.core.array import Array
from nuvec.primitives.distributed import AllGather, AllReduce, SumScatter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from devices import gpu_only  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = gpu_only


@pytest.fixture(scope="module")
def world():
    from nuvec.distributed.backends import nccl

    reason = nccl.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    g = nv.distributed.init(backend="nccl", strict=True)
    assert g.backend == "nccl" and g.size() == 1
    return g


def run(prim, x: np.ndarray, dtype):
    with nv.stream(nv.gpu):
        a = nv.array(x, dtype=dtype)
        y = Array.make(prim, [a], a._stream)
        nv.eval(y)
        return y


DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int16", "uint8", "bool"]


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_all_reduce_on_device(world, name, op):
    import cupy

    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7)) * 20
    d = getattr(nv, "bool_" if name == "bool" else name)
    before = world._comm.calls[f"all_{op}"]
    y = run(AllReduce(op, world), x, d)
    assert isinstance(y._data, cupy.ndarray)
    assert world._comm.calls[f"all_{op}"] == before + 1
    want = np.asarray(nv.array(x, dtype=d))  # one rank: the reduction of one array
    np.testing.assert_array_equal(np.asarray(y), want)


def test_complex_sum_and_gather_and_scatter(world):
    x = (np.arange(6) + 1j * np.arange(6)).astype(np.complex64).reshape(3, 2)
    np.testing.assert_array_equal(np.asarray(run(AllReduce("sum", world), x, nv.complex64)), x)
    g = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(np.asarray(run(AllGather(world), g, nv.float32)), g)
    np.testing.assert_array_equal(np.asarray(run(SumScatter(world), g, nv.float32)), g)
    b = run(SumScatter(world), g, nv.bfloat16)
    np.testing.assert_array_equal(np.asarray(b), np.asarray(nv.array(g, dtype=nv.bfloat16)))


def test_host_buffers_and_send_to_self(world):
    """NumPy buffers go through the GPU and back; a send to this rank and its receive, in one
    NCCL group, arrive whole."""
    import cupy
    from cupy.cuda import nccl

    comm = world._comm
    x = np.arange(10, dtype=np.float32)
    out = np.empty_like(x)
    comm.all_reduce(x, out, "sum")
    np.testing.assert_array_equal(out, x)
    src = cupy.arange(1000, dtype=cupy.int64)
    dst = cupy.empty_like(src)
    nccl.groupStart()
    comm.send(src, 0)
    comm.recv(dst, 0)
    nccl.groupEnd()
    cupy.cuda.get_current_stream().synchronize()
    assert bool((dst == src).all())


def test_compiled_collective_on_device(world):
    f = nv.compile(lambda v: Array.make(AllReduce("sum", world), [v * 2], v._stream) + 1)
    with nv.stream(nv.gpu):
        x = nv.array(np.arange(8, dtype=np.float32))
        for _ in range(3):
            np.testing.assert_array_equal(np.asarray(f(x)), np.arange(8) * 2 + 1)


def test_data_parallel_example_on_one_gpu(world, tmp_path):
    out = tmp_path / "losses.json"
    p = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "digits_mlp_dp.py"),
            "--epochs",
            "1",
            "--backend",
            "nccl",
            "--device",
            "gpu",
            "--losses-out",
            str(out),
        ],
        cwd=ROOT / "examples",
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert "(nccl, gpu)" in p.stdout, p.stdout
