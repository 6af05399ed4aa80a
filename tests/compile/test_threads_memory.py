"""A compiled function may be called from many threads at once; its cache is freed
when the function is garbage collected; 100,000 calls do not grow memory."""

import gc
import threading
import weakref

import numpy as np

import nuvec as nv


def test_concurrent_calls_from_many_threads():
    g = nv.compile(lambda x, y: nv.tanh(x * y) + x * 0.5)
    inputs = [
        (nv.array(np.full(n, 0.25 * n, np.float32)), nv.array(np.full(n, 2.0, np.float32)))
        for n in (3, 4, 5, 6)
    ]
    want = [np.asarray(nv.tanh(x * y) + x * 0.5) for x, y in inputs]
    errors, start = [], threading.Barrier(8)

    def worker(k):
        try:
            start.wait()
            for i in range(300):
                j = (i + k) % 4
                got = np.asarray(g(*inputs[j]))
                if not np.array_equal(got, want[j]):
                    errors.append((k, i, got))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    st = g.stats()
    assert st["traces"] == 4  # one per signature, never twice
    assert st["hits"] + st["misses"] == 8 * 300 and st["misses"] == 4


def test_the_cache_is_freed_with_the_function():
    def make():
        w = nv.array(np.arange(4, dtype=np.float32)) * 3.0  # captured: held by the tape
        nv.eval(w)
        f = nv.compile(lambda x: x * w + 1.0)
        f(nv.ones((4,)))
        (const,) = [c for c in next(iter(f.cache.values())).tape.consts if c.shape == (4,)]
        return weakref.ref(f), weakref.ref(const), f

    fref, cref, f = make()
    assert cref() is not None
    del f
    gc.collect()
    assert fref() is None and cref() is None


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096


def test_a_hundred_thousand_calls_do_not_grow_memory():
    g = nv.compile(lambda x: nv.exp(x) * 2.0 + x)
    x = nv.array(np.linspace(0, 1, 16, dtype=np.float32))
    for _ in range(2000):
        g(x)
    gc.collect()
    objects, rss = len(gc.get_objects()), _rss()
    for _ in range(100_000):
        g(x)
    gc.collect()
    assert len(gc.get_objects()) - objects < 50
    assert _rss() - rss < 4 * 2**20
    assert g.stats()["traces"] == 1
