"""The newer layers and MLX's behaviours against NumPy references: shrink activations,
step's boundary, log_softmax of huge logits, InstanceNorm, GroupNorm's checks, 3-d conv,
pooling and dropout, ALiBi, init.sparse/orthogonal, set_dtype, grad of a Module."""

import math

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn

RNG = np.random.default_rng(99)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def close(a, b, rtol=1e-5, atol=1e-5):
    a = np.asarray(a)
    assert a.shape == np.shape(b), (a.shape, np.shape(b))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def test_shrinks_and_relu2():
    x = rand(50)
    for lambd in (0.5, 1.2):
        close(nn.hard_shrink(nv.array(x), lambd), np.where(np.abs(x) > lambd, x, 0))
        close(nn.HardShrink(lambd)(nv.array(x)), np.where(np.abs(x) > lambd, x, 0))
        soft = np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0))
        close(nn.softshrink(nv.array(x), lambd), soft)
        close(nn.Softshrink(lambd)(nv.array(x)), soft)
    close(nn.relu2(nv.array(x)), np.maximum(x, 0) ** 2)
    close(nn.ReLU2()(nv.array(x)), np.maximum(x, 0) ** 2)
    assert nn.softshrink(nv.array(x, nv.float16)).dtype == nv.float16
    g = nv.grad(lambda v: nn.softshrink(v).sum())(nv.array([-1.0, 0.1, 2.0]))
    assert g.tolist() == [1.0, 0.0, 1.0]


def test_step_includes_the_threshold():
    x = nv.array([-1.0, 0.0, 1.0])
    assert nn.step(x).tolist() == [0, 1, 1]
    assert nn.Step(threshold=1.0)(x).tolist() == [0, 0, 1]


def test_log_softmax_of_equal_huge_logits_and_gradient():
    for v in (1.0, 1e4, 1e8, 1e20, 1e36):
        close(nn.log_softmax(nv.array([[v, v, v]])), np.full((1, 3), -math.log(3)), atol=1e-6)
    x = rand(4, 6)
    ref = x - x.max(-1, keepdims=True)
    ref = ref - np.log(np.exp(ref).sum(-1, keepdims=True))
    close(nn.log_softmax(nv.array(x)), ref)
    # d/dx sum(log_softmax(x) * w) = w - softmax(x) * sum(w)
    w = rand(4, 6)
    g = nv.grad(lambda t: (nn.log_softmax(t) * nv.array(w)).sum())(nv.array(x))
    sm = np.exp(ref)
    close(g, w - sm * w.sum(-1, keepdims=True), atol=1e-5)


def test_instance_norm_against_numpy():
    for shape in [(2, 5, 3), (2, 4, 3, 6)]:
        x = rand(*shape, scale=3.0)
        axes = tuple(range(1, x.ndim - 1))
        ref = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
        close(nn.InstanceNorm(shape[-1])(nv.array(x)), ref, atol=1e-4)
        m = nn.InstanceNorm(shape[-1], affine=True)
        m.weight = nv.array(np.arange(1, shape[-1] + 1, dtype=np.float32))
        m.bias = nv.ones((shape[-1],))
        close(m(nv.array(x)), ref * np.arange(1, shape[-1] + 1) + 1, atol=1e-4)
    # half precision keeps its dtype and its statistics do not overflow
    x = np.where(np.indices((4, 4)).sum(0) % 2, -512.0, 512.0)[None, :, :, None]
    y = nn.InstanceNorm(1)(nv.array(x.astype(np.float16)))
    assert y.dtype == nv.float16
    assert np.asarray(y).min() == -1.0 and np.asarray(y).max() == 1.0
    assert repr(nn.InstanceNorm(3)) == "InstanceNorm(3, eps=1e-05, affine=False)"
    with pytest.raises(ValueError, match="InstanceNorm"):
        nn.InstanceNorm(3)(nv.ones((2, 3)))
    with pytest.raises(ValueError, match="must be positive"):
        nn.InstanceNorm(3, eps=0.0)


def test_group_norm_rejects_bad_sizes():
    for groups, dims in [(0, 8), (-1, 8), (4, 0), (4, 6)]:
        with pytest.raises(ValueError, match="GroupNorm"):
            nn.GroupNorm(groups, dims)


def test_conv3d_against_numpy():
    x, m = rand(2, 5, 4, 6, 3), nn.Conv3d(3, 4, kernel_size=(2, 3, 2), stride=(1, 1, 2))
    w, b = np.asarray(m.weight), np.asarray(m.bias)
    y = np.asarray(m(nv.array(x)))
    out = np.zeros((2, 4, 2, 3, 4), np.float64)
    for d in range(4):
        for h in range(2):
            for k in range(3):
                patch = x[:, d : d + 2, h : h + 3, 2 * k : 2 * k + 2, :]
                out[:, d, h, k, :] = np.einsum("ndhwc,odhwc->no", patch, w) + b
    close(y, out, atol=1e-4)


def test_pool3d_and_dropout3d():
    x = rand(1, 4, 4, 4, 2)
    blocks = x.reshape(1, 2, 2, 2, 2, 2, 2, 2)
    close(nn.MaxPool3d(2)(nv.array(x)), blocks.max((2, 4, 6)))
    close(nn.AvgPool3d(2)(nv.array(x)), blocks.mean((2, 4, 6)))
    y = nn.AvgPool3d(kernel_size=3, stride=1)(nv.array(x))
    ref = np.stack(
        [
            x[:, i : i + 3, j : j + 3, k : k + 3].mean((1, 2, 3))
            for i in range(2)
            for j in range(2)
            for k in range(2)
        ],
        1,
    )
    close(y, ref.reshape(1, 2, 2, 2, 2))
    nv.random.seed(3)
    d = nn.Dropout3d(0.5)
    y = np.asarray(d(nv.ones((2, 3, 3, 3, 16))))
    # whole channels are kept (scaled by 2) or dropped
    per_channel = y.reshape(2, 27, 16)
    assert np.all(per_channel == per_channel[:, :1]) and set(np.unique(y)) <= {0.0, 2.0}
    assert 0 < (per_channel[:, 0] == 0).sum() < 32
    assert np.array_equal(np.asarray(d.eval()(nv.ones((3, 3, 3, 4)))), np.ones((3, 3, 3, 4)))
    with pytest.raises(ValueError, match="Dropout3d"):
        nn.Dropout3d()(nv.ones((2, 3, 4)))


def test_alibi_against_formula():
    for heads in (8, 6):
        scores = rand(2, heads, 3, 5)
        y = np.asarray(nn.ALiBi()(nv.array(scores), offset=2))
        n = 1 << (heads.bit_length() - 1)
        slopes = [2 ** (-8 * i / n) for i in range(1, n + 1)]
        slopes += [2 ** (-8 * i / (2 * n)) for i in range(1, 2 * n + 1)][0::2][: heads - n]
        dist = -np.abs(np.arange(2, 5)[:, None] - np.arange(5)[None, :])
        close(y, scores + np.array(slopes)[None, :, None, None] * dist, atol=1e-6)
    assert nn.ALiBi()(nv.zeros((1, 4, 2, 2), nv.float16)).dtype == nv.float16
    mask = nv.array(rand(3, 5))
    close(
        nn.ALiBi()(nv.zeros((1, 2, 3, 5)), mask=mask) - nn.ALiBi()(nv.zeros((1, 2, 3, 5))),
        np.broadcast_to(np.asarray(mask), (1, 2, 3, 5)),
        atol=1e-6,
    )


def test_init_sparse_zeros_per_row_and_orthogonal_error():
    for sparsity, shape in [(0.5, (4, 10)), (0.3, (5, 10)), (0.5, (2, 2)), (0.25, (8, 5))]:
        w = np.asarray(nn.init.sparse(sparsity)(nv.zeros(shape)))
        assert np.all((w == 0).sum(1) == math.ceil(sparsity * shape[1])), w
    with pytest.raises(ValueError, match="3D array"):
        nn.init.orthogonal()(nv.zeros((2, 3, 4)))


def test_set_dtype_predicates():
    lin = nn.Linear(4, 8)
    lin.set_dtype(nv.bfloat16)
    assert {v.dtype for v in (lin.weight, lin.bias)} == {nv.bfloat16}
    lin.set_dtype(nv.float32, lambda d: False)
    assert lin.weight.dtype == nv.bfloat16
    lin.set_dtype(nv.int32, lambda d: True)
    lin.set_dtype(nv.float16)  # the default casts only floating parameters
    assert lin.weight.dtype == nv.int32
    lin.set_dtype(nv.int64, predicate=None)
    assert {v.dtype for v in (lin.weight, lin.bias)} == {nv.int64}


def test_grad_of_a_function_of_a_module_receives_the_module():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.m1 = nn.Linear(3, 2)
            self.rest = [nn.Linear(2, 1)]

    model = Model()
    w = model.m1.weight
    x = nv.array(rand(3))
    seen = []

    def loss(m):
        seen.append(type(m))
        return m.rest[0](m.m1(x)).sum()

    g = nv.grad(loss)(model)
    assert seen == [Model]
    assert model.m1.weight is w  # the parameters are put back
    # d/dW1 of w2 . (W1 x + b1) = outer(w2, x)
    w2 = np.asarray(model.rest[0].weight)[0]
    close(g["m1"]["weight"], np.outer(w2, x))
    close(g["rest"][0]["bias"], [1.0])
    _, g2 = nn.value_and_grad(model, lambda m: loss(m))(model)
    close(g2["m1"]["weight"], np.outer(w2, x))


def test_grad_of_a_module_that_adds_members_restores_its_parameters():
    class Cached(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def __call__(self, x):
            self.cache = self.lin(x)  # a new member during the call
            return self.cache.sum()

    m = Cached()
    w, b = m.lin.weight, m.lin.bias
    g = nv.grad(lambda mod: mod(nv.ones((2,))))(m)
    assert m.lin.weight is w and m.lin.bias is b
    close(g["lin"]["weight"], np.ones((2, 2)))
