"""Step order for cache locality: a reduction runs right after the last step that makes one
of its arguments, while that (large) argument is still in the core's cache, instead of where
the trace met it. In a training step's backward pass a bias gradient (the sum of a layer's
gradient over the batch) otherwise runs after that layer's weight-gradient matmul and Adam
update have pushed the gradient out of the cache: 55 us against 19 us for a (256, 512) sum.

Only the order changes (every step still follows its arguments), so results do not. The CPU
uses it (a cache-locality order); GPU tapes keep the trace order.

    hoist_reductions(draft)        # rewrites draft.steps
"""

from __future__ import annotations

from ..primitives.reduction import ArgReduce, LogSumExp, Reduce
from .draft import Draft

REDUCTIONS = (Reduce, ArgReduce, LogSumExp)


def hoist_reductions(draft: Draft) -> None:
    steps = draft.steps
    made_by = draft.producers()  # steps follow their arguments: a made argument is earlier
    after: dict[int, list[int]] = {}  # step index -> reductions placed right after it
    hoisted = set()
    for k, s in enumerate(steps):
        if type(s.prim) in REDUCTIONS:  # pure: free to move
            last = max((made_by[a] for a in s.args if a in made_by), default=None)
            if last is not None and (last < k - 1 or last in hoisted):
                after.setdefault(last, []).append(k)
                hoisted.add(k)
    if not hoisted:
        return
    order: list = []

    def emit(k: int) -> None:
        order.append(steps[k])
        for j in after.get(k, ()):  # a reduction of a hoisted reduction follows it
            emit(j)

    for k in range(len(steps)):
        if k not in hoisted:
            emit(k)
    draft.steps = order
