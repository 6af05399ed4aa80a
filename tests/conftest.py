"""Test-suite settings. Under CI (CI=true) hypothesis draws its examples from a fixed seed, so
a CI run checks exactly the examples that a local `CI=true make test` checked; locally the
examples are fresh on every run (and failures are kept in .hypothesis/ and replayed)."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


import pytest  # noqa: E402


@pytest.fixture
def cpu_device():
    """Runs a test on the CPU where a GPU is the default device: for tests of CPU-only
    behaviour (C kernels and their disk cache, buffer donation, index range checks, test
    primitives that register only a CPU implementation)."""
    import numpy as np

    import nuvec as nv

    prev, key = nv.default_device(), nv.random.state[0]
    nv.set_default_device(nv.cpu)
    # the global key was made on the default device at import: a copy on the CPU, so that
    # compiled stateful steps (which thread it) see CPU data only
    nv.random.state[0] = nv.array(np.asarray(key))
    try:
        yield
    finally:
        nv.random.state[0] = key
        nv.set_default_device(prev)
