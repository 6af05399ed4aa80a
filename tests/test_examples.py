"""The examples run end to end in their short settings (as CI runs them)."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_example(name, *args, timeout=120):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # one BLAS thread: on a shared 2-core runner, OpenBLAS's spinning threads make these
    # small matrix products several times slower (the results are only checked loosely)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


def test_digits_mlp_short_setting():
    pytest.importorskip("sklearn")
    out = run_example("digits_mlp.py", "--epochs", "2")
    assert "compiled step" in out and "[" + "#" * 30 + "]" in out  # the progress bar
    acc = float(re.search(r"test accuracy: ([0-9.]+)%", out).group(1))
    assert acc >= 90.0, out


def test_digits_mlp_prints_each_epoch_with_its_time_and_plots_its_loss(tmp_path):
    pytest.importorskip("sklearn")
    png = tmp_path / "loss.png"
    out = run_example("digits_mlp.py", "--epochs", "2", "--plot", str(png))
    epochs = re.findall(r"epoch +(\d)/2 \[#{30}\] +\d+/\d+ loss [0-9.]+ +([0-9.]+) s\n", out)
    assert [e for e, _ in epochs] == ["1", "2"] and all(float(t) > 0 for _, t in epochs), out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in out and not png.exists()
    else:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"written to {png}" in out


def test_char_transformer_short_setting():
    out = run_example(
        "char_transformer.py", "--steps", "25", "--dims", "32", "--context", "32", "--sample", "40"
    )
    initial = float(re.search(r"initial validation loss ([0-9.]+)", out).group(1))
    final = float(re.search(r"\nvalidation loss ([0-9.]+)", out).group(1))
    assert final < initial - 0.5, out
    sample = out.split("sample:\n", 1)[1]
    assert sample.startswith("It is a truth") and len(sample.rstrip("\n")) >= 13 + 40


def test_digits_mlp_full_setting_reaches_95_percent():
    pytest.importorskip("sklearn")
    out = run_example("digits_mlp.py", "--quiet")
    acc = float(re.search(r"test accuracy: ([0-9.]+)%", out).group(1))
    assert acc >= 95.0, out


def test_generate_tiny_llama_4bit_tokens_of_a_fixed_seed():
    # the tiny checkpoint of seed 0, 4-bit, greedy: these tokens (compiled and eager alike)
    want = "tokens: 0 21 190 14 3 47 82 102 134 79 226 0"
    out = run_example("generate.py", "--max-tokens", "12")
    assert want in out and "(compiled)" in out, out
    assert want in run_example("generate.py", "--max-tokens", "12", "--no-compile")
    # unquantized, the same model continues differently after a few tokens
    out = run_example("generate.py", "--max-tokens", "12", "--bits", "0")
    assert "tokens: 0 21 190 14 240 255 205 147 13 180 117 233" in out, out
