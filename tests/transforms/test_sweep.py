"""Every Primitive subclass in nuvec.primitives, probed: vjp against finite differences, jvp
against vjp, vmap against a Python loop (batch on axis 1, results on axis 1).

A probe is a small function built with public ops whose graph holds the primitive (checked).
A primitive class without a probe fails ``test_every_primitive_is_probed`` by name, so new
primitives cannot slip by without rules.
"""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest

import nuvec as nv
import nuvec.primitives as prims_pkg
from nuvec.backends import registry
from nuvec.core.array import Array
from nuvec.core.primitive import Primitive
from nuvec.primitives._common import Expanding
from nuvec.primitives.misc import Forwarding
from nuvec.primitives.reduction import NumberOfElements
from nuvec.primitives.shape import RelativeSlice, RelativeSliceUpdate, ReshapeLike, SumToShape
from nuvec.primitives.shape import SizedBroadcast, SizedReshape
from nuvec.primitives.shape import Unflatten
from nuvec.transforms import rules
from nuvec.transforms._trace import release, tracer_copy, tracing

from ._util import exact, numeric_grad

RNG = np.random.default_rng(7)
F64 = np.float64


def f64(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(F64)


def _custom():
    @nv.custom_function
    def f(x):
        return nv.sin(x) * 2.0

    return f


_CUSTOM = _custom()


def _copy(x):
    from nuvec.primitives.misc import Copy

    return Array.make(Copy(), [x])


def _scaled_softmax(x, m):
    from nuvec.primitives.reduction import ScaledSoftmax

    return Array.make(ScaledSoftmax(0.7, True), [x, m])


def _setitem_slice(x, v):
    y = x * 1.0
    y[1:3] = v
    return y


def _setitem_array(x, v):
    y = x * 1.0
    y[exact([2, 0])] = v
    return y


# class name -> (function, inputs (NumPy), indices of the float inputs to differentiate)
# a 4-bit weight (5, 64) with float64 scales and biases, for the quantized product's probe
_QUANTIZED = [
    nv.array(np.random.default_rng(4).integers(0, 2**32, (5, 8), dtype=np.uint32)),
    nv.array(np.random.default_rng(5).normal(size=(5, 2))),
    nv.array(np.random.default_rng(6).normal(size=(5, 2))),
]

PROBES = {
    "Unary": (lambda x: nv.exp(x), [f64(2, 3)], [0]),
    "Binary": (lambda x, y: x * y, [f64(2, 3), f64(2, 3)], [0, 1]),
    "Select": (
        lambda x, y: nv.where(exact([[True, False, True]]), x, y),
        [f64(2, 3), f64(2, 3)],
        [0, 1],
    ),
    "AsType": (lambda x: x.astype(nv.float32).astype(nv.float64) * x, [f64(2, 3)], [0]),
    "Broadcast": (lambda x: nv.broadcast_to(x, (2, 3, 2)), [f64(3, 1)], [0]),
    "Reshape": (lambda x: nv.reshape(x, (3, 2)), [f64(2, 3)], [0]),
    "Transpose": (lambda x: nv.transpose(x, (1, 0)), [f64(2, 3)], [0]),
    "ExpandDims": (lambda x: nv.expand_dims(x, 0), [f64(2, 3)], [0]),
    # the forms a shapeless compile trace records (made directly: eager ops do not)
    "Unflatten": (lambda x: Array.make(Unflatten(1, (2, -1)), [x]), [f64(2, 4)], [0]),
    "RelativeSlice": (
        lambda x: Array.make(RelativeSlice(((1, None, None), -1)), [x]),
        [f64(3, 4)],
        [0],
    ),
    "RelativeSliceUpdate": (
        lambda x, u: Array.make(RelativeSliceUpdate(((None, None, 2), -2)), [x, u]),
        [f64(3, 4), f64(2, 1)],
        [0, 1],
    ),
    "ReshapeLike": (lambda x, y: Array.make(ReshapeLike(), [x, y]), [f64(2, 3), f64(3, 2)], [0]),
    # sizes read from .shape: (x.shape[1], y.shape[0] // 2) and (y.shape[0], 3)
    "SizedReshape": (
        lambda x, y: Array.make(SizedReshape((("dim", 0, 1), ("//", ("dim", 1, 0), 2))), [x, y]),
        [f64(2, 3), f64(4)],
        [0],
    ),
    "SizedBroadcast": (
        lambda x, y: Array.make(SizedBroadcast((("dim", 1, 0), 3)), [x, y]),
        [f64(1, 3), f64(4)],
        [0],
    ),
    "SumToShape": (
        lambda g, x: Array.make(SumToShape(1), [g, x]),
        [f64(2, 3, 4), f64(1, 4)],
        [0],
    ),
    "NumberOfElements": (
        lambda x: x * Array.make(NumberOfElements((1,), 1, nv.float64), [x]),
        [f64(2, 3)],
        [0],
    ),
    "Squeeze": (lambda x: nv.squeeze(x, 0), [f64(1, 3)], [0]),
    "Flatten": (lambda x: nv.flatten(x), [f64(2, 3)], [0]),
    "Concatenate": (lambda x, y: nv.concatenate([x, y], axis=1), [f64(2, 3), f64(2, 1)], [0, 1]),
    "Pad": (lambda x: nv.pad(x, ((1, 0), (0, 2))), [f64(2, 3)], [0]),
    "Slice": (lambda x: x[1:, ::2], [f64(3, 4)], [0]),
    "SliceUpdate": (_setitem_slice, [f64(4, 3), f64(2, 3)], [0, 1]),
    "Gather": (lambda x: nv.take(x, exact([2, 0, 2]), axis=0), [f64(3, 2)], [0]),
    "GatherAxis": (
        lambda x: nv.take_along_axis(x, exact([[1], [0], [2]]), axis=1),
        [f64(3, 3)],
        [0],
    ),
    "Scatter": (_setitem_array, [f64(3, 2), f64(2, 2)], [0, 1]),
    "ScatterAxis": (
        lambda x, v: nv.put_along_axis(x, exact([[1], [0]]), v, axis=1),
        [f64(2, 3), f64(2, 1)],
        [0, 1],
    ),
    "Matmul": (lambda a, b: nv.matmul(a, b), [f64(2, 3), f64(3, 2)], [0, 1]),
    "AddMM": (
        lambda c, a, b: nv.addmm(c, a, b, alpha=0.5, beta=2.0),
        [f64(2, 2), f64(2, 3), f64(3, 2)],
        [0, 1, 2],
    ),
    "Reduce": (
        lambda x: nv.sum(x, axis=1) + nv.max(x, axis=0)[:2] * nv.prod(x, axis=1),
        [f64(2, 3)],
        [0],
    ),
    "Scan": (lambda x: nv.cumsum(x, axis=1) * nv.cumprod(x, axis=0), [f64(2, 3)], [0]),
    "ArgReduce": (lambda x: nv.argmax(x, axis=1), [f64(2, 3)], []),
    "Softmax": (lambda x: nv.softmax(x, axis=-1), [f64(2, 3)], [0]),
    "LogSumExp": (lambda x: nv.logsumexp(x, axis=1), [f64(2, 3)], [0]),
    "ScaledSoftmax": (lambda x, m: _scaled_softmax(x, m), [f64(2, 3), f64(3)], [0, 1]),
    "QuantizedMatmul": (
        lambda x: nv.quantized_matmul(x, *_QUANTIZED, group_size=32, bits=4),
        [f64(2, 64)],
        [0],
    ),
    "SoftmaxProduct": (
        lambda x, g: nv.vjp(lambda x: nv.softmax(x, axis=-1), [x], [g])[1][0],
        [f64(2, 3), f64(2, 3)],
        [0, 1],
    ),
    "LayerNorm": (
        lambda x, w, b: nv.fast.layer_norm(x, w, b, 1e-5),
        [f64(2, 3, 4), f64(4), f64(4)],
        [0, 1, 2],
    ),
    "LayerNormVJP": (
        lambda x, w, g: nv.vjp(lambda x, w: nv.fast.layer_norm(x, w, None, 1e-5), [x, w], [g])[1][
            0
        ],
        [f64(2, 3, 4), f64(4), f64(2, 3, 4)],
        [0, 1, 2],
    ),
    "Sort": (lambda x: nv.sort(x, axis=1), [f64(2, 3)], [0]),
    "ArgSort": (lambda x: nv.argsort(x, axis=1), [f64(2, 3)], []),
    "Partition": (lambda x: nv.partition(x, 1, axis=1), [f64(2, 3)], [0]),
    "ArgPartition": (lambda x: nv.argpartition(x, 1, axis=1), [f64(2, 3)], []),
    "StopGradient": (lambda x: nv.stop_gradient(x) * x, [f64(2, 3)], [0]),
    "Copy": (lambda x: _copy(x) * x, [f64(2, 3)], [0]),
    "CustomFunction": (lambda x: _CUSTOM(x) * x, [f64(2, 3)], [0]),
    "View": (lambda x: nv.view(x, nv.uint32), [f64(2, 3)], []),
    "ConvertFP8": (lambda x: nv.from_fp8(nv.to_fp8(x), nv.float32), [f64(2, 3)], []),
    "Depends": (lambda x, y: nv.depends(x * 2.0, y) * y, [f64(2, 3), f64(2, 3)], [0, 1]),
    "RandomBits": (lambda k: nv.random.bits((3,), key=k), [np.array([0, 7], np.uint32)], []),
    # real weights: a complex product's own vjp is outside this probe
    "FFT": (
        lambda x: (
            nv.fft.irfft(nv.fft.fft(x)[..., :2] * nv.array([1.0, 2.0]), n=3)
            + nv.fft.irfft(nv.fft.rfft(x) * nv.array([0.5, 3.0]), n=4)[..., :3]
        ),
        [f64(2, 3)],
        [0],
    ),
    "Inverse": (
        lambda x: (
            nv.linalg.inv(x + 3 * nv.eye(3, dtype=nv.float64))
            + nv.linalg.tri_inv(x + 3 * nv.eye(3, dtype=nv.float64), upper=True)
        ),
        [f64(3, 3)],
        [0],
    ),
    "Cholesky": (
        lambda x: nv.linalg.cholesky(x @ x.T + 3 * nv.eye(3, dtype=nv.float64)),
        [f64(3, 3)],
        [0],
    ),
    "Eigh": (
        lambda x: (
            nv.linalg.eigvalsh(x + nv.diag(nv.array([0.0, 2.0, 4.0], nv.float64)))
            + nv.linalg.eigh(x + x.T)[1][0] ** 2
        ),
        [f64(3, 3)],
        [0],
    ),
    "SVD": (lambda x: nv.linalg.svd(x, compute_uv=False), [f64(3, 4)], [0]),
    "QRF": (lambda x: nv.linalg.qr(x)[0] * nv.sum(nv.linalg.qr(x)[1] ** 2), [f64(4, 3)], [0]),
    "LUF": (
        lambda x: nv.linalg.lu_factor(x + 3 * nv.eye(3, dtype=nv.float64))[0],
        [f64(3, 3)],
        [0],
    ),
}

# composites the CPU lowers to one primitive (one pass per row there; a backend without these
# lowerings keeps the composite form): their probes run with the CPU as the default device
CPU_ONLY = {t.__name__ for t in registry.backend("cpu").lowerings}


@pytest.fixture(autouse=True)
def _cpu_for_cpu_only_primitives(request):
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("name") in CPU_ONLY:
        request.getfixturevalue("cpu_device")
    yield


# per-probe options: finite-difference step and tolerance (float32 round trips), or the exact
# gradient where it differs from the function's derivative on purpose (stop_gradient)
OPTIONS = {
    "QuantizedMatmul": {"eps": 1e-2},  # linear in x: a wide step is exact up to rounding
    "AsType": {"eps": 1e-2, "rtol": 1e-4, "jvp_rtol": 1e-6},
    # single precision: the transform is linear, so a wide step is exact up to rounding
    "FFT": {"eps": 1e-1, "rtol": 1e-4, "jvp_rtol": 1e-5},
    "Eigh": {"rtol": 1e-5},
    "QRF": {"rtol": 1e-5},
    "LUF": {"rtol": 1e-5},
    "StopGradient": {"grad": lambda x: [x]},
}

#: Primitives that cannot be probed from outside, with the reason.
EXEMPT = {
    **{
        name: "communicates with other processes: its vjp, jvp and vmap are checked on 2 and 4 "
        "MPI processes in tests/distributed/test_dist_mpi.py"
        for name in ("AllReduce", "AllGather", "SumScatter", "Send", "Recv")
    },
    "Expanding": "an abstract base giving its subclasses the rules of the composite form they "
    "expand to; its concrete subclasses are probed here or exempt below",
    "PermutedMatmul": "made only inside nv.compile's CPU tape (rewrites.permute_matmuls); its "
    "rules are those of transpose(matmul) it expands to (the compile tests)",
    "Eig": "MLX defines no derivative and neither does nuvec (the rules raise "
    "NotImplementedError saying why); vmap is checked in tests/ops/test_linalg.py",
    "Forwarding": "an abstract base: its outputs are inputs it forwards, its subclasses give "
    "the rules (CustomFunction is probed here, QQMatmul is exempt below)",
    "QQMatmul": "a straight-through gradient by design (MLX's), not the derivative of the "
    "rounding that finite differences see: tests/quantized/test_quantized_ops.py checks its "
    "vjp, jvp and vmap against their formulas",
    "Quantize": "no derivative in MLX (its rules raise saying so); vmap is checked in "
    "tests/quantized/test_quantized_ops.py",
    "Dequantize": "no derivative in MLX (its rules raise saying so); vmap is checked in "
    "tests/quantized/test_quantized_ops.py",
    "CustomKernel": "a user's CUDA kernel: runs on a GPU only, no derivative and no vmap (its "
    "rules raise saying so); tests/cuda/test_gpu_quantized.py runs one",
    "MetalCustomKernel": "a user's Metal kernel (nv.fast.metal_kernel): runs on Metal only, no "
    "derivative and no vmap; tests/metal/test_backend.py runs one through the Metal emulation",
    "Unbatched": "the identity whose vmap rule refuses a batched input by design (MLX's "
    "refusal for searchsorted's sequence): tests/transforms/test_vmap_refusals.py checks the "
    "refusal, the unbatched vmap, compile and the gradient through it",
    "Compiled": "made only inside nv.compile's tape, whose outputs are evaluated at once; its "
    "rules re-expand the fused members through nv.vjp/jvp/vmap (compile's tests)",
}


def _primitive_classes():
    out = {}
    for m in pkgutil.iter_modules(prims_pkg.__path__):
        mod = importlib.import_module(f"nuvec.primitives.{m.name}")
        for name, cls in inspect.getmembers(mod, inspect.isclass):
            if (
                issubclass(cls, Primitive)
                and cls is not Primitive
                and cls.__module__ == mod.__name__
                and not name.startswith("_")
            ):
                out[name] = cls
    return out


CLASSES = _primitive_classes()


def test_every_primitive_is_probed():
    missing = sorted(set(CLASSES) - set(PROBES) - set(EXEMPT))
    assert not missing, f"primitives without a transform probe (add one to PROBES): {missing}"


def test_every_primitive_defines_its_rules():
    # a rule of its own or a base class's, or (for a composite-standing primitive) the
    # composite's, which the transforms apply where the primitive has none
    lacking = []
    for name, cls in CLASSES.items():
        if cls in (Expanding, Forwarding):  # abstract bases: their subclasses give the rules
            continue
        expands = any(c in rules.EXPAND for c in cls.__mro__)
        for rule in ("VJP", "JVP", "VMAP"):
            table = getattr(rules, rule)
            if not expands and not any(c in table for c in cls.__mro__):
                lacking.append(f"{name}.{rule.lower()}")
    assert not lacking, f"primitives missing transform rules: {lacking}"


def _graph_prims(out):
    seen, stack, found = set(), list(out if isinstance(out, (list, tuple)) else [out]), []
    while stack:
        a = stack.pop()
        if id(a) in seen:
            continue
        seen.add(id(a))
        if a.primitive is not None:
            found.append(a.primitive)
            stack.extend(a.inputs)
    return found


def _call_traced(fn, arrays):
    """``fn`` on tracer copies (so custom functions appear), for the graph check."""
    copies = [tracer_copy(a) for a in arrays]
    with tracing():
        out = fn(*copies)
    prims = _graph_prims(out)
    release([out], copies)
    return prims


@pytest.mark.parametrize("name", sorted(PROBES))
def test_probe_holds_the_primitive(name):
    fn, inputs, _ = PROBES[name]
    prims = _call_traced(fn, [exact(x) for x in inputs])
    assert any(type(p) is CLASSES[name] for p in prims), (
        f"the probe for {name} makes {sorted({type(p).__name__ for p in prims})}"
    )


DIFFERENTIABLE = sorted(n for n, p in PROBES.items() if p[2])


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_vjp_matches_finite_differences(name):
    fn, inputs, diff = PROBES[name]
    arrays = [exact(x) for x in inputs]
    w = exact(RNG.normal(size=fn(*arrays).shape))

    def loss(*xs):
        full = list(arrays)
        for i, x in zip(diff, xs):
            full[i] = x
        return nv.sum(fn(*full) * w)

    grads = nv.grad(loss, argnums=tuple(range(len(diff))))(*[arrays[i] for i in diff])
    grads = grads if len(diff) > 1 else (grads,)
    opt = OPTIONS.get(name, {})
    if "grad" in opt:  # the gradient differs from the derivative by design
        num = [np.asarray(e) * np.array(w) for e in opt["grad"](*[inputs[i] for i in diff])]
    else:
        num = numeric_grad(loss, [inputs[i] for i in diff], eps=opt.get("eps", 1e-6))
    for g, n in zip(grads, num):
        np.testing.assert_allclose(
            np.array(g), n, rtol=opt.get("rtol", 1e-6), atol=1e-8, err_msg=name
        )


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_jvp_matches_vjp(name):
    fn, inputs, diff = PROBES[name]
    arrays = [exact(x) for x in inputs]
    i0 = diff[0]

    def f(x):
        full = list(arrays)
        full[i0] = x
        return fn(*full)

    x = arrays[i0]
    out = f(x)
    jv = np.stack(
        [
            np.array(nv.vjp(f, [x], [exact(e.reshape(out.shape))])[1][0]).ravel()
            for e in np.eye(out.size)
        ]
    )
    jf = np.stack(
        [
            np.array(nv.jvp(f, [x], [exact(e.reshape(x.shape))])[1][0]).ravel()
            for e in np.eye(x.size)
        ],
        axis=1,
    )
    tol = OPTIONS.get(name, {}).get("jvp_rtol", 1e-12)
    np.testing.assert_allclose(jv, jf, rtol=tol, atol=tol, err_msg=name)


@pytest.mark.parametrize("name", sorted(PROBES))
def test_vmap_matches_loop(name):
    fn, inputs, diff = PROBES[name]
    batch = 3
    batched, axes = [], []
    for x in inputs:
        if x.dtype.kind == "f" or name == "RandomBits":
            if x.dtype.kind == "f":
                stack = np.stack([x + 0.25 * b for b in range(batch)], axis=1 if x.ndim else 0)
            else:
                stack = np.stack([x + np.uint32(b) for b in range(batch)], axis=1)
            batched.append(stack)
            axes.append(1 if x.ndim else 0)
        else:
            batched.append(x)
            axes.append(None)
    out0 = fn(*[exact(x) for x in inputs])
    oax = 1 if out0.ndim >= 1 else 0
    got = nv.vmap(fn, in_axes=tuple(axes), out_axes=oax)(*[exact(b) for b in batched])
    ref = []
    for b in range(batch):
        args = [exact(x if ax is None else np.take(x, b, axis=ax)) for x, ax in zip(batched, axes)]
        ref.append(np.array(fn(*args)))
    ref = np.stack(ref, axis=oax)
    assert got.shape == ref.shape, name
    np.testing.assert_allclose(np.array(got), ref, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize(
    "name", sorted(n for n, p in PROBES.items() if not p[2] and n != "RandomBits")
)
def test_integer_outputs_have_zero_gradient(name):
    fn, inputs, _ = PROBES[name]
    x = exact(inputs[0])
    g = nv.grad(lambda a: nv.sum(fn(a).astype(nv.float64) * a[..., :1]))(x)
    # only the explicit ``a[..., :1]`` factor contributes
    expected = np.zeros(inputs[0].shape)
    expected[..., 0] = np.array(fn(x)).astype(F64).sum(axis=-1)
    np.testing.assert_allclose(np.array(g), expected)
