"""Test-suite settings.

Hypothesis. Under CI (CI=true) hypothesis draws its examples from a fixed seed, so a CI run
checks exactly the examples that a local `CI=true make test` checked; locally the examples are
fresh on every run (and failures are kept in .hypothesis/ and replayed).

Devices. The op suite runs once per device, with that device as the default (MLX's tests
read ``DEVICE``; here ``--device`` or ``NUVEC_TEST_DEVICE``):

    python -m pytest tests/ops                    # every device this machine has
    python -m pytest tests/ops --device gpu       # the GPU as the default device only
    NUVEC_TEST_DEVICE=cpu python -m pytest tests  # the CPU only, also on a GPU machine
    python -m pytest tests --op-suite --device gpu  # the op suite alone (no OFF_AXIS files)

The value is ``all`` (the default: the CPU, and the GPU where nuvec finds one) or a
comma-separated list of ``cpu`` and ``gpu``. With one device the test ids are unchanged; with
two, each test of the op suite runs as ``test_x[cpu]`` and ``test_x[gpu]``. A GPU asked for where
there is none skips its cases with the backend's reason ("CuPy is not installed ...").
Tests compare against NumPy or the CPU as before: only the default device changes.

Some tests run once whatever ``--device`` says:

- a test marked ``@pytest.mark.cpu_only(reason)``, or using the ``cpu_device`` fixture, runs
  on the CPU (C kernels, buffer donation, the CPU's fusion rules, zero-copy buffers);
- the folders and files in ``OFF_AXIS`` below (a backend's own tests, which pick their devices,
  and tests of processes, sources or the machine) run on nuvec's own default device, the GPU
  where one exists, as they would without this file.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

import nuvec as nv  # noqa: E402
from nuvec.backends import registry  # noqa: E402

HERE = Path(__file__).resolve().parent

#: the first component of a test's path under tests/ -> why it is not run once per device
OFF_AXIS = {
    "cuda": "the CUDA backend's own tests: each picks its devices",
    "metal": "the Metal backend's own tests, on an emulated device",
    "engine": "the kernel generator and the CPU backend's kernels, called directly",
    "distributed": "collectives across processes of their own",
    "test_buffer_protocol.py": "zero-copy buffers are host memory: the file pins the CPU",
    "test_device_info.py": "asks about each device by name",
    "test_examples.py": "the examples, in processes of their own",
    "test_installed.py": "a fresh process outside the checkout",
    "test_benchmarks_smoke.py": "the benchmark harness, in a process of its own",
    "test_benchmarks_cached.py": "NumPy-only benchmark rows",
    "test_fuzz_files.py": "the fuzzer, in a process of its own",
    "test_vectorization.py": "the C compiler's vectorization of the CPU kernels",
    "test_import_layers.py": "reads the sources",
}

GPU_REASON = "no GPU here: " + registry.gpu_unavailable_reason()
HAVE_GPU = registry.gpu_backend_name() is not None
NATURAL = nv.gpu if HAVE_GPU else nv.cpu  # what nuvec makes the default device by itself


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--device",
        default=os.environ.get("NUVEC_TEST_DEVICE", "all"),
        help="the default devices the op suite runs on, once each: 'all' (the CPU, and the GPU "
        "where there is one), or 'cpu', 'gpu', 'cpu,gpu' (default: $NUVEC_TEST_DEVICE or all)",
    )
    parser.addoption(
        "--op-suite",
        action="store_true",
        help="collect only the tests that run once per device (not the OFF_AXIS files)",
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if config.getoption("--op-suite") and off_axis(collection_path):
        return True
    return None


def _devices(value: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    if names == ["all"]:
        return ["cpu", "gpu"] if HAVE_GPU else ["cpu"]
    bad = [n for n in names if n not in ("cpu", "gpu")]
    if not names or bad or len(set(names)) != len(names):
        raise pytest.UsageError(
            f"--device: expected 'all' or a comma-separated list of 'cpu' and 'gpu', got {value!r}"
        )
    return names


@contextlib.contextmanager
def default_device(device: nv.Device):
    """Makes ``device`` the default device for the enclosed code, with the global random key
    on it (compiled stateful steps thread the key: it must live where they run; a draw leaves
    its successor on the draw's stream); both are put back afterwards. Nothing changes where
    both are on ``device`` already."""
    prev, key = nv.default_device(), nv.random.state[0]
    if device == prev and key.stream.device == device:
        yield
        return
    nv.set_default_device(device)
    nv.random.state[0] = nv.array(np.asarray(key))
    try:
        yield
    finally:
        nv.random.state[0] = key
        nv.set_default_device(prev)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cpu_only(reason): runs once, on the CPU, whatever --device says (CPU-only behaviour)",
    )
    config.nuvec_devices = _devices(config.getoption("--device"))  # type: ignore[attr-defined]
    first = config.nuvec_devices[0]  # type: ignore[attr-defined]
    # arrays made at import and collection live on the first device, as in a run on it alone
    if first == "cpu" or HAVE_GPU:
        dev = nv.cpu if first == "cpu" else nv.gpu
        if dev != nv.default_device():
            nv.set_default_device(dev)
            nv.random.state[0] = nv.array(np.asarray(nv.random.state[0]))


def off_axis(path: Path) -> str | None:
    """Why the test file at ``path`` runs once on nuvec's own default device, or None."""
    try:
        rel = path.resolve().relative_to(HERE)
    except ValueError:
        return None
    return OFF_AXIS.get(rel.parts[0]) if rel.parts else None


def _cpu_only(node, fixturenames) -> bool:
    mark = node.get_closest_marker("cpu_only")
    if mark is not None and not (mark.args or mark.kwargs.get("reason")):
        raise pytest.UsageError(f"{node.nodeid}: cpu_only needs a reason, cpu_only('...')")
    return mark is not None or "cpu_device" in fixturenames


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    devices = metafunc.config.nuvec_devices  # type: ignore[attr-defined]
    if (
        len(devices) < 2
        or off_axis(metafunc.definition.path)
        or _cpu_only(metafunc.definition, metafunc.fixturenames)
    ):
        return
    metafunc.parametrize("suite_device", devices, indirect=True, ids=devices)


@pytest.fixture(autouse=True)
def suite_device(request: pytest.FixtureRequest):
    """The default device this test runs on (see the module's docstring); the test may ask
    for it by name."""
    node = request.node
    if off_axis(node.path):
        device = NATURAL
    elif _cpu_only(node, request.fixturenames):
        device = nv.cpu
    else:
        name = getattr(request, "param", request.config.nuvec_devices[0])
        if name == "gpu" and not HAVE_GPU:
            pytest.skip(GPU_REASON)
        device = nv.cpu if name == "cpu" else nv.gpu
    with default_device(device):
        yield device


@pytest.fixture
def cpu_device(request: pytest.FixtureRequest):
    """Runs a test on the CPU where another device is the default: for tests of CPU-only
    behaviour (C kernels and their disk cache, buffer donation, index range checks, test
    primitives that register only a CPU implementation). Asked for by name, the test runs once
    (on the CPU); asked for from inside a test that runs once per device, its GPU case skips
    (the CPU case runs it)."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("suite_device") == "gpu":
        pytest.skip("CPU-only behaviour: its [cpu] case runs it")
    with default_device(nv.cpu):
        yield
