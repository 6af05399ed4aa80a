"""nn.QuantizedLinear, nn.QuantizedEmbedding, nn.quantize and the to_quantized hooks."""

from __future__ import annotations

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn
from nuvec.utils import tree_flatten


def test_quantize_swaps_linear_and_embedding_layers_in_place():
    nv.random.seed(0)
    model = nn.Sequential(nn.Embedding(10, 64), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 64))
    ids = nv.array([[1, 2, 3]])
    before = np.asarray(model(ids))
    lin = model.layers[1]
    nn.quantize(model, group_size=32, bits=8)
    assert [type(m).__name__ for m in model.layers] == [
        "QuantizedEmbedding",
        "QuantizedLinear",
        "ReLU",
        "QuantizedLinear",
    ]
    q = model.layers[1]
    assert q.weight.dtype == nv.uint32 and q.weight.shape == (32, 64 * 8 // 32)
    assert np.asarray(q.bias).tobytes() == np.asarray(lin.bias).tobytes()
    np.testing.assert_allclose(np.asarray(model(ids)), before, atol=0.05)
    assert tree_flatten(model.trainable_parameters()) == []  # frozen


def test_quantized_linear_is_quantized_matmul_plus_bias():
    lin = nn.Linear(128, 16)
    q = lin.to_quantized(group_size=64, bits=4)
    x = nv.random.normal((3, 128))
    want = nv.quantized_matmul(x, q.weight, q.scales, q.biases, group_size=64, bits=4) + lin.bias
    assert np.asarray(q(x)).tobytes() == np.asarray(want).tobytes()
    assert "group_size=64, bits=4" in repr(q)


def test_quantized_embedding_rows_and_as_linear():
    emb = nn.Embedding(20, 64)
    q = nn.QuantizedEmbedding.from_embedding(emb, 32, 4)
    ids = nv.array([3, 7, 7])
    table = nv.dequantize(q.weight, q.scales, q.biases, 32, 4)
    np.testing.assert_array_equal(np.asarray(q(ids)), np.asarray(table)[[3, 7, 7]])
    x = nv.random.normal((2, 64))
    np.testing.assert_allclose(
        np.asarray(q.as_linear(x)),
        np.asarray(x, np.float64) @ np.asarray(table, np.float64).T,
        rtol=1e-5,
        atol=1e-4,
    )


def test_predicate_picks_layers_and_arguments():
    model = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64))
    nn.quantize(
        model, class_predicate=lambda p, m: p.endswith("1") and {"group_size": 32, "bits": 2}
    )
    assert type(model.layers[0]).__name__ == "Linear"
    assert model.layers[1].bits == 2 and model.layers[1].group_size == 32
    with pytest.raises(ValueError, match="invalid quantization mode"):
        nn.QuantizedLinear(64, 64, mode="int3")


def test_qqlinear_trains_on_floats_and_evaluates_packed():
    lin = nn.Linear(64, 32, bias=False)  # gradients quantize along 32 and 32 too
    q = lin.to_quantized(mode="mxfp8", quantize_input=True)
    assert isinstance(q, nn.QQLinear) and q.weight.dtype == nv.float32
    x = nv.array(np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32))
    y_train = np.asarray(q(x))
    np.testing.assert_allclose(
        y_train, np.asarray(nv.qqmm(x, lin.weight, mode="mxfp8")), rtol=1e-6, atol=1e-6
    )
    grads = nn.value_and_grad(q, lambda m, x: m(x).sum())(q, x)[1]
    assert grads["weight"].shape == (32, 64)  # the float weight gets gradients
    q.eval()
    assert q.weight.dtype == nv.uint32 and "scales" in q
    np.testing.assert_allclose(np.asarray(q(x)), y_train, rtol=1e-5, atol=1e-5)
    q.train()
    assert "scales" not in q and q.weight.dtype != nv.uint32
    with pytest.raises(NotImplementedError, match="bias"):
        nn.QQLinear.from_linear(nn.Linear(64, 16))


def test_quantize_with_quantize_input_makes_qqlinears():
    model = nn.Sequential(nn.Linear(64, 32, bias=False), nn.ReLU(), nn.Linear(32, 32, bias=False))
    nn.quantize(model, mode="nvfp4", quantize_input=True)
    assert [type(m).__name__ for m in model.layers] == ["QQLinear", "ReLU", "QQLinear"]
    assert model(nv.ones((2, 64))).shape == (2, 32)


def test_an_embedding_refuses_quantize_input():
    # MLX's behaviour: ValueError from nn.quantize (not a TypeError from the keyword)
    model = nn.Sequential(nn.Embedding(5, 64), nn.ReLU(), nn.Linear(64, 64, bias=False))
    with pytest.raises(ValueError, match="Embedding.to_quantized: quantize_input"):
        nn.quantize(model, group_size=32, mode="mxfp8", quantize_input=True)
    # with a predicate that leaves the embedding alone, the Linear becomes a QQLinear
    nn.quantize(
        model,
        group_size=32,
        mode="mxfp8",
        quantize_input=True,
        class_predicate=lambda _, m: isinstance(m, nn.Linear),
    )
    assert [type(m).__name__ for m in model.layers] == ["Embedding", "ReLU", "QQLinear"]
