"""Quick throughput check of the CPU element-wise engine against NumPy (printed, not asserted).

    python tests/engine/throughput.py            # 16M float32, best of 9 calls each

Each op runs in a loop whose results are dropped at once, so the engine's buffer cache hands
the same output memory back (as an eager loop over large arrays would); NumPy allocates a new
output per call, as it does in eager code. NumPy has no erf: SciPy's stands in; sigmoid is
NumPy's 1 / (1 + exp(-x)) and SciPy's expit. Also the per-op cost on 4 elements.
"""

from __future__ import annotations

import os
import time
import timeit

import numpy as np

from nuvec.codegen.ir import KernelSpec
from nuvec.backends.cpu import kernels


def best(fn, reps: int = 9) -> float:
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts)


def main() -> None:
    import scipy.special as sps

    n = 1 << 24
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    cases = [
        ("add", (x, y), lambda: np.add(x, y)),
        ("multiply", (x, y), lambda: np.multiply(x, y)),
        ("exp", (x,), lambda: np.exp(x)),
        ("tanh", (x,), lambda: np.tanh(x)),
        ("erf", (x,), lambda: sps.erf(x)),
        ("sigmoid", (x,), lambda: 1 / (1 + np.exp(-x))),
    ]
    print(
        f"16M float32, {kernels.get_num_threads()} threads (nproc {os.cpu_count()}); "
        "ms per call, best of 9"
    )
    print(f"{'op':10s} {'nuvec':>8s} {'numpy':>8s} {'ratio':>7s}")
    for op, ins, ref in cases:
        spec = KernelSpec.single(op, ("float32",) * len(ins), "float32")
        k = kernels.get_kernel(spec)
        ours = best(lambda k=k, ins=ins: k(list(ins), (n,)))
        theirs = best(ref)
        print(f"{op:10s} {ours * 1e3:8.2f} {theirs * 1e3:8.2f} {theirs / ours:6.2f}x")
    expit = best(lambda: sps.expit(x))
    print(f"{'(expit)':10s} {'':8s} {expit * 1e3:8.2f}")
    a = np.ones(4, np.float32)
    spec = KernelSpec.single("add", ("float32", "float32"), "float32")
    num = 200_000
    t_run = min(timeit.repeat(lambda: kernels.run(spec, [a, a], (4,)), number=num, repeat=5))
    t_np = min(timeit.repeat(lambda: np.add(a, a), number=num, repeat=5))
    print(f"4 elements: kernels.run {t_run / num * 1e6:.2f} us, np.add {t_np / num * 1e6:.2f} us")


if __name__ == "__main__":
    main()
