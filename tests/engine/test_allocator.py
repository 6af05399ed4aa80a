"""The buffer cache: reuse, alignment, statistics, limits, and user memory left alone."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from nuvec.backends.cpu import _allocator as A
from nuvec.backends.cpu import memory
from nuvec.codegen.ir import KernelSpec
from nuvec.backends.cpu import kernels


@pytest.fixture(autouse=True)
def _limits():
    prev_c = memory.set_cache_limit(1 << 34)
    prev_m = memory.set_memory_limit(1 << 40)
    memory.clear_cache()
    yield
    memory.set_cache_limit(prev_c)
    memory.set_memory_limit(prev_m)


def test_same_memory_comes_back() -> None:
    a = memory.empty((1000, 1000), np.float32)
    addr = a.ctypes.data
    del a
    gc.collect()
    b = memory.empty((1000, 1000), np.float32)
    assert b.ctypes.data == addr
    c = memory.empty((1000, 1000), np.float32)  # b is alive: a different block
    assert c.ctypes.data != addr


def test_kernel_outputs_are_recycled() -> None:
    x = np.ones(1 << 20, np.float32)
    spec = KernelSpec.single("exp", ("float32",), "float32")
    out = kernels.run(spec, [x], x.shape)[0]
    addr = out.ctypes.data
    assert memory.is_cached_array(out)
    del out
    hits = A.cache_stats()["hits"]
    out2 = kernels.run(spec, [x], x.shape)[0]
    assert out2.ctypes.data == addr and A.cache_stats()["hits"] == hits + 1


def test_views_keep_the_buffer() -> None:
    a = memory.empty(4096, np.int32)
    a[:] = np.arange(4096)
    v = a[100:200]
    addr = a.ctypes.data
    del a
    gc.collect()
    b = memory.empty(4096, np.int32)  # must not reuse v's memory
    b[:] = -1
    assert b.ctypes.data != addr
    assert v.tolist() == list(range(100, 200))
    assert memory.is_cached_array(v)


def test_alignment() -> None:
    for n in (1, 63, 1000, 5000, 3 << 20):
        a = memory.empty(n, np.uint8)
        assert a.ctypes.data % 64 == 0
    big = memory.empty(4 << 20, np.uint8)
    assert big.ctypes.data % (2 << 20) == 0


def test_statistics() -> None:
    base_active = memory.get_active_memory()
    memory.reset_peak_memory()
    a = memory.empty(1 << 20, np.uint8)
    cap = A.size_class_of(1 << 20)
    assert memory.get_active_memory() == base_active + cap
    assert memory.get_peak_memory() >= base_active + cap
    del a
    assert memory.get_active_memory() == base_active
    assert memory.get_cache_memory() >= cap
    assert memory.get_peak_memory() >= base_active + cap
    memory.reset_peak_memory()
    assert memory.get_peak_memory() == 0  # MLX's reset: to zero, not to the active memory
    b = memory.empty(1 << 10, np.uint8)
    assert memory.get_peak_memory() == memory.get_active_memory()  # the live memory counts
    del b
    memory.clear_cache()
    assert memory.get_cache_memory() == 0


def test_cache_limit() -> None:
    prev = memory.set_cache_limit(0)
    assert prev == 1 << 34
    a = memory.empty(1 << 16, np.uint8)
    del a
    assert memory.get_cache_memory() == 0  # caching disabled
    assert memory.set_cache_limit(3 << 16) == 0
    bufs = [memory.empty(1 << 16, np.uint8) for _ in range(5)]
    del bufs
    assert memory.get_cache_memory() <= 3 << 16  # oldest released beyond the limit
    assert memory.get_cache_memory() > 0


def test_cache_evicts_least_recently_freed() -> None:
    c8, c20 = A.size_class_of(8192), A.size_class_of(20000)
    memory.set_cache_limit(2 * c8 + c20 - 1)  # room for all three but one byte
    a = memory.empty(8192, np.uint8)
    b = memory.empty(8192, np.uint8)
    c = memory.empty(20000, np.uint8)
    pb = b.ctypes.data
    del a  # freed first: the one to go
    del b
    del c  # over the limit by a byte
    assert memory.get_cache_memory() == c8 + c20
    st = A.cache_stats()
    d = memory.empty(8192, np.uint8)  # b is still cached
    e = memory.empty(8192, np.uint8)  # a was released: a miss
    st2 = A.cache_stats()
    assert d.ctypes.data == pb
    assert st2["hits"] == st["hits"] + 1 and st2["misses"] == st["misses"] + 1
    del d, e


def test_memory_limit_releases_cache() -> None:
    a = memory.empty(1 << 20, np.uint8)
    del a
    assert memory.get_cache_memory() > 0
    assert memory.set_memory_limit(memory.get_active_memory() + (1 << 20)) == 1 << 40
    b = memory.empty(3 << 20, np.uint8)  # over the limit: cache released
    assert memory.get_cache_memory() == 0
    assert b.nbytes == 3 << 20  # and the allocation still proceeds


def test_user_memory_is_never_recycled() -> None:
    user = np.arange(1 << 16, dtype=np.float32)
    assert not memory.is_cached_array(user)
    spec = KernelSpec.single("negative", ("float32",), "float32")
    out = kernels.run(spec, [user], user.shape)[0]
    before = memory.get_cache_memory()
    del out
    assert memory.get_cache_memory() > before
    for _ in range(3):
        kernels.run(spec, [user], user.shape)
    assert user[5] == 5.0  # the input is untouched
    wrapped = np.frombuffer(bytearray(64), np.uint8)
    assert not memory.is_cached_array(wrapped)


def test_buffer_protocol() -> None:
    a = memory.empty(16, np.uint8)
    buf = a.base
    assert isinstance(buf, A.Buffer)
    mv = memoryview(buf)
    assert mv.nbytes == 16 and not mv.readonly
    mv[0] = 7
    assert a[0] == 7
    assert np.asarray(buf).shape == (16,)


def test_bad_limits() -> None:
    with pytest.raises(ValueError, match="set_cache_limit"):
        memory.set_cache_limit(-1)
    with pytest.raises(ValueError, match="set_memory_limit"):
        memory.set_memory_limit(-5)
    with pytest.raises(ValueError, match="negative dimension"):
        memory.empty((-1, 2), np.float32)


def test_loop_does_not_grow() -> None:
    x = np.ones(1 << 18, np.float32)
    spec = KernelSpec.single("add", ("float32", "float32"), "float32")
    kernels.run(spec, [x, x], x.shape)
    misses = A.cache_stats()["misses"]
    active = memory.get_active_memory()
    for _ in range(50):
        y = kernels.run(spec, [x, x], x.shape)[0]
        del y
    assert A.cache_stats()["misses"] == misses
    assert memory.get_active_memory() == active
