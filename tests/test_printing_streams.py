"""Print options, thread-local streams, clear_streams and set_wired_limit."""

import threading

import numpy as np
import pytest

import nuvec as nv


def test_printoptions_precision():
    x = nv.array([1.123456789], dtype=nv.float32)
    default = str(x)
    with nv.printoptions(precision=4):
        assert str(x) == "array([1.1235], dtype=float32)"
        assert nv.get_printoptions().precision == 4
    assert str(x) == default and nv.get_printoptions().precision == -1
    try:
        nv.set_printoptions(precision=2)
        assert str(nv.sin(x)) == "array([0.90], dtype=float32)"
        assert repr(nv.array([1, 2])) == "array([1, 2], dtype=int32)"
    finally:
        nv.set_printoptions(-1)
    assert str(x) == default
    with pytest.raises(TypeError, match="set_printoptions"):
        nv.set_printoptions(precision=2.5)


def test_thread_local_stream_differs_per_thread():
    tls = nv.new_thread_local_stream(nv.cpu)
    here = [None]
    from nuvec.core.device import resolve_stream

    mine = resolve_stream(tls)
    assert resolve_stream(tls) is mine and mine.device == nv.cpu

    def other():
        here[0] = resolve_stream(tls)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert here[0] != mine and here[0].device == nv.cpu
    y = nv.add(nv.array([1.0]), 2.0, stream=tls)
    assert y.tolist() == [3.0]
    with nv.stream(tls):
        assert nv.ones((2,)).tolist() == [1.0, 1.0]


def test_clear_streams_restores_the_default():
    from nuvec.core.device import current_stream

    s = nv.new_stream(nv.cpu)
    nv.set_default_stream(s)
    assert current_stream() == s
    nv.clear_streams()
    assert current_stream() == nv.default_stream(nv.default_device())


def test_set_wired_limit():
    assert nv.set_wired_limit(1 << 20) == 0
    with pytest.raises(ValueError, match="set_wired_limit"):
        nv.set_wired_limit(-1)
    with pytest.raises(TypeError, match="set_wired_limit"):
        nv.set_wired_limit("1")


def test_arrays_print_in_mlx_format():
    assert str(nv.array(1.0)) == "array(1, dtype=float32)"
    assert str(nv.array([1.123456789])) == "array([1.12346], dtype=float32)"
    assert str(nv.array([1.2], nv.float16)) == "array([1.2002], dtype=float16)"
    assert str(nv.array([1 + 1j, 1 - 1j])) == "array([1+1j, 1-1j], dtype=complex64)"
    assert str(nv.array([True, False])) == "array([True, False], dtype=bool)"
    assert str(nv.array([1] * 7)) == "array([1, 1, 1, ..., 1, 1, 1], dtype=int32)"
    assert str(nv.array([[1, 2]] * 7)) == (
        "array([[1, 2],\n       [1, 2],\n       [1, 2],\n       ...,\n"
        "       [1, 2],\n       [1, 2],\n       [1, 2]], dtype=int32)"
    )
    assert str(nv.array([[[1, 2]] * 2] * 2)) == (
        "array([[[1, 2],\n        [1, 2]],\n       [[1, 2],\n        [1, 2]]], dtype=int32)"
    )
    assert str(nv.array([np.inf, -np.inf, np.nan])) == "array([inf, -inf, nan], dtype=float32)"
    assert str(nv.zeros((0,))) == "array([], dtype=float32)"
    with nv.printoptions(precision=3):
        assert str(nv.array([1 - 0.5j])) == "array([1.000-0.500j], dtype=complex64)"


def test_finfo_of_complex_reports_the_real_component():
    assert nv.finfo(nv.complex64).dtype == nv.float32 and nv.finfo(nv.complex64).bits == 32
