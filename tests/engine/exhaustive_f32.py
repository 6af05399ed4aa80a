"""Every float32 input of the 2-ulp functions, of the logarithms (log2, log10, log1p: 4 ulp),
of the rest of the exp family (expm1, sinh, cosh: 4 ulp) and of tan (4 ulp) against float64
references (a long check).

    python tests/engine/exhaustive_f32.py [op ...]     # one process per op, prints the maxima

The same check runs under pytest with NUVEC_EXHAUSTIVE=1 (test_accuracy.py), serially.
"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor


def sweep(op: str) -> tuple[str, int, float]:
    import warnings

    import numpy as np
    import scipy.special as sps

    from nuvec.backends.cpu import kernels
    from nuvec.codegen.ir import KernelSpec

    refs = {
        "exp": np.exp,
        "log": np.log,
        "log2": np.log2,
        "log10": np.log10,
        "log1p": np.log1p,
        "sin": np.sin,
        "cos": np.cos,
        "tanh": np.tanh,
        "sigmoid": sps.expit,
        "erf": sps.erf,
        "expm1": np.expm1,
        "sinh": np.sinh,
        "cosh": np.cosh,
        "tan": np.tan,
    }
    kernels.set_num_threads(1)
    k = kernels.get_kernel(KernelSpec.single(op, ("float32",), "float32"))
    worst, at = 0, 0.0
    chunk = 1 << 22
    for start in range(0, 1 << 32, chunk):
        bits = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32)
        x = bits.view(np.float32)
        got = k([x], x.shape)[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = refs[op](x.astype(np.float64)).astype(np.float32)
        gi, wi = got.view(np.int32).astype(np.int64), want.view(np.int32).astype(np.int64)
        gi = np.where(gi < 0, -(gi & 0x7FFFFFFF), gi)
        wi = np.where(wi < 0, -(wi & 0x7FFFFFFF), wi)
        d = np.abs(gi - wi)
        gn, wn = np.isnan(got), np.isnan(want)
        d[gn & wn] = 0
        d[gn != wn] = 1 << 40
        m = int(d.max())
        if m > worst:
            worst, at = m, float(x[int(np.argmax(d))])
    return op, worst, at


def main(ops: list[str]) -> None:
    ops = ops or [
        "exp",
        "log",
        "sin",
        "cos",
        "tanh",
        "sigmoid",
        "erf",
        "expm1",
        "sinh",
        "cosh",
        "tan",
    ]
    from concurrent.futures import as_completed

    with ProcessPoolExecutor(len(ops)) as ex:
        for fut in as_completed([ex.submit(sweep, op) for op in ops]):
            op, worst, at = fut.result()
            print(f"{op:8s} every float32 input: max {worst} ulp (at {at!r})", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
