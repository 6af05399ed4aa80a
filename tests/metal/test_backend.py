"""The Metal backend's Python side, on a machine without Metal.

What runs here: launch planning (``layout``), buffer wrapping on the shim's host device (real
shared-memory buffers through the real ABI), queues and waits, registration, the Linux
fallback, and whole nuvec graphs evaluated on a pretend-Metal "gpu" stream whose device is
``EmulatedDevice`` (tests/metal/msl_emulation/fake_device.py): every byte the backend hands
the shim is real, only compilation and dispatch are replaced by the C++ emulation of the
generated MSL, which runs late (at synchronize) as a GPU would. Results are compared with the
same graphs on the CPU backend.

What does not run here: Apple's Metal compiler, the shim's Metal code paths, an Apple GPU.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nuvec as nv  # noqa: E402
from nuvec.backends import registry  # noqa: E402
from nuvec.backends.metal import layout, memory, runtime, shim  # noqa: E402
from nuvec.backends.metal.memory import MetalArray  # noqa: E402
from nuvec.codegen import KernelSpec, Node  # noqa: E402
from nuvec.core.device import Device, DeviceType, Stream  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)


def _shim_loads() -> bool:
    try:
        shim.library()
        return True
    except shim.ShimUnavailable:
        return False


needs_shim = pytest.mark.skipif(
    not _shim_loads(), reason="the shim library is not built (make install where swift is present)"
)


class Layout:
    """A shape/strides record (no memory) for planning: ``Layout((3, 4), (16, 4), 4)``."""

    def __init__(self, shape, strides, itemsize, c_contiguous=False):
        self.shape, self.strides, self.itemsize = tuple(shape), tuple(strides), itemsize
        self.ndim = len(self.shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.flags = {"C_CONTIGUOUS": c_contiguous}


def add_spec(k: int = 2, dtype: str = "float32") -> KernelSpec:
    nodes = [Node("add", (("in", 0), ("in", 1)), dtype)]
    for i in range(2, k):
        nodes.append(Node("add", (("node", len(nodes) - 1), ("in", i)), dtype))
    return KernelSpec((dtype,) * k, (), tuple(nodes), (len(nodes) - 1,))


# ----------------------------------------------------------------------------- layout


def test_variant_choice():
    spec = add_spec()
    a = np.zeros((3, 4), np.float32)
    assert layout.elementwise(spec, "k", [a, a], (3, 4)).kernel == "k_contig"
    s = np.zeros((), np.float32)
    plan = layout.elementwise(spec, "k", [s, a], (3, 4))
    assert plan.kernel == "k_scalar"
    assert plan.args[4] == struct.pack("<II", 0, 1)  # s[k]: 0 scalar, 1 contiguous
    one = np.zeros((1, 1), np.float32)  # size 1, any shape: scalar
    assert layout.elementwise(spec, "k", [a, one], (3, 4)).variant == "scalar"
    bs = np.broadcast_to(np.float32(2), (3, 4))  # a broadcast scalar (Broadcast)
    assert layout.elementwise(spec, "k", [a, bs], (3, 4)).variant == "scalar"
    assert layout.elementwise(spec, "k", [a.T, a.T], (4, 3)).variant == "strided"
    row = np.zeros((4,), np.float32)
    assert layout.elementwise(spec, "k", [a, row], (3, 4)).variant == "strided"
    assert layout.elementwise(spec, "k", [a, a], (3, 4), force="strided").variant == "strided"
    assert layout.elementwise(spec, "k", [s, a], (3, 4), force="scalar").variant == "scalar"
    assert layout.elementwise(spec, "k", [a, a], (3, 4), force="scalar").variant == "scalar"
    with pytest.raises(layout.PlanError, match="contig"):
        layout.elementwise(spec, "k", [s, a], (3, 4), force="contig")
    with pytest.raises(ValueError, match="force"):
        layout.elementwise(spec, "k", [a, a], (3, 4), force="vec")


def test_contig_arguments_and_grid():
    spec = KernelSpec(
        ("float16", "float16"),
        (),
        (
            Node("less", (("in", 0), ("in", 1)), "bool"),
            Node("add", (("in", 0), ("in", 1)), "float16"),
        ),
        (0, 1),
    )
    a = np.zeros(1000, np.float16)
    plan = layout.elementwise(spec, "k", [a, a], (1000,))
    # a0 a1 o0 o1, then n: the order of the dialect's [[buffer(i)]] parameters
    assert plan.args == {
        0: layout.ArrayRef(0),
        1: layout.ArrayRef(1),
        2: layout.ArrayRef(2),
        3: layout.ArrayRef(3),
        4: struct.pack("<I", 1000),
    }
    assert plan.grid == (1000, 1, 1) and plan.threadgroup == (0, 0, 0) and plan.mode == "threads"


def test_strided_meta_merges_and_keeps_signs():
    spec = add_spec()
    base = np.zeros((6, 8), np.float32)
    a = base[::-2, 1::2]  # (3, 4), strides (-64, 8) bytes
    b = np.zeros((4, 3), np.float32).T  # (3, 4), strides (4, 12)
    plan = layout.elementwise(spec, "k", [a, b], (3, 4))
    assert plan.variant == "strided" and plan.args[4] == struct.pack("<I", 2)
    meta = np.frombuffer(plan.args[5], "<i8").tolist()
    assert meta == [3, 4, -16, 2, 1, 3, 4, 1]  # shape, then a, b, out strides in elements
    # a broadcast row over contiguous memory merges nothing; size-1 axes drop out
    c = np.zeros((2, 1, 5), np.float32)
    r = np.zeros((5,), np.float32)
    plan = layout.elementwise(spec, "k", [c, r], (2, 1, 5))
    assert np.frombuffer(plan.args[5], "<i8").tolist() == [2, 5, 5, 1, 0, 1, 5, 1]
    # contiguous arrays forced strided become one axis
    plan = layout.elementwise(spec, "k", [c, c], (2, 1, 5), force="strided")
    assert np.frombuffer(plan.args[5], "<i8").tolist() == [10, 1, 1, 1]
    # one element with every axis of size 1: one axis of size 1, strides 0
    z = np.zeros((1, 1), np.float32)
    plan = layout.elementwise(spec, "k", [z, z], (1, 1), force="strided")
    assert plan.args[4] == struct.pack("<I", 1)
    assert np.frombuffer(plan.args[5], "<i8").tolist() == [1, 0, 0, 0]


def test_merge_dims():
    assert layout.merge_dims((2, 3, 1, 4), [[12, 4, 0, 1], [0, 0, 0, 1]]) == (
        [6, 4],
        [[4, 1], [0, 1]],
    )
    assert layout.merge_dims((2, 3), [[3, 1], [1, 2]]) == ([2, 3], [[3, 1], [1, 2]])
    assert layout.merge_dims((1, 1), [[0, 0]]) == ([], [[]])


def test_plans_metal_cannot_run_are_refused():
    spec = add_spec(29)  # 29 inputs + 1 output + n > 29
    a = np.zeros(4, np.float32)
    with pytest.raises(layout.PlanError, match="buffer arguments"):
        layout.elementwise(spec, "k", [a] * 29, (4,), max_buffers=29)
    layout.elementwise(spec, "k", [a] * 29, (4,))  # 31 fit Metal's table
    big = Layout((1 << 32,), (4,), 4, True)
    with pytest.raises(layout.PlanError, match="32-bit"):
        layout.elementwise(add_spec(), "k", [big, big], (1 << 32,))
    with pytest.raises(layout.PlanError, match="empty"):
        layout.elementwise(add_spec(), "k", [a[:0], a[:0]], (0,))
    odd = Layout((4,), (6,), 4)  # a stride between elements
    with pytest.raises(layout.PlanError, match="whole number"):
        layout.elementwise(add_spec(), "k", [odd, a], (4,))
    with pytest.raises(layout.PlanError, match="inputs expected"):
        layout.elementwise(add_spec(), "k", [a], (4,))


def test_matmul_plan():
    a = np.zeros((2, 1, 5, 3), np.float32)
    b = np.zeros((3, 3, 4), np.float32)  # batch (3,) vs a's (2, 1)
    plan = layout.matmul(a, b, (2, 3, 5, 4), "float32")
    assert plan.kernel == "nv_mm_float32" and plan.mode == "threadgroups"
    assert plan.grid == (1, 1, 6) and plan.threadgroup == (16, 16, 1)
    p = np.frombuffer(plan.args[3], "<i8").tolist()
    assert p == [5, 4, 3, 3, 1, 4, 1, 0, 0, 0]  # M N K, strides, no c
    boff = np.frombuffer(plan.args[4], "<i8").reshape(6, 3)
    assert boff[:, 0].tolist() == [0, 0, 0, 15, 15, 15]  # a: batch 2 x broadcast 3
    assert boff[:, 1].tolist() == [0, 12, 24, 0, 12, 24]  # b: broadcast 2 x batch 3
    assert plan.args[6] == layout.ArrayRef(2)  # no c: the output stands in
    # a transposed operand needs no copy: its strides go to the kernel
    at = np.zeros((3, 40), np.float32).T[:17]  # (17, 3), strides (4, 160)
    plan = layout.matmul(at, np.zeros((3, 20), np.float32), (17, 20), "float32")
    assert np.frombuffer(plan.args[3], "<i8").tolist()[:7] == [17, 20, 3, 1, 40, 20, 1]
    assert plan.grid == (2, 2, 1)
    # addmm: a bias row broadcast over rows and batches; alpha, beta as float32
    c = np.zeros((20,), np.float16)
    a16, b16 = np.zeros((2, 17, 3), np.float16), np.zeros((3, 20), np.float16)
    plan = layout.matmul(a16, b16, (2, 17, 20), "float16", c=c, alpha=0.5, beta=2.0)
    p = np.frombuffer(plan.args[3], "<i8").tolist()
    assert p[7:] == [0, 1, 1] and plan.args[6] == layout.ArrayRef(3)
    assert np.frombuffer(plan.args[5], "<f4").tolist() == [0.5, 2.0]
    assert np.frombuffer(plan.args[4], "<i8").reshape(2, 3)[:, 2].tolist() == [0, 0]
    # K == 0: the empty operands are never read; the output is bound in their place
    plan = layout.matmul(
        np.zeros((4, 0), np.float32), np.zeros((0, 5), np.float32), (4, 5), "float32"
    )
    assert plan.args[0] == plan.args[1] == layout.ArrayRef(2)
    with pytest.raises(layout.PlanError, match="int64"):
        layout.matmul(np.zeros((2, 2), np.int64), np.zeros((2, 2), np.int64), (2, 2), "int64")
    with pytest.raises(layout.PlanError, match="addmm"):
        layout.matmul(
            np.zeros((2, 2), np.int32),
            np.zeros((2, 2), np.int32),
            (2, 2),
            "int32",
            c=np.zeros(2, np.int32),
        )
    with pytest.raises(layout.PlanError, match="broadcast"):
        layout.matmul(a16[0], b16, (17, 20), "float16", c=np.zeros(3, np.float16))


def test_matmul_source_has_a_kernel_per_dtype():
    src = layout.matmul_source()
    for d in layout.MM_DTYPES:
        assert f"kernel void nv_mm_{d}(" in src
    assert "threadgroup_barrier(mem_flags::mem_threadgroup)" in src


# ----------------------------------------------------------------------------- memory


@pytest.fixture()
def host():
    if not _shim_loads():
        pytest.skip("the shim library is not built")
    dev = shim.Device.host()
    yield dev
    dev.close()


def test_empty_wraps_a_shared_buffer(host):
    x = memory.empty(host, (3, 5), BF16)
    assert x.dtype == BF16 and x.shape == (3, 5) and x.flags.c_contiguous
    buf, off = memory.locate(x)
    assert off == 0 and buf.nbytes == 30
    x[...] = 1.5
    assert buf.as_array(np.uint16).tolist() == [0x3FC0] * 15  # the same memory
    assert memory.empty(host, (0, 4), np.float32).shape == (0, 4)  # no buffer for nothing


def test_locate_views(host):
    x = memory.empty(host, (4, 6), np.float32)
    buf, _ = memory.locate(x)
    v = x[1:, ::-2].T
    b2, off = memory.locate(v)
    assert b2 is buf and off == (1 * 6 + 5) * 4  # the view's first element
    assert memory.locate(np.zeros(3)) is None
    assert memory.locate(x[:0]) is None
    assert memory.is_addressable(v)
    raw = memory.empty(host, (17,), np.uint8)
    odd = np.ndarray((4,), np.float32, buffer=raw, offset=1)  # misaligned floats
    assert memory.locate(odd)[1] == 1 and not memory.is_addressable(odd)


def test_to_shared_keeps_broadcasts_compact(host):
    src = np.broadcast_to(np.arange(4.0, dtype=np.float32)[:, None], (4, 1000))
    y = memory.to_shared(host, src)
    buf, off = memory.locate(y)
    assert buf.nbytes == 16 and off == 0 and y.strides == (4, 0)
    np.testing.assert_array_equal(y, src)
    z = memory.to_shared(host, np.arange(6, dtype=np.int32).reshape(2, 3).T)
    assert z.flags.c_contiguous and memory.locate(z) is not None
    np.testing.assert_array_equal(z, np.arange(6).reshape(2, 3).T)


# ----------------------------------------------------------------------------- queues


class FakeStream:
    def __init__(self):
        self.calls = []

    def dispatch(self, *args):
        self.calls.append(("dispatch", args[0]))

    def commit(self):
        self.calls.append(("commit",))

    def synchronize(self):
        self.calls.append(("synchronize",))


def test_queue_waits_once_per_ticket():
    s = FakeStream()
    q = runtime.Queue(s)
    t1 = q.dispatch("k1", {}, (1, 1, 1))
    t2 = q.dispatch("k2", {}, (1, 1, 1))
    assert (t1, t2) == (1, 2)
    assert s.calls == [("dispatch", "k1"), ("commit",), ("dispatch", "k2"), ("commit",)]
    a, b = MetalArray(np.zeros(2), q, t1), MetalArray(np.ones(2), q, t2)
    assert a.pending is q
    assert a.shape == (2,) and a.size == 2 and s.calls.count(("synchronize",)) == 0
    np.testing.assert_array_equal(a.get(), [0, 0])
    assert s.calls.count(("synchronize",)) == 1 and a.pending is None
    b.get()  # the first wait covered ticket 2 too
    assert s.calls.count(("synchronize",)) == 1
    t3 = q.dispatch("k3", {}, (1, 1, 1))
    c = MetalArray(np.ones(2), q, t3)
    assert registry.to_host(c).tolist() == [1, 1]  # what item/tolist/print go through
    assert s.calls.count(("synchronize",)) == 2
    assert c.tobytes() == np.ones(2).tobytes() and np.asarray(c).tolist() == [1, 1]


def test_queue_reports_gpu_failure_to_the_reader():
    class Failing(FakeStream):
        def synchronize(self):
            raise shim.ShimError(shim.NV_ERR_GPU, "NV_ERR_GPU", "wait: a command buffer failed")

    q = runtime.Queue(Failing())
    m = MetalArray(np.zeros(1), q, q.dispatch("k", {}, (1, 1, 1)))
    with pytest.raises(shim.ShimError, match="command buffer failed"):
        m.get()


@needs_shim
def test_resolve_args_binds_buffers_and_large_constants(host):
    spec = add_spec()
    x = memory.empty(host, (5, 8), np.float32)
    ins = [x[1:4, ::2], x[::-1][:3, :4]]
    out = memory.empty(host, (3, 4), np.float32)
    plan = layout.elementwise(spec, "k", ins, (3, 4))
    args = runtime.resolve_args(plan, ins + [out], host, 4096)
    buf, _ = memory.locate(x)
    assert args[0] == (buf, (8) * 4) and args[1] == (buf, (4 * 8) * 4)
    assert args[2][0] is memory.locate(out)[0] and args[2][1] == 0
    assert args[3] == plan.args[3] and args[5] == plan.args[5]
    args = runtime.resolve_args(plan, ins + [out], host, 16)  # meta is 48 bytes
    big, off = args[5]
    assert off == 0 and big.as_array(np.uint8).tobytes() == plan.args[5]
    with pytest.raises(ValueError, match="shared buffer"):
        runtime.resolve_args(plan, [np.zeros((3, 4), np.float32)] * 3, host, 4096)


@needs_shim
def test_as_input_uploads_once_and_waits_for_other_queues(host):
    with runtime.use_device(host):
        s1, s2 = FakeStream(), FakeStream()
        q1, q2 = runtime.Queue(s1), runtime.Queue(s2)
        m = runtime.as_input(np.arange(3.0), q1)  # host data: a shared copy
        assert memory.locate(m.array) is not None and m.pending is None
        assert runtime.as_input(m, q1) is m  # already shared: as is
        shared = memory.empty(host, (3,), np.float32)
        pend = MetalArray(shared, q2, q2.dispatch("k", {}, (1, 1, 1)))
        assert runtime.as_input(pend, q2).pending is q2  # same queue: ordered, no wait
        assert ("synchronize",) not in s2.calls
        assert runtime.as_input(pend, q1) is pend and pend.pending is None
        assert ("synchronize",) in s2.calls  # another queue: waited


def test_register_fallbacks_covers_every_cpu_primitive():
    class A:
        pass  # noqa: E701

    class B:
        pass  # noqa: E701

    class C:
        pass  # noqa: E701

    impls = {
        ("cpu", A): lambda p, d, n: [d[0] + 1],
        ("cpu", B): lambda p, d, n: d,
        ("cpu", C): lambda p, d, n: d,
        ("gpu", C): "host-staged for CUDA",
    }
    got = {}
    done = runtime.register_fallbacks(impls, got.__setitem__, metal={B: "metal kernel"})
    assert set(done) == {A, C} and set(got) == {A, C}
    q = runtime.Queue(FakeStream())
    x = MetalArray(np.zeros(2), q, q.dispatch("k", {}, (1, 1, 1)))
    (out,) = got[A](None, [x], None)  # waits for x, runs on the CPU, wraps
    assert isinstance(out, MetalArray) and out.pending is None and x.pending is None
    np.testing.assert_array_equal(out.get(), [1, 1])


def test_importing_the_backend_registers_nothing_without_metal():
    from nuvec.backends.metal import compiled, elementwise, linalg  # noqa: F401

    assert not [
        k
        for k, fn in registry._IMPLS.items()
        if k[0] == "gpu" and getattr(fn, "__name__", "").startswith("metal_")
    ]
    from nuvec.primitives.elementwise import Unary
    from nuvec.primitives.linalg import Matmul

    assert Unary in runtime.IMPLS and Matmul in runtime.IMPLS  # recorded, not registered


def test_linux_reports_why_there_is_no_metal():
    if shim.is_available():
        pytest.skip("this machine has Metal")
    reason = nv.metal.unavailable_reason()
    assert not nv.metal.is_available() and reason
    if registry.gpu_backend_name() is None:
        with pytest.raises(ValueError) as e:
            nv.ones((2,), stream=nv.gpu)
        assert reason in str(e.value) and "Metal" in str(e.value)


# ----------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    """The backend on EmulatedDevice (shim host buffers, emulated compile and dispatch)."""
    from msl_emulation import emulate
    from msl_emulation.fake_device import EmulatedDevice

    if emulate.compiler() is None or not _shim_loads():
        pytest.skip("needs g++ and the built shim library")
    dev = EmulatedDevice(tmp_path_factory.mktemp("metal_backend_emu"))
    # inputs made by nv.array live on the CPU even where a CUDA GPU is the default device
    with runtime.use_device(dev), nv.stream(nv.cpu):
        yield dev


FAKE_GPU = Stream(10_000, Device(DeviceType.gpu))


def evaluate_on_metal(outputs: list) -> None:
    """nuvec's evaluator (core._graph.run_nodes) with the Metal implementations: kernels
    where the backend has them, the CPU implementations over shared memory elsewhere."""
    from nuvec.backends import cpu  # noqa: F401
    from nuvec.backends.metal import compiled, elementwise, linalg  # noqa: F401
    from nuvec.core import run as core_run
    from nuvec.core._graph import run_nodes, topo_order

    def lookup(node):
        t = type(node._prim)
        if node._stream.device.type is DeviceType.gpu:
            fn = runtime.IMPLS.get(t) or runtime.host_impl(registry._IMPLS[("cpu", t)])
            return fn, None, None, None  # (runner, host-data form, kernel_for, donation base)
        return core_run._lookup(node)

    def placeholder():
        raise AssertionError("placeholder evaluated")

    run_nodes(topo_order(list(outputs)), {}, lookup, placeholder)


def prepare_specs(outputs: list) -> None:
    """Compiles every element-wise kernel the graphs need in one library (one emulation
    build instead of one per op)."""
    from nuvec.backends.metal import elementwise
    from nuvec.core._graph import topo_order
    from nuvec.primitives.elementwise import AsType, Binary, Select, Unary

    specs = []
    for node in topo_order(list(outputs)):
        p = node._prim
        op = {Select: "select", AsType: "astype"}.get(type(p))
        if type(p) in (Unary, Binary):
            op = p.op
        if op is not None:
            s = elementwise.spec_of(op, node)
            if s is not None:
                specs.append(s)
    runtime.prepare(specs)


def graph(x, y, m, stream):
    """Element-wise work over views and CPU-fallback primitives in between."""
    a = nv.exp(nv.multiply(x, 0.5, stream=stream), stream=stream)
    b = nv.where(nv.greater(x, y, stream=stream), a, nv.tanh(y, stream=stream), stream=stream)
    t = nv.transpose(b, stream=stream)  # a view (CPU), read in place
    c = nv.multiply(t, nv.astype(m, nv.float32, stream=stream), stream=stream)  # broadcast
    s = nv.sum(c, axis=0, keepdims=True, stream=stream)  # CPU reduction over GPU memory
    d = nv.subtract(c, s, stream=stream)
    h = nv.astype(
        nv.erf(nv.astype(d, nv.bfloat16, stream=stream), stream=stream), nv.float16, stream=stream
    )
    k = nv.floor_divide(nv.astype(h, nv.int32, stream=stream), 3, stream=stream)
    return [b, c, d, h, k, nv.logical_not(nv.isnan(d, stream=stream), stream=stream)]


def same_bits(g: np.ndarray, w: np.ndarray) -> bool:
    """Equal bit for bit, except that any NaN equals any NaN (payloads depend on operand
    order, see test_msl_emulation.py)."""
    gb = np.ascontiguousarray(g).reshape(-1).view(f"u{g.itemsize}")
    wb = np.ascontiguousarray(w).reshape(-1).view(f"u{w.itemsize}")
    diff = gb != wb
    if g.dtype.kind == "f" or g.dtype == BF16:
        diff &= ~(np.isnan(g.astype(np.float32)) & np.isnan(w.astype(np.float32))).reshape(-1)
    return not diff.any()


def test_graph_on_emulated_metal_matches_cpu(emulated):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((33, 20)).astype(np.float32)
    ys = rng.standard_normal((33, 20)).astype(np.float32)
    xs[0, :4] = [np.nan, np.inf, -0.0, 1e-40]
    ms = rng.integers(-3, 4, size=(33,)).astype(np.int8)
    ref = graph(nv.array(xs), nv.array(ys), nv.array(ms), nv.cpu)
    nv.eval(ref)
    outs = graph(nv.array(xs), nv.array(ys), nv.array(ms), FAKE_GPU)
    prepare_specs(outs)
    before = len(emulated.dispatches)
    evaluate_on_metal(outs)
    kernels = [d[0] for d in emulated.dispatches[before:]]
    assert len(kernels) >= 12
    assert any(k.endswith("_strided") for k in kernels)  # the transposed view
    assert any(k.endswith("_scalar") for k in kernels)  # the weak scalars
    for got, want in zip(outs, ref):
        assert isinstance(got._data, MetalArray)
        g, w = np.asarray(got), np.asarray(want)  # waits for the "GPU"
        assert g.dtype == w.dtype and g.shape == w.shape
        assert same_bits(g, w)


def test_reads_wait_for_the_gpu(emulated):
    """The emulated GPU runs at synchronize: a read must wait, and does."""
    x = nv.array(np.arange(6, dtype=np.float32))
    y = nv.add(x, x, stream=FAKE_GPU)
    prepare_specs([y])
    evaluate_on_metal([y])
    data = y._data
    assert data.pending is not None
    raw = data.array  # not waited for: still zeros
    assert raw.tolist() == [0.0] * 6
    assert y.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert data.pending is None and raw.tolist() == y.tolist()  # the same memory, no copy


def test_fused_kernel_on_emulated_metal(emulated):
    from nuvec.primitives.compiled import Compiled
    from nuvec.core.array import Array

    spec = KernelSpec(
        ("float16", "float16"),
        (("float16", 0x3C00),),
        (
            Node("sigmoid", (("in", 0),), "float16"),
            Node("multiply", (("in", 0), ("node", 0)), "float16"),
            Node("multiply", (("node", 1), ("in", 1)), "float16"),
            Node("add", (("node", 2), ("const", 0)), "float16"),
            Node("greater", (("node", 3), ("in", 1)), "bool"),
        ),
        (3, 4),
    )
    rng = np.random.default_rng(2)
    a = rng.standard_normal((8, 40)).astype(np.float16)
    b = rng.standard_normal((40,)).astype(np.float16)
    outs = Array.make_multi(Compiled(spec, ()), [nv.array(a), nv.array(b)], FAKE_GPU)
    assert runtime.prepare([spec]) == 1 and runtime.prepare([spec]) == 0
    evaluate_on_metal(outs)
    from nuvec.backends.cpu import kernels

    refs = kernels.run(spec, [a, b], (8, 40))
    for got, want in zip(outs, refs):
        assert same_bits(np.asarray(got), want)
    assert emulated.dispatches[-1][0].endswith("_strided")  # b broadcast along rows


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "int64"])
def test_matmul_on_emulated_metal(emulated, dtype):
    rng = np.random.default_rng(4)
    npd = {"bfloat16": BF16}.get(dtype, np.dtype(dtype))
    if dtype.startswith("int"):
        a = rng.integers(-9, 9, size=(3, 21, 18)).astype(npd)
        b = rng.integers(-9, 9, size=(18, 35)).astype(npd)
    else:
        a = rng.standard_normal((3, 21, 18)).astype(np.float32).astype(npd)
        b = rng.standard_normal((18, 35)).astype(np.float32).astype(npd)
    before = len(emulated.dispatches)
    bt = nv.transpose(nv.array(np.ascontiguousarray(b.T)), stream=FAKE_GPU)  # a view
    out = nv.matmul(nv.array(a), bt, stream=FAKE_GPU)
    ref = nv.matmul(nv.array(a), nv.array(b), stream=nv.cpu)
    evaluate_on_metal([out])
    got, want = np.asarray(out), np.asarray(ref)
    mm = [d for d in emulated.dispatches[before:] if d[0].startswith("nv_mm_")]
    if dtype == "int64":
        assert mm == [] and np.array_equal(got, want)  # no kernel: the CPU's result
        return
    assert mm == [(f"nv_mm_{dtype}", (3, 2, 3), (16, 16, 1), "threadgroups")]
    tol = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 8e-3, "int32": 0}[dtype]
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol * 8
    )


def test_addmm_on_emulated_metal(emulated):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((9, 17)).astype(np.float32)
    b = rng.standard_normal((17, 6)).astype(np.float32)
    c = rng.standard_normal((6,)).astype(np.float32)
    out = nv.addmm(nv.array(c), nv.array(a), nv.array(b), alpha=0.5, beta=2.0, stream=FAKE_GPU)
    ref = nv.addmm(nv.array(c), nv.array(a), nv.array(b), alpha=0.5, beta=2.0, stream=nv.cpu)
    evaluate_on_metal([out])
    assert emulated.dispatches[-1][0] == "nv_mm_float32"
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5, atol=1e-5)


def test_metal_kernel_on_emulated_metal(emulated, monkeypatch):
    """A user kernel of nv.fast.metal_kernel, its generated source (prelude included)
    compiled by the emulation and run: shapes and strides reach the slots the signature
    declares, a transposed input is read in place, a 0-d input by reference."""
    from nuvec import _metal_kernel
    from nuvec.backends.metal import custom_kernel  # noqa: F401  (fills runtime.IMPLS)
    from nuvec.primitives.custom_kernel import MetalCustomKernel

    monkeypatch.setattr(_metal_kernel.metal, "is_available", lambda: True)  # pretend Metal
    body = (
        "uint i = thread_position_in_grid.x;\n"
        "if (i >= uint(a_shape[0] * a_shape[1])) return;\n"
        "long r = i / a_shape[1], c = i % a_shape[1];\n"
        "out[i] = a[r * a_strides[0] + c * a_strides[1]] * s + T(N);\n"
        "idx[i] = int32_t(r * a_strides[0] + c * a_strides[1]) + a_ndim;"
    )
    k = nv.fast.metal_kernel(
        "affine", ["a", "s"], ["out", "idx"], body, ensure_row_contiguous=False
    )
    base = memory.empty(emulated, (5, 3), np.float32)
    base[...] = np.arange(15, dtype=np.float32).reshape(5, 3)
    outs = k(
        inputs=[nv.array(base.T), nv.array(np.float32(2.0))],
        output_shapes=[(15,), (15,)],
        output_dtypes=[nv.float32, nv.int32],
        grid=(40, 1, 1),
        threadgroup=(32, 1, 1),
        template=[("T", nv.float32), ("N", 1)],
        stream=FAKE_GPU,
    )
    fn = runtime.IMPLS[MetalCustomKernel].__wrapped__
    scalar = memory.empty(emulated, (), np.float32)
    scalar[...] = 2.0
    got = fn(outs[0]._prim, [MetalArray(base.T), MetalArray(scalar)], outs[0])
    out, idx = (g.get() for g in got)
    at = base.T  # (3, 5), strides (1, 3) in elements
    assert np.array_equal(out, (at * 2 + 1).reshape(-1))
    r, c = np.divmod(np.arange(15), 5)
    assert idx.tolist() == (r * 1 + c * 3 + 2).tolist()
    assert emulated.dispatches[-1][0] == "custom_kernel_affine__float_1_float_floats_float_int32_t"
