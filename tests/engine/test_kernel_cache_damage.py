"""The kernel cache degrades, never fails: a full disk, an unwritable or read-only cache, a
missing compiler or a damaged compiler-probe memo leave compiled calls running unfused (same
bits) with one warning naming the cause and the setting; valid entries of a cache that cannot
be written are used; no temporary folder is left behind. Each case runs in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_CHILD = textwrap.dedent("""
    import json, os, resource, sys, warnings
    import numpy as np
    import nuvec as nv
    from nuvec.backends.cpu import jit
    from nuvec.compile import set_background_kernels, wait_for_kernels
    background, fsize, c = sys.argv[1] == "bg", int(sys.argv[2]), float(sys.argv[3])
    set_background_kernels(background)
    x = nv.array(np.linspace(-2, 2, 4099, dtype=np.float32))
    fns = [lambda x: nv.tanh(x * c) * 2.0 + 1.0, lambda x: nv.exp(x - c) * 3.0 - x]
    want = [np.asarray(f(x)) for f in fns]          # single ops: prebuilt, no compiler
    if fsize >= 0:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    same = True
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for f, ref in zip(fns, want):
            cf = nv.compile(f)
            for _ in range(3):
                same &= bool(np.array_equal(np.asarray(cf(x)).view(np.uint32), ref.view(np.uint32)))
                wait_for_kernels()
    msgs = [str(m.message) for m in w if "fused kernels cannot be built" in str(m.message)]
    print(json.dumps({"same": same, "warnings": msgs, "stats": jit.stats()}))
""")


def _child(tmp_path, *, background=False, fsize=-1, c=0.75, **env):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(exist_ok=True)
    e = dict(os.environ, TMPDIR=str(tmpdir), NUVEC_CACHE_DIR=str(tmp_path / "cache"))
    e.pop("NUVEC_COMPILE_SYNC", None)
    e.update(env)
    r = subprocess.run(
        [sys.executable, "-c", _CHILD, "bg" if background else "sync", str(fsize), repr(c)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(ROOT),
        env=e,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["tmp_left"] = sorted(os.listdir(tmpdir))
    return out


def _fresh_c() -> float:
    return 0.5 + int.from_bytes(os.urandom(3), "little") / 2**26


def test_full_disk_runs_unfused_with_one_warning(tmp_path):
    for background in (False, True):
        out = _child(tmp_path, background=background, fsize=0, c=_fresh_c())
        assert out["same"], out
        assert len(out["warnings"]) == 1, out
        assert "TMPDIR" in out["warnings"][0] or "NUVEC_CACHE_DIR" in out["warnings"][0], out
        assert out["tmp_left"] == [], out


def test_unwritable_cache_runs_unfused_naming_the_setting(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for background in (False, True):
        out = _child(
            tmp_path, background=background, c=_fresh_c(), NUVEC_CACHE_DIR=str(blocker / "cache")
        )
        assert out["same"] and len(out["warnings"]) == 1, out
        assert "NUVEC_CACHE_DIR" in out["warnings"][0], out
        assert out["tmp_left"] == [], out


def test_missing_compiler_runs_unfused_naming_cc(tmp_path):
    out = _child(tmp_path, c=_fresh_c(), CC="/nonexistent/cc")
    assert out["same"] and len(out["warnings"]) == 1 and "CC" in out["warnings"][0], out


def test_a_cache_that_cannot_be_written_is_still_read(tmp_path):
    c = _fresh_c()
    warm = _child(tmp_path, c=c)
    assert warm["same"] and not warm["warnings"] and warm["stats"]["compiled"] == 2, warm
    entries = sorted(p.name for p in (tmp_path / "cache" / "kernels").iterdir())
    # nothing can be written now (as on a read-only or full disk), yet the entries load
    out = _child(tmp_path, fsize=0, c=c)
    assert out["same"] and not out["warnings"], out
    assert out["stats"]["disk_hits"] == 2 and out["stats"]["compiled"] == 0, out
    assert sorted(p.name for p in (tmp_path / "cache" / "kernels").iterdir()) == entries
    assert out["tmp_left"] == [], out


def test_a_damaged_probe_memo_is_probed_again(tmp_path):
    c = _fresh_c()
    assert _child(tmp_path, c=c)["same"]
    memos = list((tmp_path / "cache" / "kernels").glob("probe-*"))
    assert len(memos) == 1
    good = memos[0].read_text()
    memos[0].write_bytes(b"-march=\xff\x00garbage -O9")
    out = _child(tmp_path, c=_fresh_c())
    assert out["same"] and not out["warnings"] and out["stats"]["reprobed"] == 1, out
    assert out["stats"]["compiled"] == 2, out
    assert memos[0].read_text() == good


def test_a_truncated_entry_with_a_matching_digest_is_rebuilt_not_loaded(tmp_path):
    from nuvec.backends.cpu import jit

    c = _fresh_c()
    assert _child(tmp_path, c=c)["same"]
    for so in (tmp_path / "cache" / "kernels").glob("*.so"):
        body = so.read_bytes()[:-40]
        so.write_bytes(jit._seal(body[: len(body) * 2 // 3]))
    out = _child(tmp_path, c=c)
    assert out["same"] and not out["warnings"], out
    assert out["stats"]["rebuilt_damaged"] == 2 and out["stats"]["compiled"] == 2, out


def test_clear_kernel_cache(tmp_path, monkeypatch):
    import nuvec as nv

    assert _child(tmp_path, c=_fresh_c())["same"]
    d = tmp_path / "cache" / "kernels"
    n = len(list(d.iterdir()))
    assert n == 3  # two kernels and the probe memo
    monkeypatch.setenv("NUVEC_CACHE_DIR", str(tmp_path / "cache"))
    assert nv.clear_kernel_cache() == n and list(d.iterdir()) == []
