"""nv.save / nv.savez / nv.savez_compressed / nv.save_safetensors / nv.load (MLX's API)."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

import nuvec as nv


def test_npy_round_trip_appends_the_extension(tmp_path):
    for dtype in (np.float32, np.int64, np.bool_, np.float16):
        a = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
        path = str(tmp_path / f"x_{np.dtype(dtype).name}")
        nv.save(path, nv.array(a))
        got = nv.load(path + ".npy")
        assert got.dtype == nv.array(a).dtype
        np.testing.assert_array_equal(np.asarray(got), a)


def test_savez_names_positional_and_keyword_arrays(tmp_path):
    path = str(tmp_path / "many.npz")
    nv.savez(path, nv.arange(3), nv.ones((2,)), w=nv.zeros((2, 2)))
    got = nv.load(path)
    assert sorted(got) == ["arr_0", "arr_1", "w"]
    assert got["arr_0"].tolist() == [0, 1, 2] and got["w"].shape == (2, 2)
    with pytest.raises(ValueError, match="given twice"):
        nv.savez(path, nv.ones(1), arr_0=nv.ones(1))


def test_savez_compressed_is_smaller_and_equal(tmp_path):
    z = nv.zeros((256, 256))
    nv.savez(str(tmp_path / "plain"), z=z)
    nv.savez_compressed(str(tmp_path / "small"), z=z)
    plain, small = tmp_path / "plain.npz", tmp_path / "small.npz"
    assert small.stat().st_size < plain.stat().st_size / 10
    np.testing.assert_array_equal(np.asarray(nv.load(str(small))["z"]), np.zeros((256, 256)))


def test_safetensors_with_metadata_and_bfloat16(tmp_path):
    path = str(tmp_path / "m.safetensors")
    b = nv.array(np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16))
    nv.save_safetensors(path, {"b": b, "i": nv.arange(4)}, metadata={"step": "7"})
    arrays, meta = nv.load(path, return_metadata=True)
    assert meta == {"step": "7"} and arrays["b"].dtype == nv.bfloat16
    assert arrays["b"].tolist() == [1.5, -2.0] and arrays["i"].tolist() == [0, 1, 2, 3]


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="unknown format 'txt'"):
        nv.load(str(tmp_path / "a.txt"))
    with pytest.raises(FileNotFoundError, match="no such file"):
        nv.load(str(tmp_path / "missing.npy"))
    nv.savez(str(tmp_path / "z"), a=nv.ones(1))
    with pytest.raises(ValueError, match="return_metadata"):
        nv.load(str(tmp_path / "z.npz"), return_metadata=True)
    nv.save(str(tmp_path / "noext"), nv.ones(2))
    os.rename(tmp_path / "noext.npy", tmp_path / "noext")
    assert nv.load(str(tmp_path / "noext"), format="npy").tolist() == [1.0, 1.0]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = str(tmp_path / "keep.npy")
    nv.save(path, nv.arange(3))
    before = open(path, "rb").read()

    def broken(f, *args, **kwargs):
        f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(np, "save", broken)
    with pytest.raises(OSError, match="disk full"):
        nv.save(path, nv.arange(5))
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["keep.npy"]


# ---- files from elsewhere: byte orders, layouts, file objects, streams ---------------------


@pytest.mark.parametrize("dtype", [">f4", ">i8", ">u2", ">c8", ">f2", "<f8", "|b1", "|u1"])
def test_npy_of_any_byte_order_loads_converted(tmp_path, dtype):
    a = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    path = str(tmp_path / "x.npy")
    np.save(path, a)
    got = np.asarray(nv.load(path))
    assert got.dtype.isnative and got.dtype == a.dtype.newbyteorder("=")
    np.testing.assert_array_equal(got, a)


def test_npy_fortran_order_and_version_3(tmp_path):
    a = np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    path = str(tmp_path / "f.npy")
    np.save(path, a)
    np.testing.assert_array_equal(np.asarray(nv.load(path)), a)
    with open(path, "wb") as f:
        np.lib.format.write_array(f, a, version=(3, 0))
    np.testing.assert_array_equal(np.asarray(nv.load(path)), a)


def test_bfloat16_npy_as_mlx_stores_it(tmp_path):
    b = nv.array(np.array([1.5, -2.0, 3.0], dtype=ml_dtypes.bfloat16))
    path = str(tmp_path / "b.npy")
    nv.save(path, b)
    got = nv.load(path)
    assert got.dtype == nv.bfloat16 and got.tolist() == [1.5, -2.0, 3.0]


def test_complex128_npy_is_refused_as_mlx_refuses_it(tmp_path):
    path = str(tmp_path / "c.npy")
    np.save(path, np.ones(3, np.complex128))
    with pytest.raises(ValueError, match="c.npy.*not supported"):
        nv.load(path)


def test_loaded_arrays_are_writable_views_of_the_file(tmp_path):
    path = str(tmp_path / "m.npy")
    np.save(path, np.arange(1 << 16, dtype=np.float32))
    x = nv.load(path)
    x += 1  # the private mapping takes writes; the file keeps its bytes
    assert float(nv.sum(x).item()) == float(np.arange(1 << 16, dtype=np.float64).sum() + (1 << 16))
    np.testing.assert_array_equal(np.load(path), np.arange(1 << 16, dtype=np.float32))


def test_file_objects_are_read_and_written(tmp_path):
    import io

    for save, ext in (
        (lambda f: nv.save(f, nv.arange(4)), "npy"),
        (lambda f: nv.savez(f, a=nv.arange(4)), "npz"),
        (lambda f: nv.save_safetensors(f, {"a": nv.arange(4)}), "safetensors"),
        (lambda f: nv.save_gguf(f, {"a": nv.arange(4)}), "gguf"),
    ):
        buf = io.BytesIO()
        save(buf)
        buf.seek(0)
        got = nv.load(buf, format=ext)
        got = got if ext == "npy" else got["a"]
        assert got.tolist() == [0, 1, 2, 3], ext
        path = tmp_path / f"o.{ext}"
        with open(path, "wb") as f:
            save(f)
        assert sorted(os.listdir(tmp_path))[-1].startswith("o.")  # no file named after repr
        with open(path, "rb") as f:
            got = nv.load(f)
        got = got if ext == "npy" else got["a"]
        assert got.tolist() == [0, 1, 2, 3], ext
    assert sorted(os.listdir(tmp_path)) == ["o.gguf", "o.npy", "o.npz", "o.safetensors"]
    with pytest.raises(ValueError, match="format="):
        nv.load(io.BytesIO(b""))


def test_load_places_arrays_on_the_stream(tmp_path):
    path = str(tmp_path / "s.npy")
    nv.save(path, nv.arange(3))
    s = nv.new_stream(nv.cpu)
    assert nv.load(path, stream=s)._stream == s
    assert nv.load(path, stream=nv.cpu).tolist() == [0, 1, 2]


def test_npz_compressed_stored_and_numpy_written(tmp_path):
    arrays = {
        "a": np.arange(10, dtype=np.int16),
        "b": np.ones((3, 3), ">f8"),
        "c": np.zeros(2, np.uint8),
    }
    for saver in (np.savez, np.savez_compressed):
        path = str(tmp_path / "n.npz")
        saver(path, **arrays)
        got = nv.load(path)
        for k, v in arrays.items():
            np.testing.assert_array_equal(np.asarray(got[k]), v)
    arrays["file"] = arrays.pop("c")  # a name NumPy's savez cannot take as a keyword
    arrays["b"] = arrays["b"].astype("=f8")
    nv.savez_compressed(str(tmp_path / "m"), **{k: nv.array(v) for k, v in arrays.items()})
    with np.load(str(tmp_path / "m.npz")) as z:
        for k, v in arrays.items():
            np.testing.assert_array_equal(z[k], v)


# ---- GGUF ---------------------------------------------------------------------------------


def test_gguf_round_trip_with_metadata(tmp_path):
    path = str(tmp_path / "m")
    arrays = {
        "f32": nv.array(np.random.rand(3, 5).astype(np.float32)),
        "f16": nv.array(np.random.rand(4).astype(np.float16)),
        "i8": nv.array(np.arange(-3, 3, dtype=np.int8)),
        "i32": nv.array(np.arange(6, dtype=np.int32).reshape(1, 2, 3)),
        "bf16": nv.array(np.array([1.0, 2.5], ml_dtypes.bfloat16)),
        "t": nv.arange(4).reshape(2, 2).T,
    }
    meta = {
        "name": "tiny",
        "tags": ["a", "bc", ""],
        "n": nv.array(7, dtype=nv.uint16),
        "v": nv.array([1.5, 2.5]),
        "flag": nv.array(True),
    }
    nv.save_gguf(path, arrays, meta)
    got, m = nv.load(path + ".gguf", return_metadata=True)
    assert sorted(got) == sorted(arrays)
    for k, v in arrays.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape
        np.testing.assert_array_equal(got[k].astype(nv.float32), v.astype(nv.float32))
    assert m["name"] == "tiny" and m["tags"] == ["a", "bc", ""]
    assert m["n"].dtype == nv.uint16 and m["n"].shape == () and m["n"].item() == 7
    assert m["v"].tolist() == [1.5, 2.5] and m["flag"].item() is True


def test_gguf_metadata_errors_follow_mlx(tmp_path):
    path = str(tmp_path / "e.gguf")
    for bad in (nv.array(1.0, dtype=nv.float16), nv.ones((2, 2)), nv.zeros((0,)), 3):
        with pytest.raises(ValueError, match="save_gguf: metadata"):
            nv.save_gguf(path, {"a": nv.ones(2)}, {"m": bad})
    with pytest.raises(ValueError, match="save_gguf: 'a' has dtype"):
        nv.save_gguf(path, {"a": nv.ones(2, dtype=nv.uint32)})


def _ggml_q_file(path, type_id, blocks, rows, cols, name=b"blk.weight"):
    import struct

    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 1, 0))
        f.write(struct.pack("<Q", len(name)) + name)
        f.write(struct.pack("<IQQIQ", 2, cols, rows, type_id, 0))
        f.write(b"\0" * (-f.tell() % 32))
        f.write(blocks.tobytes())


@pytest.mark.parametrize("qtype", ["Q4_0", "Q4_1", "Q8_0"])
def test_gguf_quantized_tensors_load_as_mlx_triplets(tmp_path, qtype):
    rows, cols = 3, 64
    n = rows * cols // 32
    rng = np.random.default_rng(1)
    d = rng.uniform(0.1, 2, (n, 1)).astype(np.float16)
    m = rng.uniform(-2, 2, (n, 1)).astype(np.float16)
    if qtype == "Q8_0":
        q = rng.integers(-128, 128, (n, 32)).astype(np.int8)
        blocks = np.concatenate([d.view(np.uint8), q.view(np.uint8)], axis=1)
        want, bits, tid = d.astype(np.float32) * q, 8, 8
    else:
        q = rng.integers(0, 16, (n, 32)).astype(np.uint8)
        packed = (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)
        parts = [d.view(np.uint8)] + ([m.view(np.uint8)] if qtype == "Q4_1" else []) + [packed]
        blocks = np.concatenate(parts, axis=1)
        want = (
            d.astype(np.float32) * (q.astype(np.float32) - 8)
            if qtype == "Q4_0"
            else d.astype(np.float32) * q + m.astype(np.float32)
        )
        bits, tid = 4, 2 if qtype == "Q4_0" else 3
    path = str(tmp_path / "q.gguf")
    _ggml_q_file(path, tid, blocks, rows, cols)
    got = nv.load(path)
    w, s, b = (np.asarray(got[k]) for k in ("blk.weight", "blk.scales", "blk.biases"))
    assert w.dtype == np.uint32 and w.shape == (rows, cols * bits // 32)
    assert s.dtype == b.dtype == np.float16 and s.shape == b.shape == (rows, cols // 32)
    # MLX's affine layout: element i of a row is bits [bits*(i % per), ...) of word i // per
    per = 32 // bits
    words = w.reshape(rows, -1, 1)
    vals = (words >> (bits * np.arange(per, dtype=np.uint32))) & ((1 << bits) - 1)
    vals = vals.reshape(rows, cols).astype(np.float32)
    groups = np.repeat(np.arange(cols // 32), 32)
    deq = vals * s.astype(np.float32)[:, groups] + b.astype(np.float32)[:, groups]
    np.testing.assert_array_equal(deq, want.reshape(rows, cols))


@pytest.mark.cpu_only("the lazy .npy read is the CPU stream's; other devices read at load")
def test_npy_data_is_read_when_evaluated_into_a_cache_buffer(tmp_path):
    """MLX's lazy load: the header is read by ``load``, the data at evaluation, whole, into a
    buffer of the CPU cache (active memory counts it; an element-wise op on a loaded array
    that nothing else holds writes over it, so a load and a load times a scalar peak alike)."""
    from nuvec.backends.cpu import memory

    path = str(tmp_path / "d.npy")
    np.save(path, np.arange(4096, dtype=np.float32))
    x = nv.load(path)
    assert x.primitive is not None and x.shape == (4096,) and x.dtype == nv.float32
    before = memory.get_active_memory()
    nv.eval(x)
    assert memory.get_active_memory() >= before + 4096 * 4
    np.testing.assert_array_equal(np.array(x), np.arange(4096, dtype=np.float32))
    del x
    scale = nv.array(2.0)
    memory.reset_peak_memory()
    y = nv.load(path)
    nv.eval(y)
    load_only = memory.get_peak_memory()
    y = nv.load(path) * scale
    nv.eval(y)
    assert memory.get_peak_memory() == load_only
    np.testing.assert_array_equal(np.array(y), 2 * np.arange(4096, dtype=np.float32))


@pytest.mark.parametrize("when", ["before load", "after load"])
def test_npy_data_missing_at_evaluation_is_a_runtime_error(tmp_path, when):
    """A file truncated before or after ``load`` (MLX's RuntimeError at evaluation), never a
    partly read array; the stream that loaded it and the one reading it may differ."""
    path = str(tmp_path / "t.npy")
    np.save(path, np.arange(16, dtype=np.float32))
    size = os.path.getsize(path)
    if when == "before load":
        os.truncate(path, size - 8)
    out = nv.add(nv.load(path, stream=nv.new_stream(nv.cpu)), 1.0, stream=nv.new_stream(nv.cpu))
    if when == "after load":
        os.truncate(path, size - 8)
    with pytest.raises(RuntimeError, match=r"t\.npy.*truncated"):
        nv.eval(out)


def test_npy_renamed_over_after_load_reads_the_file_loaded(tmp_path):
    """The loaded file stays open until the data is read: nuvec's writers rename a new file
    over the path, and the array still reads the file ``load`` opened."""
    path = str(tmp_path / "r.npy")
    nv.save(path, nv.arange(8))
    x = nv.load(path)
    nv.save(path, nv.arange(8) * 10)
    assert x.tolist() == list(range(8))
    assert nv.load(path).tolist() == [10 * i for i in range(8)]
