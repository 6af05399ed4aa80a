"""``nv.fast.metal_kernel``: the generated Metal source (runs anywhere), argument errors, the
no-Metal error, and the Metal backend's launch handed to a recording device (shim host
buffers; what would go to ``nv_stream_dispatch`` is recorded, nothing is compiled or run)."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv
from nuvec import _metal_kernel
from nuvec.backends.metal import shim

EXP = "uint i = thread_position_in_grid.x; out[i] = exp(inp[i]);"


def src(k, inputs, dtypes, template=None):
    return k.source_for(inputs, dtypes, template)


def test_plain_kernel_signature():
    k = nv.fast.metal_kernel("myexp", ["inp"], ["out"], EXP)
    s = src(k, [nv.ones((16,))], [nv.float32])
    assert s == (
        "[[kernel]] void custom_kernel_myexp_float_float(\n"
        "  const device float* inp [[buffer(0)]],\n"
        "  device float* out [[buffer(1)]],\n"
        "  uint3 thread_position_in_grid [[thread_position_in_grid]]) {\n"
        f"{EXP}\n}}\n"
    )


def test_shape_strides_ndim_only_where_the_source_uses_them():
    body = "out[0] = a[a_strides[0]] + b[0] * float(a_ndim) + c[c_shape[1]];"
    k = nv.fast.metal_kernel("k", ["a", "b", "c"], ["out"], body)
    s = src(k, [nv.ones((4, 4)), nv.ones((9,), dtype=nv.int32), nv.ones((2, 5))], [nv.float16])
    lines = s.splitlines()
    assert lines[0] == "[[kernel]] void custom_kernel_k_float_int32_t_float_float16_t("
    assert lines[1:7] == [
        "  const device float* a [[buffer(0)]],",
        "  const constant int64_t* a_strides [[buffer(1)]],",
        "  const constant int& a_ndim [[buffer(2)]],",
        "  const device int32_t* b [[buffer(3)]],",
        "  const device float* c [[buffer(4)]],",
        "  const constant int* c_shape [[buffer(5)]],",
    ]
    assert lines[7] == "  device float16_t* out [[buffer(6)]]) {"  # no attribute used
    assert "a_shape" not in s and "b_shape" not in s and "c_strides" not in s


def test_small_and_scalar_inputs_go_in_constant_memory():
    k = nv.fast.metal_kernel("k", ["a", "s"], ["o"], "o[0] = a[0] + s + s_shape[0];")
    s = src(k, [nv.ones((3,)), nv.array(2, dtype=nv.int32)], [nv.float32])
    assert "custom_kernel_k_floatc_int32_ts_float(" in s
    assert "  const constant float* a [[buffer(0)]]," in s
    # a 0-d input is a reference, and has no shape parameter even when the source names it
    assert "  const constant int32_t& s [[buffer(1)]]," in s
    assert "s_shape [[" not in s and "  device float* o [[buffer(2)]]) {" in s


def test_templates_of_dtype_int_and_bool():
    k = nv.fast.metal_kernel("t", ["x"], ["y"], "y[thread_index_in_threadgroup] = T(N) + B;")
    s = src(k, [nv.ones((8,))], [nv.bfloat16], [("T", nv.float16), ("N", 3), ("B", False)])
    name = "custom_kernel_t__float16_t_3_0_float_bfloat16_t"
    assert s.startswith(f"template <typename T, int N, bool B>\n[[kernel]] void {name}(\n")
    assert "  uint thread_index_in_threadgroup [[thread_index_in_threadgroup]]) {" in s
    inst = f"{name}<float16_t, 3, 0>"
    assert s.endswith(f'\ntemplate [[host_name("{name}")]] [[kernel]] decltype({inst}) {inst};\n')
    # the name follows the template values, so two instantiations never share a name
    other = src(k, [nv.ones((8,))], [nv.bfloat16], [("T", nv.float32), ("N", 3), ("B", True)])
    assert "custom_kernel_t__float_3_1_float_bfloat16_t(" in other


def test_atomic_outputs_header_and_attributes():
    body = (
        "uint3 g = threadgroup_position_in_grid; uint3 n = threads_per_threadgroup;\n"
        "atomic_fetch_add_explicit(&acc[0], x[g.x * n.x + thread_position_in_threadgroup.x],"
        " memory_order_relaxed);"
    )
    k = nv.fast.metal_kernel(
        "acc", ["x"], ["acc"], body, header="#define SCALE 2\n", atomic_outputs=True
    )
    s = src(k, [nv.ones((64,), dtype=nv.int32)], [nv.int32])
    assert s.startswith("#define SCALE 2\n[[kernel]] void custom_kernel_acc_int32_t_int32_t(")
    assert "  device atomic<int32_t>* acc [[buffer(1)]],\n" in s
    attrs = [ln for ln in s.splitlines() if ln.startswith("  uint3 ")]
    assert attrs == [  # MLX's order of the attribute table
        "  uint3 thread_position_in_threadgroup [[thread_position_in_threadgroup]],",
        "  uint3 threadgroup_position_in_grid [[threadgroup_position_in_grid]],",
        "  uint3 threads_per_threadgroup [[threads_per_threadgroup]]) {",
    ]


@pytest.mark.skipif(nv.metal.is_available(), reason="checks the machine without Metal")
def test_verbose_prints_the_source_before_the_no_metal_error(capsys):
    k = nv.fast.metal_kernel("v", ["inp"], ["out"], EXP)
    with pytest.raises(RuntimeError):
        k(
            inputs=[nv.ones((4,))],
            output_shapes=[(4,)],
            output_dtypes=[nv.float32],
            grid=(4, 1, 1),
            threadgroup=(4, 1, 1),
            verbose=True,
        )
    assert "[[kernel]] void custom_kernel_v_floatc_float(" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (("", ["a"], ["o"], ""), "fast.metal_kernel: name must be an identifier"),
        (("k", ["a"], [], ""), "fast.metal_kernel: output_names is empty"),
        (("k", "a", ["o"], ""), "fast.metal_kernel: input_names must be a list"),
        (("k", ["a b"], ["o"], ""), "fast.metal_kernel: input_names holds 'a b'"),
        (("k", ["a"], ["a"], ""), "fast.metal_kernel k: input and output names must all differ"),
        (("k", ["a"], ["o"], 3), "fast.metal_kernel k: source must be a str"),
        (("k", ["a"], ["o"], "", "", True, False, []), "k: compile_options must be a dict"),
        (("k", ["a"], ["o"], "", "", True, False, {"fp": 1}), "k: compile_options has no option"),
        (
            ("k", ["a"], ["o"], "", "", True, False, {"math_mode": "exact"}),
            "k: compile_options math_mode must be 'safe', 'relaxed' or 'fast', got 'exact'",
        ),
    ],
)
def test_construction_errors_name_the_argument(args, message):
    with pytest.raises((ValueError, TypeError)) as e:
        nv.fast.metal_kernel(*args)
    assert message in str(e.value)


def call(k, **kw):
    base = dict(
        inputs=[nv.ones((16,))],
        output_shapes=[(16,)],
        output_dtypes=[nv.float32],
        grid=(16, 1, 1),
        threadgroup=(16, 1, 1),
    )
    base.update(kw)
    return k(**base)


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"inputs": []}, "fast.metal_kernel myexp: inputs has 0 entries, expected 1"),
        ({"output_shapes": []}, "fast.metal_kernel myexp: output_shapes has 0 entries"),
        ({"output_dtypes": [nv.float32] * 2}, "myexp: output_dtypes has 2 entries, expected 1"),
        ({"grid": (16, 1)}, "fast.metal_kernel myexp: grid must be 3 ints"),
        ({"threadgroup": (0, 1, 1)}, "myexp: threadgroup must be positive in every axis"),
        ({"output_shapes": [(-1,)]}, "myexp: output_shapes entry for out is negative"),
        ({"output_dtypes": [nv.float64]}, "myexp: output out has dtype float64"),
        ({"inputs": [nv.ones((16,), dtype=nv.float64)]}, "myexp: input inp has dtype float64"),
        ({"template": [("T", 1.5)]}, "myexp: template argument T must be a dtype, an int"),
        ({"template": [("inp", 1)]}, "myexp: template name 'inp' must be a new identifier"),
        ({"template": ["T"]}, "myexp: template entries are (name, value) pairs"),
        ({"init_value": "0"}, "myexp: init_value must be a number or None"),
    ],
)
def test_call_errors_name_the_argument(kw, message):
    k = nv.fast.metal_kernel("myexp", ["inp"], ["out"], EXP)
    with pytest.raises(ValueError) as e:
        call(k, **kw)
    assert message in str(e.value)


@pytest.mark.skipif(nv.metal.is_available(), reason="checks the machine without Metal")
def test_without_metal_the_call_says_so_after_checking_arguments():
    k = nv.fast.metal_kernel("myexp", ["inp"], ["out"], EXP)  # making it works anywhere
    with pytest.raises(RuntimeError) as e:
        call(k)
    msg = str(e.value)
    assert msg.startswith("fast.metal_kernel myexp: Metal is not available here")
    assert nv.metal.unavailable_reason() in msg
    with pytest.raises(ValueError, match="inputs has 2 entries"):  # arguments first
        call(k, inputs=[nv.ones((16,)), nv.ones((16,))])


# ----------------------------------------------------------------------------- launch


def _shim_loads() -> bool:
    try:
        shim.library()
        return True
    except shim.ShimUnavailable:
        return False


class RecordingKernel:
    def __init__(self, name, max_threads):
        self.name = name
        self.info = {
            "max_total_threads_per_threadgroup": max_threads,
            "thread_execution_width": 32,
            "static_threadgroup_memory_length": 0,
        }


class RecordingLibrary:
    def __init__(self, source, max_threads):
        self.source, self.max_threads = source, max_threads

    def kernel(self, name):
        assert f"[[kernel]] void {name}(" in self.source  # the entry point exists
        return RecordingKernel(name, self.max_threads)


class RecordingStream:
    def __init__(self, device):
        self.device = device

    def dispatch(self, kernel, args, grid, threadgroup=(0, 0, 0), mode="threads"):
        self.device.dispatches.append(
            (kernel.name, dict(args), tuple(grid), tuple(threadgroup), mode)
        )

    def commit(self):
        pass

    def synchronize(self):
        pass


class RecordingDevice:
    """Buffers from the shim's host device; compiles and dispatches are recorded."""

    def __init__(self, max_threads=1024):
        self.host = shim.Device.host()
        self.limits = dict(self.host.limits)
        self.compiled, self.dispatches, self.max_threads = [], [], max_threads

    def buffer(self, n):
        return self.host.buffer(n)

    def buffer_from(self, data):
        return self.host.buffer_from(data)

    def compile(self, source, *, math_mode="safe", **_):
        self.compiled.append((source, math_mode))
        return RecordingLibrary(source, self.max_threads)

    def stream(self):
        return RecordingStream(self)


@pytest.fixture
def recording(monkeypatch):
    if not _shim_loads():
        pytest.skip("the shim library is not built (make install where swift is present)")
    from nuvec.backends.metal import runtime

    dev = RecordingDevice()
    monkeypatch.setattr(_metal_kernel.metal, "is_available", lambda: True)  # pretend Metal
    with runtime.use_device(dev), nv.stream(nv.cpu):
        yield dev


def launch(outs, datas=None):
    """Runs the Metal implementation of the kernel node behind ``outs``: on the inputs
    evaluated on the CPU (uploaded as the backend uploads), or on ``datas`` (MetalArrays of
    shared buffers, read in place)."""
    from nuvec.backends.metal import custom_kernel, runtime  # noqa: F401
    from nuvec.primitives.custom_kernel import MetalCustomKernel

    node = outs[0]
    fn = runtime.IMPLS[MetalCustomKernel]
    if datas is not None:
        return fn.__wrapped__(node._prim, datas, node)
    nv.eval(node._inputs)
    return fn(node._prim, [x._data for x in node._inputs], node)


def shared(dev, a):
    """A copy of ``a`` in a shim host buffer (C order)."""
    from nuvec.backends.metal import memory

    out = memory.empty(dev, a.shape, a.dtype)
    out[...] = a
    return out


def test_launch_binds_inputs_shapes_strides_and_outputs(recording):
    from nuvec.backends.metal import memory
    from nuvec.backends.metal.memory import MetalArray
    from nuvec.core.device import Device, DeviceType, Stream

    gpu_stream = Stream(10_001, Device(DeviceType.gpu))
    body = "out[0] = a[a_strides[1]] * float(a_shape[0]) + b[b_ndim];"
    k = nv.fast.metal_kernel("bind", ["a", "b"], ["out", "cnt"], body, ensure_row_contiguous=False)
    at = nv.transpose(nv.array(np.arange(12, dtype=np.float32).reshape(3, 4)))  # (4, 3) view
    outs = k(
        inputs=[at, nv.array(np.arange(10, dtype=np.int32))],
        output_shapes=[(2, 3), (5,)],
        output_dtypes=[nv.float32, nv.int32],
        grid=(6, 2, 1),
        threadgroup=(32, 1, 4),
        init_value=7,
        stream=gpu_stream,
    )
    base = shared(recording, np.arange(12, dtype=np.float32).reshape(3, 4))
    bs = shared(recording, np.arange(10, dtype=np.int32))
    results = launch(outs, [MetalArray(base.T), MetalArray(bs)])
    source, mode = recording.compiled[-1]
    assert mode == "safe" and source.startswith(_metal_kernel.PRELUDE)
    ((name, args, grid, tg, gmode),) = recording.dispatches
    assert name == "custom_kernel_bind_float_int32_t_float_int32_t"
    assert grid == (6, 2, 1) and tg == (6, 1, 1) and gmode == "threads"  # clipped to the grid
    assert sorted(args) == [0, 1, 2, 3, 4, 5, 6]
    assert np.frombuffer(args[1], np.int32).tolist() == [4, 3]  # a_shape
    assert np.frombuffer(args[2], np.int64).tolist() == [1, 4]  # a_strides, a transposed view
    assert np.frombuffer(args[4], np.int32).tolist() == [1]  # b_ndim
    for slot, arr in ((0, base), (3, bs)):  # read in place: no copy without the flag
        buf, off = args[slot]
        assert buf.handle == memory.locate(arr)[0].handle and off == 0
    out, cnt = (r.get() for r in results)
    assert out.shape == (2, 3) and (out == 7).all()  # init_value filled, kernel not run
    assert cnt.dtype == np.int32 and (cnt == 7).all()
    assert memory.locate(out)[0].handle == args[5][0].handle
    assert memory.locate(cnt)[0].handle == args[6][0].handle


def test_launch_copies_to_row_contiguous_and_checks_the_threadgroup(recording):
    from nuvec.backends.metal import memory
    from nuvec.core.device import Device, DeviceType, Stream

    gpu_stream = Stream(10_002, Device(DeviceType.gpu))
    from nuvec.backends.metal.memory import MetalArray

    k = nv.fast.metal_kernel("rc", ["a"], ["o"], "o[0] = a[a_strides[0]];")
    base = shared(recording, np.arange(24, dtype=np.float32).reshape(4, 6))
    outs = k(
        inputs=[nv.transpose(nv.array(base))],
        output_shapes=[(1,)],
        output_dtypes=[nv.float32],
        grid=(1, 1, 1),
        threadgroup=(1, 1, 1),
        stream=gpu_stream,
    )
    launch(outs, [MetalArray(base.T)])  # a transposed view of a shared buffer
    args = recording.dispatches[-1][1]
    assert np.frombuffer(args[1], np.int64).tolist() == [4, 1]  # the row-contiguous copy's
    buf, off = args[0]
    copy = buf.as_array(np.uint8)[off : off + 96].view(np.float32).reshape(6, 4)
    assert np.array_equal(copy, base.T) and buf.handle != memory.locate(base)[0].handle
    recording.max_threads = 256  # the next pipeline holds at most 256 threads
    k = nv.fast.metal_kernel(
        "big", ["a"], ["o"], "o[0] = a[0];", compile_options={"math_mode": "fast"}
    )
    big = k(
        inputs=[nv.array(base)],
        output_shapes=[(1,)],
        output_dtypes=[nv.float32],
        grid=(1024, 1, 1),
        threadgroup=(512, 1, 1),
        stream=gpu_stream,
    )
    with pytest.raises(
        ValueError,
        match=r"fast.metal_kernel custom_kernel_big_float_float: "
        r"threadgroup \(512, 1, 1\) has 512 threads, more than the pipeline",
    ):
        launch(big)
    assert recording.compiled[-1][1] == "fast"  # compile_options' math mode reaches the shim
