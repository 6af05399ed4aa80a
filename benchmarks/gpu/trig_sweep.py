"""Every input bit pattern through an element-wise kernel on the GPU and on the CPU: how many
results differ.

    python benchmarks/gpu/trig_sweep.py sin cos tan        # on a machine with an NVIDIA GPU
    python benchmarks/gpu/trig_sweep.py tanh:bfloat16 round:bfloat16
    python benchmarks/gpu/trig_sweep.py exp:float64 power:float64

Names: ``op`` (a unary op over all 2^32 float32 inputs), ``op:bfloat16`` / ``op:float16`` (the
op's kernel in that dtype over all 2^16 of its inputs), ``round:bfloat16`` / ``round:float16``
(float32 -> that dtype -> float32 in one fused kernel over all 2^32 float32 inputs: the
rounding after each operation of a half-precision chain, nv_round_bf16 / nv_round_f16),
``op:float64`` (2^28 seeded samples per input: a quarter random bit patterns, a quarter
uniform over [-800, 800], half log-uniform magnitudes from 2^-40 to 2^12 of either sign, each
input drawn independently for a binary op), ``chain:NAME`` (a chain of ``chain_sweep.py``
compiled in float32, over all 2^32 inputs: its fused kernel on the GPU against the CPU's, and,
NaNs and their payloads included, against the chain's unfused operations on the GPU, whose
bits the CUDA kernels' shortened forms keep: ``cuda.nan_forms``).

Both devices run nuvec's generated code, so every bit should agree (NaN payloads aside); the
CUDA test suite checks samples, this checks every input (about 40 s per 2^32).
"""

from __future__ import annotations

import sys
import time

import cupy as cp
import ml_dtypes
import numpy as np

from nuvec.backends.cpu import kernels as cpu_kernels
from nuvec.backends.cuda import kernels as gpu_kernels
from nuvec.codegen.ir import KernelSpec, Node
from nuvec.codegen.optable import OPS

CHUNK = 1 << 26
FLOAT64_SAMPLES = 1 << 28
NARROW = {"bfloat16": np.dtype(ml_dtypes.bfloat16), "float16": np.dtype(np.float16)}


def _chain_spec(name: str) -> KernelSpec:
    """The fused kernel of chain_sweep's chain ``name`` in float32."""
    import nuvec as nv
    from chain_sweep import CHAINS
    from nuvec.primitives.compiled import Compiled

    if name not in CHAINS:
        raise SystemExit(f"trig_sweep: no chain {name!r}; chains: {', '.join(CHAINS)}")
    with nv.stream(nv.cpu):
        x = nv.array(np.linspace(-4, 4, 64, dtype=np.float32))
        f = nv.compile(CHAINS[name])
        nv.eval(f(x))
        tape = f.lookup(f.key_of((x,), {}, [], 0)).tape
    (spec,) = [st.prim.spec for st in tape.steps if type(st.prim) is Compiled]
    return spec


def _spec(name: str) -> tuple[KernelSpec, str]:
    """(the kernel, its input dtype) of a name (see the module docstring)."""
    op, _, dt = name.partition(":")
    if op == "chain":
        return _chain_spec(dt), "float32"
    if op == "round":
        if dt not in NARROW:
            raise SystemExit(f"trig_sweep: round needs :bfloat16 or :float16, got {name!r}")
        nodes = (Node("astype", (("in", 0),), dt), Node("astype", (("node", 0),), "float32"))
        return KernelSpec(("float32",), (), nodes, (1,)), "float32"
    dt = dt or "float32"
    if dt == "float64":
        return KernelSpec.single(op, (dt,) * OPS[op].arity, dt), dt
    if dt != "float32" and dt not in NARROW:
        raise SystemExit(f"trig_sweep: unknown dtype in {name!r}")
    return KernelSpec.single(op, (dt,), dt), dt


def _float64_samples(rng: np.random.Generator, n: int) -> np.ndarray:
    """n float64 inputs: random bit patterns, [-800, 800], and log-uniform magnitudes."""
    q = n // 4
    bits = rng.integers(0, 1 << 64, q, dtype=np.uint64, endpoint=False).view(np.float64)
    flat = rng.uniform(-800.0, 800.0, q)
    mags = np.exp2(rng.uniform(-40.0, 12.0, n - 2 * q)) * rng.choice([-1.0, 1.0], n - 2 * q)
    return np.concatenate([bits, flat, mags])


def sweep_float64(spec: KernelSpec) -> tuple[int, tuple | None]:
    """(sampled inputs whose results differ, the first as (inputs, gpu, cpu) or None)."""
    rng = np.random.default_rng(64)
    bad, first = 0, None
    for _ in range(FLOAT64_SAMPLES // CHUNK):
        xs = [_float64_samples(rng, CHUNK) for _ in spec.inputs]
        want = cpu_kernels.run(spec, xs, (CHUNK,))[0]
        got = cp.asnumpy(gpu_kernels.run(spec, [cp.asarray(x) for x in xs], (CHUNK,))[0])
        diff = (got.view(np.uint64) != want.view(np.uint64)) & ~(np.isnan(got) & np.isnan(want))
        n = int(diff.sum())
        if n and first is None:
            i = int(np.argmax(diff))
            first = (tuple(float(x[i]) for x in xs), float(got[i]), float(want[i]))
        bad += n
    return bad, first


def _differ(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Where the bits differ, a NaN equal to any NaN."""
    bits = np.uint32 if want.itemsize == 4 else np.uint16
    diff = got.view(bits) != want.view(bits)
    g, w = got.view(want.dtype).astype(np.float32), want.astype(np.float32)
    return diff & ~(np.isnan(g) & np.isnan(w))


def sweep(name: str) -> tuple[int, tuple | None]:
    """(inputs whose results differ, the first of them as (bits, gpu, cpu) or None)."""
    spec, dt = _spec(name)
    if dt == "float64":
        return sweep_float64(spec)
    total = 1 << 32 if dt == "float32" else 1 << 16
    step = min(CHUNK, total)
    bad, first = 0, None
    for start in range(0, total, step):
        ints = np.arange(start, start + step, dtype=np.uint64)
        if dt == "float32":
            x = ints.astype(np.uint32).view(np.float32)
            dev = cp.asarray(x)
        else:
            x = ints.astype(np.uint16).view(NARROW[dt])
            dev = cp.asarray(x.view(np.uint16)) if dt == "bfloat16" else cp.asarray(x)
        want = cpu_kernels.run(spec, [x], (step,))[0]
        got = cp.asnumpy(gpu_kernels.run(spec, [dev], (step,))[0])
        diff = _differ(got, want)
        if name.startswith("chain:"):
            diff |= got.view(np.uint32) != _unfused(name[len("chain:") :], x)
        n = int(diff.sum())
        if n and first is None:
            i = int(np.argmax(diff))
            g = got.view(want.dtype)
            first = (hex(int(ints[i])), float(g[i]), float(want[i]))
        bad += n
    return bad, first


def _unfused(chain: str, x) -> np.ndarray:
    """The bits of chain_sweep's ``chain`` of ``x`` (float32), each operation a kernel of its
    own on the GPU."""
    import nuvec as nv
    from chain_sweep import CHAINS

    with nv.stream(nv.gpu):
        return np.asarray(CHAINS[chain](nv.array(x))).view(np.uint32)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        t0 = time.perf_counter()
        count, at = sweep(name)
        took = time.perf_counter() - t0
        print(f"{name}: {count} inputs differ (first: {at}), {took:.0f} s")
