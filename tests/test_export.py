"""nv.export_function / nv.import_function / nv.exporter: round trips bit for bit against the
original function, MLX's calling conventions and errors, and files that are damaged or
hostile (a clean ValueError naming the file, no code run)."""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn
from nuvec.core.primitive import Primitive
from nuvec.core.array import Array
from nuvec.export import fileformat


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "fn.nvfn")


def bits_equal(a, b) -> bool:
    if a.dtype != b.dtype:
        return False
    if a.dtype == nv.bfloat16:  # (NumPy takes no bfloat16 buffer, as with MLX: compare bits)
        a, b = a.view(nv.uint16), b.view(nv.uint16)
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def rng_array(shape, dtype=np.float32, seed=0):
    return nv.array(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


# ---- round trips -------------------------------------------------------------------------

CASES = {
    "fused_chain": (lambda x: nv.tanh(x * 1.5) * nv.exp(-x * x) + 0.25, [(64,)]),
    "matmul_bias": (lambda x, w: nv.maximum(x @ w + 1.0, 0.0), [(8, 16), (16, 4)]),
    "reductions": (lambda x: (x.sum(axis=1), x.max(), nv.logsumexp(x, axis=0)), [(5, 7)]),
    "softmax": (lambda x: nv.softmax(x, axis=-1), [(3, 9)]),
    "indexing": (lambda x: x[1:, ::2] * x[0, 0], [(4, 6)]),
    "sort_argsort": (lambda x: (nv.sort(x, axis=0), nv.argsort(x, axis=1)), [(6, 5)]),
    "reshape_transpose": (lambda x: nv.transpose(x.reshape(3, 4, 2), (2, 0, 1)) - 1, [(24,)]),
    "concatenate_pad": (lambda x, y: nv.pad(nv.concatenate([x, y], axis=0), 1), [(2, 3), (4, 3)]),
    "cumsum": (lambda x: nv.cumsum(x, axis=1, reverse=True), [(3, 5)]),
    "fft": (lambda x: nv.abs(nv.fft.rfft(x)), [(16,)]),
    "where_astype": (lambda x: nv.where(x > 0, x, 0).astype(nv.float16), [(10,)]),
    "bfloat16_constant": (
        lambda x: x.astype(nv.bfloat16) * nv.array([1.5, -2.0, 3.0], nv.bfloat16),
        [(4, 3)],
    ),
    "complex64": (lambda x: nv.abs(x.astype(nv.complex64) * nv.array(1 + 2j)) + 1, [(5,)]),
    "integer_ops": (lambda x: (x.astype(nv.int32) * 3) // 2 % 5, [(8,)]),
    "layer_norm": (
        lambda x, w, b: nv.fast.layer_norm(x, w, b, 1e-5),
        [(4, 32), (32,), (32,)],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip_equals_the_function_bit_for_bit(path, case):
    fun, shapes = CASES[case]
    args = [rng_array(s, seed=k) for k, s in enumerate(shapes)]
    nv.export_function(path, fun, *args)
    imported = nv.import_function(path)
    want = fun(*args)
    want = list(want) if isinstance(want, tuple) else [want]
    for _ in range(3):  # the first call traces, later ones replay (and run fused kernels)
        got = imported(*args)
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert bits_equal(g, w)
    other = [rng_array(s, seed=10 + k) for k, s in enumerate(shapes)]
    want = fun(*other)
    want = list(want) if isinstance(want, tuple) else [want]
    for g, w in zip(imported(*other), want):
        assert bits_equal(g, w)


def test_no_inputs_and_outputs_that_are_inputs_or_constants(path):
    nv.export_function(path, lambda: nv.zeros((3, 3)))
    (out,) = nv.import_function(path)()
    assert bits_equal(out, nv.zeros((3, 3)))
    nv.export_function(path, lambda x: (x, x + 1, nv.ones((2,))), nv.array([1, 2]))
    a, b, c = nv.import_function(path)(nv.array([5, 6]))
    assert a.tolist() == [5, 6] and b.tolist() == [6, 7] and c.tolist() == [1.0, 1.0]


def test_calling_conventions(path):
    def fun(x, z=None):
        return x if z is None else x + z

    x, z = nv.array([1, 2, 3]), nv.array([2, 2, 2])
    for export_args, export_kwargs in [
        ((x,), {"z": z}),
        (((x,), {"z": z}), {}),
    ]:
        nv.export_function(path, fun, *export_args, **export_kwargs)
        f = nv.import_function(path)
        assert f(x, z=z)[0].tolist() == [3, 4, 5]
        assert f((x,), {"z": z})[0].tolist() == [3, 4, 5]
        with pytest.raises(ValueError, match="no exported signature"):
            f(x, z)
        with pytest.raises(ValueError, match="no exported signature"):
            f(x, y=z)
    nv.export_function(path, fun, x=x, z=z)
    f = nv.import_function(path)
    assert f({"x": x, "z": z})[0].tolist() == [3, 4, 5]
    assert f(z=z, x=x)[0].tolist() == [3, 4, 5]
    with pytest.raises(ValueError):
        f(x, z=z)


def test_compiled_functions_and_in_place_updates(path):
    @nv.compile
    def step(x, y):
        x += y  # rebinds the traced input, not the caller's array
        return x * 2

    x, y = nv.array([1.0, 2.0]), nv.array([0.5, 0.5])
    nv.export_function(path, step, x, y)
    assert nv.import_function(path)(x, y)[0].tolist() == [3.0, 5.0]
    assert x.tolist() == [1.0, 2.0]
    f = nv.import_function(path)
    inside = nv.compile(lambda a, b: f(a, b)[0] + 1)  # an imported function inside compile
    assert inside(x, y).tolist() == [4.0, 6.0]


def test_shapeless_refusal_names_the_export(path):
    def noisy(x):  # a draw of a fixed shape fixes the input's shape too
        return x + nv.random.uniform(shape=(4,))

    with pytest.raises(ValueError, match="export_function: .*'random_bits'.*shapeless"):
        nv.export_function(path, noisy, nv.ones((4,)), shapeless=True)


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="import_function"):
        nv.import_function("/nonexistent/fn.nvfn")


def test_keyword_inputs_bind_by_name(path):
    nv.export_function(path, lambda x, y: x - y, x=nv.array(1.0), y=nv.array(1.0))
    f = nv.import_function(path)
    assert f(x=nv.array(2.0), y=nv.array(3.0))[0].item() == -1.0
    assert f(y=nv.array(2.0), x=nv.array(3.0))[0].item() == 1.0


def test_bad_inputs_and_outputs_raise_value_error(path):
    with pytest.raises(ValueError, match="export_function: inputs"):
        nv.export_function(path, nv.abs, "hi")
    with pytest.raises(ValueError, match="export_function: inputs"):
        nv.export_function(path, nv.abs, nv.array(1.0), "hi")
    with pytest.raises(ValueError, match="export_function: inputs"):
        nv.export_function(path, lambda x: x[0][0], [[nv.array(1.0)]])
    with pytest.raises(ValueError, match="export_function: outputs"):
        nv.export_function(path, lambda: (nv.zeros((3,)), 1))
    with pytest.raises(ValueError, match="export_function: outputs"):
        nv.export_function(path, lambda: (nv.zeros((3,)), [nv.zeros((3,))]))
    nv.export_function(path, lambda x, y: x + y, nv.array(1.0), nv.array(1.0))
    f = nv.import_function(path)
    with pytest.raises(ValueError, match="import_function: inputs"):
        f(nv.array(1.0), 1.0)
    with pytest.raises(ValueError, match="no exported signature"):
        f(nv.array(1.0), nv.array(1.0), nv.array(1.0))
    with pytest.raises(ValueError, match="no exported signature"):
        f(nv.array([1.0]), nv.array(1.0))  # the shape differs
    with pytest.raises(ValueError, match="no exported signature"):
        f(nv.array(1), nv.array(1))  # the dtype differs
    with pytest.raises(TypeError, match="metadata"):
        nv.export_function(path, nv.abs, nv.array(1.0), metadata={"a": 1})
    with pytest.raises(ValueError, match="metadata"):
        nv.export_function(lambda d: None, nv.abs, nv.array(1.0), metadata="m")
    with pytest.raises(TypeError, match="import_function"):
        nv.import_function(3)


def test_exporter_several_signatures_and_shared_constants(path):
    constant = nv.zeros((16, 2048))
    nv.eval(constant)

    def fun(*args):
        return constant + sum(args)

    with nv.exporter(path, fun) as export:
        for i in range(5):
            export(*[nv.array(1)] * i)
    assert os.path.getsize(path) < constant.nbytes + 8192  # the constant is stored once
    f = nv.import_function(path)
    for i in range(5):
        assert bits_equal(f(*[nv.array(2)] * i)[0], fun(*[nv.array(2)] * i))
    with pytest.raises(RuntimeError, match="closed"):
        export(nv.array(1))


def test_exporter_refuses_a_signature_twice(path):
    with nv.exporter(path, lambda x: x * 2) as export:
        export(nv.array([1, 2]))
        with pytest.raises(RuntimeError, match="same signature"):
            export(nv.array([3, 4]))
        export(nv.array([1, 2, 3]))  # another shape is another signature
    f = nv.import_function(path)
    assert f(nv.array([1, 2, 3]))[0].tolist() == [2, 4, 6]


def test_each_signature_is_in_the_file_before_close(path):
    e = nv.exporter(path, lambda x: x + 1)
    e(nv.array([1]))
    assert nv.import_function(path)(nv.array([4]))[0].tolist() == [5]
    e(nv.array([1, 2]))
    assert nv.import_function(path)(nv.array([4, 5]))[0].tolist() == [5, 6]
    e.close()


def test_shapeless(path):
    with nv.exporter(path, lambda *xs: sum(xs), shapeless=True) as export:
        export(nv.array(1))
        export(nv.array([1, 2]), nv.array([3, 4]))
    f = nv.import_function(path)
    assert f(nv.array(5))[0].item() == 5
    assert f(nv.array([1, 2, 3]), nv.array([3, 4, 5]))[0].tolist() == [4, 6, 8]
    assert f(nv.array([1, 2, 3]), nv.array([3]))[0].tolist() == [4, 5, 6]  # broadcasts
    with pytest.raises(ValueError):
        f(nv.array(10), nv.array([5, 10, 20]))

    w = rng_array((8, 3), seed=3)

    def g(x):
        return nv.tanh(x @ w) * 2.0 + x.sum(axis=-1, keepdims=True)

    nv.export_function(path, g, rng_array((2, 5, 8)), shapeless=True)
    f = nv.import_function(path)
    for shape in [(2, 5, 8), (1, 17, 8), (3, 2, 8)]:
        x = rng_array(shape, seed=7)
        assert bits_equal(f(x)[0], g(x))


def test_shapeless_branches_on_sizes_keep_their_conditions(path):
    def fun(x, y):  # MLX's test_export_control_flow
        return x + y if y.shape[0] <= 2 else x + 2 * y

    with nv.exporter(path, fun, shapeless=True) as export:
        export(nv.array(1), nv.array([1, 2, 3]))
        export(nv.array(1), nv.array([1, 2]))
    f = nv.import_function(path)
    for n in (1, 2, 3, 5):
        y = nv.arange(n)
        assert f(nv.array(1), y)[0].tolist() == fun(nv.array(1), y).tolist()

    nv.export_function(path, fun, nv.array(1), nv.array([1, 2, 3]), shapeless=True)
    f = nv.import_function(path)
    assert f(nv.array(1), nv.arange(4))[0].tolist() == [1, 3, 5, 7]
    with pytest.raises(ValueError, match=r"where input 1's dim 0 <= 2 \(False at the trace\)"):
        f(nv.array(1), nv.arange(2))


def test_shapeless_indexing_and_reshapes(path):
    def fun(x):
        return x[:, -1] * 2 + x[1:, :2].sum() + x.reshape(-1).max()

    nv.export_function(path, fun, rng_array((3, 4)), shapeless=True)
    f = nv.import_function(path)
    for shape in [(3, 4), (5, 6), (2, 9)]:
        x = rng_array(shape, seed=4)
        assert bits_equal(f(x)[0], fun(x))


def test_random_draws_use_the_key_of_the_export(path):
    nv.random.seed(5)
    nv.export_function(path, lambda: nv.random.uniform(shape=(3,)))
    (out,) = nv.import_function(path)()
    nv.random.seed(5)
    assert bits_equal(out, nv.random.uniform(shape=(3,)))


def test_models_and_quantized_models(path):
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 64))
    nv.eval(model.parameters())
    x = rng_array((4, 64))
    nv.export_function(path, model, x)
    assert bits_equal(nv.import_function(path)(x)[0], model(x))
    nn.quantize(model, group_size=32, bits=4)
    nv.eval(model.parameters())
    nv.export_function(path, model, x)
    assert bits_equal(nv.import_function(path)(x)[0], model(x))


def test_transforms_of_an_imported_function(path):
    def fun(x, w):
        return nv.sum(nv.tanh(x @ w) ** 2)

    x, w = rng_array((3, 4)), rng_array((4, 2), seed=1)
    nv.export_function(path, fun, x, w)
    f = nv.import_function(path)

    def via_import(x, w):
        return f(x, w)[0]

    for a, b in zip(nv.grad(via_import, argnums=(0, 1))(x, w), nv.grad(fun, argnums=(0, 1))(x, w)):
        assert bits_equal(a, b)
    xs = rng_array((5, 3, 4), seed=2)
    assert bits_equal(nv.vmap(via_import, in_axes=(0, None))(xs, w), nv.vmap(fun, (0, None))(xs, w))


def test_custom_function_is_exported_as_its_forward_graph(path):
    @nv.custom_function
    def f(x):
        return nv.sin(x) * 2

    @f.vjp
    def f_vjp(primals, cotangent, output):
        return [cotangent * 100]

    x = rng_array((6,))
    nv.export_function(path, lambda x: f(x) + 1, x)
    assert bits_equal(nv.import_function(path)(x)[0], f(x) + 1)


def test_callback_reports_the_graph():
    seen = []
    nv.export_function(
        seen.append, lambda x, y: nv.log(nv.abs(x - y)), nv.array(1.0), y=nv.array(2.0)
    )
    kinds = [d["type"] for d in seen]
    assert kinds[:4] == ["inputs", "keyword_inputs", "outputs", "constants"]
    assert len(seen[0]["inputs"]) == 2 and seen[1]["keywords"] == [("y", "in1")]
    prims = [d for d in seen if d["type"] == "primitive"]
    assert [p["name"] for p in prims] == ["Subtract", "Abs", "Log"]  # MLX's primitive names
    assert prims[0]["arguments"] == [] and prims[0]["inputs"][0][0] == "in0"
    assert prims[2]["arguments"] == [2]  # MLX's Log::Base e


def test_metadata(path):
    meta = json.dumps({"name": "model", "params": 7})
    nv.export_function(path, nv.abs, nv.array([1.0]), metadata=meta)
    f, got = nv.import_function(path, return_metadata=True)
    assert got == meta and f(nv.array([-2.0]))[0].tolist() == [2.0]
    nv.export_function(path, nv.abs, nv.array([1.0]))
    assert nv.import_function(path, return_metadata=True)[1] == ""


class _Foreign(Primitive):
    name = "foreign"

    def infer(self, inputs):
        return [(inputs[0].shape, inputs[0].dtype)]


def test_operations_outside_the_format_are_refused(path):
    with pytest.raises(ValueError, match="'foreign'.*cannot be exported"):
        nv.export_function(path, lambda x: Array.make(_Foreign(), [x]), nv.array([1.0]))
    assert not os.path.exists(path)


def test_a_failed_export_leaves_the_old_file(path, tmp_path):
    nv.export_function(path, lambda x: x + 1, nv.array([1]))
    before = open(path, "rb").read()

    def broken(x):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        nv.export_function(path, broken, nv.array([1]))
    assert open(path, "rb").read() == before
    assert sorted(os.listdir(tmp_path)) == ["fn.nvfn"]  # no temporary file left behind


# ---- damaged and hostile files -----------------------------------------------------------


def _exported(path) -> bytes:
    w = rng_array((4, 3))
    nv.export_function(path, lambda x: nv.exp(x @ w).sum(axis=0), rng_array((2, 4)))
    return open(path, "rb").read()


def _split(data: bytes) -> tuple[dict, dict, bytes]:
    (n,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8 : 8 + n])
    return header, json.loads(header["__metadata__"]["function"]), data[8 + n :]


def _join(header: dict, doc: dict, rest: bytes) -> bytes:
    header["__metadata__"]["function"] = json.dumps(doc)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + rest


def _expect_bad(path, data: bytes, match: str | None) -> None:
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(ValueError, match=match) as e:
        nv.import_function(path)
    assert path in str(e.value)


def test_truncated_files(path):
    data = _exported(path)
    for n in (0, 5, 8, 40, len(data) // 2, len(data) - 1):
        _expect_bad(path, data[:n], None)


def test_a_safetensors_file_that_is_no_function(path):
    nv.save_safetensors(path, {"w": nv.ones((2,))})
    _expect_bad(path, open(path, "rb").read(), "not a function exported by nuvec")


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: d["traces"][0]["steps"][0].update(op="os.system"), "not an operation"),
        (lambda d: d["traces"][0]["steps"][0].update(op="misc.CustomFunction"), "not an operation"),
        (lambda d: d["traces"][0]["steps"][0].update(op="compiled.Compiled"), "not an operation"),
        (lambda d: d["traces"][0]["steps"][0].update(op="shape._View"), "not an operation"),
        (lambda d: d["traces"][0]["steps"][0].update(op="elementwise.dt"), "not an operation"),
        (lambda d: d["traces"][0]["steps"][-1].update(args=[10**6]), "numbered below"),
        (lambda d: d["traces"][0]["steps"][0].update(args=[-1, 0]), "numbered below"),
        (lambda d: d["traces"][0].update(outputs=[99]), "numbered below"),
        (lambda d: d["traces"][0]["steps"][0].update(state=[{"x": 1}]), "cannot be built"),
        (lambda d: d["traces"][0]["steps"][0].update(state=[1, 2, 3, 4, 5]), "cannot be built"),
        (lambda d: d["traces"][0]["steps"][0]["outs"][0].__setitem__(0, [7, 7]), "the file says"),
        (lambda d: d["traces"][0]["steps"][0]["outs"][0].__setitem__(1, "int8"), "the file says"),
        (lambda d: d["traces"][0]["inputs"][0].__setitem__(0, [2, 5]), "step 0"),
        (lambda d: d["traces"][0]["inputs"][0].__setitem__(0, [1 << 40] * 3), "too large"),
        (lambda d: d["traces"][0]["inputs"][0].__setitem__(1, "float33"), "unknown dtype"),
        (lambda d: d["traces"][0]["constants"][0].__setitem__(0, "nope"), "names no tensor"),
        (lambda d: d["traces"][0]["constants"][0].__setitem__(1, [9, 9]), "broadcast"),
        (lambda d: d["traces"][0].update(kwargs=["b", "a"]), "keyword names"),
        (lambda d: d["traces"][0].pop("steps"), "is not"),
        (lambda d: d["traces"][0].update(conditions=[]), "conditions are not"),
        (lambda d: d["traces"][0].update(conditions=[["<", 1, 2]]), "not \\[comparison"),
        (lambda d: d["traces"][0].update(conditions=[["in", 1, 2, True]]), "not \\[comparison"),
        (
            lambda d: d["traces"][0].update(conditions=[["<", ["dim", 3, 0], 2, True]]),
            "input 3 does not exist",
        ),
        (
            lambda d: d["traces"][0].update(conditions=[["<", ["**", 2, 2], 2, True]]),
            "unknown form",
        ),
        (lambda d: d.update(traces={}), "not {shapeless, traces}"),
    ],
)
def test_hostile_documents(path, edit, match):
    header, doc, rest = _split(_exported(path))
    edit(doc)
    _expect_bad(path, _join(header, doc, rest), match)


def test_unknown_element_wise_operation(path):
    header, doc, rest = _split(_exported(path))
    exp = next(s for s in doc["traces"][0]["steps"] if s["op"] == "elementwise.Unary")
    exp["state"] = ["system"]
    _expect_bad(path, _join(header, doc, rest), "not an element-wise operation")


def test_malformed_document_and_version(path):
    header, doc, rest = _split(_exported(path))
    header["__metadata__"]["function"] = "{" * 100000
    text = json.dumps(header).encode()
    _expect_bad(path, struct.pack("<Q", len(text)) + text + rest, "malformed")
    header, doc, rest = _split(_exported(path))
    header["__metadata__"]["version"] = "99"
    _expect_bad(path, _join(header, doc, rest), "version")


def test_callback_names_are_mlx_primitive_names():
    seen = []

    def f(x, y):
        a = nv.arcsin(nv.clip(x, -1, 1)) + nv.logaddexp(x, y)
        b = nv.cumsum(nv.transpose(nv.broadcast_to(a, (2, 2))), axis=0).astype(nv.float16)
        return nv.all(b > 0), nv.sum(nv.greater_equal(x, y).astype(nv.int32))

    nv.export_function(seen.append, f, nv.array([0.5, 0.25]), nv.array([1.0, -1.0]))
    names = {d["name"] for d in seen if d["type"] == "primitive"}
    for want in ("ArcSin", "LogAddExp", "Broadcast", "Transpose", "CumSum", "AsType", "And"):
        assert want in names, (want, names)
    assert "GreaterEqual" in names and "Sum" in names


def test_a_transposed_constant_is_read_back_in_its_layout(path):
    # a product's bits may depend on its operands' layout (cuBLAS picks its kernel by it), so
    # a captured transposed weight must come back transposed, not as a C-ordered copy
    w = rng_array((32, 64), seed=3)
    x = rng_array((4, 64), seed=4)
    nv.export_function(path, lambda a: a @ w.T, x)
    (trace,), _, _ = fileformat.read(path)
    (const,) = trace.constants
    want = np.asarray(w).T
    assert const.shape == want.shape and not const._host().flags.c_contiguous
    assert const._host().strides == want.strides
    assert bits_equal(const, w.T)
    assert bits_equal(nv.import_function(path)(x)[0], x @ w.T)
    with open(path, "rb") as f:
        header = f.read(struct.unpack("<Q", f.read(8))[0])
    doc = json.loads(json.loads(header)["__metadata__"]["function"])
    assert doc["traces"][0]["constants"] == [["c0", [64, 32], [1, 0]]]
