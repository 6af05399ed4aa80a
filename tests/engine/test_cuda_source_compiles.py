"""The CUDA dialect's source compiles, without a GPU: NVRTC (the pip wheels of the `nvrtc` extra,
which CI installs) compiles every single-op kernel's ``vec`` (32-bit index) and ``strided``
(64-bit index) entry points for sm_90 with the dialect's exact options, in modules of
``CHUNK`` kernels as the backend batches them. Running them needs a GPU
(``test_cuda_nvrtc.py``); a source error in the shared math headers or the generator shows up
here first.
"""

from __future__ import annotations

import pytest

from nuvec.backends.cuda import source
from nuvec.codegen.prebuilt import prebuilt_specs

nvrtc = pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC: pip install 'nuvec[nvrtc]'")

ARCH = b"--gpu-architecture=sm_90"
CHUNK = 128


def _keys() -> list[tuple]:
    keys = []
    for _, spec in prebuilt_specs("cuda"):
        keys.append((spec, "vec", "i32", tuple(0 for _ in spec.inputs)))
        keys.append((spec, "strided", "i64", ()))
    return keys


KEYS = _keys()


def _compile(src: str) -> str | None:
    """NVRTC's log where ``src`` fails to compile, else None."""
    opts = [o.encode() for o in source.nvrtc_options(False)] + [ARCH]
    err, prog = nvrtc.nvrtcCreateProgram(src.encode(), b"kernels.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if err == nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return None
        _, n = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * n
        nvrtc.nvrtcGetProgramLog(prog, log)
        return log.decode(errors="replace")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def test_every_single_op_kernel_is_listed() -> None:
    names = {spec.nodes[0].op for spec, *_ in KEYS}
    assert {"exp", "sin", "power", "add", "astype", "select"} <= names
    assert any(spec.inputs[0] == "float64" for spec, *_ in KEYS)


@pytest.mark.parametrize("first", range(0, len(KEYS), CHUNK))
def test_the_cuda_source_compiles(first: int) -> None:
    keys = KEYS[first : first + CHUNK]
    src, names = source.batch_source(keys)
    assert len(names) == len(keys)
    log = _compile(src)
    assert log is None, log[:4000]


def test_a_source_error_is_reported() -> None:
    src, _ = source.batch_source(KEYS[:1])
    log = _compile(src + "\n__global__ void broken() { undeclared_name = 1; }\n")
    assert log is not None and "undeclared_name" in log
