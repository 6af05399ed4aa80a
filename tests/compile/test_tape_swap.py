"""A replay survives its entry's tape being swapped mid-call.

The kernel worker (background.py) installs the fused tape with ``entry.tape = fused``. That
store drops the entry's reference to the unfused tape; if a call on another thread is still
replaying that tape (inside a kernel, with the GIL released), the call must own a reference
to it, or it runs on a freed object (it used to crash in ``Tape._outputs``). Each case runs in
a subprocess, so a crash fails the test instead of killing pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

# The swap is done from inside the replay (a step's callable), so it happens at a known point
# of the call, every time: the same interleaving the worker thread makes by chance.
_SWAP_MID_CALL = """
import gc
import numpy as np
import nuvec as nv
from nuvec.compile import passes, set_background_kernels

set_background_kernels(False)
passes.FUSE[0] = {fuse}

def fn(x):
    return nv.exp(x) * 2.0 + 1.0

f, other = nv.compile(fn), nv.compile(fn)
# a view: it lends no buffer, so the calls replay now (an input that could lend its buffer
# to the kernel leaves the call lazy: Tape.call)
x = nv.array(np.linspace(-1, 1, 128, dtype=np.float32))[::2]
nv.eval(x)
assert x._data.base is not None
want = np.asarray(fn(x))
f(x)
other(x)
entry = next(iter(f.cache.values()))
replacement = next(iter(other.cache.values())).tape
step = entry.tape.steps[-1]
assert entry.tape.single == {single}, entry.tape.single
swaps = []

def swapping(run):
    def call(*args):
        entry.tape = replacement     # what the worker does: the last reference goes
        gc.collect()
        swaps.append(1)
        return run(*args)
    return call

if {single}:
    step.kernel = swapping(step.kernel)
else:
    step.impl = swapping(step.impl)
del step
got = np.asarray(f(x))               # the mru fast path: the entry's tape, read by the call
assert swaps == [1], swaps
assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (got, want)
assert np.array_equal(np.asarray(f(x)), want)   # later calls: the replacement tape
print("ok")
"""


def _run(code: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    "fuse,single", [(False, False), (True, True)], ids=["steps", "single_kernel"]
)
def test_replay_survives_its_tape_being_swapped_mid_call(fuse, single):
    # the steps' own replay, which calls the patched implementation (the CPU executable binds
    # each step at its first call)
    env = dict(os.environ, NUVEC_CPU_EXECUTABLE="0")
    r = _run(textwrap.dedent(_SWAP_MID_CALL).format(fuse=fuse, single=single), env)
    assert r.returncode == 0, f"rc={r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
    assert r.stdout.strip() == "ok"


# The real interleaving: kernels on disk (warm cache), a fresh process (compiler not yet
# identified), so each new trace runs unfused on large arrays (kernels release the GIL) while
# the worker loads the fused library from disk and swaps the tape in.
_WARM = """
import numpy as np
import nuvec as nv
from nuvec.backends.cpu import jit
from nuvec.compile import set_background_kernels, wait_for_kernels

set_background_kernels({background})
x = nv.array(np.random.default_rng(0).standard_normal(1_500_000, dtype=np.float32))
for k in range({n}):
    jit._info.clear()                # as in a fresh process: kernels on disk, compiler unknown
    c = 0.25 + k / 8
    fn = lambda x: nv.tanh(nv.exp(x * c) * 0.5 - x) * x + nv.sigmoid(x - c) * nv.erf(x)
    f = nv.compile(fn)
    got = np.asarray(f(x))
    wait_for_kernels()
    assert np.array_equal(got.view(np.uint32), np.asarray(fn(x)).view(np.uint32))
    assert np.array_equal(np.asarray(f(x)).view(np.uint32), got.view(np.uint32))
print("ok")
"""


def test_first_calls_with_a_warm_kernel_cache_and_background_kernels(tmp_path):
    env = dict(os.environ, NUVEC_CACHE_DIR=str(tmp_path))
    n = 6
    warm = _run(textwrap.dedent(_WARM).format(background=False, n=n), env, timeout=300)
    assert warm.returncode == 0, warm.stderr[-3000:]
    r = _run(textwrap.dedent(_WARM).format(background=True, n=n), env)
    assert r.returncode == 0, f"rc={r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
    assert r.stdout.strip() == "ok"
