"""The JIT's disk cache: hits across processes, damaged entries, unwritable directories,
missing or failing compilers, concurrent processes compiling the same kernel."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from nuvec.codegen import generate, kernel_name
from nuvec.codegen.ir import KernelSpec, Node
from nuvec.backends.cpu import jit, kernels
from nuvec.backends.cpu.jit import KernelCompileError

ROOT = Path(__file__).resolve().parents[2]


def _unique_spec() -> KernelSpec:
    """A spec no cache has seen: its constant is random."""
    c = int.from_bytes(os.urandom(2), "little") | 0x3F800000
    return KernelSpec(
        ("float32",),
        (("float32", c),),
        (
            Node("multiply", (("in", 0), ("const", 0)), "float32"),
            Node("exp", (("node", 0),), "float32"),
        ),
        (1,),
    )


@pytest.fixture()
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NUVEC_CACHE_DIR", str(tmp_path / "cache"))
    jit.clear_memory_cache()
    kernels.clear()
    yield tmp_path / "cache" / "kernels"
    jit.clear_memory_cache()
    kernels.clear()


def _entries(d: Path) -> list[str]:
    """Kernel entries of a cache directory (not the compiler-probe memo)."""
    return (
        sorted(p.name for p in d.iterdir() if not p.name.startswith("probe-")) if d.exists() else []
    )


def test_compile_then_disk_hit(fresh_cache) -> None:
    spec = _unique_spec()
    src = generate(spec, "c", "k")
    before = jit.stats()
    lib, addr = jit.load(src, "k")
    assert addr and jit.stats()["compiled"] == before["compiled"] + 1
    names = _entries(fresh_cache)
    assert len(names) == 1 and names[0].endswith(".so")
    assert jit.valid_entry((fresh_cache / names[0]).read_bytes())
    jit.clear_memory_cache()
    jit.load(src, "k")
    assert jit.stats()["disk_hits"] == before["disk_hits"] + 1
    assert jit.stats()["compiled"] == before["compiled"] + 1


def test_key_depends_on_source_and_flags(fresh_cache, monkeypatch) -> None:
    src = generate(_unique_spec(), "c", "k")
    k1 = jit.cache_key(src)
    assert jit.cache_key(src + "\n") != k1
    monkeypatch.setenv("NUVEC_MARCH", "none")
    jit.clear_memory_cache()
    assert jit.cache_key(src) != k1


def _replace(path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".damaged")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "no_digest", "truncate_resealed"])
def test_damaged_entry_is_rebuilt(fresh_cache, damage) -> None:
    spec = _unique_spec()
    src = generate(spec)  # the source kernels.run compiles for it
    jit.load(src, kernel_name(spec))
    so = next(p for p in fresh_cache.iterdir() if p.suffix == ".so")
    # The library is mapped into this process: damage a new file put in its place (as another
    # process's broken write would), never the mapped pages (that raises SIGBUS later).
    if damage == "truncate":
        _replace(so, so.read_bytes()[:100])
    elif damage == "garbage":
        data = bytearray(so.read_bytes())
        data[len(data) // 2 : len(data) // 2 + 64] = os.urandom(64)
        _replace(so, bytes(data))
    elif damage == "no_digest":
        _replace(so, so.read_bytes()[:-40])
    else:  # cut short, then given a digest that matches (a copied or synced cache can be)
        body = so.read_bytes()[:-40]
        _replace(so, jit._seal(body[: len(body) // 2]))
    assert not jit.valid_entry(so.read_bytes())
    jit.clear_memory_cache()
    before = jit.stats()["rebuilt_damaged"]
    kernels.clear()
    x = np.linspace(-1, 1, 11, dtype=np.float32)
    out = kernels.run(spec, [x], x.shape)[0]
    assert jit.stats()["rebuilt_damaged"] == before + 1
    c = np.array([spec.constants[0][1]], np.uint32).view(np.float32)[0]
    want = kernels.run(KernelSpec.single("exp", ("float32",), "float32"), [x * c], x.shape)[0]
    assert np.array_equal(out, want)
    assert jit.stats()["compiled"] >= 2


def test_unwritable_cache_dir_is_a_compile_error_naming_the_setting(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("NUVEC_CACHE_DIR", str(blocker / "sub"))
    jit.clear_memory_cache()
    try:
        with pytest.raises(KernelCompileError, match="NUVEC_CACHE_DIR") as e:
            jit.load(generate(_unique_spec(), "c", "k"), "k")
        assert "cannot store a kernel in the cache" in e.value.message
    finally:
        jit.clear_memory_cache()


def test_missing_compiler_raises(fresh_cache, monkeypatch) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    jit.clear_memory_cache()
    with pytest.raises(KernelCompileError, match="no C compiler found"):
        jit.load(generate(_unique_spec(), "c", "k"), "k")
    # single ops still work: they are prebuilt
    info = kernels.cache_info()
    if info["prebuilt"] == "loaded":
        x = np.ones(3, np.float32)
        assert kernels.run(
            KernelSpec.single("add", ("float32", "float32"), "float32"), [x, x], (3,)
        )[0].tolist() == [2, 2, 2]


def test_failing_compiler_message_is_carried(fresh_cache, monkeypatch, tmp_path) -> None:
    fake = tmp_path / "fakecc"
    fake.write_text(
        textwrap.dedent("""\
        #!/bin/sh
        for a in "$@"; do [ "$a" = "--version" ] && { echo "fakecc 1.0"; exit 0; }; done
        echo "fakecc: error: this compiler refuses everything" >&2
        exit 1
        """)
    )
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    jit.clear_memory_cache()
    with pytest.raises(KernelCompileError) as e:
        jit.load(generate(_unique_spec(), "c", "k"), "k")
    assert "refuses everything" in e.value.message
    assert not any(p.suffix == ".so" for p in fresh_cache.iterdir())


_WORKER = textwrap.dedent("""
    import json, sys
    import numpy as np
    from nuvec.codegen.ir import KernelSpec, Node
    from nuvec.backends.cpu import jit, kernels
    c = int(sys.argv[1])
    spec = KernelSpec(("float32",), (("float32", c),),
                      (Node("multiply", (("in", 0), ("const", 0)), "float32"),
                       Node("tanh", (("node", 0),), "float32")), (1,))
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    out = kernels.run(spec, [x], x.shape)[0]
    print(json.dumps({"sum": out.view(np.uint32).astype(np.int64).sum().item(),
                      "stats": jit.stats()}))
""")


def _spawn(c: int, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _WORKER, str(c)],
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_concurrent_processes_share_one_entry(tmp_path) -> None:
    import json

    env = dict(os.environ, NUVEC_CACHE_DIR=str(tmp_path / "cache"))
    c = 0x3F000000 | int.from_bytes(os.urandom(2), "little")
    procs = [_spawn(c, env) for _ in range(4)]
    outs = []
    for p in procs:
        so, se = p.communicate(timeout=300)
        assert p.returncode == 0, se
        outs.append(json.loads(so.strip().splitlines()[-1]))
    assert len({o["sum"] for o in outs}) == 1
    d = tmp_path / "cache" / "kernels"
    names = _entries(d)
    assert len([n for n in names if n.endswith(".so")]) == 1, names
    assert not [n for n in names if n.endswith(".tmp")], names
    # a later process only loads it
    p = _spawn(c, env)
    so, se = p.communicate(timeout=300)
    assert p.returncode == 0, se
    st = json.loads(so.strip().splitlines()[-1])["stats"]
    assert st["compiled"] == 0 and st["disk_hits"] == 1


def test_flags_have_no_contraction() -> None:
    fl = jit.flags()
    assert "-ffp-contract=off" in fl
    assert not any("fast-math" in f or f.startswith("-Ofast") for f in fl)


def test_prebuilt_library_state() -> None:
    info = kernels.cache_info()
    # built by `pip install -e .`; if it is there it must match this generator
    lib = Path(kernels.__file__).with_name(kernels.PREBUILT_NAME)
    if lib.exists():
        assert info["prebuilt"] == "loaded", info["prebuilt_reason"]
        k = kernels.get_kernel(KernelSpec.single("sigmoid", ("bfloat16",), "bfloat16"))
        assert k.source == "prebuilt"
    else:
        assert info["prebuilt"] == "missing"
