"""nv.distributed in one process: the group of one (no MPI needed), argument errors, the
launcher's command line and errors, and compile's treatment of collectives over an
in-process communicator (every process holding the same data)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import nuvec as nv
from nuvec import launch
from nuvec.distributed.backends.base import Communicator
from nuvec.primitives.distributed import AllGather, AllReduce, Recv, Send

D = nv.distributed
ROOT = Path(__file__).resolve().parents[2]

# Runs a snippet in a fresh interpreter where ``import mpi4py`` fails.
NO_MPI4PY = "import sys; sys.modules['mpi4py'] = None\n"


def run_py(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    e = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "OMPI_COMM_WORLD_SIZE",
            "PMI_SIZE",
            "PMIX_RANK",
            "MPI_LOCALNRANKS",
            "MV2_COMM_WORLD_SIZE",
        )
    }
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=60
    )


# -- the group of one ---------------------------------------------------------------------------
def test_init_gives_one_process_and_is_cached():
    g = D.init()
    assert (g.rank(), g.size()) == (0, 1)
    assert D.init() is g
    assert "size=1" in repr(g)


def test_init_rejects_unknown_backend():
    with pytest.raises(ValueError, match="backend must be 'any' or one of"):
        D.init(backend="gloo")


# Runs a snippet where ``import cupy`` fails (as on a machine without CuPy or a GPU).
NO_CUPY = "import sys; sys.modules['cupy'] = None\n"


def test_strict_nccl_without_cupy_says_why():
    p = run_py(NO_CUPY + "import nuvec as nv\nnv.distributed.init(backend='nccl', strict=True)")
    assert p.returncode != 0
    assert "RuntimeError: nv.distributed.init: the NCCL backend cannot be used" in p.stderr
    assert "CuPy with NCCL is not importable" in p.stderr


@pytest.mark.parametrize("how", ["init(backend='nccl')", "init()  # the launcher asked for nccl"])
def test_nccl_without_cupy_warns_and_runs_alone(how):
    p = run_py(
        NO_CUPY + "import warnings, nuvec as nv\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        f"    g = nv.distributed.{how}\n"
        "print(g.size(), g.backend, [str(x.message) for x in w])\n",
        env={"NUVEC_DISTRIBUTED_BACKEND": "nccl"},
    )
    assert p.returncode == 0, p.stderr
    size, backend, rest = p.stdout.split(" ", 2)
    assert (size, backend) == ("1", "singleton")
    assert "the NCCL backend cannot be used" in rest and "a group of one" in rest


def test_nccl_reduction_plans_cover_every_dtype():
    from nuvec.core import dtypes as dt
    from nuvec.distributed.backends.nccl import reduction_plan

    plans = {d.name: reduction_plan(d) for d in dt.ALL}
    assert plans["float32"] == ("FLOAT32", None, 1)
    assert plans["bfloat16"] == ("BFLOAT16", None, 1)
    assert plans["bool"] == ("UINT8", None, 1)  # a logical or as a byte max
    assert plans["uint16"] == ("INT32", "int32", 1)  # NCCL has no 16-bit integers
    assert plans["complex64"] == ("FLOAT32", None, 2)  # pairs of reals
    assert len(plans) == len(dt.ALL)


def test_strict_init_without_mpi4py_says_what_to_install():
    p = run_py(NO_MPI4PY + "import nuvec as nv\nnv.distributed.init(strict=True)")
    assert p.returncode != 0
    assert "RuntimeError" in p.stderr and "mpi4py" in p.stderr and "pip install" in p.stderr


def test_mpi_backend_without_mpi4py_falls_back_to_one_process():
    p = run_py(
        NO_MPI4PY + "import nuvec as nv\n"
        "g = nv.distributed.init(backend='mpi'); print(g.size(), g.backend)"
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["1", "singleton"]


def test_launched_without_mpi4py_warns_and_runs_alone():
    p = run_py(
        NO_MPI4PY + "import warnings, nuvec as nv\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    g = nv.distributed.init()\n"
        "print(g.size(), len(w), w[0].category.__name__ if w else '')\n",
        env={"OMPI_COMM_WORLD_SIZE": "2"},
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["1", "1", "RuntimeWarning"]


def test_collectives_of_one_process_return_their_input():
    x = nv.array([[1.0, 2.0], [3.0, 4.0]])
    for fn in (D.all_sum, D.all_max, D.all_min, D.all_gather):
        assert fn(x) is x
    z = D.all_gather(nv.array(5))
    assert z.shape == (1,) and z.tolist() == [5]
    assert D.all_sum([1, 2]).tolist() == [1, 2]  # array-likes are converted


def test_send_and_recv_need_another_process():
    with pytest.raises(ValueError, match="send: the group has one process"):
        D.send(nv.ones((2,)), 0)
    with pytest.raises(ValueError, match="recv: the group has one process"):
        D.recv((2,), nv.float32, 0)
    with pytest.raises(ValueError, match="recv: the group has one process"):
        D.recv_like(nv.ones((2,)), 0)


def test_argument_errors_name_the_operation():
    with pytest.raises(TypeError, match="all_sum: group must be a nv.distributed.Group"):
        D.all_sum(nv.ones(2), group="world")
    with pytest.raises(TypeError, match="send: dst must be an int"):
        D.send(nv.ones(2), 1.5)
    with pytest.raises(ValueError, match="recv: shape must hold ints >= 0"):
        D.recv((2, -1), nv.float32, 1)
    with pytest.raises(TypeError, match="recv: dtype must be a nuvec dtype"):
        D.recv((2,), "no-such-type", 1)
    with pytest.raises(ValueError, match="all_max: complex64 values have no order"):
        D.all_max(nv.array([1 + 2j]))
    with pytest.raises(TypeError, match="all_gather: unsupported input type"):
        D.all_gather(object())
    with pytest.raises(TypeError, match="Group.split: color must be an int"):
        D.init().split("a")
    with pytest.raises(ValueError, match="Group.split: color must be >= 0"):
        D.init().split(-2)
    with pytest.raises(TypeError, match="average_gradients: all_reduce_size must be an int"):
        D.average_gradients({}, all_reduce_size=1.5)


def test_split_of_one_process_is_one_process():
    s = D.init().split(3, key=0)
    assert (s.rank(), s.size()) == (0, 1) and s is not D.init()


def test_average_gradients_of_one_process_is_the_tree():
    tree = {"w": nv.ones((2,)), "layers": [nv.zeros((1,)), {"b": nv.ones(())}]}
    assert D.average_gradients(tree) is tree


def test_collective_primitives_are_effectful():
    g = D.init()
    for p in (
        AllReduce("sum", g),
        AllReduce("max", g),
        AllGather(g),
        Send(1, g),
        Recv((2,), nv.float32, 1, g),
    ):
        assert p.effectful, p
    assert Recv((2,), nv.float32, 1, g).fixes_shape  # its shape is a parameter
    with pytest.raises(ValueError, match="op must be one of"):
        AllReduce("prod", g)


# -- collectives in compile, over an in-process world of identical processes ----------------------
class MirrorCommunicator(Communicator):
    """A group of ``n`` processes that all hold this process's data (so results are known:
    a sum is ``n * x``, a gather ``n`` copies)."""

    name = "mirror"

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def rank(self):
        return 0

    def size(self):
        return self.n

    def _all_reduce(self, x, out, op):
        np.copyto(out, x * self.n if op == "sum" else x)

    def _all_gather(self, x, out):
        np.copyto(out, np.concatenate([x.reshape(-1, *x.shape[1:])] * self.n))

    def _reduce_scatter(self, x, out):
        np.copyto(out, x[: out.shape[0]] * self.n)  # rank 0's block


@pytest.fixture
def mirror():
    return D.Group(MirrorCommunicator(3))


def test_mirror_group_results(mirror):
    x = nv.array([[1.0, 2.0]])
    assert D.all_sum(x, group=mirror).tolist() == [[3.0, 6.0]]
    assert D.all_gather(x, group=mirror).shape == (3, 2)
    assert D.all_gather(nv.array(2.0), group=mirror).tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("shapeless", [False, True])
def test_compile_keeps_every_collective(mirror, shapeless):
    comm = mirror._comm
    c = nv.array([1.0, 2.0, 3.0])
    f = nv.compile(
        lambda x: (
            D.all_sum(x, group=mirror) * 2 + D.all_sum(x, group=mirror) + D.all_max(c, group=mirror)
        ),
        shapeless=shapeless,
    )
    x = nv.array([1.0, 2.0, 3.0])
    for _ in range(4):
        assert f(x).tolist() == [10.0, 20.0, 30.0]
    assert f.stats()["traces"] == 1
    assert comm.calls["all_sum"] == 8 and comm.calls["all_max"] == 4  # none folded or merged
    steps = [s.split(" = ")[1] for s in f.inspect(x).steps]
    assert sum(s.startswith("all_sum") for s in steps) == 2
    assert sum(s.startswith("all_max") for s in steps) == 1
    for grp in f.inspect(x).groups:
        assert not any(op.startswith("all_") for op in grp.ops)


def test_compile_keeps_a_collective_multiplied_by_zero(mirror):
    comm = mirror._comm
    f = nv.compile(lambda x: D.all_sum(x, group=mirror) * 0 + x)
    for _ in range(2):
        assert f(nv.array([1.0, 2.0])).tolist() == [1.0, 2.0]
    assert comm.calls["all_sum"] == 2


def test_sum_scatter_keeps_this_process_block(mirror):
    x = nv.array(np.arange(12, dtype=np.float32).reshape(6, 2))
    y = D.sum_scatter(x, group=mirror)
    assert y.shape == (2, 2) and y.tolist() == [[0.0, 3.0], [6.0, 9.0]]
    assert D.sum_scatter(x) is x  # the world of one process
    with pytest.raises(ValueError, match=r"sum_scatter: axis 0 of x \(shape \(4,\)\) must be"):
        D.sum_scatter(nv.ones((4,)), group=mirror)
    with pytest.raises(ValueError, match="sum_scatter: axis 0 of x"):
        D.sum_scatter(nv.array(1.0), group=mirror)
    g = nv.grad(lambda v: nv.sum(D.sum_scatter(v, group=mirror) * 2))(nv.ones((6,)))
    assert g.tolist() == [2.0, 2.0, 0.0, 0.0, 0.0, 0.0]  # the cotangent at block 0
    f = nv.compile(lambda v: D.sum_scatter(v, group=mirror) + 1)
    assert f(x).tolist() == [[1.0, 4.0], [7.0, 10.0]] and mirror._comm.calls["sum_scatter"] == 2


def test_grad_through_all_sum_is_the_cotangent(mirror):
    w = nv.array([1.0, -2.0, 0.5])
    g = nv.grad(lambda x: nv.sum(D.all_sum(x, group=mirror) * w))(nv.ones((3,)))
    assert g.tolist() == w.tolist()


# -- the launcher ------------------------------------------------------------------------------
@pytest.fixture
def no_thread_vars(monkeypatch):
    for var in launch.THREAD_VARS:
        monkeypatch.delenv(var, raising=False)


def test_command_for_open_mpi_as_root_with_more_processes_than_cores(no_thread_vars):
    cmd, env = launch.build_command(
        4, ["train.py", "--x"], "/usr/bin/mpirun", "openmpi", python="/py", cpus=2, euid=0
    )
    assert cmd[:5] == [
        "/usr/bin/mpirun",
        "--allow-run-as-root",
        "--oversubscribe",
        "--bind-to",
        "none",
    ]
    assert cmd[-5:] == ["-n", "4", "/py", "train.py", "--x"]
    assert env == {"OMPI_MCA_mpi_yield_when_idle": "1", **{var: "1" for var in launch.THREAD_VARS}}


def test_command_for_open_mpi_as_user_within_the_cores(no_thread_vars, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's choice is kept
    cmd, env = launch.build_command(
        2, ["t.py"], "mpirun", "openmpi", python="/py", cpus=8, euid=1000
    )
    assert "--allow-run-as-root" not in cmd and "--oversubscribe" not in cmd
    assert env == {var: "4" for var in launch.THREAD_VARS if var != "OMP_NUM_THREADS"}


def test_command_for_the_nccl_backend(no_thread_vars, monkeypatch):
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    cmd, env = launch.build_command(
        2, ["t.py"], "mpirun", "openmpi", python="/py", cpus=8, euid=1000, backend="nccl"
    )
    assert env["NUVEC_DISTRIBUTED_BACKEND"] == "nccl"
    for var in ("NUVEC_DISTRIBUTED_BACKEND", "NCCL_NVLS_ENABLE"):  # to other hosts too
        assert cmd[cmd.index(var) - 1] == "-x"


def test_command_for_mpich_with_hosts(no_thread_vars):
    cmd, env = launch.build_command(
        4, ["t.py"], "mpiexec", "mpich", hosts="a,b", python="/py", cpus=1, euid=0
    )
    assert cmd == ["mpiexec", "-hosts", "a,b", "-n", "4", "/py", "t.py"] and env == {}


def test_launcher_without_mpirun_says_what_to_install(tmp_path):
    env = {
        **os.environ,
        "PATH": str(tmp_path),
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    p = subprocess.run(
        [sys.executable, "-m", "nuvec.launch", "-n", "2", "x.py"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 2
    assert "mpirun was not found" in p.stderr and "openmpi-bin" in p.stderr


def test_launcher_without_mpi4py_says_what_to_install(monkeypatch, capsys, tmp_path):
    fake = tmp_path / "mpirun"
    fake.write_text("#!/bin/sh\necho fake\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    real = launch.importlib.util.find_spec
    monkeypatch.setattr(
        launch.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "mpi4py" else real(name, *a),
    )
    assert launch.main(["-n", "2", "x.py"]) == 2
    assert "mpi4py is not installed" in capsys.readouterr().err


def test_launcher_prints_its_command(monkeypatch, capsys, tmp_path):
    fake = tmp_path / "mpirun"
    fake.write_text("#!/bin/sh\necho 'mpirun (Open MPI) 4.1.4'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(launch.importlib.util, "find_spec", lambda name, *a: object())
    assert launch.main(["-n", "3", "--print-command", "s.py", "a"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.endswith(f"-n 3 {sys.executable} s.py a") and str(fake) in out


def test_launcher_rejects_zero_processes(capsys):
    with pytest.raises(SystemExit):
        launch.main(["-n", "0", "s.py"])
    assert "-n must be at least 1" in capsys.readouterr().err


def test_one_process_script_runs_unchanged_without_a_launcher():
    p = run_py(
        "import nuvec as nv\n"
        "g = nv.distributed.init()\n"
        "x = nv.distributed.all_sum(nv.array([1.0, 2.0]))\n"
        "print(g.size(), x.tolist())"
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "1 [1.0, 2.0]"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        D.init()


# -- GPU arrays: copied through the host ----------------------------------------------------------
@pytest.mark.skipif(
    nv.core.device.gpu_backend_name() != "cuda",
    reason="no CUDA GPU here (the GPU path ran on the accelerator machine)",
)
def test_collectives_of_gpu_arrays_go_through_the_host(mirror):
    import cupy

    with nv.stream(nv.gpu):
        x = nv.array(np.arange(6, dtype=np.float32).reshape(2, 3))
        y = D.all_sum(x * 2, group=mirror) + 1
        g = D.all_gather(x, group=mirror)
        nv.eval(y, g)
        assert isinstance(y._data, cupy.ndarray)
        assert y.tolist() == (np.arange(6).reshape(2, 3) * 6 + 1).tolist()
        assert g.shape == (6, 3) and g.tolist()[2:4] == x.tolist()
        f = nv.compile(lambda a: D.all_sum(a, group=mirror) * 2 + D.all_sum(a, group=mirror))
        assert f(x).tolist() == (np.arange(6).reshape(2, 3) * 9).tolist()
        b = D.all_sum(nv.array([1.5, 2.5], dtype=nv.bfloat16), group=mirror)
        assert b.tolist() == [4.5, 7.5] and isinstance(b._data, cupy.ndarray)
