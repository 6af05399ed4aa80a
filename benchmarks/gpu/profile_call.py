"""Where the host time of one compiled call on the GPU goes (run on a machine with a GPU).

    python benchmarks/gpu/profile_call.py          # the 10-op chain on 4 elements

Prints the time per call of the whole call and of its parts measured alone (the cache key,
the kernel launch through ``kernels.run``, an allocation, ``nv.synchronize``), then a cProfile
of the calls.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import nuvec as nv  # noqa: E402


def per_call(fn, n: int = 4000) -> float:
    for _ in range(50):
        fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def main() -> None:
    import cupy as cp
    from nuvec.backends.cuda import kernels
    from nuvec.primitives.compiled import Compiled

    def ten_op(x):
        return nv.maximum(nv.exp(-nv.abs(nv.tanh(x * 1.5 + 0.25) * x - 0.5)) * 3, 0.1)

    with nv.stream(nv.gpu):
        x = nv.random.normal((4,), key=nv.random.key(3))
        nv.eval(x)
        f = nv.compile(ten_op)
        for _ in range(5):
            f(x)
        nv.synchronize()
        entry = f.lookup(f.key_of((x,), {}, [], 0))
        tape = entry.tape
        hook = tape.executable.graph if tape.executable is not None else None
        print("executable:", None if hook is None else hook.describe())
        print(
            f"tape: steps={len(tape.steps)} single={tape.single} eager_ok={tape.eager_ok} "
            f"data_type={tape.data_type} scope={tape.scope is not None} "
            f"graph_hook={hook is not None}"
        )
        step = tape.steps[0]
        spec = step.prim.spec if type(step.prim) is Compiled else None
        data = x._data
        rows = {
            "f(x)": lambda: f(x),
            "f(x) + nv.synchronize()": lambda: (f(x), nv.synchronize()),
            "nv.synchronize() alone": nv.synchronize,
            "key_of": lambda: f.key_of((x,), {}, [], 0),
            "tape.run([x])": lambda: tape.run([x]),
            "cp.empty((4,), float32)": lambda: cp.empty((4,), cp.float32),
        }
        if spec is not None:
            rows["kernels.run(spec) alone"] = lambda: kernels.run(spec, [data], (4,))
        for name, fn in rows.items():
            print(f"{name:32s} {per_call(fn) * 1e6:8.2f} us")
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(2000):
            f(x)
        nv.synchronize()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    main()
