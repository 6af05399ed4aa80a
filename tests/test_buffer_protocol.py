"""The buffer protocol on arrays (memoryview, bytes, NumPy without a copy) and DLPack imports
in every layout and in bfloat16."""

from __future__ import annotations

import ctypes
import gc
import io
import pickle
import weakref

import ml_dtypes
import numpy as np
import pytest

import nuvec as nv


@pytest.fixture(autouse=True)
def _on_the_cpu():
    """The zero-copy contract is about CPU memory: pin the default device (a GPU machine's
    default is the GPU; its arrays export read-only host copies, tested below)."""
    before = nv.default_device()
    nv.set_default_device(nv.cpu)
    yield
    nv.set_default_device(before)


FORMATS = [
    (nv.bool_, np.bool_, "?"),
    (nv.uint8, np.uint8, "B"),
    (nv.uint16, np.uint16, "H"),
    (nv.uint32, np.uint32, "I"),
    (nv.uint64, np.uint64, "Q"),
    (nv.int8, np.int8, "b"),
    (nv.int16, np.int16, "h"),
    (nv.int32, np.int32, "i"),
    (nv.int64, np.int64, "q"),
    (nv.float16, np.float16, "e"),
    (nv.float32, np.float32, "f"),
    (nv.complex64, np.complex64, "Zf"),
]


@pytest.mark.parametrize("dtype,np_dtype,fmt", FORMATS)
def test_memoryview_format_shape_strides_and_values(dtype, np_dtype, fmt):
    ref = (np.arange(12).reshape(3, 4) % 7).astype(np_dtype)
    a = nv.array(ref)
    for x, r in ((a, ref), (a.T, ref.T)):
        mv = memoryview(x)
        assert mv.format == fmt
        assert mv.shape == r.shape and mv.strides == r.strides
        assert mv.itemsize == r.itemsize and not mv.readonly
        np.testing.assert_array_equal(np.array(mv, copy=False), r)


def test_float64_format():
    mv = memoryview(nv.array([1.0, 2.0], nv.float64))
    assert mv.format == "d" and mv.tolist() == [1.0, 2.0]


def test_the_view_is_the_arrays_memory():
    a = nv.arange(4, dtype=nv.float32) * 2
    mv = memoryview(a)
    np.asarray(mv)[1] = 7.0  # written through the view, seen by the array (as MLX)
    assert a.tolist() == [0.0, 7.0, 4.0, 6.0]
    assert np.shares_memory(np.asarray(a), np.asarray(mv))


def test_a_lazy_array_is_evaluated_first():
    a = nv.exp(nv.zeros((3,)))
    assert not a.is_evaluated
    assert memoryview(a).tolist() == [1.0, 1.0, 1.0]


def test_bfloat16_exports_no_buffer_and_numpy_takes_it_through_array():
    a = nv.array([1.5, -2.0], dtype=nv.bfloat16)
    with pytest.raises(BufferError, match="no buffer format NumPy reads"):
        memoryview(a)
    h = np.asarray(a)  # NumPy falls back to __array__ where the buffer is refused
    assert h.dtype == ml_dtypes.bfloat16 and h.astype(np.float32).tolist() == [1.5, -2.0]
    bits = memoryview(a.view(nv.uint16))
    assert bits.format == "H" and bits.tolist() == h.view(np.uint16).tolist()


def test_bytes_of_an_array():
    a = ord("a") * 257 + nv.arange(10).astype(nv.int16)
    b = bytes(a)
    assert len(b) == 20 and b[::2] == b"abcdefghij" and b[1::2] == b"a" * 10


def test_broadcast_view_is_read_only():
    b = nv.broadcast_to(nv.array([1.0, 2.0]), (3, 2))
    mv = memoryview(b)
    assert mv.strides == (0, 4) and mv.readonly
    assert np.asarray(mv).tolist() == [[1.0, 2.0]] * 3


def test_the_view_keeps_the_array_alive():
    a = nv.arange(3)
    wr = weakref.ref(a)
    mv = memoryview(a)
    del a
    gc.collect()
    assert wr() is not None
    assert mv.tolist() == [0, 1, 2]
    del mv
    gc.collect()
    assert wr() is None

    a = nv.arange(3)
    wr = weakref.ref(a)
    view = np.array(a, copy=False)
    del a
    assert wr() is not None
    del view
    assert wr() is None


def test_pickle_and_copy_still_work():
    a = nv.array([[1.0, 2.0]])
    assert pickle.loads(pickle.dumps(a)).tolist() == [[1.0, 2.0]]


def test_index_of_many_elements_is_a_type_error():
    with pytest.raises(TypeError):
        range(10)[nv.array([1, 2])]
    assert range(10)[nv.array(3)] == 3


def test_from_dlpack_shares_strided_layouts():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for src in (
        x.T,
        np.arange(20, dtype=np.int32)[2:10:2],
        np.broadcast_to(np.array([7], dtype=np.int32), (3,)),
    ):
        y = nv.from_dlpack(src)
        mv = memoryview(y)
        assert y.tolist() == src.tolist()
        assert mv.strides == src.strides and not mv.c_contiguous
        assert (y + 1).tolist() == (src + 1).tolist()
    with pytest.raises(ValueError, match="negative stride"):
        nv.from_dlpack(np.arange(5, dtype=np.float32)[::-1])


class _Producer:
    """A DLPack producer over a NumPy array, of a dtype relabelled in its capsule."""

    def __init__(self, array, code, bits):
        self.array, self.code, self.bits = array, code, bits

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, *args, **kwargs):
        import ctypes

        cap = self.array.__dlpack__()
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        dt = (ctypes.c_uint8 * 2).from_address(get(cap, b"dltensor") + 20)
        dt[0], dt[1] = self.code, self.bits
        return cap


def test_from_dlpack_bfloat16_and_refused_dtypes():
    bits = np.array([1.5, -2.0, 3.25], np.float32).view(np.uint32) >> 16
    src = bits.astype(np.uint16)
    y = nv.from_dlpack(_Producer(src, 4, 16))  # kDLBfloat
    assert y.dtype == nv.bfloat16 and y.tolist() == [1.5, -2.0, 3.25]
    assert nv.array(_Producer(src, 4, 16)).dtype == nv.bfloat16
    with pytest.raises(ValueError, match="from_dlpack"):
        nv.from_dlpack(_Producer(src.view(np.float16), 5, 32))  # complex32


@pytest.mark.skipif(not nv.is_available(nv.gpu), reason="needs a GPU")
def test_a_gpu_array_exports_a_read_only_host_copy():
    a = nv.negative(nv.arange(6, dtype=nv.float32), stream=nv.gpu)  # computed in GPU memory
    mv = memoryview(a)
    assert mv.readonly and mv.tolist() == [-0.0, -1.0, -2.0, -3.0, -4.0, -5.0]
    with pytest.raises(TypeError, match="read-write"):  # readinto reports the refusal so
        io.BytesIO(bytes(24)).readinto(a)


def test_a_cpu_array_exports_a_writable_buffer():
    a = nv.arange(4, dtype=nv.float32) * 2
    raw = (ctypes.c_float * 4).from_buffer(a)
    raw[1] = 7.0
    assert a.tolist() == [0.0, 7.0, 4.0, 6.0]
    io.BytesIO(np.full(4, 3.0, np.float32).tobytes()).readinto(a)
    assert a.tolist() == [3.0, 3.0, 3.0, 3.0]
