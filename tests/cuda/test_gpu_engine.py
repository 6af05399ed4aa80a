"""Every element-wise kernel of the engine on the GPU against the CPU's, bit for bit.

Each single-op spec the CUDA dialect supports (every op over every dtype, every cast pair) runs
through ``nuvec.backends.cuda.kernels`` and ``nuvec.backends.cpu.kernels`` on the same inputs
(random values over the whole range plus zeros, infinities, NaNs, subnormals, extremes). Both
compute with the same generated per-element code (the float64 functions too: nuvec's own,
nv_math64.h), so the results must have the same bits; the exception is NaN payloads (x86 and
CUDA make different default NaNs: only NaN-ness is compared). Then each entry point (vec /
contig / scalar / strided, 32- and 64-bit indices) over each layout it serves.
"""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import pytest

from devices import cuda_only

pytestmark = cuda_only

cp = pytest.importorskip("cupy")

from nuvec.backends.cpu import kernels as cpu_kernels  # noqa: E402
from nuvec.codegen.ir import KernelSpec, Node  # noqa: E402
from nuvec.codegen.prebuilt import prebuilt_specs  # noqa: E402

try:
    from nuvec.backends.cuda import kernels as gpu_kernels
except ImportError:  # no GPU: the module is skipped by the mark above
    gpu_kernels = None

BF16 = np.dtype(ml_dtypes.bfloat16)
SPECS = prebuilt_specs("cuda")
N = 4099  # not a multiple of any vector width: the tail path runs too


def npdtype(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


def values(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` values of dtype ``name``: specials first, then random ones over the range."""
    with np.errstate(all="ignore"):
        return _values(name, n, rng)


def _values(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    d = npdtype(name)
    if name == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if d.kind in "ui":
        info = np.iinfo(d)
        special = np.array(
            [
                v
                for v in (0, 1, info.max, info.min, info.max - 1, 2, 7)
                if info.min <= v <= info.max
            ],
            dtype=d,
        )
        rnd = rng.integers(info.min, info.max, n, dtype=d, endpoint=True)
        if d.itemsize >= 4:  # small magnitudes too (shifts, powers, divisions)
            rnd[::3] = rng.integers(-40 if d.kind == "i" else 0, 40, rnd[::3].size).astype(d)
        rnd[: special.size] = special
        return rnd
    if name == "complex64":
        re = values("float32", n, rng)
        im = values("float32", n, np.random.default_rng(rng.integers(1 << 30)))
        return (re + 1j * np.roll(im, 5)).astype(np.complex64)
    work = np.float64 if name == "float64" else np.float32
    fin = np.finfo(
        np.float16 if name == "float16" else (np.float32 if name != "float64" else np.float64)
    )
    if name == "bfloat16":
        fin = ml_dtypes.finfo(BF16)
    special = np.array(
        [
            0.0,
            -0.0,
            np.inf,
            -np.inf,
            np.nan,
            1.0,
            -1.0,
            0.5,
            float(fin.tiny),
            float(fin.tiny) / 4,
            float(fin.max),
            -float(fin.max),
            3.0,
            -2.5,
        ],
        dtype=work,
    )
    mag = np.exp(rng.uniform(-12, 12, n)).astype(work)
    rnd = mag * rng.choice([-1.0, 1.0], n).astype(work)
    rnd[::4] = rng.uniform(-4, 4, rnd[::4].size).astype(work)  # the interesting range
    rnd[: special.size] = special
    return rnd.astype(d)


def inputs_for(spec: KernelSpec, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [values(d, N, np.random.default_rng(rng.integers(1 << 30))) for d in spec.inputs]


def to_dev(x: np.ndarray):
    return cp.asarray(x.view(np.uint16) if x.dtype == BF16 else x)


def from_dev(x, name: str) -> np.ndarray:
    h = x.get()
    return h.view(BF16) if name == "bfloat16" else h


def _bits(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        a = a.view(np.float32 if a.dtype.itemsize == 8 else np.float64)
    if a.dtype.kind in "fV" or a.dtype == BF16:
        return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
    return a


def _nan(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        a = a.view(np.float32 if a.dtype.itemsize == 8 else np.float64)
    if a.dtype.kind == "f" or a.dtype == BF16:
        return np.isnan(a.astype(np.float64))
    return np.zeros(a.shape, bool)


def assert_same(got: np.ndarray, want: np.ndarray, op: str, out: str) -> None:
    """Same bits (NaN payloads aside)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    gn, wn = _nan(got), _nan(want)  # per component for complex
    assert np.array_equal(gn, wn), f"{op} -> {out}: NaN at different places"
    g, w = _bits(got).reshape(-1), _bits(want).reshape(-1)
    keep = ~gn.reshape(-1)
    bad = np.flatnonzero(g[keep] != w[keep])
    assert bad.size == 0, (
        f"{op} -> {out}: {bad.size} of {keep.sum()} elements differ; first: "
        f"gpu bits {g[keep][bad[0]]!r}, cpu bits {w[keep][bad[0]]!r} "
        f"(element {np.flatnonzero(keep)[bad[0]]})"
    )


@pytest.fixture(scope="module", autouse=True)
def _built():
    """All the kernels below, built up front in a few NVRTC modules, in threads."""
    gpu_kernels.precompile([(s, "vec", "i32", (0,) * len(s.inputs)) for _, s in SPECS])


@pytest.mark.parametrize("name,spec", SPECS, ids=[n for n, _ in SPECS])
def test_single_op_matches_cpu(name, spec):
    xs = inputs_for(spec, zlib.crc32(name.encode()))
    out = spec.nodes[0].dtype
    want = cpu_kernels.run(spec, xs, (N,))[0]
    got = from_dev(gpu_kernels.run(spec, [to_dev(x) for x in xs], (N,))[0], out)
    assert_same(got, want, spec.nodes[0].op, out)


# -- entry points and layouts ---------------------------------------------------------------

FUSED = KernelSpec(  # exp(x) * y + 0.5, and exp(x) as a second output
    inputs=("float32", "float32"),
    constants=(("float32", 0x3F000000),),
    nodes=(
        Node("exp", (("in", 0),), "float32"),
        Node("multiply", (("node", 0), ("in", 1)), "float32"),
        Node("add", (("node", 1), ("const", 0)), "float32"),
    ),
    outputs=(0, 2),
)
LAYOUT_SPECS = {
    "add_f32": KernelSpec.single("add", ("float32", "float32"), "float32"),
    "mul_bf16": KernelSpec.single("multiply", ("bfloat16", "bfloat16"), "bfloat16"),
    "select_f16": KernelSpec.single("select", ("bool", "float16", "float16"), "float16"),
    "cast_f64_bf16": KernelSpec.single("astype", ("float64",), "bfloat16"),
    "less_i8": KernelSpec.single("less", ("int8", "int8"), "bool"),
    "fused": FUSED,
}


def _layout(kind: str, base: np.ndarray, shape=(37, 53)):
    """(host view, device view) of one input layout with the result's ``shape``."""
    dev = to_dev(np.ascontiguousarray(base))
    n = shape[0] * shape[1]
    if kind == "contiguous":
        return base[:n].reshape(shape), dev[:n].reshape(shape)
    if kind == "scalar":
        return base[:1].reshape(()), dev[:1].reshape(())
    if kind == "offset":  # contiguous but misaligned for vector loads
        return base[1 : n + 1].reshape(shape), dev[1 : n + 1].reshape(shape)
    if kind == "transposed":
        return base[:n].reshape(shape[::-1]).T, dev[:n].reshape(shape[::-1]).T
    if kind == "row":  # broadcast along the first axis (a bias)
        return base[: shape[1]], dev[: shape[1]]
    if kind == "reversed":
        return base[:n][::-1].reshape(shape), dev[:n][::-1].reshape(shape)
    raise AssertionError(kind)


LAYOUTS = ["contiguous", "scalar", "offset", "transposed", "row", "reversed"]
SERVES = {  # which forced entry point can serve which layouts (others fall back: see kernels)
    "vec": {"contiguous", "scalar"},
    "contig": {"contiguous", "offset"},
    "scalar": {"contiguous", "scalar", "offset"},
    "strided": set(LAYOUTS),
    "nd": set(LAYOUTS),
    None: set(LAYOUTS),
}


@pytest.mark.parametrize("variant", ["vec", "contig", "scalar", "strided", "nd", None])
@pytest.mark.parametrize("idx", ["i32", "i64"])
@pytest.mark.parametrize("key", sorted(LAYOUT_SPECS))
def test_entry_points_and_layouts(key, idx, variant):
    spec = LAYOUT_SPECS[key]
    rng = np.random.default_rng(7)
    shape = (37, 53)
    before = gpu_kernels.stats()["launches"]
    ran = 0
    for kind in LAYOUTS:
        if kind not in SERVES[variant]:
            continue
        hs, ds = [], []
        for j, d in enumerate(spec.inputs):
            base = values(d, 4000, rng)
            # one input in the layout under test, the others contiguous
            h, g = _layout(kind if j == len(spec.inputs) - 1 else "contiguous", base, shape)
            hs.append(h)
            ds.append(g)
        want = cpu_kernels.run(spec, hs, shape)
        with gpu_kernels.forced(variant, idx):
            got = gpu_kernels.run(spec, ds, shape)
        for k, o in enumerate(spec.outputs):
            out = spec.nodes[o].dtype
            assert_same(from_dev(got[k], out), want[k], f"{key}[{kind}]", out)
        ran += 1
    after = gpu_kernels.stats()["launches"]
    assert ran > 0
    expect = "strided" if (variant == "nd" and idx == "i64") else variant  # nd: 32-bit only
    if expect is not None:
        assert after[expect] > before[expect], f"the {expect} entry point never ran"


@pytest.mark.parametrize(
    "shape, perm",
    [
        ((32, 64, 4, 32), (0, 2, 1, 3)),  # attention's heads split from a transposed view
        ((3, 5, 7, 11, 2), (4, 0, 3, 1, 2)),
        ((2, 3, 5, 7, 11, 13), (5, 3, 1, 0, 4, 2)),
        ((2, 3, 2, 3, 2, 3, 2), (6, 5, 4, 3, 2, 1, 0)),  # more axes than nd takes: strided
    ],
)
def test_views_of_several_axes(shape, perm):
    """Transposed views of up to 7 axes (no axis merges), a broadcast column and a broadcast
    row, through the nd kernel (or the strided one beyond ``ND_MAX`` axes), bit for bit."""
    spec = FUSED
    rng = np.random.default_rng(11)
    out = tuple(shape[p] for p in perm)
    n = int(np.prod(shape))
    base = values("float32", n, rng)
    m = int(np.prod(out[:-1]))
    col = values("float32", max(m, 64), rng)[:m].reshape(out[:-1] + (1,))
    hs = [base.reshape(shape).transpose(perm), col]
    ds = [to_dev(base).reshape(shape).transpose(perm), to_dev(col)]
    want = cpu_kernels.run(spec, hs, out)
    before = gpu_kernels.stats()["launches"]
    got = gpu_kernels.run(spec, ds, out)
    for k in range(len(spec.outputs)):
        assert_same(from_dev(got[k], "float32"), want[k], f"{shape} {perm}", "float32")
    row = values("float32", 64, rng)[: out[-1]]  # values() puts its specials first
    want = cpu_kernels.run(spec, [hs[0], row], out)
    got = gpu_kernels.run(spec, [ds[0], to_dev(row)], out)
    for k in range(len(spec.outputs)):
        assert_same(from_dev(got[k], "float32"), want[k], f"{shape} {perm} row", "float32")
    after = gpu_kernels.stats()["launches"]
    used = "nd" if len(shape) <= 6 else "strided"
    assert after[used] >= before[used] + 2


def test_zero_size_and_one_element():
    spec = LAYOUT_SPECS["add_f32"]
    (z,) = gpu_kernels.run(spec, [cp.zeros((0, 3), cp.float32)] * 2, (0, 3))
    assert z.shape == (0, 3)
    (one,) = gpu_kernels.run(spec, [cp.full((1, 1), 2.5, cp.float32)] * 2, (1, 1))
    assert one.get().tolist() == [[5.0]]


def test_large_array_uses_every_thread_block():
    """More elements than one grid pass of the strided kernel covers (grid-stride loop)."""
    spec = LAYOUT_SPECS["add_f32"]
    n = (1 << 20) * 256 + 12345  # beyond _GRID_CAP blocks of 256 threads
    a = cp.arange(n, dtype=cp.float32)
    b = cp.ones(n, dtype=cp.float32)
    with gpu_kernels.forced("strided", None):
        (r,) = gpu_kernels.run(spec, [a[::-1][::-1], b], (n,))
    assert bool((r == a + 1).all().get())


@pytest.mark.parametrize("cap", [1, 2, 4])
def test_narrower_vectors_give_the_same_bits(cap):
    spec = LAYOUT_SPECS["fused"]
    rng = np.random.default_rng(3)
    xs = [values("float32", 1001, rng) for _ in range(2)]
    want = cpu_kernels.run(spec, xs, (1001,))
    prev = gpu_kernels.set_vec_cap(cap)
    try:
        got = gpu_kernels.run(spec, [to_dev(x) for x in xs], (1001,))
    finally:
        gpu_kernels.set_vec_cap(prev)
    for k in range(len(spec.outputs)):
        assert_same(from_dev(got[k], "float32"), want[k], f"fused cap {cap}", "float32")


def test_kernels_do_not_flush_subnormals():
    """CuPy's own compile path adds -ftz=true; nuvec's must not (the CPU keeps subnormals)."""
    spec = LAYOUT_SPECS["add_f32"]
    tiny = np.array([1e-40, -3e-42, 1.4e-45], np.float32)
    (r,) = gpu_kernels.run(spec, [to_dev(tiny), to_dev(tiny)], (3,))
    np.testing.assert_array_equal(r.get(), tiny + tiny)
    assert (r.get() != 0).all()


def test_a_group_launch_gives_each_part_its_own_kernels_bits():
    """Several specs of several sizes in one launch (``run_group``): every output equals the
    output of that spec's own kernel, scalar operands and tails included."""
    rng = np.random.default_rng(11)
    parts, want = [], []
    cases = [
        ("fused", (4099,), (0, 0)),
        ("mul_bf16", (37, 53), (1, 0)),  # a broadcast scalar operand
        ("add_f32", (3,), (0, 0)),  # fewer elements than a vector
        ("select_f16", (1000,), (0, 1, 0)),
        ("cast_f64_bf16", (513,), (0,)),
    ]
    for name, shape, mask in cases:
        spec = LAYOUT_SPECS[name]
        n = int(np.prod(shape))
        # values() puts its special values first, so it is asked for at least that many
        ins = [
            to_dev(values(d, max(n, 16), rng)[: 1 if m else n].reshape(() if m else shape))
            for d, m in zip(spec.inputs, mask)
        ]
        want.append(gpu_kernels.run(spec, ins, shape))
        outs = [cp.full_like(w, 0x5A) for w in want[-1]]  # poisoned: every element written
        parts.append((spec, ins, shape, outs))
    before = gpu_kernels.stats()["launches"]["group"]
    assert gpu_kernels.run_group(parts)
    assert gpu_kernels.stats()["launches"]["group"] == before + 1
    for (_, _, _, outs), w in zip(parts, want):
        for got, exp in zip(outs, w):
            np.testing.assert_array_equal(_bits(got.get()), _bits(exp.get()))


def test_a_group_launch_takes_only_contiguous_aligned_operands():
    spec = LAYOUT_SPECS["add_f32"]
    a = cp.arange(2 * 64, dtype=cp.float32)
    ok = (spec, [a[:64], a[64:]], (64,), [cp.empty(64, cp.float32)])
    strided = (spec, [a[::2], a[1::2]], (64,), [cp.empty(64, cp.float32)])
    offset = (spec, [a[1:65], a[:64]], (64,), [cp.empty(64, cp.float32)])
    assert not gpu_kernels.run_group([ok, strided])
    assert not gpu_kernels.run_group([ok, offset])
    assert not gpu_kernels.run_group([ok])  # one part: its own kernel serves
    with gpu_kernels.forced("contig", None):
        assert not gpu_kernels.run_group([ok, ok])
