"""The machine's limits, measured in the same run: memory bandwidth, BLAS FLOP rate, the cost of
calling a C function from Python, and how long the C compiler takes on a fused 200-op kernel.

Bandwidth counts bytes as STREAM does (bytes read + bytes written, no write-allocate traffic).
The C loops are compiled with the system ``cc`` at run time and called through ctypes, which
releases the GIL, so several Python threads can drive several cores.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from . import workloads as W
from .timing import measure, once

C_SOURCE = r"""
#include <stddef.h>
#include <math.h>
void nvb_copy(float *restrict dst, const float *restrict src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = src[i];
}
void nvb_triad(float *restrict a, const float *restrict b, const float *restrict c, float s,
               size_t n) {
    for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}
void nvb_add(float *restrict out, const float *restrict a, const float *restrict b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
void nvb_chain10(float *restrict out, const float *restrict in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = in[i], y = x * 1.5f;
        y = y + 0.5f; y = y * x; y = y - 2.0f; y = y / 3.0f; y = y + x;
        y = y * 0.25f; y = y - x; y = y * 0.5f; out[i] = y + 1.0f;
    }
}
"""

CFLAGS = ["-O3", "-march=native", "-shared", "-fPIC"]


def cc_path() -> str:
    cc = os.environ.get("CC", "cc")
    found = shutil.which(cc)
    if not found:
        raise FileNotFoundError(f"machine limits: no C compiler {cc!r} on PATH")
    return found


def build(source: str, workdir: Path, stem: str, flags: list[str] = CFLAGS) -> Path:
    """Compile ``source`` into a shared library in ``workdir``; raise with cc's message on
    failure."""
    src, lib = workdir / f"{stem}.c", workdir / f"{stem}.so"
    src.write_text(source)
    proc = subprocess.run(
        [cc_path(), *flags, "-o", str(lib), str(src), "-lm"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"machine limits: cc failed: {proc.stderr.strip()[:500]}")
    return lib


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


def _split(n: int, parts: int) -> list[tuple[int, int]]:
    step = -(-n // parts)
    step += (-step) % 16  # 64-byte chunks: no two threads share a cache line
    return [(i, min(n, i + step)) for i in range(0, n, step)]


class CLoops:
    """The C loops of C_SOURCE, callable on NumPy arrays with ``threads`` workers."""

    def __init__(self, lib_path: Path, threads: int) -> None:
        self.lib = ctypes.CDLL(str(lib_path))
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        self.lib.nvb_copy.argtypes = [vp, vp, sz]
        self.lib.nvb_triad.argtypes = [vp, vp, vp, ctypes.c_float, sz]
        self.lib.nvb_add.argtypes = [vp, vp, vp, sz]
        self.lib.nvb_chain10.argtypes = [vp, vp, sz]
        self.threads = threads
        self.pool = ThreadPoolExecutor(threads) if threads > 1 else None

    def _run(self, body: Callable[[int, int], None], n: int) -> None:
        if self.pool is None:
            body(0, n)
        else:
            list(self.pool.map(lambda r: body(*r), _split(n, self.threads)))

    def copy(self, dst: np.ndarray, src: np.ndarray) -> None:
        f, d, s = self.lib.nvb_copy, dst.ctypes.data, src.ctypes.data
        self._run(lambda i, j: f(d + 4 * i, s + 4 * i, j - i), dst.size)

    def triad(self, a: np.ndarray, b: np.ndarray, c: np.ndarray, s: float) -> None:
        f, pa, pb, pc = self.lib.nvb_triad, a.ctypes.data, b.ctypes.data, c.ctypes.data
        self._run(lambda i, j: f(pa + 4 * i, pb + 4 * i, pc + 4 * i, s, j - i), a.size)


def _record(case: str, m: dict[str, Any], unit: str, **extra: Any) -> dict[str, Any]:
    m = {k: v for k, v in m.items() if k != "last"}  # a result array is not a figure
    return {
        "case": case,
        "variant": extra.pop("variant", "machine"),
        "status": "ok",
        "unit": unit,
        **m,
        **extra,
    }


def _failed(case: str, exc: BaseException) -> dict[str, Any]:
    return {
        "case": case,
        "variant": "machine",
        "status": "error",
        "error": f"{type(exc).__name__}: {exc}"[:500],
    }


def run(cfg: dict[str, Any], workdir: Path, noise_only: bool = False) -> Iterator[dict[str, Any]]:
    """Measure the limits, yielding one record per case; a part that fails (no C compiler)
    yields an error record and the rest still runs.

    ``cfg``: n, samples, warmup, min_sample_s, threads (int), noise_samples. ``noise_only`` (the
    run's last worker) repeats the noise probe, the bandwidth cases and sgemm only.
    """
    n, threads = cfg["n"], cfg["threads"]
    timing = dict(samples=cfg["samples"], warmup=cfg["warmup"], min_sample_s=cfg["min_sample_s"])
    a, b = W.inputs(n, 2)
    out = np.empty_like(a)

    # noise probe: the same NumPy copy many times; its spread is the run's noise floor
    m = measure(
        lambda: np.copyto(out, a),
        samples=cfg["noise_samples"],
        warmup=2,
        min_sample_s=0.0,
        budget_s=30.0,
    )
    yield _record("numpy_copy", m, "s", bytes=2 * 4 * n, variant="numpy")

    def numpy_triad() -> None:
        np.multiply(b, np.float32(3.0), out=out)
        np.add(out, a, out=out)

    m = measure(numpy_triad, **timing)
    # two passes, as NumPy must: 5 array traversals, counted as such
    yield _record(
        "numpy_triad",
        m,
        "s",
        bytes=5 * 4 * n,
        variant="numpy",
        note="out=b*s; out+=a: two passes (5 traversals counted)",
    )

    try:
        lib_path: Path | None = build(C_SOURCE, workdir, "loops")
    except (OSError, RuntimeError) as exc:
        lib_path = None
        yield _failed("c_loops", exc)
    if lib_path:
        for t in sorted({1, threads}):
            loops = CLoops(lib_path, t)
            m = measure(lambda loops=loops: loops.copy(out, a), **timing)
            yield _record("c_copy", m, "s", bytes=2 * 4 * n, variant=f"C {t}T", threads=t)
            m = measure(lambda loops=loops: loops.triad(out, a, b, 3.0), **timing)
            yield _record("c_triad", m, "s", bytes=3 * 4 * n, variant=f"C {t}T", threads=t)

    # BLAS: float32 matmul, for the training step's share of the machine
    k = 1024
    ma, mb = np.ones((k, k), np.float32), np.ones((k, k), np.float32)
    m = measure(lambda: ma @ mb, **timing)
    yield _record("sgemm_1024", m, "s", flops=2 * k**3, variant="numpy")
    if noise_only:  # the end-of-run pass: bandwidth and FLOPs again (limits: best of both passes)
        return

    # the floor of a Python -> C call on 4 elements: a ufunc with its output given, and one
    # ctypes call doing chain10 / one add
    x4, y4 = np.ones(4, np.float32), np.empty(4, np.float32)
    small = dict(samples=cfg["samples"], warmup=100, min_sample_s=0.02)
    m = measure(lambda: np.add(x4, x4, y4), **small)
    yield _record("ufunc_call_1op_4", m, "s", variant="numpy out")
    if lib_path:
        loops = CLoops(lib_path, 1)
        f10, fadd = loops.lib.nvb_chain10, loops.lib.nvb_add
        px, py = _ptr(x4), _ptr(y4)
        m = measure(lambda: f10(py, px, 4), **small)
        yield _record("c_call_10op_4", m, "s", variant="ctypes")
        m = measure(lambda: fadd(py, px, px, 4), **small)
        yield _record("c_call_1op_4", m, "s", variant="ctypes")

    # the C compiler on the 200-op function fused into one kernel, and loading it from disk
    kernel = (
        "#include <stddef.h>\n#include <math.h>\n"
        "void k200(float *restrict out, const float *restrict in, size_t n) {\n"
        "  for (size_t i = 0; i < n; i++) {\n    float x = in[i], y = x;\n    "
        + W.ops200_c_body()
        + "\n    out[i] = y;\n  }\n}\n"
    )
    so: list[Path] = []
    try:
        m = once(lambda: so.append(build(kernel, workdir, "k200", ["-O2", "-shared", "-fPIC"])))
    except (OSError, RuntimeError) as exc:
        yield _failed("cc_200op", exc)
        return
    yield _record("cc_200op", m, "s", variant="cc -O2")
    loads = []
    for i in range(5):
        fresh = workdir / f"k200_{i}.so"  # a new path each time: dlopen caches by path
        shutil.copy(so[0], fresh)
        t0 = time.perf_counter()
        _ = ctypes.CDLL(str(fresh)).k200  # resolving the symbol is part of the load
        loads.append(time.perf_counter() - t0)
    yield {
        "case": "dlopen_200op",
        "variant": "ctypes",
        "status": "ok",
        "unit": "s",
        "samples": loads,
        "calls_per_sample": 1,
        "median": float(np.median(loads)),
        "min": min(loads),
    }


def compiler_version() -> str:
    try:
        out = subprocess.run([cc_path(), "--version"], capture_output=True, text=True).stdout
        return out.splitlines()[0] if out else "unknown"
    except (OSError, FileNotFoundError):
        return "none"


def scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="nvbench-machine-"))
