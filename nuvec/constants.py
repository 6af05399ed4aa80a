"""MLX's module constants: ``nv.pi``, ``nv.e``, ``nv.euler_gamma``, ``nv.inf``, ``nv.nan`` are
Python floats; ``nv.newaxis`` is None (``x[:, nv.newaxis]``)."""

import math

e = math.e
pi = math.pi
euler_gamma = 0.5772156649015328606065120900824024310421
inf = math.inf
nan = math.nan
newaxis = None
