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
    with pytest.raises(TypeError, match="bfloat16"):
        nv.save(str(tmp_path / "b"), nv.ones((2,), dtype=nv.bfloat16))
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
