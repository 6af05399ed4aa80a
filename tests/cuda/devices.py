"""Device parametrisation for tests, without a conftest.py: import it from a test module.

    from devices import DEVICES, GPU, gpu_only, on

    @pytest.mark.parametrize("device", DEVICES)       # "cpu", and "gpu" (skipped, with the
    def test_add(device):                             # reason, where there is no GPU)
        with on(device):
            ...

    @gpu_only
    def test_only_on_the_gpu(): ...

``GPU`` is True where nuvec found a usable GPU backend. The reason a GPU case is skipped is the
backend's own (``nv.cuda.unavailable_reason()``, "CuPy is not installed ...", "no CUDA
device ...").
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

import nuvec as nv
from nuvec.backends import registry

GPU = registry.gpu_backend_name() is not None
REASON = "no GPU here: " + (registry.gpu_unavailable_reason() if not GPU else "")
gpu_only = pytest.mark.skipif(not GPU, reason=REASON)
CUDA = registry.gpu_backend_name() == "cuda"
cuda_only = pytest.mark.skipif(not CUDA, reason="no CUDA GPU here: " + nv.cuda.unavailable_reason())

DEVICES = ["cpu", pytest.param("gpu", marks=gpu_only)]


def device(name: str) -> nv.Device:
    return nv.cpu if name == "cpu" else nv.gpu


@contextlib.contextmanager
def on(name: str):
    """Runs the enclosed operations on device ``name`` ("cpu" or "gpu")."""
    with nv.stream(device(name)):
        yield


def add_to_path() -> None:
    """Makes ``import devices`` work from test modules in other folders."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
