"""Optimizers and learning-rate schedules with MLX's ``mlx.optimizers`` API.

>>> import nuvec.optimizers as optim
>>> opt = optim.AdamW(learning_rate=optim.cosine_decay(1e-3, 1000))
"""

from .optimizers import *  # noqa: F401,F403
from .schedulers import *  # noqa: F401,F403
