"""Function transformations: vjp, jvp, grad, value_and_grad, vmap, custom_function.

They compose (grad of grad, vmap of grad, grad of vmap, jvp of vjp) because each one calls the
function on tracers and builds its results with ordinary ops. ``is_tracer(a)`` tells whether
an array is being traced by a running transform (nv.compile uses it to step aside).

>>> import nuvec as nv
>>> nv.grad(nv.grad(lambda x: x * x * x))(nv.array(2.0)).item()
12.0
"""

from ._trace import is_tracer, tracing
from .autodiff import grad, jvp, value_and_grad, vjp
from .custom import custom_function
from .vmap import vmap

__all__ = [
    "grad",
    "value_and_grad",
    "vjp",
    "jvp",
    "vmap",
    "custom_function",
    "is_tracer",
    "tracing",
]
