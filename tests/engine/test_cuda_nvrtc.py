"""The CUDA dialect on a real GPU: NVRTC compiles the generated source with the dialect's
options (--fmad=false --ftz=false --prec-div=true --prec-sqrt=true), directly through
cuda.bindings.nvrtc because CuPy's RawModule appends -ftz=true after the caller's options
(cupy issue 9576) and would flush subnormals; CuPy loads the cubin and launches. Every entry
point (contig / scalar / strided x i32 / i64) is compared with the CPU engine: bit for bit
(any NaN equals any NaN: GPUs return the canonical NaN; the float64 functions are nuvec's own,
nv_math64.h, the same code on both). Skipped without CuPy, cuda.bindings and a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine_util import npdtype, values
from nuvec.codegen import generate_many
from nuvec.codegen.dialects.cuda import NVRTC_OPTIONS
from nuvec.codegen.ir import KernelSpec
from nuvec.codegen.ops import ARITY, result_dtype, supports
from nuvec.backends.cpu import kernels
from test_fusion import random_spec

cp = pytest.importorskip("cupy")
try:
    HAVE_GPU = cp.cuda.runtime.getDeviceCount() > 0
except Exception:  # no driver
    HAVE_GPU = False
pytestmark = pytest.mark.skipif(not HAVE_GPU, reason="needs a CUDA GPU")


def _specs() -> list[tuple[str, KernelSpec]]:
    out = []
    for op, ar in ARITY.items():
        for d in (
            "float32",
            "float16",
            "bfloat16",
            "float64",
            "int8",
            "int32",
            "uint64",
            "complex64",
            "bool",
        ):
            if not supports(op, d, "cuda"):
                continue
            if op == "astype":
                out += [
                    KernelSpec.single("astype", (d,), t)
                    for t in (
                        "bool",
                        "uint8",
                        "int64",
                        "float16",
                        "bfloat16",
                        "float32",
                        "float64",
                        "complex64",
                    )
                ]
                continue
            ins = ("bool", d, d) if op == "select" else (d,) * ar
            out.append(KernelSpec.single(op, ins, result_dtype(op, ins)))
    out += [random_spec(700 + s) for s in range(12)]
    return [(f"g{i}", s) for i, s in enumerate(out)]


def _dev(x: np.ndarray):
    return cp.asarray(np.ascontiguousarray(x).view(np.uint8))


def _host(d, shape, dtype):
    return cp.asnumpy(d).view(npdtype(dtype)).reshape(shape)


def _same_bits_but_nan(got: np.ndarray, ref: np.ndarray, what: str) -> None:
    """Bit for bit, except that any NaN equals any NaN (GPUs return the canonical NaN)."""
    if got.dtype.kind == "c":
        _same_bits_but_nan(got.real.copy(), ref.real.copy(), what + " (re)")
        _same_bits_but_nan(got.imag.copy(), ref.imag.copy(), what + " (im)")
        return
    same = got.view(np.uint8).reshape(got.size, -1) == ref.view(np.uint8).reshape(ref.size, -1)
    same = same.all(axis=1)
    if got.dtype.kind == "f" or got.dtype.itemsize == 2 and got.dtype.kind == "V":
        g64, r64 = got.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
        same |= np.isnan(g64) & np.isnan(r64)
    assert same.all(), f"{what}: {got.ravel()[~same][:5]} vs {ref.ravel()[~same][:5]}"


def _compile(src: str):
    """NVRTC -> cubin for this GPU -> a CuPy module (options exactly as given)."""
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    cc = cp.cuda.Device().compute_capability
    err, prog = nvrtc.nvrtcCreateProgram(src.encode(), b"nuvec.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    opts = [o.encode() for o in NVRTC_OPTIONS] + [f"-arch=sm_{cc}".encode()]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise AssertionError(log.decode(errors="replace")[:4000])
    _, size = nvrtc.nvrtcGetCUBINSize(prog)
    cubin = b" " * size
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    mod = cp.cuda.function.Module()
    mod.load(cubin)
    return mod


def test_cuda_matches_cpu() -> None:
    specs = _specs()
    mod = _compile(generate_many(specs, "cuda"))
    rng = np.random.default_rng(3)
    shape = (3, 41)
    n = 3 * 41
    checked = 0
    for name, spec in specs:
        ins = [values(d, n, rng).reshape(shape) for d in spec.inputs]
        want = kernels.run(spec, ins, shape)
        outs_dt = [spec.nodes[o].dtype for o in spec.outputs]
        for variant in ("contig", "scalar", "strided"):
            if variant == "scalar":
                dins = [_dev(ins[0].reshape(-1)[:1])] + [_dev(x) for x in ins[1:]]
                ref = kernels.run(spec, [ins[0].reshape(-1)[0:1].reshape(())] + ins[1:], shape)
            elif variant == "strided":
                dins = [_dev(x.T.copy()) for x in ins]  # read through strides (1, 3)
                ref = want
            else:
                dins = [_dev(x) for x in ins]
                ref = want
            meta = cp.asarray(
                np.array([3, 41] + [1, 3] * len(ins) + [41, 1] * len(outs_dt), np.int64)
            )
            for idx, I in (("i32", np.int32), ("i64", np.int64)):
                douts = [cp.zeros(n * np.dtype(npdtype(d)).itemsize, cp.uint8) for d in outs_dt]
                args = [I(n)]
                if variant == "strided":
                    args += [np.int32(2), meta]
                for k, a in enumerate(dins):
                    args.append(a)
                    if variant == "scalar":
                        args.append(I(0 if k == 0 else 1))
                args += douts
                fn = mod.get_function(f"{name}_{variant}_{idx}")
                fn((3,), (32,), tuple(args))
                for dout, d, r in zip(douts, outs_dt, ref):
                    got = _host(dout, shape, d)
                    what = f"{name} {variant}_{idx} {spec}"
                    _same_bits_but_nan(got, r, what)
                checked += 1
    print(f"checked {checked} CUDA launches over {len(specs)} specs")
