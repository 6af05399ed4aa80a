"""Damaged files and kernel caches, for a bounded time: ``python -m fuzz.files --seconds N``.

Files: valid .npy, .npz (stored and compressed), .safetensors and .gguf files and exported
functions (``nv.export_function``) are made, then cut short, bit-flipped, or given lying
headers (huge lengths, counts, shapes and offsets in their own fields; for an exported
function also any value of its graph document), and loaded with ``nv.load`` (or
``nv.import_function``) in a worker process whose address space is capped. Each load must
succeed or raise ValueError / OSError naming the file (RuntimeError for a .npy file whose
data is missing: it is read when evaluated, as MLX reads it); its peak of traced allocations (NumPy
reports its buffers to tracemalloc) must stay within twice the bytes the file holds (for a
compressed .npz, the bytes its members actually inflate to) plus a fixed 256 KiB; the worker
must never die. A crashing input is kept under ``--keep``.

Kernel cache: a cache is warmed, its entries damaged (cut short, flipped, cut short with a
matching digest, emptied, a garbage probe memo), and a new process compiles the same
functions: each must give the eager results bit for bit, raise nothing and not crash.

Counts are printed at the end; the exit status is 1 if any case failed.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLACK = 256 * 1024
FORMATS = ("npy", "npz", "npzc", "safetensors", "gguf", "nvfn")


# ---- valid files ---------------------------------------------------------------------------


def _seed_file(fmt: str, rng: random.Random) -> bytes:
    import ml_dtypes
    import numpy as np
    import nuvec as nv

    dtypes = ["<f4", ">f4", "<i8", ">i2", "|u1", "|b1", "<f2", ">c8", "<f8"]
    shape = tuple(rng.randint(0, 5) for _ in range(rng.randint(0, 3)))
    a = (np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) % 7).astype(
        rng.choice(dtypes)
    )
    buf = io.BytesIO()
    if fmt == "nvfn":
        return _seed_function(rng)
    if fmt == "npy":
        if rng.random() < 0.3:
            a = np.asfortranarray(a)
        np.lib.format.write_array(buf, a, version=rng.choice([(1, 0), (2, 0), (3, 0)]))
    elif fmt in ("npz", "npzc"):
        (np.savez_compressed if fmt == "npzc" else np.savez)(buf, a=a, b=np.ones(3, "<f4"))
    elif fmt == "safetensors":
        native = {
            "a": nv.array(a.astype(a.dtype.newbyteorder("="))),
            "h": nv.array(np.array([1.5, 2.0], ml_dtypes.bfloat16)),
        }
        nv.save_safetensors(buf, native, {"k": "v"})
    else:
        q = np.concatenate(
            [np.full((4, 2), 60, np.uint8), np.arange(64, dtype=np.uint8).reshape(4, 16)], axis=1
        )
        nv.save_gguf(
            buf,
            {"a": nv.array(a.astype("<f4")), "i": nv.arange(6, dtype=nv.int16)},
            {"name": "x", "list": ["p", "q"], "v": nv.array([1, 2], dtype=nv.uint32)},
        )
        raw = buf.getvalue()
        # a Q4_0 tensor appended by hand: its info goes after the others, data at the end
        return _append_gguf_q4(raw, q.tobytes())
    return buf.getvalue()


def _seed_function(rng: random.Random) -> bytes:
    """An exported function of a few signatures, with constants, keyword inputs and several
    families of operations (shapeless or not)."""
    import numpy as np
    import nuvec as nv

    w = nv.array(np.arange(12, dtype=np.float32).reshape(4, 3) / 7)

    def fun(x, y=None):
        h = nv.tanh(x @ w) + nv.ones((3,))
        h = nv.sort(h, axis=-1) * 0.5
        if y is not None:
            h = h + y.astype(h.dtype).reshape(-1, 1)
        return nv.softmax(h, axis=-1), nv.cumsum(h, axis=0).astype(nv.float16)

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "f.nvfn")
        with nv.exporter(path, fun, shapeless=rng.random() < 0.5) as export:
            export(nv.zeros((2, 4)))
            n = rng.randint(1, 4)
            export(nv.zeros((n, 4)), y=nv.arange(n if rng.random() < 0.5 else 1))
        return Path(path).read_bytes()


def _call_imported(f, rng: random.Random) -> None:
    """Calls an imported function on zeros of one of its signatures: a file that loads must
    run, or fail with an exception (the worker must not die); the error is not judged, as the
    graph may be one no function makes."""
    import numpy as np
    import nuvec as nv

    if not f._traces:
        return
    t = rng.choice(f._traces)
    if any(int(np.prod(s)) > 1 << 16 for s, _ in t.inputs):
        return
    zeros = [nv.zeros(s, dtype=d) for s, d in t.inputs]
    kw = dict(zip(t.kwarg_keys, zeros[t.n_positional :]))
    try:
        nv.eval(f(*zeros[: t.n_positional], **kw))
    except Exception:
        pass


def _lie_function(data: bytes, rng: random.Random) -> bytes:
    """Replaces one value anywhere in an exported function's graph document."""
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8 : 8 + n])
    doc = json.loads(header["__metadata__"]["function"])
    slots = []  # (container, key) of every value in the document
    stack = [doc]
    while stack:
        c = stack.pop()
        for k in range(len(c)) if isinstance(c, list) else c:
            slots.append((c, k))
            if isinstance(c[k], (list, dict)):
                stack.append(c[k])
    c, k = rng.choice(slots)
    c[k] = rng.choice(
        _HUGE
        + [-1, rng.randint(0, 40), "x", "shape.Reshape", None, [], {}, [rng.choice(_HUGE)] * 3]
        + [{"t": [rng.choice(_HUGE)]}, {"d": "float33"}, {"f": "nan"}, 1.5, True]
    )
    header["__metadata__"]["function"] = json.dumps(doc)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data[8 + n :]


def _append_gguf_q4(raw: bytes, blocks: bytes) -> bytes:
    """``raw`` (a GGUF file nuvec wrote) with one more tensor, a Q4_0 of shape (2, 64)."""
    import nuvec.files.gguf as g
    from nuvec.files._source import Source

    src = Source.of_bytes(raw, "seed", "fuzz")
    tensors, meta = g.read(src)
    n_t, n_kv = struct.unpack_from("<QQ", raw, 8)
    # find where the tensor infos end: re-walk with the reader's cursor
    c = g._Cursor(src, 24)
    for _ in range(n_kv):
        key = c.string("k")
        g._value(c, c.u32("t"), key)
    for _ in range(n_t):
        c.string("n")
        nd = c.u32("d")
        c.take(8 * nd + 12, "i")
    infos_end, data_at = c.pos, c.pos + (-c.pos % 32)
    data = raw[data_at:]
    off = len(data) + (-len(data) % 32)
    name = b"q.weight"
    info = struct.pack("<Q", len(name)) + name + struct.pack("<IQQIQ", 2, 64, 2, 2, off)
    head = raw[:8] + struct.pack("<QQ", n_t + 1, n_kv) + raw[24:infos_end] + info
    head += b"\0" * (-len(head) % 32)
    data += b"\0" * (off - len(data))
    return head + data + blocks


# ---- damage --------------------------------------------------------------------------------

_HUGE = [0xFFFFFFFF, 0xFFFFFFF0, 1 << 31, 1 << 32, 1 << 40, 1 << 62, 0xFFFFFFFFFFFFFFFF]


def _lie(data: bytes, fmt: str, rng: random.Random) -> bytes:
    """Overwrites one length, count, shape or offset field with a large or random value."""
    if fmt == "nvfn":
        if rng.random() < 0.7:
            return _lie_function(data, rng)
        fmt = "safetensors"  # the container's own fields
    b = bytearray(data)
    v = rng.choice(_HUGE + [rng.getrandbits(64), rng.getrandbits(16)])
    if fmt == "npy" and len(b) > 12:
        if rng.random() < 0.4:
            if b[6] == 1:
                struct.pack_into("<H", b, 8, v & 0xFFFF)
            else:
                struct.pack_into("<I", b, 8, v & 0xFFFFFFFF)
            return bytes(b)
        text = bytes(b)
        i = text.find(b"'shape': (")
        if i >= 0:
            j = text.find(b")", i)
            dims = ", ".join(
                str(rng.choice(_HUGE + [rng.randint(0, 99)])) for _ in range(rng.randint(1, 3))
            )
            return text[:i] + b"'shape': (" + dims.encode() + b",)" + text[j + 1 :]
    if fmt == "safetensors" and len(b) > 8:
        if rng.random() < 0.3:
            struct.pack_into("<Q", b, 0, v)
            return bytes(b)
        (n,) = struct.unpack_from("<Q", b, 0)
        try:
            header = json.loads(bytes(b[8 : 8 + n]))
            name = rng.choice([k for k in header if k != "__metadata__"])
            field = rng.choice(["shape", "data_offsets"])
            header[name][field] = [
                rng.choice(_HUGE + [rng.randint(0, 64)])
                for _ in range(len(header[name][field]) or 1)
            ]
            text = json.dumps(header).encode()
            return struct.pack("<Q", len(text)) + text + bytes(b[8 + n :])
        except (ValueError, IndexError, KeyError):
            return bytes(b)
    if fmt == "gguf" and len(b) > 24:
        # any aligned 8-byte field of the header region: counts, lengths, dims, offsets
        at = rng.choice([8, 16] + list(range(24, min(len(b) - 8, 600), 4)))
        struct.pack_into("<Q", b, at, v)
        return bytes(b)
    if fmt in ("npz", "npzc") and len(b) > 30:
        # a zip size field (local header or central directory), or a lie inside a member
        sig = [i for i in range(len(b) - 4) if b[i : i + 4] in (b"PK\x03\x04", b"PK\x01\x02")]
        if sig and rng.random() < 0.5:
            i = rng.choice(sig)
            at = i + rng.choice([18, 22] if b[i + 2] == 3 else [20, 24, 42])
            if at + 4 <= len(b):
                struct.pack_into("<I", b, at, v & 0xFFFFFFFF)
            return bytes(b)
        try:
            src = zipfile.ZipFile(io.BytesIO(data))
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w", src.infolist()[0].compress_type) as z:
                for info in src.infolist():
                    member = src.read(info)
                    if rng.random() < 0.5:
                        member = _lie(member, "npy", rng)
                    z.writestr(info.filename, member)
            return out.getvalue()
        except (zipfile.BadZipFile, ValueError, KeyError, OSError):
            return bytes(b)
    return bytes(b)


def _damage(data: bytes, fmt: str, rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(["truncate", "flip", "lie", "lie", "splice"])
    if kind == "truncate":
        return kind, data[: rng.randint(0, max(len(data) - 1, 0))]
    if kind == "flip":
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            if b:
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        return kind, bytes(b)
    if kind == "splice":
        i = rng.randint(0, len(data))
        return kind, data[:i] + os.urandom(rng.randint(1, 16)) + data[i + rng.randint(0, 16) :]
    return kind, _lie(data, fmt, rng)


def _inflated(data: bytes) -> int:
    """Bytes the members of a (possibly damaged) zip archive actually inflate to."""
    total = 0
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for info in z.infolist():
                try:
                    with z.open(info) as f:
                        while chunk := f.read(1 << 20):
                            total += len(chunk)
                except Exception:  # what comes out before the damage still counts
                    pass
    except Exception:
        pass
    return total


# ---- the file worker -----------------------------------------------------------------------


def _worker(args) -> None:
    import resource
    import tracemalloc
    import nuvec as nv

    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            cap = int(line.split()[1]) * 1024 + (1 << 30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    rng = random.Random(args.seed)
    work = Path(args.work)
    counts = {"cases": 0, "loaded": 0, "clean_errors": 0, "bad_errors": 0, "over_allocation": 0}
    by = {}
    bad: list = []
    seeds = {f: [_seed_file(f, rng) for _ in range(4)] for f in FORMATS}
    end = time.monotonic() + args.seconds
    tracemalloc.start()
    while time.monotonic() < end:
        fmt = rng.choice(FORMATS)
        kind, data = _damage(rng.choice(seeds[fmt]), fmt, rng)
        path = work / f"case.{'npz' if fmt == 'npzc' else fmt}"
        path.write_bytes(data)
        (work / "current").write_text(f"{fmt} {kind}")
        bound = 2 * max(len(data), _inflated(data) if fmt.startswith("npz") else 0) + SLACK
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        outcome = "loaded"
        try:
            if fmt == "nvfn":
                got = nv.import_function(str(path))
            else:  # evaluated too: a .npy file's data is read then (MLX's lazy load)
                got = nv.load(str(path))
                nv.eval(got)
        except (ValueError, OSError, RuntimeError) as e:
            outcome = "clean_errors" if str(path) in str(e) else "bad_errors"
            if outcome == "bad_errors":
                bad.append(f"{fmt} {kind}: {type(e).__name__}: {str(e)[:200]}")
        except MemoryError as e:
            outcome = "over_allocation"
            bad.append(f"{fmt} {kind}: MemoryError {e}")
        except Exception as e:  # anything else is a defect
            outcome = "bad_errors"
            bad.append(f"{fmt} {kind}: {type(e).__name__}: {str(e)[:200]}")
        peak = tracemalloc.get_traced_memory()[1] - base
        if outcome == "loaded":
            if fmt == "nvfn":  # after the peak: a call's allocations are the graph's own
                _call_imported(got, rng)
            del got
        if peak > bound and outcome != "over_allocation":
            counts["over_allocation"] += 1
            bad.append(f"{fmt} {kind}: peak {peak} bytes for a {len(data)}-byte file")
        counts["cases"] += 1
        counts[outcome] += 1
        by[f"{fmt}/{kind}"] = by.get(f"{fmt}/{kind}", 0) + 1
        if bad and outcome != "loaded" and args.keep and len(bad) <= 20:
            Path(args.keep).mkdir(parents=True, exist_ok=True)
            (Path(args.keep) / f"bad{len(bad)}.{path.suffix[1:]}").write_bytes(data)
        if counts["cases"] % 25 == 0 or time.monotonic() >= end:
            (work / "stats.json").write_text(
                json.dumps({"counts": counts, "by": by, "bad": bad[:20]})
            )
    (work / "stats.json").write_text(json.dumps({"counts": counts, "by": by, "bad": bad[:20]}))


def _run_files(seconds: float, seed: int, keep: str | None) -> dict:
    total = {
        "cases": 0,
        "loaded": 0,
        "clean_errors": 0,
        "bad_errors": 0,
        "over_allocation": 0,
        "crashes": 0,
    }
    by: dict = {}
    bad: list = []
    end = time.monotonic() + seconds
    while time.monotonic() < end - 1:
        with tempfile.TemporaryDirectory(prefix="nuvec-fuzz-") as work:
            cmd = [
                sys.executable,
                "-m",
                "fuzz.files",
                "--worker",
                "--work",
                work,
                "--seconds",
                str(max(end - time.monotonic() - 1, 0.5)),
                "--seed",
                str(seed),
            ]
            if keep:
                cmd += ["--keep", keep]
            r = subprocess.run(
                cmd, cwd=str(ROOT), capture_output=True, text=True, timeout=seconds + 120
            )
            stats_path = Path(work) / "stats.json"
            if stats_path.exists():
                st = json.loads(stats_path.read_text())
                for k, v in st["counts"].items():
                    total[k] += v
                for k, v in st["by"].items():
                    by[k] = by.get(k, 0) + v
                bad += st["bad"]
            if r.returncode != 0:
                total["crashes"] += 1
                current = Path(work) / "current"
                what = current.read_text() if current.exists() else "?"
                bad.append(
                    f"worker died (status {r.returncode}) on {what}: {r.stderr.strip()[-300:]}"
                )
                case = next(Path(work).glob("case.*"), None)
                if keep and case is not None:
                    Path(keep).mkdir(parents=True, exist_ok=True)
                    (Path(keep) / f"crash{total['crashes']}{case.suffix}").write_bytes(
                        case.read_bytes()
                    )
        seed += 1
    return {"counts": total, "by": by, "bad": bad}


# ---- kernel-cache damage -------------------------------------------------------------------

_CACHE_CHILD = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import nuvec as nv
    from nuvec.backends.cpu import jit
    from nuvec.compile import set_background_kernels
    set_background_kernels(False)
    c = float(sys.argv[1])
    x = nv.array(np.linspace(-3, 3, 5001, dtype=np.float32))
    fns = [lambda x: nv.tanh(x * c) - x * 0.5, lambda x: nv.sigmoid(x + c) * nv.exp(-x * x)]
    same = True
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for f in fns:
            want = np.asarray(f(x)).view(np.uint32)
            same &= bool(np.array_equal(np.asarray(nv.compile(f)(x)).view(np.uint32), want))
    print(json.dumps({"same": same, "stats": jit.stats(), "warnings": len(w)}))
""")

_CACHE_DAMAGE = ("truncate", "flip", "truncate_resealed", "empty", "garbage_memo", "trailer_only")


def _damage_cache(d: Path, kind: str, rng: random.Random) -> None:
    from nuvec.backends.cpu import jit

    entries = sorted(d.glob("*.so"))
    if kind == "garbage_memo":
        for memo in d.glob("probe-*"):
            memo.write_bytes(os.urandom(rng.randint(0, 40)))
        return
    for so in entries:
        data = so.read_bytes()
        if kind == "truncate":
            data = data[: rng.randint(0, len(data) - 1)]
        elif kind == "flip":
            b = bytearray(data)
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            data = bytes(b)
        elif kind == "truncate_resealed":
            body = data[:-40]
            data = jit._seal(body[: rng.randint(0, len(body) - 1)])
        elif kind == "empty":
            data = b""
        else:
            data = data[-40:]
        so.write_bytes(data)


def _run_cache(seconds: float, seed: int) -> dict:
    rng = random.Random(seed)
    counts = {"runs": 0, "same_bits": 0, "rebuilt": 0, "crashes": 0, "wrong": 0, "warnings": 0}
    bad: list = []
    end = time.monotonic() + seconds
    with tempfile.TemporaryDirectory(prefix="nuvec-fuzz-cache-") as tmp:
        env = dict(os.environ, NUVEC_CACHE_DIR=tmp)
        env.pop("NUVEC_COMPILE_SYNC", None)
        c = repr(0.5 + rng.random())
        run = lambda: subprocess.run(
            [sys.executable, "-c", _CACHE_CHILD, c],
            cwd=str(ROOT),
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        r = run()  # warm the cache
        if r.returncode != 0:
            return {"counts": counts, "bad": [f"warming failed: {r.stderr[-300:]}"]}
        while time.monotonic() < end or counts["runs"] == 0:
            kind = rng.choice(_CACHE_DAMAGE)
            _damage_cache(Path(tmp) / "kernels", kind, rng)
            r = run()
            counts["runs"] += 1
            if r.returncode != 0:
                counts["crashes"] += 1
                bad.append(f"cache/{kind}: status {r.returncode}: {r.stderr.strip()[-300:]}")
                continue
            out = json.loads(r.stdout.strip().splitlines()[-1])
            counts["same_bits" if out["same"] else "wrong"] += 1
            counts["rebuilt"] += out["stats"]["rebuilt_damaged"]
            counts["warnings"] += out["warnings"]
            if not out["same"] or out["warnings"]:
                bad.append(f"cache/{kind}: {out}")
    return {"counts": counts, "bad": bad}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fuzz.files", description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--keep", default=None, help="folder for inputs that failed")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--work", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(4), "little")
    if args.worker:
        _worker(args)
        return 0
    t0 = time.monotonic()
    cache_s = max(args.seconds * 0.2, 0.1)
    files = _run_files(args.seconds - cache_s, args.seed, args.keep)
    cache = _run_cache(args.seconds - (time.monotonic() - t0), args.seed)
    fc, cc = files["counts"], cache["counts"]
    print(f"fuzz.files (seed {args.seed}, {time.monotonic() - t0:.0f} s)")
    print("  files: " + ", ".join(f"{k} {v}" for k, v in fc.items()))
    print("  by format/damage: " + ", ".join(f"{k} {v}" for k, v in sorted(files["by"].items())))
    print("  kernel cache: " + ", ".join(f"{k} {v}" for k, v in cc.items()))
    for line in (files["bad"] + cache["bad"])[:30]:
        print("  FAILED " + line)
    failed = (
        fc["bad_errors"]
        + fc["over_allocation"]
        + fc["crashes"]
        + cc["crashes"]
        + cc["wrong"]
        + (1 if cache["bad"] else 0)
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
