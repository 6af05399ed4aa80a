"""The CPU's BLAS: which library multiplies matrices, and sharing the cores with its threads.

Which library. Intel's MKL where its wheel is installed (``pip install -e '.[mkl]'``, x86-64),
else NumPy's own BLAS (OpenBLAS in NumPy's wheels); ``NUVEC_BLAS=numpy`` picks NumPy's even
when MKL is there. On a 2-core Xeon MKL's sgemm took 2.8 ms for the five
products of an MLP training step that OpenBLAS took 3.3 ms for. MKL is called through
``_gemm`` (its CBLAS entry points by address) and runs in its strict reproducible mode
(``MKL_CBWR=AUTO,STRICT``, unless the user set ``MKL_CBWR``): a product's bits depend neither
on the thread count nor on the operands' alignment, so eager and compiled results stay equal
bit for bit. Its threads come from GNU OpenMP where that loads (short spins), else Intel's.

    from nuvec.backends.cpu import blas
    blas.provider()          # 'mkl' or 'numpy'

Sharing the cores. A BLAS library keeps its worker threads busy-waiting for the next call for
a while after each call: NumPy's OpenBLAS for 2**28 CPU cycles by default (about 0.1 s;
``OPENBLAS_THREAD_TIMEOUT=n`` makes it 2**n), Intel's OpenMP for ``KMP_BLOCKTIME`` (200 ms),
GNU OpenMP for ``GOMP_SPINCOUNT`` pauses (300,000). An element-wise launch that splits its work
over every core in that window puts its workers on cores a spinning BLAS thread holds: the
launch waits for them, and the next matmul waits in turn. On a 2-core machine a compiled MLP
training step (matmuls between small element-wise kernels) measured faster with
single-threaded element-wise kernels, the matmuls included.

So after each BLAS call the CPU backend tells the kernel launcher (``_eltwise.share_cores``)
that the BLAS workers hold their cores for the spin window: until then a launch uses only the
cores they leave. Kernels far from any matmul keep every thread. Results do not depend on the
thread count (each element is computed the same way on any thread).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import sysconfig
from pathlib import Path

import numpy as np

from . import _gemm
from ._eltwise import share_cores, use_openmp
from .cores import usable_cpus

_CYCLES_PER_S = 2.0e9  # a slow clock: the longest plausible window for a cycle count
_PAUSE_CYCLES = 140  # one x86 PAUSE (GNU OpenMP's spin step) on Skylake-SP and later

# MKL's run-time settings (mkl_service.h, mkl_cbwr.h)
_LP64, _GNU, _INTEL, _SEQUENTIAL = 0, 3, 0, 1
_CBWR_AUTO_STRICT = 0x10002


_cpu_count = usable_cpus
# GNU OpenMP's spin before a waiting thread sleeps, where the user set no wait policy: its
# default (300,000 pauses, tens of milliseconds) lets an idle worker take the core that the
# working thread needs on a busy machine; 10,000 (under a millisecond) still spans the gaps
# between the products and kernels of a step.
_GOMP_SPINCOUNT = "10000"


def _numpy_blas_name() -> str:
    try:
        return str(np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]).lower()
    except (AttributeError, KeyError, TypeError):  # pragma: no cover - an unusual NumPy build
        return ""


def _env_int(*names: str) -> int | None:
    for name in names:
        v = os.environ.get(name, "").strip()
        if v:
            try:
                return int(v.split(",")[0])
            except ValueError:
                return None
    return None


def _loads(name: str) -> bool:
    try:
        ctypes.CDLL(name)
        return True
    except OSError:
        return False


def _loaded(name: str) -> bool:
    """Whether a library of this file name is mapped into the process already."""
    try:
        return name in Path("/proc/self/maps").read_text()
    except OSError:  # pragma: no cover - not Linux
        return False


def _load_gomp() -> bool:
    """Loads GNU OpenMP with a short spin (``_GOMP_SPINCOUNT``) unless the user chose one
    (``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT``) or it is loaded already; it reads them once,
    when it loads. The variable is set only while it loads (children are not affected)."""
    name = "libgomp.so.1"
    if _loaded(name) or any(os.environ.get(v) for v in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")):
        return _loads(name)
    os.environ["GOMP_SPINCOUNT"] = _GOMP_SPINCOUNT
    try:
        return _loads(name)
    finally:
        del os.environ["GOMP_SPINCOUNT"]


def _address(lib: ctypes.CDLL, name: str) -> int:
    """The address of ``name`` in ``lib``; 0 where the build lacks it (a batch entry point)."""
    fn = getattr(lib, name, None)
    return ctypes.cast(fn, ctypes.c_void_p).value if fn is not None else 0


def _mkl_path() -> Path | None:
    """libmkl_rt from the mkl wheel (the environment's lib folder, or the base interpreter's
    for a virtual environment that sees its packages) or the system's."""
    for prefix in dict.fromkeys((sysconfig.get_paths()["data"], sys.base_prefix)):
        here = sorted((Path(prefix) / "lib").glob("libmkl_rt.so*"))
        if here:
            return here[-1]
    found = ctypes.util.find_library("mkl_rt")
    return Path(found) if found else None


def _load_mkl() -> tuple[str, int] | None:
    """Loads MKL and installs its gemm in ``_gemm``: (threading layer, threads), or None
    where MKL is absent or not wanted. The threading layer is chosen before any other MKL
    call (a layer whose library is missing would abort the process on first use)."""
    if os.environ.get("NUVEC_BLAS", "").strip().lower() == "numpy":
        return None
    path = _mkl_path()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(str(path))
    except OSError:
        return None
    folder = path.parent
    if any(folder.glob("libmkl_gnu_thread.so*")) and _load_gomp():
        layer, name = _GNU, "gnu"
    elif any(folder.glob("libmkl_intel_thread.so*")) and any(folder.glob("libiomp5.so*")):
        layer, name = _INTEL, "intel"
    else:
        layer, name = _SEQUENTIAL, "sequential"
    lib.MKL_Set_Interface_Layer(_LP64)  # 32-bit integers, as _gemm declares
    lib.MKL_Set_Threading_Layer(layer)
    if not os.environ.get("MKL_CBWR"):
        lib.MKL_CBWR_Set(_CBWR_AUTO_STRICT)
    _gemm.set_routines(
        *(
            _address(lib, f"cblas_{name}")
            for name in ("sgemm", "dgemm", "sgemm_batch", "dgemm_batch")
        )
    )
    # the user's count is kept as it is; by default the usable CPUs, fewer under load
    chosen = any(os.environ.get(v) for v in ("MKL_NUM_THREADS", "OMP_NUM_THREADS"))
    if not chosen:
        lib.MKL_Set_Num_Threads(_cpu_count())
    threads = int(lib.MKL_Get_Max_Threads())
    _gemm.set_threads(_address(lib, "MKL_Set_Num_Threads_Local"), threads, not chosen)
    return name, threads


_MKL = _load_mkl()


def _join_openmp_team() -> bool:
    """Element-wise launches run on the OpenMP team of MKL's GNU threading layer (see
    nv_eltwise.c): the same threads as the matmuls, so nothing spins beside them."""
    if not _MKL or _MKL[0] != "gnu":
        return False
    gomp = ctypes.CDLL("libgomp.so.1")
    use_openmp(
        *(
            _address(gomp, name)
            for name in ("GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads")
        )
    )
    return True


_TEAM = _join_openmp_team()


def provider() -> str:
    """The library that multiplies float32/float64 matrices on the CPU: 'mkl' or 'numpy'."""
    return "mkl" if _MKL else "numpy"


def spin_window() -> tuple[float, int]:
    """(seconds the BLAS workers busy-wait after a call, how many of them) for the BLAS in
    use; (0.0, 0) when it does not spin or runs single-threaded."""
    if _TEAM:
        return 0.0, 0  # element-wise launches run on the BLAS's own threads
    cores = _cpu_count()
    name = f"mkl-{_MKL[0]}" if _MKL else _numpy_blas_name()
    threads = _MKL[1] if _MKL else None
    if "openblas" in name:
        threads = _env_int("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
        n = _env_int("OPENBLAS_THREAD_TIMEOUT")
        seconds = (2 ** min(max(n, 4), 30) if n else 2**28) / _CYCLES_PER_S
    elif name == "mkl-gnu":
        policy = os.environ.get("OMP_WAIT_POLICY", "").strip().lower()
        spins = _env_int("GOMP_SPINCOUNT")
        spins = 0 if policy == "passive" else 300_000 if spins is None else spins
        seconds = (2**30 if policy == "active" else spins * _PAUSE_CYCLES) / _CYCLES_PER_S
    elif "mkl" in name and name != "mkl-sequential":
        if not _MKL:
            threads = _env_int("MKL_NUM_THREADS", "OMP_NUM_THREADS")
        ms = _env_int("KMP_BLOCKTIME")
        seconds = (200 if ms is None else ms) / 1000.0
    else:
        return 0.0, 0
    workers = min(threads or cores, cores) - 1  # the calling thread does not spin
    return (seconds, workers) if workers > 0 and seconds > 0 else (0.0, 0)


_SECONDS, _WORKERS = spin_window()
_LEFT = max(1, _cpu_count() - _WORKERS)


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = a @ b`` with the BLAS in use (NumPy's matmul for what MKL's path does not
    take: other dtypes, fewer than two dimensions); opens the spin window after a BLAS call."""
    if not _gemm.product(a, b, out):
        np.matmul(a, b, out=out)
        if a.dtype.kind not in "fc":
            return  # NumPy's own loops for integers: no BLAS threads
    after_call()


def after_call() -> None:
    """Records a BLAS call that just returned (its workers now spin for the window)."""
    if _WORKERS:
        share_cores(_SECONDS, _LEFT)
