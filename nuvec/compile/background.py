"""Fused kernels built off the calling thread.

A new trace whose fused kernels are not built yet (neither loaded nor in the disk cache)
gets its fused tape at once, and the C compiler's work goes to one worker thread. Until a
kernel is loaded, its fused step runs its operations one by one through the prebuilt
single-op kernels, which gives the same bits (single ops and fused groups come from one
generator); a graph the first call leaves lazy holds the fused nodes all the same, and each
runs fused or op by op, whichever is ready when it is evaluated. When the kernels are
built, the entry's tape is swapped for one that calls them directly. So the first call of
a new function never waits for the C compiler; a later call of that signature waits for
the kernels if they are still being built (then runs fused).

    from nuvec.compile import set_background_kernels, wait_for_kernels
    set_background_kernels(False)     # build kernels in the call instead (tests, benchmarks)
    wait_for_kernels()                # block until every pending kernel is built

(``nv.compile`` is the function; these live in the ``nuvec.compile`` package.)

``NUVEC_COMPILE_SYNC=1`` makes the synchronous build the default.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from typing import Callable

_jobs: "queue.Queue[Callable[[], None]]" = queue.Queue()
_thread: list = [None]
_lock = threading.Lock()
_enabled = [os.environ.get("NUVEC_COMPILE_SYNC", "") in ("", "0")]


def set_background_kernels(on: bool) -> bool:
    """Builds new fused kernels on a worker thread (True, the default) or in the call that
    traced them (False). Returns the previous setting."""
    prev = _enabled[0]
    _enabled[0] = bool(on)
    return prev


def background_kernels() -> bool:
    return _enabled[0]


def submit(job: Callable[[], None]) -> None:
    with _lock:
        if _thread[0] is None or not _thread[0].is_alive():
            t = threading.Thread(target=_worker, name="nuvec-kernel-compiler", daemon=True)
            t.start()
            _thread[0] = t
    _jobs.put(job)


def pending() -> int:
    """Kernel builds queued or running."""
    return _jobs.unfinished_tasks


def wait_for_kernels(timeout: float | None = None) -> bool:
    """Blocks until every queued kernel build is done (True), or ``timeout`` seconds pass
    (False)."""
    end = None if timeout is None else time.monotonic() + timeout
    while _jobs.unfinished_tasks:
        if end is not None and time.monotonic() > end:
            return False
        time.sleep(0.002)
    return True


def _worker() -> None:
    while True:
        job = _jobs.get()
        try:
            job()
        except BaseException:  # a job reports its own errors; the worker keeps going
            pass
        finally:
            _jobs.task_done()
