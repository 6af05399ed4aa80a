"""Window functions (MLX's, NumPy's definitions), float32, symmetric.

>>> import nuvec as nv
>>> nv.bartlett(3).tolist()
[0.0, 1.0, 0.0]
"""

from __future__ import annotations

import math
import numbers

from ..core import dtypes as dt
from ..core.array import Array
from . import elementwise as ew
from .creation import arange, ones, zeros

__all__ = ["hanning", "hamming", "bartlett", "blackman"]


def _points(M, name: str, stream) -> tuple[Array | None, int]:
    """The sample positions 0..M-1 (None when the window is trivial) and M."""
    if isinstance(M, bool) or not isinstance(M, numbers.Integral):
        raise TypeError(f"{name}: M must be an int, got {type(M).__name__}")
    M = int(M)
    if M < 2:
        return None, M
    return arange(0, M, dtype=dt.float32, stream=stream), M


def _trivial(M: int, stream) -> Array:
    return ones((1,), stream=stream) if M == 1 else zeros((0,), stream=stream)


def hanning(M: int, *, stream=None) -> Array:
    """The Hann window, ``sin(pi n / (M - 1))**2`` for ``0 <= n < M``."""
    n, M = _points(M, "hanning", stream)
    if n is None:
        return _trivial(M, stream)
    return ew.square(
        ew.sin(ew.multiply(n, math.pi / (M - 1), stream=stream), stream=stream), stream=stream
    )


def hamming(M: int, *, stream=None) -> Array:
    """The Hamming window, ``0.54 - 0.46 cos(2 pi n / (M - 1))``."""
    n, M = _points(M, "hamming", stream)
    if n is None:
        return _trivial(M, stream)
    c = ew.cos(ew.multiply(n, 2.0 * math.pi / (M - 1), stream=stream), stream=stream)
    return ew.subtract(0.54, ew.multiply(c, 0.46, stream=stream), stream=stream)


def bartlett(M: int, *, stream=None) -> Array:
    """The triangular Bartlett window, ``1 - |2 n / (M - 1) - 1|``."""
    n, M = _points(M, "bartlett", stream)
    if n is None:
        return _trivial(M, stream)
    t = ew.subtract(ew.multiply(n, 2.0 / (M - 1), stream=stream), 1.0, stream=stream)
    return ew.subtract(1.0, ew.abs(t, stream=stream), stream=stream)


def blackman(M: int, *, stream=None) -> Array:
    """The Blackman window, ``0.34 - 0.5 cos(x) + 0.16 cos(x)**2`` with ``x = 2 pi n / (M - 1)``
    (``0.42 - 0.5 cos(x) + 0.08 cos(2x)`` rewritten)."""
    n, M = _points(M, "blackman", stream)
    if n is None:
        return _trivial(M, stream)
    c = ew.cos(ew.multiply(n, 2.0 * math.pi / (M - 1), stream=stream), stream=stream)
    t = ew.subtract(0.34, ew.multiply(c, 0.5, stream=stream), stream=stream)
    return ew.add(t, ew.multiply(ew.square(c, stream=stream), 0.16, stream=stream), stream=stream)
