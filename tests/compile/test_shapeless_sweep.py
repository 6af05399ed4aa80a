"""Every public function of one array (nuvec, nn, linalg, fft), compiled shapeless: traced on
one shape and replayed on another of the same rank (including broadcast-compatible and size-1
pairs, where a size baked at the trace broadcasts silently), it gives the uncompiled call's
result bit for bit, or raises. A call that the uncompiled function refuses must raise too."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nuvec as nv
import nuvec.nn as nn

# not operations on an array: transforms, compile, files, devices, streams, memory, trees
_NOT_OPS = {
    "compile", "eval", "async_eval", "export_function", "import_function", "exporter",
    "export_to_dot", "print_graph", "save", "load", "savez", "savez_compressed",
    "save_safetensors", "save_gguf", "load_gguf", "vmap", "grad", "value_and_grad", "vjp", "jvp",
    "checkpoint", "custom_function", "synchronize", "stream", "new_stream", "array", "asarray",
    "from_dlpack", "default_device", "default_stream", "tree_flatten", "tree_unflatten",
    "tree_map",
}  # fmt: skip
_PREFIXES = ("set_", "get_", "reset_", "clear_", "enable_", "disable_")

PAIRS = {
    1: [((4,), (7,)), ((1,), (5,)), ((5,), (1,))],
    2: [((1, 4), (3, 4)), ((3, 1), (3, 4)), ((2, 4), (4, 4)), ((4, 4), (2, 4)), ((1, 1), (3, 5)),
        ((2, 2), (2, 3)), ((3, 3), (5, 5))],
    3: [((2, 3, 4), (1, 3, 4)), ((2, 1, 4), (2, 5, 4)), ((2, 3, 4), (3, 3, 2)),
        ((1, 1, 1), (2, 3, 4))],
}  # fmt: skip


def _functions() -> list[tuple[str, object]]:
    out = []
    for prefix, mod in (("nv", nv), ("nn", nn), ("linalg", nv.linalg), ("fft", nv.fft)):
        for name in sorted(dir(mod)):
            f = getattr(mod, name)
            if (
                name.startswith("_")
                or name.startswith(_PREFIXES)
                or name in _NOT_OPS
                or isinstance(f, type)
                or not callable(f)
                or type(f).__name__ == "module"
            ):
                continue
            out.append((f"{prefix}.{name}", f))
    return out


def _normal(shape, seed):
    return nv.array(np.random.default_rng(seed).normal(size=shape).astype(np.float32))


def _arrays(r) -> list | None:
    items = list(r) if isinstance(r, (list, tuple)) else [r]
    arrays = [x for x in items if isinstance(x, nv.array)]
    return arrays if arrays and len(arrays) == len(items) else None


def _host(r) -> list[np.ndarray]:
    arrays = _arrays(r)
    assert arrays is not None
    return [np.asarray(a) for a in arrays]


@pytest.mark.parametrize("name, f", _functions(), ids=[n for n, _ in _functions()])
def test_replays_equal_the_uncompiled_call_or_raise(name, f):
    warnings.simplefilter("ignore")
    for pairs in PAIRS.values():
        try:  # functions of one array of this rank, with their defaults
            first = _arrays(f(_normal(pairs[0][0], 0)))
            if first is None:
                continue
            nv.eval(*first)
        except Exception:
            continue
        for k, (traced, replayed) in enumerate(pairs):
            g = nv.compile(lambda x: f(x), shapeless=True)
            try:
                nv.eval(*_arrays(g(_normal(traced, k))))
            except ValueError:
                continue  # refused at the trace (or at its own shape: as the uncompiled call)
            x = _normal(replayed, 100 + k)
            where = f"{name}: traced on {traced}, replayed on {replayed}"
            try:
                want = _host(f(x))
            except Exception:
                raised = False
                try:
                    _host(g(x))
                except Exception:
                    raised = True
                assert raised, f"{where}: the uncompiled call raises, the replay does not"
                continue
            try:
                got = _host(g(x))
            except ValueError:
                continue  # refused at the replay, naming what it cannot replay
            assert [a.shape for a in got] == [b.shape for b in want], where
            for a, b in zip(got, want):
                assert np.array_equal(a, b, equal_nan=True), where


def _self_attention(m):
    return lambda x: m(x, x, x)


def _unmasked(m):
    return lambda x: m(x, None)


# layers of nuvec.nn on inputs of their kind: (name, layer factory, traced / replayed pairs)
_SEQ = [((2, 3, 8), (1, 5, 8)), ((2, 3, 8), (2, 1, 8)), ((1, 3, 8), (4, 3, 8))]
_ROWS = [((2, 64), (5, 64)), ((3, 64), (1, 64))]
_IMAGE = [((1, 6, 6, 8), (2, 9, 7, 8)), ((2, 6, 6, 8), (1, 6, 6, 8))]
LAYERS = [
    ("Linear", lambda: nn.Linear(8, 5), _SEQ + [((2, 8), (5, 8))]),
    ("LayerNorm", lambda: nn.LayerNorm(8), _SEQ),
    ("RMSNorm", lambda: nn.RMSNorm(8), _SEQ),
    ("GroupNorm", lambda: nn.GroupNorm(2, 8), _SEQ),
    ("BatchNorm", lambda: nn.BatchNorm(8), _SEQ),
    ("InstanceNorm", lambda: nn.InstanceNorm(8), _SEQ),
    ("MultiHeadAttention", lambda: _self_attention(nn.MultiHeadAttention(8, 2)), _SEQ),
    ("Conv1d", lambda: nn.Conv1d(8, 4, 3, padding=1), _SEQ),
    ("Conv2d", lambda: nn.Conv2d(8, 4, 3, stride=2), _IMAGE),
    ("MaxPool1d", lambda: nn.MaxPool1d(2), _SEQ),
    ("AvgPool2d", lambda: nn.AvgPool2d(2), _IMAGE),
    ("Upsample", lambda: nn.Upsample(2.0), _IMAGE),
    ("RoPE", lambda: nn.RoPE(8), _SEQ),
    ("RNN", lambda: nn.RNN(8, 4), _SEQ),
    ("GRU", lambda: nn.GRU(8, 4), _SEQ),
    ("LSTM", lambda: nn.LSTM(8, 4), _SEQ),
    ("TransformerEncoderLayer", lambda: _unmasked(nn.TransformerEncoderLayer(8, 2)), _SEQ),
    ("QuantizedLinear", lambda: nn.QuantizedLinear(64, 32), _ROWS),
]  # fmt: skip


@pytest.mark.parametrize("name, make, pairs", LAYERS, ids=[n for n, _, _ in LAYERS])
def test_layers_replay_equal_to_uncompiled_or_raise(name, make, pairs):
    nv.random.seed(0)
    layer = make()
    if isinstance(layer, nn.Module):
        layer.eval()
    for k, (traced, replayed) in enumerate(pairs):
        g = nv.compile(layer, shapeless=True)
        try:
            nv.eval(g(_normal(traced, k)))
        except ValueError:
            continue
        x = _normal(replayed, 100 + k)
        where = f"{name}: traced on {traced}, replayed on {replayed}"
        try:
            want = np.asarray(layer(x))
        except Exception:
            with pytest.raises(ValueError):
                nv.eval(g(x))
            continue
        try:
            got = np.asarray(g(x))
        except ValueError:
            continue
        assert got.shape == want.shape and np.array_equal(got, want, equal_nan=True), where
