"""The Python binding against a real build of the Swift shim (swift/ -> libNuvecShim).

On Linux this runs the ABI for real and checks that it reports no Metal device; the tests
marked "needs Metal" run only where a Metal GPU opens (macOS CI), and are skipped here.
If no library is found and `swift` is installed, the fixture builds one (release).
"""

from __future__ import annotations

import ctypes
import gc
import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from nuvec.backends.metal import shim

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "shim" / "nuvec_shim.h"


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    """The loaded shim; builds it when swift is present and no build is found."""
    if shim.find_library() is None:
        if shutil.which("swift") is None:
            pytest.skip(
                "swift is not installed and no built shim library was found "
                "(NUVEC_SHIM_LIB, swift/.build/release, swift/.build/debug)"
            )
        subprocess.run(
            ["swift", "build", "--package-path", str(ROOT / "swift"), "-c", "release"], check=True
        )
        shim._State.loaded = False  # look again now that it exists
    return shim.library()


@pytest.fixture()
def host(lib):
    device = shim.Device.host()
    yield device
    device.close()


def call_raw(fn, *args):
    """Calls a raw ABI function with a trailing char **error; returns (status, message)."""
    err = ctypes.c_void_p()
    status = fn(*args, ctypes.byref(err))
    return status, shim._take_string(shim.library(), err)


@pytest.fixture()
def metal(lib) -> shim.Device:
    """A Metal device, or a skip that quotes the shim's reason (always skipped on Linux)."""
    if not shim.is_available():
        pytest.skip(f"needs Metal: {shim.unavailable_reason()}")
    device = shim.Device.open()
    yield device
    device.close()


# ----------------------------------------------------------------------------- ABI


def test_abi_version_and_struct_layouts(lib):
    assert shim.abi_version() == shim.ABI_VERSION == 1
    header = HEADER.read_text()
    assert re.search(r"#define NUVEC_SHIM_ABI_VERSION (\d+)u", header).group(1) == "1"
    for struct_id, mirror in shim.STRUCTS.items():
        assert lib.nv_abi_struct_size(struct_id) == ctypes.sizeof(mirror), mirror.__name__
    assert lib.nv_abi_struct_size(0) == 0


def test_every_header_function_is_exported_and_bound(lib):
    header = HEADER.read_text()
    declared = set(re.findall(r"^[a-z_][\w\s\*]*?\b(nv_\w+)\(", header, flags=re.M))
    assert len(declared) == 32
    assert declared == set(shim.PROTOTYPES), "binding and header list the same functions"
    for name in declared:
        assert hasattr(lib, name), f"{name} is declared but not exported"


def test_status_constants_match_header(lib):
    header = HEADER.read_text()
    for name, value in re.findall(r"\b(NV_(?:OK|ERR_[A-Z_]+))\s*=\s*(\d+)", header):
        assert getattr(shim, name) == int(value)
        assert shim.status_name(int(value)) == name
    assert shim.status_name(1234) == "NV_ERR_UNKNOWN"


@pytest.mark.skipif(sys.platform != "linux", reason="the Linux build has no Metal")
def test_reports_no_metal_on_linux(lib):
    expected = "no Metal device: this host has no Metal (Linux)"
    assert shim.is_available() is False
    assert shim.unavailable_reason() == expected
    assert shim.build_has_metal() is False
    assert shim.Device.count() == 0
    assert call_raw(lib.nv_metal_probe) == (shim.NV_ERR_NO_METAL, expected)
    with pytest.raises(shim.ShimError) as info:
        shim.Device.open()
    assert info.value.status == shim.NV_ERR_NO_METAL
    assert info.value.message == expected


@pytest.fixture()
def fresh_state(monkeypatch):
    """Forgets the loaded library for one test; monkeypatch restores every field after it."""
    for field, value in (
        ("loaded", False),
        ("lib", None),
        ("path", None),
        ("load_error", None),
        ("metal_reason", None),
    ):
        monkeypatch.setattr(shim._State, field, value)
    return monkeypatch


def test_unavailable_reason_without_library(fresh_state, tmp_path):
    monkeypatch = fresh_state
    monkeypatch.setenv("NUVEC_SHIM_LIB", str(tmp_path / "missing.so"))
    assert shim.is_available() is False
    assert shim.unavailable_reason() == f"NUVEC_SHIM_LIB={tmp_path / 'missing.so'} does not exist"
    monkeypatch.delenv("NUVEC_SHIM_LIB")
    monkeypatch.setattr(shim, "candidate_paths", lambda: [tmp_path / "libNuvecShim.so"])
    monkeypatch.setattr(shim._State, "loaded", False)
    assert shim.unavailable_reason().startswith(shim.NOT_BUILT)
    assert "Metal" in shim.NOT_BUILT


def test_wrong_library_is_refused(lib, fresh_state):
    # Any loadable shared object without the ABI stands in: NumPy's own extension module.
    other = Path(np._core._multiarray_umath.__file__)
    fresh_state.setenv("NUVEC_SHIM_LIB", str(other))
    assert shim.unavailable_reason() == f"{other} is not a nuvec shim library (no nv_abi_version)"


# ----------------------------------------------------------------------------- errors


def test_error_strings_are_freed(lib, host):
    """5k failing calls whose messages quote a 4 kB macro name: leaked, that is > 20 MB."""
    if not Path("/proc/self/statm").exists():
        pytest.skip("needs /proc/self/statm to read resident memory")
    page = os.sysconf("SC_PAGE_SIZE")

    def rss() -> int:
        return int(Path("/proc/self/statm").read_text().split()[1]) * page

    macros = ("1" + "x" * 4000).encode()
    options = shim.CompileOptions(0, 0, macros, 0)
    out = ctypes.c_uint64()

    def fail() -> tuple[int, str]:
        return call_raw(
            lib.nv_library_compile, host.handle, b"src", ctypes.byref(options), ctypes.byref(out)
        )

    for _ in range(500):  # warm up allocator pools
        fail()
    before = rss()
    for _ in range(5_000):
        status, message = fail()
    grown = rss() - before
    assert status == shim.NV_ERR_INVALID_ARGUMENT
    assert message.startswith('nv_library_compile: macro name "1xxx') and len(message) > 4000
    assert grown < 4_000_000, f"resident memory grew by {grown} bytes"


def test_success_stores_null_error(lib, host):
    err = ctypes.c_void_p(0xDEAD)
    length = ctypes.c_uint64()
    buf = host.buffer(8)
    assert lib.nv_buffer_length(buf.handle, ctypes.byref(length), ctypes.byref(err)) == shim.NV_OK
    assert err.value is None and length.value == 8
    assert lib.nv_buffer_length(buf.handle, ctypes.byref(length), None) == shim.NV_OK


def test_bad_calls_return_errors(lib, host):
    out = ctypes.c_uint64()
    assert call_raw(lib.nv_release, 0)[0] == shim.NV_ERR_INVALID_HANDLE
    assert call_raw(lib.nv_release, 0xFFFF_FFFF_FFFF_FFFF)[0] == shim.NV_ERR_INVALID_HANDLE
    assert call_raw(lib.nv_buffer_new, host.handle, 16, None) == (
        shim.NV_ERR_INVALID_ARGUMENT,
        "nv_buffer_new: out is NULL",
    )
    assert call_raw(lib.nv_buffer_new_with_bytes, host.handle, None, 4, ctypes.byref(out)) == (
        shim.NV_ERR_INVALID_ARGUMENT,
        "nv_buffer_new_with_bytes: bytes is NULL",
    )
    status, message = call_raw(lib.nv_buffer_length, host.handle, ctypes.byref(out))
    assert status == shim.NV_ERR_INVALID_HANDLE
    assert "is a device handle, expected a buffer handle" in message
    assert call_raw(lib.nv_library_compile, host.handle, None, None, ctypes.byref(out)) == (
        shim.NV_ERR_INVALID_ARGUMENT,
        "nv_library_compile: source is NULL",
    )
    status, message = call_raw(lib.nv_buffer_new, host.handle, 1 << 40, ctypes.byref(out))
    assert status == shim.NV_ERR_OUT_OF_MEMORY and "exceeds" in message
    grid = (ctypes.c_uint64 * 3)(1, 1, 1)
    group = (ctypes.c_uint32 * 3)(0, 0, 0)
    stream = host.stream()
    status, message = call_raw(lib.nv_stream_dispatch, stream.handle, 999, None, 0, grid, group, 0)
    assert status == shim.NV_ERR_INVALID_HANDLE and message.startswith(
        "nv_stream_dispatch: handle 0x3e7"
    )
    assert (
        call_raw(lib.nv_stream_dispatch, stream.handle, 999, None, 0, None, group, 0)[0]
        == shim.NV_ERR_INVALID_HANDLE
    )  # the kernel handle is checked first
    assert stream.pending == 0


def test_python_wrappers_raise_value_errors(host):
    with pytest.raises(ValueError, match="Device.buffer: nbytes must be > 0, got 0"):
        host.buffer(0)
    with pytest.raises(TypeError, match="nbytes must be an int"):
        host.buffer(2.5)
    with pytest.raises(ValueError, match="math_mode must be one of"):
        host.compile("x", math_mode="sloppy")
    with pytest.raises(shim.ShimArgumentError, match="language_version 250"):
        host.compile("x", language_version=250)
    with pytest.raises(shim.ShimArgumentError, match=r'macro name "1X" is not a C identifier'):
        host.compile("x", macros={"1X": 1})
    with pytest.raises(shim.ShimError) as info:
        host.compile("kernel void f() {}")
    assert info.value.status == shim.NV_ERR_UNSUPPORTED
    buf = host.buffer(8)
    buf.close()
    with pytest.raises(ValueError, match="Buffer.nbytes: the buffer is closed"):
        _ = buf.nbytes


# ----------------------------------------------------------------------------- objects


def test_host_buffers_are_zero_copy(lib, host):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    buf = host.buffer_from(data)
    assert buf.nbytes == 48 and buf.address % 16 == 0
    view = buf.as_array(np.float32, (3, 4))
    np.testing.assert_array_equal(view, data)
    data[0, 0] = 100  # the buffer holds a copy of the source ...
    assert view[0, 0] == 0
    view[2, 3] = -7.5  # ... and the view is the buffer's own memory
    raw = ctypes.string_at(buf.address, 48)
    assert np.frombuffer(raw, np.float32)[11] == -7.5
    assert np.shares_memory(view, buf.as_array(np.uint8))
    zeros = host.buffer(4096).as_array(np.int64)
    assert zeros.shape == (512,) and not zeros.any()
    with pytest.raises(ValueError, match="needs 64 bytes, the buffer has 48"):
        buf.as_array(np.float32, (4, 4))
    with pytest.raises(ValueError, match="not a whole number"):
        host.buffer(6).as_array(np.float32)


def test_array_view_keeps_buffer_alive(lib, host):
    base = shim.live_handle_count()
    view = host.buffer_from(np.ones(4, np.float64)).as_array(np.float64)
    gc.collect()
    assert shim.live_handle_count() == base + 1  # the view's owner holds the buffer
    np.testing.assert_array_equal(view, 1.0)
    del view
    gc.collect()
    assert shim.live_handle_count() == base


def test_handles_are_released(lib):
    base = shim.live_handle_count()
    with shim.Device.host() as dev:
        bufs = [dev.buffer(64) for _ in range(10)]
        stream = dev.stream()
        assert shim.live_handle_count() == base + 12
        kind = ctypes.c_int32()
        assert lib.nv_handle_kind(stream.handle, ctypes.byref(kind), None) == shim.NV_OK
        assert kind.value == shim.NV_KIND_STREAM
    assert shim.live_handle_count() == base + 11  # buffers and stream outlive the device handle
    del bufs, stream
    gc.collect()
    assert shim.live_handle_count() == base


def test_source_hash_is_sha256_of_documented_key(lib):
    # Cross-checks the shim's own SHA-256 against hashlib over lengths spanning block edges.
    for n in (0, 1, 55, 56, 63, 64, 65, 119, 120, 200, 1000):
        source = "k" * n
        canonical = "math=safe\nlanguage=0\n"
        expected = hashlib.sha256(f"nuvec-shim library v1\0{canonical}\0{source}".encode()).digest()
        assert shim.source_hash(source) == expected, n
    fast = "math=fast\nlanguage=310\nmacro A=1\nmacro B=x\n"
    expected = hashlib.sha256(f"nuvec-shim library v1\0{fast}\0src".encode()).digest()
    assert (
        shim.source_hash("src", math_mode="fast", language_version=310, macros={"B": "x", "A": 1})
        == expected
    )


def test_host_stream_and_dispatch_checks(lib, host):
    stream = host.stream()
    assert stream.pending == 0
    stream.commit()
    stream.wait()
    stream.synchronize()
    with pytest.raises(ValueError, match="mode must be"):
        stream.dispatch(None, {}, grid=1, mode="warps")
    with pytest.raises(TypeError, match="kernel must be a Kernel"):
        stream.dispatch(None, {}, grid=1)


def test_concurrent_handle_traffic(lib):
    """Many Python threads creating and releasing buffers (ctypes drops the GIL in calls)."""
    base = shim.live_handle_count()
    dev = shim.Device.host()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for i in range(300):
                b = dev.buffer(16 + i)
                assert b.nbytes == 16 + i
                b.close()
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    dev.close()
    assert shim.live_handle_count() == base


# ----------------------------------------------------------------------------- needs Metal

ADD = """
#include <metal_stdlib>
using namespace metal;
kernel void add(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                device float* out [[buffer(2)]], constant uint& n [[buffer(3)]],
                uint i [[thread_position_in_grid]]) {
    if (i < n) out[i] = a[i] + b[i];
}
"""


def test_metal_add_dispatch(metal):
    dev = metal
    assert dev.is_metal
    n = 1000
    a = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    b = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    out = dev.buffer(4 * n)
    kernel = dev.compile(ADD).kernel("add")
    assert kernel.info["max_total_threads_per_threadgroup"] >= 32
    stream = dev.stream()
    stream.dispatch(
        kernel, {0: dev.buffer_from(a), 1: dev.buffer_from(b), 2: out, 3: np.uint32(n)}, grid=(n,)
    )
    stream.synchronize()
    np.testing.assert_array_equal(out.as_array(np.float32), a + b)
    assert dev.compile(ADD).kernel("add").info == kernel.info
    assert dev.cache_stats["library_hits"] >= 1


def test_metal_compile_error_message(metal):
    with pytest.raises(shim.ShimError) as info:
        metal.compile("kernel void f(device flot* x) {}")
    assert info.value.status == shim.NV_ERR_COMPILE and "flot" in info.value.message


# ----------------------------------------------------------------------------- C consumers

C_PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include "nuvec_shim.h"

int main(void) {
    if (nv_abi_version() != NUVEC_SHIM_ABI_VERSION) return 10;
    nv_device dev = 0;
    char *error = NULL;
    if (nv_device_open_host(&dev, &error) != NV_OK || error != NULL) return 11;
    nv_device_limits limits;
    if (nv_device_limits_get(dev, &limits, NULL) != NV_OK || limits.is_metal != 0) return 12;
    float data[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    nv_buffer buf = 0;
    if (nv_buffer_new_with_bytes(dev, data, sizeof data, &buf, NULL) != NV_OK) return 13;
    void *contents = NULL;
    if (nv_buffer_contents(buf, &contents, NULL) != NV_OK || memcmp(contents, data, sizeof data))
        return 14;
    nv_status s = nv_buffer_new(dev, 0, &buf, &error);
    printf("%s|%s\n", nv_status_name(s), error);
    nv_string_free(error);
    nv_release(buf, NULL);
    nv_release(dev, NULL);
    return nv_live_handle_count() == 0 ? 0 : 15;
}
"""


@pytest.mark.parametrize("compiler", ["cc", "c++"])
def test_header_serves_c_and_cpp_programs(lib, tmp_path, compiler):
    """The header alone, strict C and C++, linked against the built library, run."""
    exe = shutil.which(compiler)
    if exe is None:
        pytest.skip(f"no {compiler} on PATH to compile a C consumer")
    src = tmp_path / ("main.c" if compiler == "cc" else "main.cpp")
    src.write_text(C_PROGRAM)
    lib_dir = shim.library_path().parent
    link = shim.library_path().name[3:].rsplit(".", 1)[0]  # libNuvecShim.so -> NuvecShim
    cmd = [
        exe,
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
        "-I",
        str(HEADER.parent),
        str(src),
        "-L",
        str(lib_dir),
        f"-l{link}",
        f"-Wl,-rpath,{lib_dir}",
        "-o",
        str(tmp_path / "main"),
    ]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True)
    assert run.returncode == 0, (run.returncode, run.stderr)
    assert run.stdout == "NV_ERR_INVALID_ARGUMENT|make buffer: length must be > 0, got 0\n"
