"""Runs a Python script on several processes over MPI: ``python -m nuvec.launch -n 4 script.py``.

    python -m nuvec.launch -n 4 train.py --epochs 3      # 4 processes on this machine
    python -m nuvec.launch -n 8 --hostfile hosts train.py
    python -m nuvec.launch -n 2 --print-command train.py # show the mpirun line, run nothing
    python -m nuvec.launch -n 4 --backend nccl train.py  # one process per GPU, over NCCL

It starts ``mpirun`` (Open MPI or MPICH) with this Python; each process calls
``nv.distributed.init()`` and gets the MPI world. For Open MPI it adds what a plain machine
needs: ``--allow-run-as-root`` when run as root (containers), and, with more processes than
CPU cores, ``--oversubscribe`` with processes that yield the CPU while they wait (instead of
spinning on a core another process needs). Processes on one machine get their share of its
cores as thread counts (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS,
NUVEC_NUM_THREADS), unless those are set. It exits with mpirun's status. When mpirun or
mpi4py is missing it says what to install and exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
from typing import Sequence

INSTALL_HINT = (
    "install an MPI library and mpi4py, e.g. `apt-get install openmpi-bin "
    "libopenmpi-dev` and `pip install mpi4py` (or `pip install -e .[mpi]`); to run "
    "on one process, run the script directly with python"
)


#: thread-count variables set to each process's share of the cores (when not set already)
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUVEC_NUM_THREADS")


#: variables Open MPI is told to pass to processes on other hosts too (NCCL_NVLS_ENABLE: where
#: a machine turns NVLink multicast off, it stays off in every process)
FORWARDED = ("PYTHONPATH", "NUVEC_DISABLE_COMPILE", "NUVEC_DISTRIBUTED_BACKEND", "NCCL_NVLS_ENABLE")


class LaunchError(RuntimeError):
    """The launch cannot start (no mpirun, no mpi4py, bad arguments)."""


def find_mpirun(explicit: str | None = None) -> str:
    """The path of mpirun (or mpiexec); a LaunchError saying what to install when absent."""
    if explicit:
        path = shutil.which(explicit)
        if path is None:
            raise LaunchError(f"nuvec.launch: the MPI launcher {explicit!r} was not found")
        return path
    for name in ("mpirun", "mpiexec"):
        path = shutil.which(name)
        if path is not None:
            return path
    raise LaunchError(f"nuvec.launch: mpirun was not found on PATH; {INSTALL_HINT}")


def mpi_flavour(mpirun: str) -> str:
    """ "openmpi", "mpich" or "unknown", from ``mpirun --version``."""
    try:
        out = subprocess.run(
            [mpirun, "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if "Open MPI" in out or "OpenRTE" in out:
        return "openmpi"
    if "HYDRA" in out or "MPICH" in out or "Intel" in out:
        return "mpich"
    return "unknown"


def build_command(
    n: int,
    argv: Sequence[str],
    mpirun: str,
    flavour: str,
    hostfile: str | None = None,
    hosts: str | None = None,
    extra: Sequence[str] = (),
    python: str = sys.executable,
    cpus: int | None = None,
    euid: int | None = None,
    backend: str = "any",
) -> tuple[list[str], dict]:
    """The mpirun command line and the environment additions for ``n`` processes running
    ``python argv...``."""
    cpus = cpus if cpus is not None else (os.cpu_count() or 1)
    euid = euid if euid is not None else (os.geteuid() if hasattr(os, "geteuid") else 1)
    cmd = [mpirun]
    env: dict[str, str] = {}
    if backend != "any":
        env["NUVEC_DISTRIBUTED_BACKEND"] = backend  # what nv.distributed.init() joins
    if hostfile is None and hosts is None:
        # n processes share this machine's cores: give each its share of threads (NumPy's
        # BLAS and nuvec's kernels would otherwise each start one thread per core, and
        # threads waiting for a core slow every process down), unless the user chose
        share = str(max(1, cpus // n))
        for var in THREAD_VARS:
            if var not in os.environ:
                env[var] = share
    if flavour == "openmpi":
        if euid == 0:
            cmd.append("--allow-run-as-root")
        if n > cpus and hostfile is None and hosts is None:
            cmd += ["--oversubscribe", "--bind-to", "none"]
            env["OMPI_MCA_mpi_yield_when_idle"] = "1"
        for var in FORWARDED:
            if var in os.environ or var in env:
                cmd += ["-x", var]  # reach processes on other hosts too
    if hostfile is not None:
        cmd += ["--hostfile" if flavour == "openmpi" else "-f", hostfile]
    if hosts is not None:
        cmd += ["--host" if flavour == "openmpi" else "-hosts", hosts]
    cmd += list(extra)
    cmd += ["-n", str(n), python, *argv]
    return cmd, env


def main(args: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m nuvec.launch",
        description="Run a Python script on several processes over MPI.",
    )
    p.add_argument("-n", "--nprocs", type=int, required=True, help="number of processes")
    p.add_argument("--hostfile", help="an MPI host file (processes on several machines)")
    p.add_argument("--hosts", help="comma-separated host names")
    p.add_argument("--mpirun", help="the MPI launcher to use (default: mpirun or mpiexec)")
    p.add_argument(
        "--mpi-arg",
        action="append",
        default=[],
        help="an extra argument for mpirun (repeat for several)",
    )
    p.add_argument(
        "--backend",
        choices=("any", "mpi", "nccl"),
        default="any",
        help="what nv.distributed.init() joins: MPI, NCCL between the GPUs (one process per "
        "GPU), or any (NCCL when every process has a CUDA GPU, else MPI)",
    )
    p.add_argument(
        "--print-command", action="store_true", help="print the mpirun command line and exit"
    )
    p.add_argument("script", help="the Python script")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="its arguments")
    ns = p.parse_args(args)
    if ns.nprocs < 1:
        p.error(f"-n must be at least 1, got {ns.nprocs}")
    try:
        mpirun = find_mpirun(ns.mpirun)
        if importlib.util.find_spec("mpi4py") is None:
            raise LaunchError(
                f"nuvec.launch: mpi4py is not installed, so the processes "
                f"could not talk to each other; {INSTALL_HINT}"
            )
    except LaunchError as e:
        print(e, file=sys.stderr)
        return 2
    argv = [ns.script, *ns.script_args]
    cmd, env = build_command(
        ns.nprocs,
        argv,
        mpirun,
        mpi_flavour(mpirun),
        ns.hostfile,
        ns.hosts,
        ns.mpi_arg,
        backend=ns.backend,
    )
    if ns.print_command:
        prefix = " ".join(f"{k}={v}" for k, v in env.items())
        print((prefix + " " if prefix else "") + " ".join(cmd))
        return 0
    try:
        return subprocess.run(cmd, env={**os.environ, **env}).returncode
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
