"""The wheels' baseline build (no -march: x86-64 without FMA) gives the float32 math kernels'
bits of the native build, in both clones of its contiguous loop (nuvec/codegen/dialects/c.py):
the x86-64-v3 one, which the loader picks where the processor has AVX2 and FMA, and the default
one, with fmaf as a libm call (built alone with NV_NO_CLONES)."""

from __future__ import annotations

import ctypes
import platform
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from engine_util import run1
from nuvec.codegen.dialects.c import FLAGS
from nuvec.codegen.generator import kernel_name
from nuvec.codegen.source import generate_many
from nuvec.codegen.ir import KernelSpec

pytestmark = pytest.mark.skipif(
    platform.machine() != "x86_64" or shutil.which("gcc") is None,
    reason="the baseline build's clones are an x86-64 gcc build",
)

OPS = ("exp", "tanh", "erf", "sigmoid", "log", "sin", "expm1", "sinh", "cosh")

RNG = np.random.default_rng(23)
X = np.concatenate(
    [
        RNG.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32),
        RNG.uniform(-12, 12, 1 << 18).astype(np.float32),
        np.linspace(-105, 90, 1 << 16, dtype=np.float32),
        np.array([0, -0.0, np.inf, -np.inf, np.nan, 88.72283, -103.97208, 3.92], np.float32),
    ]
)


def _specs(ops: tuple[str, ...]) -> list[tuple[str, KernelSpec]]:
    specs = [KernelSpec.single(op, ("float32",), "float32") for op in ops]
    return [(kernel_name(s), s) for s in specs]


@pytest.fixture(scope="module", params=["clones", "default clone"])
def baseline_lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    d: Path = tmp_path_factory.mktemp("baseline")
    (d / "k.c").write_text(generate_many(_specs(OPS), "c"))
    extra = ["-DNV_NO_CLONES"] if request.param == "default clone" else []
    cmd = ["gcc", *FLAGS, *extra, "-shared", str(d / "k.c"), "-o", str(d / "k.so")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    return ctypes.CDLL(str(d / "k.so"))


def _call(fn, x: np.ndarray) -> np.ndarray:
    y = np.empty_like(x)
    ptrs = (ctypes.c_void_p * 2)(x.ctypes.data, y.ctypes.data)
    fn.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
    fn(ctypes.c_int64(x.size), ptrs, None)
    return y


@pytest.mark.parametrize("op", OPS)
def test_baseline_build_has_the_native_bits(op: str, baseline_lib: ctypes.CDLL) -> None:
    name = kernel_name(KernelSpec.single(op, ("float32",), "float32"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = run1(op, X)
    got = _call(getattr(baseline_lib, name), X)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), op


def test_baseline_build_has_an_fma_clone() -> None:
    """The contiguous loop of a float32 math kernel has an x86-64-v3 clone and a default one."""
    src = generate_many(_specs(("exp",)), "c")
    r = subprocess.run(
        ["gcc", *FLAGS, "-x", "c", "-", "-S", "-o", "-"], input=src, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "_contig.default" in r.stdout and "_contig.arch_x86_64_v3" in r.stdout
    assert "vfmadd" in r.stdout
