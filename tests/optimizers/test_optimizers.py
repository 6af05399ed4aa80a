"""Each optimizer's updates against its formula (NumPy, float64) over several steps; the
state's structure; schedules; clip_grad_norm."""

import math

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn
import nuvec.optimizers as optim

STEPS = 4
SHAPES = {"w": (3, 4), "b": (4,), "layers": [(2, 5)]}


def tree_np(rng, scale=1.0):
    return {
        "w": rng.standard_normal((3, 4)) * scale,
        "b": rng.standard_normal(4) * scale,
        "layers": [rng.standard_normal((2, 5)) * scale],
    }


def to_nv(t):
    if isinstance(t, dict):
        return {k: to_nv(v) for k, v in t.items()}
    if isinstance(t, list):
        return [to_nv(v) for v in t]
    return nv.array(np.asarray(t, np.float32))


def flat(t, prefix=""):
    if isinstance(t, dict):
        for k, v in t.items():
            yield from flat(v, f"{prefix}{k}.")
    elif isinstance(t, list):
        for i, v in enumerate(t):
            yield from flat(v, f"{prefix}{i}.")
    else:
        yield prefix[:-1], t


# reference updates: f(g, p, s, t, lr) -> new p (s is a dict updated in place; t is the step
# number after the increment, starting at 1)
def sgd_ref(momentum=0.0, weight_decay=0.0, dampening=0.0, nesterov=False):
    def f(g, p, s, t, lr):
        g = g + weight_decay * p
        if momentum <= 0:
            return p - lr * g
        v = momentum * s.get("v", 0.0) + (1 - dampening) * g
        s["v"] = v
        return p - lr * (g + momentum * v if nesterov else v)

    return f


def adam_ref(b1=0.9, b2=0.999, eps=1e-8, bias_correction=False, wd=0.0):
    def f(g, p, s, t, lr):
        p = p * (1 - lr * wd)
        m = b1 * s.get("m", 0.0) + (1 - b1) * g
        v = b2 * s.get("v", 0.0) + (1 - b2) * g * g
        s["m"], s["v"] = m, v
        if bias_correction:
            return p - (lr / (1 - b1**t)) * m / (np.sqrt(v) / np.sqrt(1 - b2**t) + eps)
        return p - lr * m / (np.sqrt(v) + eps)

    return f


def adamax_ref(b1=0.9, b2=0.999, eps=1e-8):
    def f(g, p, s, t, lr):
        m = b1 * s.get("m", 0.0) + (1 - b1) * g
        v = np.maximum(b2 * s.get("v", 0.0), np.abs(g))
        s["m"], s["v"] = m, v
        return p - lr * m / (v + eps)

    return f


def adagrad_ref(eps=1e-8):
    def f(g, p, s, t, lr):
        v = s.get("v", 0.0) + g * g
        s["v"] = v
        return p - lr * g / (np.sqrt(v) + eps)

    return f


def adadelta_ref(rho=0.9, eps=1e-6):
    def f(g, p, s, t, lr):
        v = rho * s.get("v", 0.0) + (1 - rho) * g * g
        d = np.sqrt(s.get("u", 0.0) + eps) / np.sqrt(v + eps) * g
        s["u"] = rho * s.get("u", 0.0) + (1 - rho) * d * d
        s["v"] = v
        return p - lr * d

    return f


def rmsprop_ref(alpha=0.99, eps=1e-8):
    def f(g, p, s, t, lr):
        v = alpha * s.get("v", 0.0) + (1 - alpha) * g * g
        s["v"] = v
        return p - lr * g / (np.sqrt(v) + eps)

    return f


def lion_ref(b1=0.9, b2=0.99, wd=0.0):
    def f(g, p, s, t, lr):
        m = s.get("m", 0.0)
        c = b1 * m + (1 - b1) * g
        s["m"] = b2 * m + (1 - b2) * g
        return p * (1 - lr * wd) - lr * np.sign(c)

    return f


def adafactor_ref(
    lr_given=None,
    eps=(1e-30, 1e-3),
    clip=1.0,
    decay=-0.8,
    beta1=None,
    wd=0.0,
    scale_parameter=True,
    relative_step=True,
    warmup_init=False,
):
    def rms(x):
        return np.sqrt(np.mean(x * x))

    def f(g, p, s, t, lr):
        if relative_step:
            rel = min(1e-6 * t if warmup_init else 1e-2, 1 / math.sqrt(t))
        else:
            rel = lr
        step = max(eps[1], rms(p)) * rel if scale_parameter else rel
        beta2 = 1 - t**decay
        sq = g * g + eps[0]
        if g.ndim >= 2:
            row = beta2 * s.get("row", 0.0) + (1 - beta2) * sq.mean(-1)
            col = beta2 * s.get("col", 0.0) + (1 - beta2) * sq.mean(-2)
            s["row"], s["col"] = row, col
            u = (
                (1 / np.sqrt(row / row.mean(-1, keepdims=True)))[..., None]
                * (1 / np.sqrt(col))[..., None, :]
                * g
            )
        else:
            v = beta2 * s.get("v", 0.0) + (1 - beta2) * sq
            s["v"] = v
            u = g / np.sqrt(v)
        u = u / max(1.0, rms(u) / clip)
        u = step * u
        if beta1 is not None:
            u = beta1 * s.get("m", 0.0) + (1 - beta1) * u
            s["m"] = u
        if wd:
            p = p - wd * step * p
        return p - u

    return f


CASES = {
    "sgd": (lambda: optim.SGD(0.1), sgd_ref()),
    "sgd_momentum_wd": (
        lambda: optim.SGD(0.1, momentum=0.9, weight_decay=0.01),
        sgd_ref(0.9, 0.01),
    ),
    "sgd_dampening": (
        lambda: optim.SGD(0.05, momentum=0.8, dampening=0.3),
        sgd_ref(0.8, dampening=0.3),
    ),
    "sgd_nesterov": (
        lambda: optim.SGD(0.05, momentum=0.9, nesterov=True),
        sgd_ref(0.9, nesterov=True),
    ),
    "adam": (lambda: optim.Adam(0.01), adam_ref()),
    "adam_bias_correction": (
        lambda: optim.Adam(0.01, betas=(0.8, 0.95), bias_correction=True),
        adam_ref(0.8, 0.95, bias_correction=True),
    ),
    "adamw": (lambda: optim.AdamW(0.01, weight_decay=0.1), adam_ref(wd=0.1)),
    "adamax": (lambda: optim.Adamax(0.02), adamax_ref()),
    "adagrad": (lambda: optim.Adagrad(0.1), adagrad_ref()),
    "adadelta": (lambda: optim.AdaDelta(1.0, rho=0.8), adadelta_ref(0.8)),
    "rmsprop": (lambda: optim.RMSprop(0.01, alpha=0.9), rmsprop_ref(0.9)),
    "lion": (lambda: optim.Lion(0.01, weight_decay=0.1), lion_ref(wd=0.1)),
    "adafactor": (lambda: optim.Adafactor(), adafactor_ref()),
    "adafactor_lr_beta1_wd": (
        lambda: optim.Adafactor(
            learning_rate=0.05,
            relative_step=False,
            beta_1=0.9,
            weight_decay=0.01,
            clip_threshold=0.5,
        ),
        adafactor_ref(relative_step=False, beta1=0.9, wd=0.01, clip=0.5),
    ),
    "adafactor_warmup": (
        lambda: optim.Adafactor(warmup_init=True, scale_parameter=False),
        adafactor_ref(warmup_init=True, scale_parameter=False),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_update_matches_formula(name):
    make, ref = CASES[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    params = tree_np(rng)
    opt = make()
    cur = to_nv(params)
    ref_p = dict(flat(params))
    ref_s = {k: {} for k in ref_p}
    lr = float(np.asarray(opt.learning_rate)) if "learning_rate" in opt.state else None
    for t in range(1, STEPS + 1):
        grads = tree_np(rng, scale=0.5)
        cur = opt.apply_gradients(to_nv(grads), cur)
        for k, g in flat(grads):
            ref_p[k] = ref(g, ref_p[k], ref_s[k], t, lr)
        assert int(np.asarray(opt.step)) == t
        for k, v in flat(cur):
            np.testing.assert_allclose(
                np.asarray(v), ref_p[k], rtol=2e-5, atol=2e-6, err_msg=f"{name} step {t} {k}"
            )


def test_state_structure_and_update_of_a_model():
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    opt = optim.Adam(1e-3)
    assert set(opt.state) == {"step", "learning_rate"}
    assert opt.step.dtype == nv.uint64
    opt.init(model.trainable_parameters())
    st = opt.state
    assert set(st["layers"][0]) == {"weight", "bias"}
    assert set(st["layers"][1]["weight"]) == {"m", "v"}
    assert st["layers"][1]["weight"]["m"].shape == (2, 4)
    m_before = st["layers"][0]["bias"]["m"]
    opt.init(model.trainable_parameters())  # idempotent: existing state kept
    assert opt.state["layers"][0]["bias"]["m"] is m_before
    w0 = np.asarray(model.layers[0].weight).copy()
    grads = {
        "layers": [
            {"weight": nv.ones((4, 3)), "bias": nv.ones((4,))},
            {"weight": nv.ones((2, 4)), "bias": nv.ones((2,))},
        ]
    }
    opt.update(model, grads)
    # first Adam step without bias correction: lr * (0.1 g) / (sqrt(0.001 g^2) + eps)
    step = 1e-3 * 0.1 / (math.sqrt(0.001) + 1e-8)
    np.testing.assert_allclose(np.asarray(model.layers[0].weight), w0 - step, rtol=1e-5)


def test_learning_rate_is_an_array_and_settable():
    opt = optim.SGD(learning_rate=0.5)
    assert isinstance(opt.learning_rate, nv.array)
    opt.learning_rate = 0.25
    assert isinstance(opt.learning_rate, nv.array) and opt.learning_rate.item() == 0.25
    p = {"w": nv.array([1.0])}
    out = opt.apply_gradients({"w": nv.array([2.0])}, p)
    assert out["w"].item() == pytest.approx(0.5)


def test_scheduled_learning_rate_follows_the_schedule():
    sched = optim.exponential_decay(0.1, 0.5)
    opt = optim.SGD(learning_rate=sched)
    p = {"w": nv.array([0.0])}
    seen = []
    for _ in range(4):
        p = opt.apply_gradients({"w": nv.array([1.0])}, p)
        seen.append(opt.learning_rate.item())
    # the rate used by update k is schedule(k - 1)
    np.testing.assert_allclose(seen, [0.1, 0.05, 0.025, 0.0125], rtol=1e-6)
    assert p["w"].item() == pytest.approx(-(0.1 + 0.05 + 0.025 + 0.0125), rel=1e-6)


def test_schedules_against_formulas():
    steps = [0, 1, 5, 10, 99, 150]

    def ev(s):
        return [s(nv.array(t)).item() for t in steps]

    np.testing.assert_allclose(
        ev(optim.exponential_decay(0.1, 0.9)), [0.1 * 0.9**t for t in steps], rtol=1e-5
    )
    np.testing.assert_allclose(
        ev(optim.step_decay(0.1, 0.5, 10)), [0.1 * 0.5 ** (t // 10) for t in steps], rtol=1e-5
    )
    np.testing.assert_allclose(
        ev(optim.cosine_decay(0.1, 100, end=0.01)),
        [0.01 + 0.5 * (1 + math.cos(math.pi * min(t, 100) / 100)) * 0.09 for t in steps],
        rtol=1e-5,
        atol=1e-7,
    )
    np.testing.assert_allclose(
        ev(optim.linear_schedule(0.0, 1.0, 10)), [min(t, 10) / 10 for t in steps], rtol=1e-6
    )
    joined = optim.join_schedules(
        [optim.linear_schedule(0.0, 0.1, 10), optim.cosine_decay(0.1, 100)], [10]
    )
    np.testing.assert_allclose(
        ev(joined),
        [
            min(t, 10) / 100 if t < 10 else 0.05 * (1 + math.cos(math.pi * min(t - 10, 100) / 100))
            for t in steps
        ],
        rtol=1e-5,
        atol=1e-7,
    )
    with pytest.raises(ValueError, match="join_schedules"):
        optim.join_schedules([optim.linear_schedule(0, 1, 2)], [3])


def test_clip_grad_norm():
    g = {"a": nv.array([3.0, 0.0]), "b": [nv.array([[4.0]])]}
    clipped, norm = optim.clip_grad_norm(g, 1.0)
    assert norm.item() == pytest.approx(5.0)
    np.testing.assert_allclose(np.asarray(clipped["a"]), [0.6, 0.0], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(clipped["b"][0]), [[0.8]], rtol=1e-5)
    same, norm = optim.clip_grad_norm(g, 10.0)
    np.testing.assert_array_equal(np.asarray(same["a"]), [3.0, 0.0])


def test_bad_hyper_parameters():
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(0.1, nesterov=True)
    with pytest.raises(ValueError, match="beta1"):
        optim.Adam(0.1, betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="eps"):
        optim.RMSprop(0.1, eps=0.0)
    with pytest.raises(ValueError, match="learning_rate"):
        optim.Adafactor(relative_step=False)


def muon_ref(momentum=0.95, wd=0.01, nesterov=True, steps=5):
    def orthogonalize(x):
        a, b, c = 3.4445, -4.7750, 2.0315
        tall = x.shape[0] > x.shape[1]
        x = x.T if tall else x
        x = x / (np.sqrt((x * x).sum()) + 1e-7)
        for _ in range(steps):
            gram = x @ x.T
            x = a * x + (b * gram + c * gram @ gram) @ x
        return x.T if tall else x

    def f(g, p, s, t, lr):
        g = g + wd * p
        v = momentum * s.get("v", 0.0) + (1 - momentum) * g
        s["v"] = v
        u = (1 - momentum) * g + momentum * v if nesterov else v
        if u.ndim >= 2:
            u = orthogonalize(u.reshape(u.shape[0], -1)).reshape(u.shape)
            lr = lr * max(1.0, u.shape[-2] / u.shape[-1]) ** 0.5
        return p - lr * u

    return f


@pytest.mark.parametrize("nesterov,wd", [(True, 0.01), (False, 0.0)])
def test_muon_matches_formula(nesterov, wd):
    rng = np.random.default_rng(7)
    params = {
        "w": rng.standard_normal((3, 5)),
        "tall": rng.standard_normal((6, 2)),
        "conv": rng.standard_normal((4, 2, 3, 3)),
        "b": rng.standard_normal(4),
    }
    opt = optim.Muon(0.02, momentum=0.9, weight_decay=wd, nesterov=nesterov)
    ref = muon_ref(0.9, wd, nesterov)
    cur = to_nv(params)
    ref_p = dict(params)
    ref_s = {k: {} for k in params}
    for t in range(1, STEPS + 1):
        grads = {k: rng.standard_normal(v.shape) for k, v in params.items()}
        cur = opt.apply_gradients(to_nv(grads), cur)
        for k, g in grads.items():
            ref_p[k] = ref(g, ref_p[k], ref_s[k], t, 0.02)
            np.testing.assert_allclose(
                np.asarray(cur[k]), ref_p[k], rtol=1e-4, atol=1e-5, err_msg=f"muon step {t} {k}"
            )


def test_muon_orthogonalizes_and_keeps_dtype():
    g = nv.array(np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32))
    # Newton-Schulz drives the singular values into a band around 1 (not exactly 1).
    sv = np.linalg.svd(np.asarray(optim.Muon._orthogonalize(g, 5)), compute_uv=False)
    assert np.all((sv > 0.6) & (sv < 1.3)), sv
    opt = optim.Muon(0.1)
    new = opt.apply_gradients(
        {"w": nv.ones((5, 5), nv.float16)}, {"w": nv.ones((5, 5), nv.float16)}
    )
    assert new["w"].dtype == nv.float16
    with pytest.raises(ValueError, match="2-d"):
        optim.Muon._orthogonalize(nv.ones((2, 2, 2)), 1)


def test_multi_optimizer_routes_parameters():
    rng = np.random.default_rng(3)
    params = to_nv(
        {
            "l": [{"weight": rng.standard_normal((3, 2)), "bias": rng.standard_normal(3)}],
            "scale": rng.standard_normal(3),
        }
    )
    grads = to_nv(
        {
            "l": [{"weight": rng.standard_normal((3, 2)), "bias": rng.standard_normal(3)}],
            "scale": rng.standard_normal(3),
        }
    )
    multi = optim.MultiOptimizer(
        [optim.Adam(0.01), optim.SGD(0.1, momentum=0.5)], [lambda path, w: w.ndim > 1]
    )
    multi.init(params)
    s_adam, s_sgd = multi.state["states"]
    assert [k for k, _ in nv.utils.tree_flatten(s_adam) if k.endswith(".m")] == ["l.0.weight.m"]
    assert sorted(k for k, _ in nv.utils.tree_flatten(s_sgd) if k.endswith(".v")) == [
        "l.0.bias.v",
        "scale.v",
    ]
    new = multi.apply_gradients(grads, params)
    adam, sgd = optim.Adam(0.01), optim.SGD(0.1, momentum=0.5)
    want_w = adam.apply_gradients({"w": grads["l"][0]["weight"]}, {"w": params["l"][0]["weight"]})
    want_b = sgd.apply_gradients(
        {"b": grads["l"][0]["bias"], "s": grads["scale"]},
        {"b": params["l"][0]["bias"], "s": params["scale"]},
    )
    np.testing.assert_array_equal(np.asarray(new["l"][0]["weight"]), np.asarray(want_w["w"]))
    np.testing.assert_array_equal(np.asarray(new["l"][0]["bias"]), np.asarray(want_b["b"]))
    np.testing.assert_array_equal(np.asarray(new["scale"]), np.asarray(want_b["s"]))
    multi.learning_rate = 0.5
    assert [o.learning_rate.item() for o in multi.optimizers] == [0.5, 0.5]
    with pytest.raises(ValueError, match="MultiOptimizer"):
        optim.MultiOptimizer([optim.SGD(0.1)], [lambda p, w: True])
    with pytest.raises(ValueError, match="MultiOptimizer"):
        multi.state = {"states": [{}]}


def test_multi_optimizer_with_parameterless_layers():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
    multi = optim.MultiOptimizer([optim.Muon(0.01), optim.AdamW(0.01)], [lambda _, w: w.ndim >= 2])
    _, grads = nn.value_and_grad(model, lambda m, x: m(x).sum())(model, nv.ones((1, 4)))
    w, b = model.layers[0].weight, model.layers[0].bias
    multi.update(model, grads)
    assert not np.array_equal(np.asarray(w), np.asarray(model.layers[0].weight))
    assert not np.array_equal(np.asarray(b), np.asarray(model.layers[0].bias))


def test_clip_grad_norm_integers_and_bad_max_norm():
    clipped, norm = optim.clip_grad_norm({"a": nv.array([30, 40])}, 1.0)
    assert norm.item() == pytest.approx(50.0)
    np.testing.assert_allclose(np.asarray(clipped["a"]), [0.6, 0.8], rtol=1e-5)
    with pytest.raises(ValueError, match="max_norm"):
        optim.clip_grad_norm({"a": nv.ones(2)}, -1.0)


def test_compiled_multi_optimizer_step_equals_the_eager_one_bit_for_bit():
    from functools import partial

    def make():
        nv.random.seed(0)
        model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
        opt = optim.MultiOptimizer(
            [optim.Muon(0.02), optim.AdamW(0.01)], [lambda p, w: w.ndim >= 2]
        )
        return model, opt

    x = nv.array(np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32))

    def loss(m, v):
        return (m(v) ** 2).mean()

    eager, eager_opt = make()
    for _ in range(3):
        _, g = nn.value_and_grad(eager, loss)(eager, x)
        eager_opt.update(eager, g)
    model, opt = make()
    opt.init(model.trainable_parameters())
    state = [model.state, opt.state]

    @partial(nv.compile, inputs=state, outputs=state)
    def step(v):
        _, g = nn.value_and_grad(model, loss)(model, v)
        opt.update(model, g)

    for _ in range(3):
        step(x)
    for (k, a), (_, b) in zip(flat(eager.parameters()), flat(model.parameters())):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=k)
    assert int(np.asarray(opt.optimizers[0].step)) == 3
