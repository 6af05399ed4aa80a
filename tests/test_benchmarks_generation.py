"""The generation benchmark: one short run of ``python -m benchmarks.generation`` (its table,
never its speed), and its PyTorch model, whose greedy tokens must be those of nuvec's float32
model of the same checkpoint (so the peers decode the same model)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nuvec as nv

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "examples"))

import generate  # noqa: E402
import make_tiny_llama  # noqa: E402


def test_a_short_run_reports_every_library(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO), MLX_PYTHON=sys.executable)
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.generation", "--tokens", "4", "--rounds", "1"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    nuvec = next(line for line in lines if line.strip().startswith("nuvec  compiled"))
    assert "eager" in nuvec and "compiled/eager" in nuvec
    for lib in ("mlx", "torch"):  # measured, or the reason it was not
        assert any(line.strip().startswith(lib) for line in lines), proc.stdout


def test_the_pytorch_model_decodes_the_tokens_of_nuvecs(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from benchmarks import torch_llama

    model_dir = str(tmp_path / "tiny")
    make_tiny_llama.main([model_dir])
    stored = nv.load(os.path.join(model_dir, "model.safetensors"))
    weights = str(tmp_path / "weights.npz")
    np.savez(weights, **{k: np.asarray(v) for k, v in stored.items()})  # type: ignore[arg-type]
    want, _ = generate.generate(generate.load(model_dir, 0, 64), [1, 2, 3], 12)
    got = torch_llama.main([weights, os.path.join(model_dir, "config.json"), "12"])
    assert got["eager_tokens"] == want and got["compiled_tokens"] == want
