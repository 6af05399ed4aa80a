"""Losses against NumPy references, with every reduction, and their errors."""

import math

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn
from nuvec.nn import losses as L

RNG = np.random.default_rng(99)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def reduce_ref(x, reduction):
    return {"none": x, "mean": np.mean(x), "sum": np.sum(x)}[reduction]


def check(got, ref, reduction, rtol=1e-5, atol=1e-6):
    ref = reduce_ref(np.asarray(ref, np.float64), reduction)
    got = np.asarray(got)
    assert got.shape == np.shape(ref)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


def log_softmax_ref(z, axis=-1):
    z = z.astype(np.float64)
    m = z.max(axis=axis, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=axis, keepdims=True))


REDUCTIONS = ["none", "mean", "sum"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_index_and_probability_targets(reduction, smoothing):
    logits = rand(6, 5) * 3
    logits[0, 0] = 80.0  # large logits stay finite
    t = RNG.integers(0, 5, 6)
    lp = log_softmax_ref(logits)
    q = np.eye(5)[t] * (1 - smoothing) + smoothing / 5
    ref = -(q * lp).sum(-1)
    check(
        L.cross_entropy(
            nv.array(logits),
            nv.array(t.astype(np.int32)),
            label_smoothing=smoothing,
            reduction=reduction,
        ),
        ref,
        reduction,
    )
    probs = np.exp(log_softmax_ref(rand(6, 5))).astype(np.float32)
    qp = probs * (1 - smoothing) + smoothing / 5
    check(
        L.cross_entropy(
            nv.array(logits), nv.array(probs), label_smoothing=smoothing, reduction=reduction
        ),
        -(qp * lp).sum(-1),
        reduction,
    )


def test_cross_entropy_axis_weights_and_class_weights():
    logits = rand(3, 4, 2)  # classes on axis 1
    t = RNG.integers(0, 4, (3, 2))
    lp = log_softmax_ref(logits, axis=1)
    nll = -np.take_along_axis(lp, t[:, None], 1)[:, 0]
    got = L.cross_entropy(nv.array(logits), nv.array(t.astype(np.int32)), axis=1)
    check(got, nll, "none")
    w = rand(3, 2)
    check(
        L.cross_entropy(
            nv.array(logits),
            nv.array(t.astype(np.int32)),
            weights=nv.array(w),
            axis=1,
            reduction="sum",
        ),
        nll * w,
        "sum",
    )
    cw = np.array([0.5, 2.0, 1.0, 0.0], np.float32)
    logits2 = rand(7, 4)
    t2 = RNG.integers(0, 4, 7)
    lp2 = log_softmax_ref(logits2)
    check(
        L.cross_entropy(
            nv.array(logits2), nv.array(t2.astype(np.int32)), class_weights=nv.array(cw)
        ),
        -cw[t2] * lp2[np.arange(7), t2],
        "none",
    )
    q = np.eye(4)[t2] * 0.8 + 0.2 / 4
    check(
        L.cross_entropy(
            nv.array(logits2),
            nv.array(t2.astype(np.int32)),
            class_weights=nv.array(cw),
            label_smoothing=0.2,
            reduction="mean",
        ),
        -(cw * q * lp2).sum(-1),
        "mean",
    )
    with pytest.raises(ValueError, match="class_weights"):
        L.cross_entropy(
            nv.array(logits2), nv.array(t2.astype(np.int32)), class_weights=nv.ones((3,))
        )
    with pytest.raises(ValueError, match="weights"):
        L.cross_entropy(nv.array(logits2), nv.array(t2.astype(np.int32)), weights=nv.ones((3,)))
    with pytest.raises(ValueError, match="label_smoothing"):
        L.cross_entropy(nv.array(logits2), nv.array(t2.astype(np.int32)), label_smoothing=1.0)
    with pytest.raises(ValueError, match="targets"):
        L.cross_entropy(nv.array(logits2), nv.zeros((6,), nv.int32))
    with pytest.raises(ValueError, match="reduction"):
        L.cross_entropy(nv.array(logits2), nv.array(t2.astype(np.int32)), reduction="avg")


def test_cross_entropy_gradient_is_softmax_minus_onehot():
    logits = rand(4, 6)
    t = RNG.integers(0, 6, 4)
    g = nv.grad(lambda z: L.cross_entropy(z, nv.array(t.astype(np.int32)), reduction="sum"))(
        nv.array(logits)
    )
    ref = np.exp(log_softmax_ref(logits)) - np.eye(6)[t]
    np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    x = rand(5, 3) * 4
    t = (RNG.random((5, 3)) > 0.5).astype(np.float32)
    xd = x.astype(np.float64)
    ref = np.logaddexp(0, xd) - xd * t
    check(L.binary_cross_entropy(nv.array(x), nv.array(t), reduction=reduction), ref, reduction)
    p = 1 / (1 + np.exp(-xd))
    p[0, 0] = 0.0  # log clipped at -100
    with np.errstate(divide="ignore"):
        ref_p = -(t * np.maximum(np.log(p), -100) + (1 - t) * np.maximum(np.log(1 - p), -100))
    check(
        L.binary_cross_entropy(
            nv.array(p.astype(np.float32)), nv.array(t), with_logits=False, reduction=reduction
        ),
        ref_p,
        reduction,
        rtol=1e-4,
        atol=1e-5,
    )
    w = rand(5, 3)
    check(
        L.binary_cross_entropy(nv.array(x), nv.array(t), weights=nv.array(w), reduction=reduction),
        ref * w,
        reduction,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(reduction):
    p, t = rand(4, 6) * 2, rand(4, 6) * 2
    d = p.astype(np.float64) - t
    a = np.abs(d)
    kw = dict(reduction=reduction)
    check(L.mse_loss(nv.array(p), nv.array(t), **kw), d**2, reduction)
    check(L.l1_loss(nv.array(p), nv.array(t), **kw), a, reduction)
    check(
        L.smooth_l1_loss(nv.array(p), nv.array(t), beta=0.7, **kw),
        np.where(a < 0.7, 0.5 * a**2 / 0.7, a - 0.35),
        reduction,
    )
    check(
        L.huber_loss(nv.array(p), nv.array(t), delta=1.3, **kw),
        np.where(a <= 1.3, 0.5 * a**2, 1.3 * (a - 0.65)),
        reduction,
    )
    check(L.log_cosh_loss(nv.array(p), nv.array(t), **kw), np.log(np.cosh(d)), reduction)
    check(
        L.hinge_loss(nv.array(p), nv.array(np.sign(t)), **kw),
        np.maximum(1 - p * np.sign(t), 0),
        reduction,
    )
    with pytest.raises(ValueError, match="mse_loss"):
        L.mse_loss(nv.array(p), nv.array(t[:2]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_distribution_and_similarity_losses(reduction):
    x, y = rand(5, 4), rand(5, 4)
    lx, ly = log_softmax_ref(x), log_softmax_ref(y)
    check(
        L.kl_div_loss(
            nv.array(lx.astype(np.float32)), nv.array(ly.astype(np.float32)), reduction=reduction
        ),
        (np.exp(ly) * (ly - lx)).sum(-1),
        reduction,
        rtol=1e-4,
        atol=1e-6,
    )
    t = RNG.integers(0, 4, 5)
    check(
        L.nll_loss(
            nv.array(lx.astype(np.float32)), nv.array(t.astype(np.int32)), reduction=reduction
        ),
        -lx[np.arange(5), t],
        reduction,
    )
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    cos = (xd * yd).sum(1) / (np.linalg.norm(xd, axis=1) * np.linalg.norm(yd, axis=1))
    check(L.cosine_similarity_loss(nv.array(x), nv.array(y), reduction=reduction), cos, reduction)
    cos0 = (xd * yd).sum(0) / (np.linalg.norm(xd, axis=0) * np.linalg.norm(yd, axis=0))
    check(L.cosine_similarity_loss(nv.array(x), nv.array(y), axis=0), cos0, "none")


def test_other_losses():
    m, t, v = rand(6), rand(6), np.abs(rand(6)) + 0.1
    ref = 0.5 * (np.log(v) + (t - m) ** 2 / v) + 0.5 * math.log(2 * math.pi)
    check(L.gaussian_nll_loss(nv.array(m), nv.array(t), nv.array(v), full=True), ref, "mean")
    a, b = rand(6), rand(6)
    s = np.sign(rand(6))
    check(
        L.margin_ranking_loss(nv.array(a), nv.array(b), nv.array(s), margin=0.2),
        np.maximum(0, -s * (a - b) + 0.2),
        "none",
    )
    an, po, ne = rand(3, 4), rand(3, 4), rand(3, 4)

    def dist(u, w):
        return np.sqrt(((u - w) ** 2).sum(-1) + 1e-6)

    check(
        L.triplet_loss(nv.array(an), nv.array(po), nv.array(ne)),
        np.maximum(dist(an, po) - dist(an, ne) + 1.0, 0),
        "none",
        rtol=1e-4,
    )
    assert nn.losses is L
