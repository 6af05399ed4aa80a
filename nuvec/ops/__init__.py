"""The public operations (MLX's ``mlx.core`` functions), by family."""

from ..core import array as _array_module
from .creation import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .sort import *  # noqa: F401,F403
from .array_api import *  # noqa: F401,F403
from .composites import *  # noqa: F401,F403
from .windows import *  # noqa: F401,F403
from .convolution import *  # noqa: F401,F403
from .products import *  # noqa: F401,F403
from .bitcast import *  # noqa: F401,F403
from .quantized import *  # noqa: F401,F403
from .elementwise import abs, round, divmod  # noqa: F401  (shadow builtins on purpose)
from . import elementwise as _elementwise
from ._common import _SCALAR_VIEWS
from ..core import _array as _array_c

_array_module._ops = __import__(__name__, fromlist=["*"])
_array_c.setup_ops(
    _array_module._ops,
    _elementwise._binary,
    _array_module._operand,
    _SCALAR_VIEWS,
    tuple(_elementwise.binary_primitive(op) for op in ("add", "subtract", "multiply", "divide")),
)
from ..primitives.shape import Broadcast as _Broadcast, broadcast_shape as _broadcast_shape  # noqa: E402

_array_c.setup_broadcast(_Broadcast, _broadcast_shape)
from . import methods as _methods  # noqa: E402,F401  (installs MLX's Array methods)
