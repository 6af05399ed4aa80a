"""The suite's device axis (tests/conftest.py): each test of the op suite runs with its device
as the default, arrays and the global random key on it; a cpu_only test runs on the CPU."""

import numpy as np
import pytest

import nuvec as nv


def test_the_default_device_is_the_tests(suite_device):
    assert nv.default_device() == suite_device
    assert nv.ones((2,)).stream.device == suite_device
    assert nv.random.state[0].stream.device == suite_device
    x = nv.random.uniform(shape=(3,))  # the global key threads through a draw on the device
    assert x.stream.device == suite_device and np.asarray(x).shape == (3,)


@pytest.mark.cpu_only("checks the mark itself")
def test_a_cpu_only_test_runs_on_the_cpu(suite_device):
    assert suite_device == nv.cpu and nv.default_device() == nv.cpu


def test_the_cpu_device_fixture_pins_the_cpu(cpu_device):
    assert nv.default_device() == nv.cpu
