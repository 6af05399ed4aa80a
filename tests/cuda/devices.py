"""Skip marks for the GPU backend's own tests: ``from devices import cuda_only``.

    pytestmark = cuda_only      # the module needs a CUDA GPU

    @gpu_only                   # a test that needs any GPU backend
    def test_only_on_the_gpu(): ...

``GPU`` is True where nuvec found a usable GPU backend, ``CUDA`` where that backend is CUDA. The
reason a test is skipped is the backend's own ("CuPy is not installed ...", "no CUDA
device ..."). Running the op suite on each device is tests/conftest.py's ``--device``.
"""

from __future__ import annotations

import pytest

import nuvec as nv
from nuvec.backends import registry

GPU = registry.gpu_backend_name() is not None
REASON = "no GPU here: " + (registry.gpu_unavailable_reason() if not GPU else "")
gpu_only = pytest.mark.skipif(not GPU, reason=REASON)
CUDA = registry.gpu_backend_name() == "cuda"
cuda_only = pytest.mark.skipif(not CUDA, reason="no CUDA GPU here: " + nv.cuda.unavailable_reason())
