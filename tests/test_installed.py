"""nuvec as installed works on its own: a fused compile in a fresh process, run outside any
checkout with an empty kernel cache, so the generator's headers must come with the package.

With NUVEC_TEST_INSTALLED=1 (`.ci/run`, which tests the wheel in a fresh virtual environment)
the nuvec imported must also be that installed wheel, carrying every file it reads at run time.
"""

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

_FUSED_COMPILE = r"""
import json, warnings
warnings.simplefilter("error", RuntimeWarning)   # e.g. unusable prebuilt kernels
import numpy as np
import nuvec as nv
from nuvec.backends.cpu import jit, kernels

def f(x):
    return nv.tanh(x) * 2 + nv.exp(-x)

x = nv.array(np.linspace(-3, 3, 1001, dtype=np.float32))
fast = nv.compile(f)
got, want = np.array(fast(x)), np.array(f(x))
print(json.dumps({"file": nv.__file__, "same_bits": got.tobytes() == want.tobytes(),
                  "fused_kernels": fast.stats()["fused_kernels"],
                  "compiled": jit.stats()["compiled"],
                  "prebuilt": kernels.cache_info()["prebuilt"]}))
"""


def _run_fused_compile(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(NUVEC_CACHE_DIR=str(tmp_path / "cache"), NUVEC_COMPILE_SYNC="1")
    proc = subprocess.run(
        [sys.executable, "-c", _FUSED_COMPILE],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_fused_compile_in_a_fresh_process(tmp_path):
    got = _run_fused_compile(tmp_path)
    assert got["same_bits"]
    assert got["fused_kernels"] == 1
    assert got["compiled"] >= 1  # built from the packaged headers, not found in a cache


@pytest.mark.skipif(
    not os.environ.get("NUVEC_TEST_INSTALLED"),
    reason="tests an installed wheel (NUVEC_TEST_INSTALLED=1, set by .ci/run)",
)
def test_the_installed_wheel_carries_its_runtime_files(tmp_path):
    dist = importlib.metadata.distribution("nuvec")
    imported = Path(importlib.util.find_spec("nuvec").origin).resolve()
    assert Path(dist.locate_file("nuvec/__init__.py")).resolve() == imported, dist._path
    direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
    assert not direct_url.get("dir_info", {}).get("editable"), "nuvec is an editable install"
    files = {str(f) for f in dist.files}
    wanted = [
        "nuvec/codegen/nv_coeffs.h",
        "nuvec/codegen/nv_math.h",
        "nuvec/codegen/nv_coeffs64.h",
        "nuvec/codegen/nv_math64.h",
        "nuvec/codegen/nv_ops.h",
        "nuvec/backends/cpu/csrc/nv_eltwise.h",
        "nuvec/backends/cpu/csrc/nv_rows.h",
        "nuvec/backends/cpu/_prebuilt_kernels.so",
    ]
    if shutil.which("swift"):  # the wheel was built on this machine (.ci/run)
        shim = "libNuvecShim.dylib" if sys.platform == "darwin" else "libNuvecShim.so"
        wanted.append(f"nuvec/backends/metal/{shim}")
    assert [w for w in wanted if w not in files] == []
    got = _run_fused_compile(tmp_path)
    assert Path(got["file"]).resolve() == Path(dist.locate_file("nuvec/__init__.py")).resolve()
    assert got["prebuilt"] == "loaded"
    assert got["same_bits"] and got["fused_kernels"] == 1
