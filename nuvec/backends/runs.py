"""Runs of independent fused steps in a compiled function's tape: steps a backend may launch
as one kernel (the CUDA executable does: ``kernels.run_group``). The compile pipeline's
``schedule.gather_kernels`` puts such steps side by side.

    independent_runs(tape.steps, fused=lambda s: ...)   # [(first, end), ...]
"""

from __future__ import annotations

__all__ = ["MAX_RUN", "independent_runs"]

#: the most steps ``independent_runs`` puts in one run (one kernel's arguments stay small)
MAX_RUN = 16


def independent_runs(steps, fused) -> list[tuple[int, int]]:
    """The runs of consecutive steps (``Tape`` steps: ``args``, ``out``, ``nout``) for which
    ``fused(step)`` holds and none reads an output of an earlier one in the run, as (first,
    end) positions, two steps or more each, at most ``MAX_RUN`` steps."""
    runs = []
    k, n = 0, len(steps)
    while k < n:
        if not fused(steps[k]):
            k += 1
            continue
        first = k
        made: set = set()
        while k < n and k - first < MAX_RUN and fused(steps[k]):
            s = steps[k]
            if any(a in made for a in s.args):
                break
            made.update(range(s.out, s.out + s.nout))
            k += 1
        if k - first >= 2:
            runs.append((first, k))
    return runs
