"""Token generation speed: the decode steps of examples/generate.py's 4-bit Llama-style model
(batch 1, a KV cache), in tokens/s, compiled and eager, for nuvec and for MLX's CPU build
(the same model file, run on ``mlx.core`` / ``mlx.nn``), each in its own subprocess.

    python -m benchmarks.generation                   # MLX where this interpreter has it
    MLX_PYTHON=/tmp/mlxenv/bin/python python -m benchmarks.generation --tokens 64 --rounds 5

The libraries run in alternating rounds (nuvec, MLX, nuvec, ...), each round a fresh process
timing one generation per mode after a warm-up; the table gives each mode's median over the
rounds and every round's figure, as a loaded machine's figures drift over minutes.

PyTorch runs the same model written in PyTorch (benchmarks/torch_llama.py, the same greedy
tokens as nuvec's float32 model) with the checkpoint's float32 weights: its user API has no
4-bit CPU product. ``--bits 0`` runs nuvec and MLX unquantized too, like for like.
``TORCH_PYTHON`` names an interpreter with torch (default: this one).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")

WORKER = r"""
import json, sys, time
lib, model_dir, tokens, bits = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if lib == "mlx":                      # the example's nuvec names are MLX's
    import mlx.core, mlx.nn, mlx.utils
    mlx.core.set_default_device(mlx.core.cpu)
    sys.modules["nuvec"], sys.modules["nuvec.nn"] = mlx.core, mlx.nn
    sys.modules["nuvec.utils"] = mlx.utils
    mlx.core.nn = mlx.nn
sys.path.insert(0, sys.argv[5])
import generate
model = generate.load(model_dir, bits, 64)
out = {}
for mode, compiled in (("compiled", True), ("eager", False)):
    generate.generate(model, [1, 2, 3], 8, compiled=compiled)          # warm-up
    toks, secs = generate.generate(model, [1, 2, 3], tokens, compiled=compiled)
    out[mode] = (len(toks) - 2) / secs
    out[mode + "_tokens"] = toks
print("RESULT " + json.dumps(out))
"""


def run(lib: str, python: str, model_dir: str, tokens: int, bits: int) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if lib == "torch":
        files = [os.path.join(model_dir, n) for n in ("weights.npz", "config.json")]
        cmd = [python, "-m", "benchmarks.torch_llama", *files, str(tokens)]
    else:
        cmd = [python, "-c", WORKER, lib, model_dir, str(tokens), str(bits), EXAMPLES]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:]}


def has_module(python: str, name: str) -> bool:
    return subprocess.run([python, "-c", f"import {name}"], capture_output=True).returncode == 0


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--bits", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per library")
    args = ap.parse_args(argv)
    sys.path.insert(0, EXAMPLES)
    import make_tiny_llama

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = os.path.join(tmp, "tiny_llama")
        make_tiny_llama.main([model_dir])
        mlx_python = os.environ.get("MLX_PYTHON", sys.executable)
        torch_python = os.environ.get("TORCH_PYTHON", sys.executable)
        libs = {"nuvec": sys.executable}
        for lib, python, module, var in (
            ("mlx", mlx_python, "mlx.core", "MLX_PYTHON"),
            ("torch", torch_python, "torch", "TORCH_PYTHON"),
        ):
            if has_module(python, module):
                libs[lib] = python
            else:
                results[lib] = {"error": [f"{module} not importable (set {var})"]}
        if "torch" in libs:
            import nuvec as nv
            import numpy as np

            stored = nv.load(os.path.join(model_dir, "model.safetensors"))
            arrays = {k: np.asarray(v) for k, v in stored.items()}
            np.savez(os.path.join(model_dir, "weights.npz"), **arrays)  # type: ignore[arg-type]
        rounds: dict[str, list[dict]] = {lib: [] for lib in libs}
        for _ in range(args.rounds):
            for lib, python in libs.items():
                rounds[lib].append(run(lib, python, model_dir, args.tokens, args.bits))
        for lib, rs in rounds.items():
            errors = [r for r in rs if "error" in r]
            if errors:
                results[lib] = errors[0]
                continue
            results[lib] = {}
            for mode in ("compiled", "eager"):
                results[lib][mode] = statistics.median(r[mode] for r in rs)
                results[lib][mode + "_rounds"] = [r[mode] for r in rs]
            results[lib]["tokens"] = rs[0]["compiled_tokens"]
    print(
        f"decode tokens/s, {f'{args.bits}-bit' if args.bits else 'float32'} tiny Llama, batch 1, "
        f"{args.tokens} tokens "
        f"(median of {args.rounds} alternating rounds; each round in brackets)"
    )
    for lib, r in results.items():
        if "error" in r:
            print(f"  {lib:6s} {' '.join(r['error'])}")
            continue
        each = {m: " ".join(f"{v:.1f}" for v in r[m + "_rounds"]) for m in ("compiled", "eager")}
        print(
            f"  {lib:6s} compiled {r['compiled']:8.1f} [{each['compiled']}]   "
            f"eager {r['eager']:8.1f} [{each['eager']}]   "
            f"compiled/eager {r['compiled'] / r['eager']:.2f}x"
            + ("   (float32 weights)" if lib == "torch" and args.bits else "")
        )
    for peer in ("mlx", "torch"):
        if "compiled" in results["nuvec"] and "compiled" in results.get(peer, {}):
            print(
                f"  nuvec compiled / {peer} compiled: "
                f"{results['nuvec']['compiled'] / results[peer]['compiled']:.2f}x"
            )
    return results


if __name__ == "__main__":
    main()
