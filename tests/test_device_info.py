"""nv.is_available, nv.device_count, nv.device_info and the module constants."""

import math
import platform

import numpy as np
import pytest

import nuvec as nv
from nuvec.core.device import gpu_backend_name


def test_cpu_is_available_and_counted_once():
    assert nv.is_available(nv.cpu) is True
    assert nv.is_available(nv.DeviceType.cpu) is True
    assert nv.device_count(nv.DeviceType.cpu) == 1
    assert nv.device_count(nv.cpu) == 1
    assert nv.is_available(nv.Device(nv.DeviceType.cpu, 1)) is False


def test_gpu_availability_matches_the_backend_probe():
    has_gpu = gpu_backend_name() is not None
    assert nv.is_available(nv.gpu) is has_gpu
    assert nv.device_count(nv.DeviceType.gpu) == int(has_gpu)
    assert nv.device_info(nv.gpu) == ({} if not has_gpu else nv.device_info(nv.gpu))
    if has_gpu:
        info = nv.device_info(nv.gpu)
        assert info["device_name"] and info["architecture"]


def test_cpu_info_has_mlx_keys():
    info = nv.device_info(nv.cpu)
    assert isinstance(info, dict)
    assert info["architecture"] == platform.machine()
    assert isinstance(info["device_name"], str) and info["device_name"]
    info["device_name"] = "changed"  # a copy: the cached properties stay
    assert nv.device_info(nv.cpu)["device_name"] != "changed"


def test_default_device_info():
    assert nv.device_info() == nv.device_info(nv.default_device())


@pytest.mark.parametrize("fn", [nv.is_available, nv.device_count, nv.device_info])
def test_wrong_types_raise(fn):
    with pytest.raises(TypeError, match=fn.__name__):
        fn(3)


def test_constants():
    assert nv.pi == math.pi and nv.e == math.e
    assert nv.euler_gamma == pytest.approx(np.euler_gamma, abs=0)
    assert math.isinf(nv.inf) and nv.inf > 0 and math.isnan(nv.nan)
    assert nv.newaxis is None
    x = nv.arange(3)
    assert x[:, nv.newaxis].shape == (3, 1)


def test_device_and_device_type_compare_as_mlx():
    assert nv.Device(nv.cpu) == nv.cpu and nv.Device(nv.cpu).type is nv.DeviceType.cpu
    assert nv.DeviceType.cpu == nv.Device(nv.DeviceType.cpu)
    assert nv.Device(nv.DeviceType.cpu) == nv.DeviceType.cpu
    assert nv.DeviceType.cpu != nv.Device(nv.DeviceType.cpu, 1)
    assert nv.DeviceType.cpu != nv.DeviceType.gpu and nv.DeviceType.cpu != "cpu"
    assert len({nv.DeviceType.cpu, nv.DeviceType.cpu}) == 1
    assert str(nv.Device(nv.cpu)) == "Device(cpu, 0)"
