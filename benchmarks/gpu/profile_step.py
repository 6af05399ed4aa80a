"""Where the host time of a compiled training step's call goes (run on a machine with a GPU).

    python benchmarks/gpu/profile_step.py                  # the MLP at batch 256
    python benchmarks/gpu/profile_step.py transformer 32   # the char transformer

Prints the executable's stats, the step's time per call (synced and queued, as
``training.per_step``), the host time of a call alone (queued, the device never waited for
inside the loop), then a cProfile of the calls by own time.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.gpu import training  # noqa: E402


def main() -> None:
    case = sys.argv[1] if len(sys.argv) > 1 else "mlp"
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    run, sync, info = training.train("nuvec", case, batch, compiled=True)
    t = training.per_step(run, sync, reps=40)
    ex = info()
    print(f"{case} {batch}: executable", {k: ex.get(k) for k in sorted(ex)} if ex else None)
    print(f"{case} {batch}: synced {t['synced'] * 1e3:.3f} ms, queued {t['queued'] * 1e3:.3f} ms")
    n = 200
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        run()
    t1 = time.perf_counter()
    sync()
    print(f"{case} {batch}: host time per call {(t1 - t0) / n * 1e6:.1f} us")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        run()
    sync()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(int(os.environ.get("TOP", "22")))


if __name__ == "__main__":
    main()
