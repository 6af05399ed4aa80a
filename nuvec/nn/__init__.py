"""Neural-network layers, losses and initialisers with MLX's ``mlx.nn`` API.

>>> import nuvec as nv
>>> import nuvec.nn as nn
>>> model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
>>> model(nv.ones((2, 4))).shape
(2, 3)
"""

from . import init, losses  # noqa: F401
from .layers import *  # noqa: F401,F403
from .layers import Module  # noqa: F401
from .utils import checkpoint, clip_grad_norm_sharded, value_and_grad  # noqa: F401
from ..distributed.average import average_gradients  # noqa: F401,E402  (MLX's nn.average_gradients)
