"""Learning-rate schedules: functions of the step (an array) that return an array, so a
scheduled value is computed inside a compiled step instead of being baked into it.

>>> import nuvec as nv
>>> lr = cosine_decay(0.1, 100)
>>> round(lr(nv.array(50)).item(), 6)
0.05
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import nuvec as nv

Schedule = Callable[[object], object]


def _float_step(step):
    step = step if isinstance(step, nv.array) else nv.array(step)
    return nv.astype(step, nv.float32)


def exponential_decay(init: float, decay_rate: float) -> Schedule:
    """``init * decay_rate ** step``."""

    def schedule(step):
        return init * nv.power(decay_rate, _float_step(step))

    return schedule


def step_decay(init: float, decay_rate: float, step_size: int) -> Schedule:
    """``init * decay_rate ** (step // step_size)``."""
    if step_size <= 0:
        raise ValueError(f"step_decay: step_size must be positive, got {step_size}")

    def schedule(step):
        return init * nv.power(decay_rate, nv.floor(_float_step(step) / step_size))

    return schedule


def cosine_decay(init: float, decay_steps: int, end: float = 0.0) -> Schedule:
    """From ``init`` to ``end`` along half a cosine over ``decay_steps``, then ``end``."""
    if decay_steps <= 0:
        raise ValueError(f"cosine_decay: decay_steps must be positive, got {decay_steps}")

    def schedule(step):
        s = nv.minimum(_float_step(step), float(decay_steps))
        decay = 0.5 * (1.0 + nv.cos((math.pi / decay_steps) * s))
        return end + decay * (init - end)

    return schedule


def linear_schedule(init: float, end: float, steps: int) -> Schedule:
    """From ``init`` to ``end`` in a straight line over ``steps``, then ``end``."""
    if steps < 1:
        raise ValueError(f"linear_schedule: steps must be at least 1, got {steps}")

    def schedule(step):
        s = nv.minimum(_float_step(step), float(steps))
        return s * ((end - init) / steps) + init

    return schedule


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """``schedules[0]`` until ``boundaries[0]``, then ``schedules[1]`` counting steps from
    that boundary, and so on (``len(boundaries) == len(schedules) - 1``).

    >>> import nuvec as nv
    >>> warm = join_schedules([linear_schedule(0.0, 1.0, 10), cosine_decay(1.0, 100)], [10])
    >>> round(warm(nv.array(5)).item(), 6), round(warm(nv.array(10)).item(), 6)
    (0.5, 1.0)
    """
    if not schedules:
        raise ValueError("join_schedules: needs at least one schedule")
    if len(boundaries) != len(schedules) - 1:
        raise ValueError(
            f"join_schedules: {len(schedules)} schedules need "
            f"{len(schedules) - 1} boundaries, got {len(boundaries)}"
        )

    def schedule(step):
        s = _float_step(step)
        out = schedules[0](s)
        for b, sch in zip(boundaries, schedules[1:]):
            out = nv.where(s < b, out, sch(s - b))
        return out

    return schedule


__all__ = ["exponential_decay", "step_decay", "cosine_decay", "linear_schedule", "join_schedules"]
