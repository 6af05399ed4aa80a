"""nuvec on an NVIDIA GPU against PyTorch (eager, torch.compile), JAX (jax.jit) and CuPy
(cupy.fuse), in one run.

    python benchmarks/gpu/run.py --out results.json          # everything (a few minutes)
    python benchmarks/gpu/run.py --quick                     # small sizes, a smoke test

Measured:

* device copy bandwidth (bytes read + written per second) of a device-to-device copy of
  ``--n`` float32 elements, through CuPy (cudaMemcpy) and PyTorch (``copy_``): the best of the
  two is the ceiling the chains are compared with;
* fused element-wise chains (gelu, gelu_tanh, swiglu, a 10-op chain) over ``--n`` elements in
  float32 and bfloat16: time per call and bytes moved (inputs read + output written) per second,
  as a fraction of the copy bandwidth. Every library gets the same formula written with its
  elementary operations and its own fusing compiler (nuvec: ``nv.compile``);
* the per-call cost of a compiled 10-op function on 4 elements: calling it and waiting for its
  result (``round_trip``), and calling it with one wait at the end (``dispatch``);
* training steps as users write them (``training.py``): the MLP 784-512-512-10 with Adam at
  batch 256 and 8192, and the character transformer's step; nuvec MLX style
  (``nv.compile(step, inputs=state, outputs=state)``, and uncompiled), jax.jit + optax.adam,
  PyTorch eager and torch.compile with torch.optim.Adam; per step synced (each step waited for)
  and queued (steps back to back, one wait);
* extra: one functional SGD step of the same MLP (a dict of arrays; batch 256) compiled and not.

Time per call: ``--reps`` calls queued back to back, then one wait, divided by ``--reps``; the
median of ``--batches`` such batches, after warm-up calls (which also compile).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
import traceback
from functools import partial

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

SQRT1_2 = 0.7071067811865476
K_TANH = 0.7978845608028654


# -- the chains, over any library's operations ------------------------------------------------


def chains(exp, tanh, erf, sigmoid, maximum, absolute):
    """The benchmark formulas written with one library's element-wise functions."""

    def gelu(x):
        return x * 0.5 * (1.0 + erf(x * SQRT1_2))

    def gelu_tanh(x):
        return 0.5 * x * (1.0 + tanh(K_TANH * (x + 0.044715 * (x * x * x))))

    def swiglu(a, b):
        return a * sigmoid(a) * b

    def ten_op(x):
        t = x * 1.5
        t = t + 0.25
        t = tanh(t)
        t = t * x
        t = t - 0.5
        t = absolute(t)
        t = -t
        t = exp(t)
        t = t * 3.0
        return maximum(t, 0.1)

    return {
        "gelu": (gelu, 1),
        "gelu_tanh": (gelu_tanh, 1),
        "swiglu": (swiglu, 2),
        "10op": (ten_op, 1),
    }


def batch_time(call, sync, reps: int, batches: int, warm: int = 2) -> float:
    """Median seconds per call: ``reps`` calls then one ``sync``, over ``batches`` batches."""
    for _ in range(warm):
        call()
    sync()
    out = []
    for _ in range(batches):
        t = time.perf_counter()
        for _ in range(reps):
            call()
        sync()
        out.append((time.perf_counter() - t) / reps)
    return statistics.median(out)


def round_trip(call_and_wait, reps: int, warm: int = 50) -> float:
    """Median seconds of ``call_and_wait`` (one call that waits for its result)."""
    for _ in range(warm):
        call_and_wait()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        call_and_wait()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


# -- libraries --------------------------------------------------------------------------------


class Nuvec:
    name = "nuvec (nv.compile)"

    def __init__(self, fast_math: bool = False):
        import nuvec as nv

        self.nv = nv
        self.fast_math = fast_math
        if fast_math:
            self.name = "nuvec (nv.compile, fast_math)"
        self.dev = nv.gpu
        nv.set_default_device(nv.gpu)
        self.ops = chains(nv.exp, nv.tanh, nv.erf, nv.sigmoid, nv.maximum, nv.abs)

    def data(self, n, dtype, k):
        nv = self.nv
        x = nv.random.normal((n,), key=nv.random.key(k))
        x = x.astype(nv.bfloat16 if dtype == "bfloat16" else nv.float32)
        nv.eval(x)
        return x

    def compile(self, fn):
        return self.nv.compile(fn, fast_math=self.fast_math)

    def call(self, f, args):
        r = f(*args)
        self.nv.async_eval(r)
        return r

    def sync(self):
        self.nv.synchronize()

    def free(self):
        import cupy as cp

        cp.get_default_memory_pool().free_all_blocks()


class Torch:
    def __init__(self, compiled: bool):
        import torch

        self.torch = torch
        self.compiled = compiled
        self.name = "torch.compile" if compiled else "PyTorch eager"
        self.ops = chains(
            torch.exp,
            torch.tanh,
            torch.erf,
            torch.sigmoid,
            lambda a, b: torch.clamp_min(a, b),
            torch.abs,
        )

    def data(self, n, dtype, k):
        t = self.torch
        g = t.Generator(device="cuda").manual_seed(k)
        return t.randn(
            n, device="cuda", generator=g, dtype=t.bfloat16 if dtype == "bfloat16" else t.float32
        )

    def compile(self, fn):
        return self.torch.compile(fn, dynamic=False) if self.compiled else fn

    def call(self, f, args):
        return f(*args)

    def sync(self):
        self.torch.cuda.synchronize()

    def free(self):
        self.torch.cuda.empty_cache()


class Jax:
    name = "jax.jit"

    def __init__(self):
        import jax
        import jax.numpy as jnp

        self.jax, self.jnp = jax, jnp
        self.ops = chains(
            jnp.exp, jnp.tanh, jax.scipy.special.erf, jax.nn.sigmoid, jnp.maximum, jnp.abs
        )
        self.last = None

    def data(self, n, dtype, k):
        jnp = self.jnp
        x = self.jax.random.normal(
            self.jax.random.PRNGKey(k),
            (n,),
            dtype=jnp.bfloat16 if dtype == "bfloat16" else jnp.float32,
        )
        return x.block_until_ready()

    def compile(self, fn):
        return self.jax.jit(fn)

    def call(self, f, args):
        self.last = f(*args)
        return self.last

    def sync(self):
        if self.last is not None:
            self.jax.block_until_ready(self.last)

    def free(self):
        self.last = None


class CupyFuse:
    name = "cupy.fuse"

    def __init__(self):
        import cupy as cp

        self.cp = cp
        self.ops = chains(
            cp.exp, cp.tanh, _cupy_erf(), lambda a: 1.0 / (1.0 + cp.exp(-a)), cp.maximum, cp.abs
        )

    def data(self, n, dtype, k):
        if dtype == "bfloat16":
            raise NotImplementedError("CuPy has no bfloat16")
        return self.cp.random.default_rng(k).standard_normal(n, dtype=self.cp.float32)

    def compile(self, fn):
        return self.cp.fuse(fn)

    def call(self, f, args):
        return f(*args)

    def sync(self):
        self.cp.cuda.Device().synchronize()

    def free(self):
        self.cp.get_default_memory_pool().free_all_blocks()


def _cupy_erf():
    import cupyx.scipy.special as sp

    return sp.erf


# -- measurements -----------------------------------------------------------------------------


def copy_bandwidth(n: int, reps: int, batches: int) -> dict:
    """Bytes read + written per second by device-to-device copies of n float32 elements."""
    out = {}
    import cupy as cp

    src = cp.random.default_rng(0).standard_normal(n, dtype=cp.float32)
    dst = cp.empty_like(src)

    memcpy = partial(dst.data.copy_from_device_async, src.data, src.nbytes)
    t = batch_time(memcpy, cp.cuda.Device().synchronize, reps, batches)
    out["cupy_memcpy"] = 2 * src.nbytes / t
    del src, dst, memcpy
    cp.get_default_memory_pool().free_all_blocks()
    try:
        import torch

        a = torch.randn(n, device="cuda")
        b = torch.empty_like(a)
        t = batch_time(partial(b.copy_, a), torch.cuda.synchronize, reps, batches)
        out["torch_copy"] = 2 * a.numel() * 4 / t
        del a, b
        torch.cuda.empty_cache()
    except Exception as e:  # noqa: BLE001 - report what failed and go on
        out["torch_copy_error"] = repr(e)
    out["best"] = max(v for k, v in out.items() if not k.endswith("error"))
    return out


def chain_benchmarks(libs, n: int, reps: int, batches: int, copy_bw: float) -> list[dict]:
    rows = []
    for lib in libs:
        for dtype in ("float32", "bfloat16"):
            itemsize = 4 if dtype == "float32" else 2
            for cname in ("gelu", "gelu_tanh", "swiglu", "10op"):
                fn, nin = lib.ops[cname]
                row = {"library": lib.name, "dtype": dtype, "chain": cname, "n": n}
                try:
                    args = [lib.data(n, dtype, 11 + j) for j in range(nin)]
                    f = lib.compile(fn)
                    t0 = time.perf_counter()
                    lib.call(f, args)
                    lib.sync()
                    row["first_call_s"] = time.perf_counter() - t0
                    t = batch_time(partial(lib.call, f, args), lib.sync, reps, batches)
                    nbytes = (nin + 1) * n * itemsize
                    row.update(
                        seconds=t,
                        bytes=nbytes,
                        bandwidth=nbytes / t,
                        fraction_of_copy=nbytes / t / copy_bw,
                    )
                    del args, f
                except Exception as e:  # noqa: BLE001
                    row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                lib.free()
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def overhead_benchmarks(libs, reps: int) -> list[dict]:
    rows = []
    for lib in libs:
        fn, _ = lib.ops["10op"]
        row = {"library": lib.name}
        try:
            x = lib.data(4, "float32", 3)
            f = lib.compile(fn)

            def once(lib=lib, f=f, x=x):
                lib.call(f, [x])
                lib.sync()

            row["round_trip_s"] = round_trip(once, reps)
            row["dispatch_s"] = batch_time(partial(lib.call, f, [x]), lib.sync, reps, 5)
        except Exception as e:  # noqa: BLE001
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


# -- MLP 784-512-512-10 training step ---------------------------------------------------------


def _mlp_data(batch: int):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 784)).astype(np.float32)
    y = rng.integers(0, 10, batch).astype(np.int32)
    sizes = [(784, 512), (512, 512), (512, 10)]
    ws = [(rng.standard_normal(s) * np.sqrt(2.0 / s[0])).astype(np.float32) for s in sizes]
    bs = [np.zeros(s[1], np.float32) for s in sizes]
    return x, y, ws, bs


def mlp_nuvec(batch, steps, compiled, profile: bool = False) -> float:
    import nuvec as nv

    x, y, ws, bs = _mlp_data(batch)
    params = {"w": [nv.array(w) for w in ws], "b": [nv.array(b) for b in bs]}
    xa, ya = nv.array(x), nv.array(y)
    lr = 0.01

    def loss_fn(p, x, y):
        h = x
        for i in range(3):
            h = h @ p["w"][i] + p["b"][i]
            if i < 2:
                h = nv.maximum(h, 0.0)
        picked = nv.take_along_axis(h, nv.expand_dims(y, 1), 1)[:, 0]
        return nv.mean(nv.logsumexp(h, axis=1) - picked)

    grad_fn = nv.value_and_grad(loss_fn)

    def step(p, x, y):
        loss, g = grad_fn(p, x, y)
        new = {k: [a - lr * b for a, b in zip(p[k], g[k])] for k in p}
        return loss, new

    if compiled:
        step = nv.compile(step)

    def run():
        nonlocal params
        loss, params = step(params, xa, ya)
        nv.async_eval(loss, params)

    t = batch_time(run, nv.synchronize, steps, 5, warm=5)
    if profile:  # where the host time of a step goes
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for _ in range(steps):
            run()
        nv.synchronize()
        prof.disable()
        print(f"-- profile of {steps} nuvec MLP steps (compiled={compiled}) --")
        pstats.Stats(prof).sort_stats("tottime").print_stats(22)
    return t


def mlp_torch(batch, steps, compiled) -> float:
    import torch

    x, y, ws, bs = _mlp_data(batch)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 10),
    ).cuda()
    with torch.no_grad():
        for lin, w, b in zip([model[0], model[2], model[4]], ws, bs):
            lin.weight.copy_(torch.from_numpy(w.T.copy()))
            lin.bias.copy_(torch.from_numpy(b))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xt = torch.from_numpy(x).cuda()
    yt = torch.from_numpy(y).long().cuda()
    fwd = torch.compile(model) if compiled else model
    loss_f = torch.nn.CrossEntropyLoss()

    def run():
        opt.zero_grad(set_to_none=True)
        loss = loss_f(fwd(xt), yt)
        loss.backward()
        opt.step()

    return batch_time(run, torch.cuda.synchronize, steps, 5, warm=5)


def mlp_jax(batch, steps) -> float:
    import jax
    import jax.numpy as jnp

    x, y, ws, bs = _mlp_data(batch)
    params = {"w": [jnp.asarray(w) for w in ws], "b": [jnp.asarray(b) for b in bs]}
    xa, ya = jnp.asarray(x), jnp.asarray(y)

    def loss_fn(p, x, y):
        h = x
        for i in range(3):
            h = h @ p["w"][i] + p["b"][i]
            if i < 2:
                h = jnp.maximum(h, 0.0)
        picked = jnp.take_along_axis(h, y[:, None], 1)[:, 0]
        return jnp.mean(jax.nn.logsumexp(h, axis=1) - picked)

    @jax.jit
    def step(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        return loss, jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)

    state = {"p": params, "loss": None}

    def run():
        state["loss"], state["p"] = step(state["p"], xa, ya)

    return batch_time(run, lambda: jax.block_until_ready(state["p"]), steps, 5, warm=5)


TRAIN_CASES = (("mlp", 256), ("mlp", 8192), ("transformer", 32))


def train_benchmarks(steps: int, have: dict) -> list[dict]:
    """Per-step times of each library's training step (``training.py``), every case."""
    from benchmarks.gpu import training

    # (row name, library, compiled, jax's matmul precision); float32 products: nuvec and
    # PyTorch (allow_tf32 off by default) in full float32, jax.jit at XLA's default precision
    # (TF32 on the tensor cores of this GPU) and at "highest" (full float32)
    libs = [("nuvec (nv.compile)", "nuvec", True, None)]
    if have.get("nuvec-eager"):
        libs.append(("nuvec (eager)", "nuvec", False, None))
    if have.get("jax"):
        libs.append(("jax.jit", "jax", True, None))
        libs.append(("jax.jit, precision highest", "jax", True, "highest"))
    if have.get("torch"):
        libs.append(("PyTorch eager", "torch", False, None))
        if have.get("torch.compile"):
            libs.append(("torch.compile", "torch", True, None))
    rows = []
    for case, batch in TRAIN_CASES:
        for name, lib, compiled, precision in libs:
            row = {"case": case, "batch": batch, "library": name}
            try:
                run, sync, info = training.train(lib, case, batch, compiled, precision)
                t0 = time.perf_counter()
                run()
                sync()
                row["first_step_s"] = time.perf_counter() - t0
                row.update(training.per_step(run, sync, steps))
                if info is not None:
                    row["executable"] = info()
                del run, sync, info
            except Exception as e:  # noqa: BLE001
                row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                traceback.print_exc()
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def mlp_benchmarks(batch: int, steps: int, have: dict) -> list[dict]:
    cases = [
        ("nuvec (nv.compile)", lambda: mlp_nuvec(batch, steps, True, have.get("profile"))),
        ("nuvec (eager)", lambda: mlp_nuvec(batch, steps, False)),
    ]
    if have.get("torch"):
        cases += [
            ("PyTorch eager", lambda: mlp_torch(batch, steps, False)),
            ("torch.compile", lambda: mlp_torch(batch, steps, True)),
        ]
    if have.get("jax"):
        cases.append(("jax.jit", lambda: mlp_jax(batch, steps)))
    rows = []
    for name, fn in cases:
        row = {"library": name, "batch": batch}
        try:
            row["step_s"] = fn()
        except Exception as e:  # noqa: BLE001
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            traceback.print_exc()
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


# -- main -------------------------------------------------------------------------------------


def _have(mod: str) -> bool:
    try:
        __import__(mod)
        return True
    except Exception:  # noqa: BLE001 - a broken install counts as absent
        return False


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=256 * 1024 * 1024)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    ap.add_argument(
        "--skip",
        default="",
        help="comma-separated: torch,torch.compile,jax,cupy,fast_math,nuvec-eager",
    )
    ap.add_argument("--train-steps", type=int, default=100, help="steps per timed batch")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    ap.add_argument(
        "--profile", action="store_true", help="print a cProfile of nuvec's compiled MLP steps"
    )
    ap.add_argument(
        "--only", default="", help="comma-separated sections: copy,chains,overhead,train,mlp"
    )
    ap.add_argument(
        "--vec-sweep",
        action="store_true",
        help="also time nuvec's chains with 4 and 2 elements per vector thread",
    )
    a = ap.parse_args(argv)
    if a.quick:
        a.n, a.reps, a.batches = 1 << 20, 3, 2
    skip = set(filter(None, a.skip.split(",")))
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(0)
    res = {
        "date": datetime.date.today().isoformat(),
        "gpu": props["name"].decode(),
        "python": platform.python_version(),
        "n": a.n,
        "versions": {},
    }
    for m in ("cupy", "torch", "jax", "numpy"):
        if _have(m):
            res["versions"][m] = __import__(m).__version__
    print(json.dumps({k: res[k] for k in ("date", "gpu", "versions")}), flush=True)
    only = set(filter(None, a.only.split(","))) or {"copy", "chains", "overhead", "train", "mlp"}
    if "chains" in only:
        only.add("copy")
    if "copy" in only:
        res["copy"] = copy_bandwidth(a.n, a.reps * 2, a.batches)
        print(json.dumps({"copy": res["copy"]}), flush=True)
    have = {
        "torch": _have("torch") and "torch" not in skip,
        "jax": _have("jax") and "jax" not in skip,
    }
    libs = [Nuvec()] + ([] if "fast_math" in skip else [Nuvec(fast_math=True)])
    if have["torch"]:
        libs.append(Torch(False))
        if "torch.compile" not in skip:
            libs.append(Torch(True))
    if have["jax"]:
        libs.append(Jax())
    if "cupy" not in skip:
        libs.append(CupyFuse())
    if "chains" in only:
        res["chains"] = chain_benchmarks(libs, a.n, a.reps, a.batches, res["copy"]["best"])
    if "chains" in only and a.vec_sweep:  # nuvec's vector width: fewer elements per thread
        from nuvec.backends.cuda import kernels

        for cap in (4, 2):
            lib = Nuvec()
            lib.name = f"nuvec (vec cap {cap})"
            prev = kernels.set_vec_cap(cap)
            res["chains"] += chain_benchmarks([lib], a.n, a.reps, a.batches, res["copy"]["best"])
            kernels.set_vec_cap(prev)
    if "overhead" in only:
        res["overhead"] = overhead_benchmarks(libs, 300 if a.quick else 2000)
    if "train" in only:
        res["train"] = train_benchmarks(
            20 if a.quick else a.train_steps,
            {
                "nuvec-eager": "nuvec-eager" not in skip,
                "torch": have["torch"],
                "torch.compile": have["torch"] and "torch.compile" not in skip,
                "jax": have["jax"] and _have("optax"),
            },
        )
    if "mlp" in only:
        res["mlp"] = mlp_benchmarks(
            256,
            20 if a.quick else 100,
            {"torch": have["torch"], "jax": have["jax"], "profile": a.profile},
        )
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    print(report(res))
    return res


def report(res: dict) -> str:
    """A Markdown summary of ``res``."""
    gb = 1e9
    lines = [f"GPU: {res['gpu']}; date {res['date']}; n = {res['n']:,} elements"]
    if "copy" in res:
        lines.append(f"copy bandwidth: {res['copy']['best'] / 1e12:.2f} TB/s (read + write)")
    lines += [
        "",
        "| chain | dtype | library | time (ms) | TB/s | of copy |",
        "|---|---|---|---|---|---|",
    ]
    for r in res.get("chains", []):
        if "error" in r:
            lines.append(
                f"| {r['chain']} | {r['dtype']} | {r['library']} | n/a | | {r['error'][:60]} |"
            )
        else:
            lines.append(
                f"| {r['chain']} | {r['dtype']} | {r['library']} | {r['seconds'] * 1e3:.3f} | "
                f"{r['bandwidth'] / gb / 1e3:.2f} | {r['fraction_of_copy'] * 100:.0f}% |"
            )
    lines += [
        "",
        "| compiled 10-op on 4 elements | round trip (us) | dispatch (us) |",
        "|---|---|---|",
    ]
    for r in res.get("overhead", []):
        if "error" in r:
            lines.append(f"| {r['library']} | {r['error'][:60]} | |")
        else:
            lines.append(
                f"| {r['library']} | {r['round_trip_s'] * 1e6:.1f} | {r['dispatch_s'] * 1e6:.1f} |"
            )
    lines += [
        "",
        "| training step | batch | library | synced (ms) | queued (ms) |",
        "|---|---|---|---|---|",
    ]
    for r in res.get("train", []):
        if "error" in r:
            lines.append(f"| {r['case']} | {r['batch']} | {r['library']} | {r['error'][:60]} | |")
        else:
            lines.append(
                f"| {r['case']} | {r['batch']} | {r['library']} | {r['synced'] * 1e3:.3f} | "
                f"{r['queued'] * 1e3:.3f} |"
            )
    lines += ["", "| functional SGD MLP step (extra), batch 256 | ms |", "|---|---|"]
    for r in res.get("mlp", []):
        lines.append(
            f"| {r['library']} | "
            + (f"{r['step_s'] * 1e3:.3f} |" if "step_s" in r else f"{r.get('error', '')[:60]} |")
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
