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
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


def test_digits_mlp_short_setting():
    pytest.importorskip("sklearn")
    out = run_example("digits_mlp.py", "--epochs", "2")
    assert "compiled step" in out and "[" + "#" * 30 + "]" in out   # the progress bar
    acc = float(re.search(r"test accuracy: ([0-9.]+)%", out).group(1))
    assert acc >= 90.0, out


def test_char_transformer_short_setting():
    out = run_example("char_transformer.py", "--steps", "25", "--dims", "32", "--context", "32",
                      "--sample", "40")
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
