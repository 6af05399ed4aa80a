"""A short tour of nv.compile on the CPU (run by `make demo`).

It compiles GELU, checks that the compiled function gives the uncompiled result bit for bit,
times both, and shows that later calls replay the tape without tracing again.
"""

import math
import time

import numpy as np

import nuvec as nv
from nuvec.compile import wait_for_kernels


def gelu(x):
    return 0.5 * x * (1.0 + nv.erf(x / math.sqrt(2.0)))


def best_of(f, x, n=5):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        nv.eval(f(x))
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    x = nv.array(np.random.default_rng(0).standard_normal(4_000_000, dtype=np.float32))
    fast = nv.compile(gelu)

    eager, compiled = gelu(x), fast(x)
    wait_for_kernels()  # fused kernels compile in the background; the first call ran unfused
    same = np.array_equal(np.array(eager).view(np.uint32), np.array(compiled).view(np.uint32))
    print(f"compiled == eager, bit for bit: {same}")

    t_eager, t_compiled = best_of(gelu, x), best_of(fast, x)
    print(
        f"gelu on 4M float32: eager {t_eager * 1e3:.1f} ms, compiled {t_compiled * 1e3:.1f} ms "
        f"({t_eager / t_compiled:.1f}x)"
    )

    for n in (7, 512, 2048):  # a new shape traces once more; a seen one replays
        fast(nv.ones((n,)))
    fast(nv.ones((7,)))
    stats = fast.stats()
    print(
        f"traces: {stats['traces']}, cache hits: {stats['hits']}, last miss: {stats['last_miss']!r}"
    )
    if not same:
        raise SystemExit("compiled and eager results differ")


if __name__ == "__main__":
    main()
