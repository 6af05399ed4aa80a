"""nn.Module: the tree views, update, freezing, modes, weights files, nn.value_and_grad."""

import json
import struct

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn
from nuvec.utils import tree_flatten


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 4)
        self.norm = nn.LayerNorm(4)
        self.extra = [nv.ones((2,)), {"a": nv.zeros((1,))}]
        self.hidden_count = 7  # a plain attribute
        self._private = nv.ones((5,))  # never a parameter

    def __call__(self, x):
        return self.norm(self.lin(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [Block(), Block()]
        self.head = nn.Linear(4, 2, bias=False)
        self.drop = nn.Dropout(0.5)


def keys(tree):
    return sorted(k for k, _ in tree_flatten(tree))


def test_attributes_go_to_the_dict_or_stay_plain():
    b = Block()
    assert "lin" in b and "extra" in b and "_private" in b
    assert "hidden_count" not in b and b.hidden_count == 7
    b.hidden_count = nv.ones((1,))  # becomes a tree member
    assert "hidden_count" in b and b.hidden_count.shape == (1,)
    b.hidden_count = 3  # back to a plain attribute
    assert "hidden_count" not in b and b.hidden_count == 3
    with pytest.raises(AttributeError):
        _ = b.missing
    del b.lin
    assert "lin" not in b


def test_parameters_children_and_modules():
    net = Net()
    p = keys(net.parameters())
    assert p == sorted(
        [
            f"blocks.{i}.{k}"
            for i in range(2)
            for k in ("lin.weight", "lin.bias", "norm.weight", "norm.bias", "extra.0", "extra.1.a")
        ]
        + ["head.weight"]
    )
    assert not any("_private" in k for k in p)
    assert net.state is net
    ch = net.children()
    assert set(ch) == {"blocks", "head", "drop"}
    assert isinstance(ch["blocks"][0], Block) and ch["head"] is net.head
    leaves = net.leaf_modules()
    assert leaves["head"] is net.head and leaves["blocks"][1]["lin"] is net.blocks[1].lin
    names = [k for k, _ in net.named_modules()]
    assert names[0] == "" and set(names) == {
        "",
        "blocks.0",
        "blocks.1",
        "blocks.0.lin",
        "blocks.0.norm",
        "blocks.1.lin",
        "blocks.1.norm",
        "head",
        "drop",
    }
    assert len(net.modules()) == 9


def test_update_partial_strict_and_errors():
    net = Net()
    w = nv.zeros((2, 4))
    net.update({"head": {"weight": w}})
    assert net.head.weight is w
    net.update({"blocks": [{}, {"extra": [nv.full((2,), 5.0)]}]})
    assert np.asarray(net.blocks[1].extra[0]).tolist() == [5.0, 5.0]
    with pytest.raises(ValueError, match="no member named 'nope'"):
        net.update({"nope": w})
    with pytest.raises(ValueError, match="must be an array"):
        net.update({"head": {"weight": 3.0}})
    net.update({"nope": w}, strict=False)  # ignored
    assert "nope" not in net


def test_update_modules_and_apply():
    net = Net()
    new = nn.Linear(4, 2)
    net.update_modules({"head": new, "blocks": [{"lin": nn.Identity()}]})
    assert net.head is new and isinstance(net.blocks[0].lin, nn.Identity)
    net.apply(lambda x: nv.astype(x, nv.float16))
    assert {v.dtype for _, v in tree_flatten(net.parameters())} == {nv.float16}
    assert net.blocks[0]._private.dtype == nv.float32  # not a parameter: untouched


def test_update_modules_from_tree_unflatten_of_named_modules():
    # mlx-examples' lora/fuse.py: swap modules given by dotted names
    from nuvec.utils import tree_unflatten

    net = Net()
    new = nn.Linear(4, 2)
    tree = tree_unflatten([("head", new), ("blocks.0.lin", nn.Identity())])
    assert tree["head"] is new  # a Module value stays a leaf, not a nested level
    net.update_modules(tree)
    assert net.head is new and isinstance(net.blocks[0].lin, nn.Identity)


def test_freeze_unfreeze_with_keys():
    net = Net()
    net.freeze()
    assert keys(net.trainable_parameters()) == []
    assert len(keys(net.parameters())) == 13
    net.unfreeze(keys="bias")
    assert keys(net.trainable_parameters()) == [
        "blocks.0.lin.bias",
        "blocks.0.norm.bias",
        "blocks.1.lin.bias",
        "blocks.1.norm.bias",
    ]
    net.unfreeze()
    net.blocks[0].freeze(keys=["lin"], recurse=False)
    assert not any(k.startswith("blocks.0.lin") for k in keys(net.trainable_parameters()))
    assert "blocks.0.norm.weight" in keys(net.trainable_parameters())
    # one element of a list member
    net.unfreeze()
    net.blocks[1].freeze(keys="extra.0", recurse=False)
    tp = keys(net.trainable_parameters())
    assert "blocks.1.extra.0" not in tp and "blocks.1.extra.1.a" in tp
    with pytest.raises(KeyError):
        net.freeze(keys="no_such_member", strict=True)


def test_batchnorm_running_stats_stay_frozen():
    bn = nn.BatchNorm(3)
    assert keys(bn.trainable_parameters()) == ["bias", "weight"]
    bn.unfreeze()
    assert keys(bn.trainable_parameters()) == ["bias", "weight"]
    assert keys(bn.parameters()) == ["bias", "running_mean", "running_var", "weight"]


def test_train_eval_propagates():
    net = Net()
    assert net.training and net.drop.training
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())


def _params_np(m):
    return {k: np.asarray(v) for k, v in tree_flatten(m.parameters())}


@pytest.mark.parametrize("ext", ["npz", "safetensors"])
def test_save_load_round_trip(tmp_path, ext):
    nv.random.seed(1)
    a, b = Net(), Net()
    path = str(tmp_path / f"w.{ext}")
    a.save_weights(path)
    b.load_weights(path)
    pa, pb = _params_np(a), _params_np(b)
    assert pa.keys() == pb.keys()
    for k in pa:
        assert pa[k].dtype == pb[k].dtype and np.array_equal(pa[k], pb[k]), k


def test_safetensors_layout_is_the_standard_one(tmp_path):
    from nuvec.files import load_safetensors, save_safetensors

    path = str(tmp_path / "t.safetensors")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    save_safetensors(
        path,
        {"x": nv.array(x), "i": nv.array(np.array([1, 2], np.int64))},
        metadata={"format": "np"},
    )
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0
    header = json.loads(raw[8 : 8 + n])
    assert header["__metadata__"] == {"format": "np"}
    assert header["x"]["dtype"] == "F32" and header["x"]["shape"] == [2, 3]
    b, e = header["x"]["data_offsets"]
    assert np.array_equal(np.frombuffer(raw[8 + n + b : 8 + n + e], "<f4").reshape(2, 3), x)
    assert header["i"]["dtype"] == "I64"
    out, meta = load_safetensors(path, return_metadata=True)
    assert meta == {"format": "np"} and np.array_equal(np.asarray(out["x"]), x)


def test_safetensors_dtypes_round_trip(tmp_path):
    import ml_dtypes
    from nuvec.files import load_safetensors, save_safetensors

    path = str(tmp_path / "d.safetensors")
    arrays = {
        name: np.arange(4).astype(d)
        for name, d in [
            ("f16", np.float16),
            ("bf16", ml_dtypes.bfloat16),
            ("u8", np.uint8),
            ("i32", np.int32),
            ("b", np.bool_),
            ("u32", np.uint32),
        ]
    }
    save_safetensors(path, {k: nv.array(v) for k, v in arrays.items()})
    back = load_safetensors(path)
    for k, v in arrays.items():
        got = back[k]
        if got.dtype == nv.bfloat16:  # (NumPy takes no bfloat16 buffer, as with MLX)
            got = np.asarray(got.view(nv.uint16)).view(v.dtype)
        else:
            got = np.asarray(got)
        assert got.dtype == v.dtype and np.array_equal(got, v), k


def test_corrupt_safetensors_is_a_clear_error(tmp_path):
    from nuvec.files import load_safetensors

    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(struct.pack("<Q", 10**6) + b"{}")
    with pytest.raises(ValueError, match="header length"):
        load_safetensors(str(bad))
    hdr = json.dumps({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}).encode()
    bad.write_bytes(struct.pack("<Q", len(hdr)) + hdr + b"\0" * 8)
    with pytest.raises(ValueError, match="offsets"):
        load_safetensors(str(bad))


def test_load_weights_strict_errors(tmp_path):
    m = nn.Linear(3, 2)
    with pytest.raises(ValueError, match=r"missing: bias"):
        m.load_weights([("weight", nv.zeros((2, 3)))])
    with pytest.raises(ValueError, match=r"not in the model: extra"):
        m.load_weights(
            [("weight", nv.zeros((2, 3))), ("bias", nv.zeros((2,))), ("extra", nv.zeros((1,)))]
        )
    with pytest.raises(ValueError, match=r"weight has shape \(3, 3\), the model has \(2, 3\)"):
        m.load_weights([("weight", nv.zeros((3, 3))), ("bias", nv.zeros((2,)))])
    # non-strict: loads what matches, ignores the rest
    m.load_weights([("weight", nv.zeros((2, 3))), ("extra", nv.ones((1,)))], strict=False)
    assert np.asarray(m.weight).sum() == 0 and "extra" not in m
    path = str(tmp_path / "lin.safetensors")
    nn.Linear(3, 5).save_weights(path)
    with pytest.raises(ValueError, match="shape"):
        m.load_weights(path)
    with pytest.raises(ValueError, match="extension"):
        m.save_weights(str(tmp_path / "w.bin"))


def test_value_and_grad_matches_the_analytic_gradient():
    nv.random.seed(3)
    model = nn.Linear(3, 2)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    y = rng.standard_normal((5, 2)).astype(np.float32)

    def loss_fn(model, x, y):
        return nv.mean(nv.square(model(x) - y))

    before = np.asarray(model.weight).copy()
    loss, grads = nn.value_and_grad(model, loss_fn)(model, nv.array(x), nv.array(y))
    W, b = np.asarray(model.weight), np.asarray(model.bias)
    r = x @ W.T + b - y
    assert np.allclose(loss.item(), np.mean(r**2), rtol=1e-5)
    assert np.allclose(np.asarray(grads["weight"]), 2 * r.T @ x / r.size, rtol=1e-4, atol=1e-6)
    assert np.allclose(np.asarray(grads["bias"]), 2 * r.sum(0) / r.size, rtol=1e-4, atol=1e-6)
    assert np.array_equal(W, before)  # the model keeps its own parameters
    model.freeze(keys="bias")
    _, grads = nn.value_and_grad(model, loss_fn)(model, nv.array(x), nv.array(y))
    assert set(grads) == {"weight"}


def test_set_dtype_repr_and_checkpoint():
    net = Net()
    net.blocks[0].extra[0] = nv.array([1, 2])  # an int parameter stays int
    net.set_dtype(nv.bfloat16)
    dts = {k: v.dtype for k, v in tree_flatten(net.parameters())}
    assert dts["head.weight"] == nv.bfloat16 and dts["blocks.0.extra.0"] == nv.int32
    text = repr(Net())
    assert "(head): Linear(input_dims=4, output_dims=2, bias=False)" in text
    assert "(blocks.1): Block(\n    (lin): Linear(input_dims=3" in text
    lin = nn.Linear(2, 2)
    x = nv.ones((3, 2))
    assert np.array_equal(np.asarray(nn.checkpoint(lin)(x)), np.asarray(lin(x)))
