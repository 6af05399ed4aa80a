"""all_sum bandwidth over MPI: nuvec's ``nv.distributed.all_sum`` against mpi4py's own
``Allreduce`` on NumPy buffers, in the same run, for 1 MB to 256 MB of float32.

    python benchmarks/mpi_allreduce.py                 # relaunches itself on 2 processes
    python -m nuvec.launch -n 4 benchmarks/mpi_allreduce.py --sizes-mb 1 16 256

For each size, the two are timed alternately (which goes first alternates too, so that drift in
the machine's load falls on both), each call between barriers, a call's time being the
slowest process's. The table shows the median over ``--repeats`` calls, the algorithm
bandwidth (bytes of the array / time) and nuvec's time over mpi4py's (1.00 = the same; the
target is within 10%). nuvec's call includes building the graph node, evaluating it and the
output buffer (from nuvec's buffer cache); mpi4py's writes into a buffer allocated once.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np


def relaunch(n: int) -> None:
    """Runs this script again on ``n`` MPI processes (when started without a launcher)."""
    argv = [
        sys.executable,
        "-m",
        "nuvec.launch",
        "-n",
        str(n),
        os.path.abspath(__file__),
        *sys.argv[1:],
    ]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = root + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.execv(sys.executable, argv)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes-mb", type=int, nargs="+", default=[1, 4, 16, 64, 256])
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--nprocs", type=int, default=2, help="processes when relaunching itself")
    p.add_argument("--json", help="also write the results to this file (rank 0)")
    args = p.parse_args()

    from nuvec.distributed.backends.mpi import launched_size

    if launched_size() is None:
        relaunch(args.nprocs)

    import nuvec as nv
    from mpi4py import MPI

    world = nv.distributed.init(strict=True, backend="mpi")
    comm = MPI.COMM_WORLD
    rank, size = world.rank(), world.size()

    def timed(fn) -> float:
        comm.Barrier()
        t = time.perf_counter()
        fn()
        return comm.allreduce(time.perf_counter() - t, op=MPI.MAX)

    def measure(mb: int) -> dict:
        n = mb * (1 << 20) // 4
        x_np = np.full(n, rank + 1, dtype=np.float32)
        out_np = np.empty_like(x_np)
        x = nv.array(x_np)
        nv.eval(x)
        holder = {}

        def with_mpi4py():
            comm.Allreduce(x_np, out_np, op=MPI.SUM)

        def with_nuvec():
            holder.pop("y", None)  # last call's output goes back to the cache
            y = nv.distributed.all_sum(x, group=world)
            nv.eval(y)
            holder["y"] = y

        for _ in range(2):  # warm-up: first touches, buffer cache, MPI paths
            with_mpi4py()
            with_nuvec()
        want = size * (size + 1) / 2
        assert float(out_np[0]) == want and float(np.asarray(holder["y"])[-1]) == want
        t_mpi, t_nv = [], []
        for r in range(args.repeats):
            if r % 2:
                t_nv.append(timed(with_nuvec))
                t_mpi.append(timed(with_mpi4py))
            else:
                t_mpi.append(timed(with_mpi4py))
                t_nv.append(timed(with_nuvec))
        m_mpi, m_nv = statistics.median(t_mpi), statistics.median(t_nv)
        return {
            "mb": mb,
            "mpi4py_s": m_mpi,
            "nuvec_s": m_nv,
            "mpi4py_gbs": mb * (1 << 20) / m_mpi / 1e9,
            "nuvec_gbs": mb * (1 << 20) / m_nv / 1e9,
            "ratio": m_nv / m_mpi,
            "min_ratio": min(t_nv) / min(t_mpi),
        }

    rows = [measure(mb) for mb in args.sizes_mb]

    if rank == 0:
        lib = MPI.Get_library_version().splitlines()[0].strip()
        print(
            f"all_sum of float32 over {size} MPI processes ({lib}), median of {args.repeats} calls"
        )
        print(
            f"{'size':>8} {'mpi4py ms':>10} {'nuvec ms':>10} {'mpi4py GB/s':>12} "
            f"{'nuvec GB/s':>11} {'nuvec/mpi4py':>13} {'(best/best)':>12}"
        )
        for r in rows:
            print(
                f"{r['mb']:>6}MB {r['mpi4py_s'] * 1e3:>10.2f} {r['nuvec_s'] * 1e3:>10.2f} "
                f"{r['mpi4py_gbs']:>12.2f} {r['nuvec_gbs']:>11.2f} {r['ratio']:>13.3f} "
                f"{r['min_ratio']:>12.3f}"
            )
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"processes": size, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
