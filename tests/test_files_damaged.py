"""Damaged and lying files: every reader raises ValueError naming the file, before allocating
what a header claims (each case is run in a child whose address space is capped a little above
what it already uses, so an allocation of what the header claims would fail there). A ``.npy``
file's data is read when the array is evaluated, as MLX reads it: data the file lacks is a
RuntimeError naming the file there, raised before anything is allocated."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import zipfile

import pytest

import nuvec as nv


def _npy(shape, descr="<f4", version=1, hlen=None, data=b""):
    text = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    if version == 1:
        head = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text) if hlen is None else hlen)
    else:
        head = b"\x93NUMPY\x02\x00" + struct.pack("<I", len(text) if hlen is None else hlen)
    return head + text + data


def _safetensors(header: bytes, data=b""):
    return struct.pack("<Q", len(header)) + header + data


def _gguf(n_tensors=0, n_kv=0, body=b""):
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv) + body


def _gstr(s: bytes):
    return struct.pack("<Q", len(s)) + s


def _zip_with(name: str, payload: bytes, compressed: bool) -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED) as z:
        z.writestr(name, payload)
    return buf.getvalue()


LIES = {
    # a 144-byte .npy claiming 4 TiB, and one claiming 8 GiB
    "tib.npy": _npy((1099511627776,)).ljust(144, b" "),
    "gib.npy": _npy((2147483648,), data=b"\0" * 64),
    "hlen.npy": _npy((4,), version=2, hlen=0xFFFFFFF0),
    "deep.npy": b"\x93NUMPY\x01\x00" + struct.pack("<H", 2000) + b"(" * 1000 + b")" * 1000,
    "member.npz": _zip_with("a.npy", _npy((1 << 40,)), compressed=False),
    "member_c.npz": _zip_with("a.npy", _npy((1 << 40,)), compressed=True),
    "hlen.npz": _zip_with("a.npy", _npy((4,), version=2, hlen=0xFFFFFFF0), compressed=True),
    "deep.safetensors": _safetensors(b"[" * 100000 + b"]" * 100000),
    "deepmeta.safetensors": _safetensors(
        b'{"__metadata__":' + b'{"a":' * 50000 + b"1" + b"}" * 50001
    ),
    "hlen.safetensors": struct.pack("<Q", 1 << 62) + b"{}",
    "size.safetensors": _safetensors(
        json.dumps(
            {"x": {"dtype": "F32", "shape": [1 << 40], "data_offsets": [0, 1 << 42]}}
        ).encode()
    ),
    "counts.gguf": _gguf(1 << 60, 1 << 60),
    "string.gguf": _gguf(0, 1, _gstr(b"k") + struct.pack("<I", 8) + struct.pack("<Q", 1 << 50)),
    "array.gguf": _gguf(0, 1, _gstr(b"k") + struct.pack("<IIQ", 9, 11, 1 << 58)),
    "strings.gguf": _gguf(0, 1, _gstr(b"k") + struct.pack("<IIQ", 9, 8, 1 << 58)),
    "dims.gguf": _gguf(1, 0, _gstr(b"t") + struct.pack("<IQQIQ", 2, 1 << 20, 1 << 20, 0, 0)),
    "rank.gguf": _gguf(1, 0, _gstr(b"t") + struct.pack("<I", 1 << 30)),
}

# lies about the data alone, which a .npy load finds when it reads the data (at evaluation)
DEFERRED = {"tib.npy", "gib.npy"}


def _expected_error(name: str) -> type:
    return RuntimeError if name in DEFERRED else ValueError


_CHILD = textwrap.dedent("""
    import json, resource, sys
    import nuvec as nv
    nv.set_default_device(nv.cpu)  # the lazy .npy read is the CPU stream's
    nv.load  # imported before the cap
    def vm():
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    cap = vm() + (512 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    out = {}
    for path in sys.argv[1:]:
        try:
            nv.eval(nv.load(path))
            out[path] = ["loaded", ""]
        except BaseException as e:
            out[path] = [type(e).__name__, str(e)]
    print(json.dumps(out))
""")


def test_lying_headers_raise_value_error_without_allocating(tmp_path):
    paths = []
    for name, data in LIES.items():
        p = tmp_path / name
        p.write_bytes(data)
        paths.append(str(p))
    r = subprocess.run(
        [sys.executable, "-c", _CHILD, *paths],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=os.path.dirname(os.path.dirname(nv.__file__)),
    )
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    for path in paths:
        kind, message = got[path]
        expected = _expected_error(os.path.basename(path)).__name__
        assert kind == expected and path in message, (path, kind, message)


@pytest.mark.cpu_only("the lazy .npy read is the CPU stream's; other devices read at load")
@pytest.mark.parametrize("name", sorted(LIES))
def test_each_lie_is_a_value_error_here_too(tmp_path, name):
    p = tmp_path / name
    p.write_bytes(LIES[name])
    with pytest.raises(_expected_error(name), match=str(p).replace(".", r"\.")):
        nv.eval(nv.load(str(p)))


@pytest.mark.cpu_only("the lazy .npy read is the CPU stream's; other devices read at load")
def test_truncations_of_valid_files_name_the_file(tmp_path):
    x = nv.arange(64, dtype=nv.float32).reshape(8, 8)
    for ext, save in (
        ("npy", lambda p: nv.save(p, x)),
        ("npz", lambda p: nv.savez(p, x=x)),
        ("gguf", lambda p: nv.save_gguf(p, {"x": x})),
        ("safetensors", lambda p: nv.save_safetensors(p, {"x": x})),
    ):
        p = str(tmp_path / f"t.{ext}")
        save(p)
        whole = open(p, "rb").read()
        data_at = len(whole) - 64 * 4 if ext == "npy" else len(whole)
        for n in sorted({0, 1, 5, 8, 12, len(whole) // 2, len(whole) - 1}):
            open(p, "wb").write(whole[:n])
            # a .npy file's data is read at evaluation (MLX's lazy load)
            error = RuntimeError if n >= data_at else ValueError
            with pytest.raises(error, match="t\\." + ext):
                nv.eval(nv.load(p))


def test_writes_are_synced_before_the_rename(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(
        os, "replace", lambda a, b: (calls.append("replace"), real_replace(a, b))[1]
    )
    nv.save_safetensors(str(tmp_path / "s.safetensors"), {"a": nv.ones(3)})
    assert calls[:2] == ["fsync", "replace"]
    assert os.listdir(tmp_path) == ["s.safetensors"]
