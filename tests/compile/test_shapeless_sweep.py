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
