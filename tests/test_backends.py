"""The Backend objects: one per device kind, from registry.BACKENDS, asked by compile,
nv.fast and the primitives instead of device names."""

import numpy as np
import pytest

import nuvec as nv
from nuvec.backends import registry
from nuvec.backends.base import Backend, FusionPolicy
from nuvec.compile import passes as _passes
from nuvec.compile.fuse import fuse
from nuvec.primitives.norm import LayerNorm
from nuvec.primitives.reduction import ScaledSoftmax, SoftmaxProduct


def test_every_backend_is_one_line_of_the_list():
    kinds = [k for k, _ in registry.BACKENDS]
    assert kinds[0] == "cpu" and set(kinds) == {"cpu", "gpu"}
    cpu = registry.backend("cpu")
    assert isinstance(cpu, Backend) and cpu.name == "cpu" and cpu.dialect == "c"
    assert registry.backend_of(nv.cpu) is cpu
    assert registry.backend_of(nv.default_stream(nv.cpu)) is cpu
    gpu = registry.backend("gpu")
    assert (gpu is None) == (registry.gpu_backend_name() is None)
    if gpu is not None:
        assert gpu.name == registry.gpu_backend_name() and gpu.device_type == "gpu"


def test_the_cpu_lowers_its_row_primitives_only_where_they_apply():
    cpu = registry.backend("cpu")
    x = nv.ones((4, 8))
    w = nv.ones((8,))
    assert cpu.supports(LayerNorm(1e-5, True, False), [x, w])
    assert not cpu.supports(LayerNorm(1e-5, True, False), [x, nv.ones((8,), nv.float16)])
    assert not cpu.supports(LayerNorm(1e-5, False, False), [nv.ones((4, 8), nv.float16)])
    assert not cpu.supports(LayerNorm(1e-5, False, False), [nv.ones((0, 8))[:, :0]])
    assert cpu.supports(SoftmaxProduct(), [x, x])
    assert not cpu.supports(SoftmaxProduct(), [x, nv.ones((4, 8), nv.float64)])
    assert cpu.supports(ScaledSoftmax(0.5, True), [x, nv.ones((8,))])
    assert not cpu.supports(ScaledSoftmax(0.5, True), [x, nv.ones((3,))])
    assert not cpu.supports(ScaledSoftmax(0.5, False), [nv.ones((4, 8), nv.float64)])
    assert not Backend().supports(LayerNorm(1e-5, False, False), [x])


@pytest.mark.cpu_only("patches the CPU backend's lowerings")
def test_a_backend_that_lowers_nothing_gets_the_composite(monkeypatch):
    cpu = registry.backend("cpu")
    x = nv.array(np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32))
    assert isinstance(nv.fast.layer_norm(x, None, None, 1e-5)._prim, LayerNorm)
    monkeypatch.setattr(type(cpu), "lowerings", frozenset())
    y = nv.fast.layer_norm(x, None, None, 1e-5)
    assert not isinstance(y._prim, LayerNorm)
    (g,) = nv.vjp(lambda x: nv.softmax(x, axis=-1), [x], [x])[1]
    assert not isinstance(g._prim, SoftmaxProduct)
    xn = np.asarray(x)
    ref = (xn - xn.mean(-1, keepdims=True)) / np.sqrt(xn.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5, atol=1e-5)


def _unfused_draft(f, x):
    prev = _passes.FUSE[0]
    _passes.FUSE[0] = False
    try:
        cf = nv.compile(f)
        cf(x)
        return cf.lookup(cf.key_of((x,), {}, [], 0)).info["draft"]
    finally:
        _passes.FUSE[0] = prev


@pytest.mark.parametrize("read_after", [True, False])
def test_the_fusion_policy_decides_read_after_outputs(read_after):
    def f(x):  # exp(x) feeds a fusable chain and, after a reduction, another one
        e = nv.exp(x)
        s = nv.sum(e * 2.0 + 1.0)
        return nv.tanh(e) + s

    draft = _unfused_draft(f, nv.ones((16,)))
    fused = fuse(draft, False, FusionPolicy(fuses=True, read_after_outputs=read_after))
    assert bool([s for s in fused if len(s.outs) > 1]) == read_after
