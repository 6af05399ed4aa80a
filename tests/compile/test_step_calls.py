"""Compiled training steps as the CPU replays them: one step called from 8 threads at once
gives each thread the bits of the uncompiled step, and a batch of another shape runs (traced
again) with the reason in ``stats()``. (Held references and errors: test_inplace.py.)"""

import threading

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn
from training_step import adam_step, mlp

pytestmark = pytest.mark.usefixtures("cpu_device")

rng = np.random.default_rng(3)
# large enough that the products go to BLAS and the kernels split over threads
SIZES = (64, 256, 128, 10)


def params():
    return [
        {
            "w": nv.array(rng.standard_normal((i, o)).astype(np.float32) / np.sqrt(i)),
            "b": nv.array(rng.standard_normal((o,)).astype(np.float32)),
        }
        for i, o in zip(SIZES[:-1], SIZES[1:])
    ]


def loss_fn(ps, x, y):
    h = x
    for k, p in enumerate(ps):
        h = h @ p["w"] + p["b"]
        if k < len(ps) - 1:
            h = nv.maximum(h, 0.0)
    return nn.losses.cross_entropy(h, y, reduction="mean")


def batch(n):
    x = nv.array(rng.standard_normal((n, SIZES[0])).astype(np.float32))
    return x, nv.array(rng.integers(0, SIZES[-1], n).astype(np.int32))


def flat(tree):
    return [np.array(v) for _, v in nv.utils.tree_flatten(tree)]


def test_eight_threads_calling_one_compiled_step_get_the_uncompiled_bits():
    ps = params()
    grad = nv.value_and_grad(loss_fn)
    step = nv.compile(grad)
    batches = [batch(256) for _ in range(8)]
    want = [flat(grad(ps, x, y)) for x, y in batches]
    for x, y in batches:  # traced, and its kernels built, before the threads start
        nv.eval(step(ps, x, y))
    errors, start = [], threading.Barrier(8)

    def worker(k):
        try:
            start.wait()
            for i in range(12):
                j = (k + i) % 8
                got = flat(step(ps, *batches[j]))
                if any(not np.array_equal(g, w) for g, w in zip(got, want[j])):
                    errors.append((k, i))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert step.stats()["traces"] == 1


def test_a_batch_of_another_shape_runs_and_the_miss_says_why():
    c = adam_step(lambda: mlp(64, 32, 10), seed=2, compiled=True)
    e = adam_step(lambda: mlp(64, 32, 10), seed=2, compiled=False)
    model_c, state_c, comp = c.model, c.state, c.step
    model_e, state_e, eager = e.model, e.state, e.step
    data = [batch(32), batch(32), batch(17), batch(32)]
    for x, y in data:
        got, ref = comp(x, y), eager(x, y)
        nv.eval(got, state_c, ref, state_e)
        np.testing.assert_array_equal(np.array(got), np.array(ref))
    for a, b in zip(flat(model_c.parameters()), flat(model_e.parameters())):
        np.testing.assert_array_equal(a, b)
    st = comp.stats()
    assert st["traces"] == 2  # the batch of 17 traced once; the last call of 32 hit
    assert "shape (32, 64) -> (17, 64)" in st["last_miss"]
