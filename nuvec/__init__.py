"""nuvec: a lazy array library with MLX's API and a function compiler.

>>> import nuvec as nv
>>> f = nv.compile(lambda x: nv.exp(x) * 2 + 1)
>>> f(nv.array([0.0, 1.0])).tolist()  # doctest: +SKIP
[3.0, 6.436563491821289]
"""

from .core.dtypes import (  # noqa: F401
    Dtype,
    DtypeCategory,
    bfloat16,
    bool_,
    complex64,
    complexfloating,
    finfo,
    float16,
    float32,
    float64,
    floating,
    generic,
    iinfo,
    inexact,
    int8,
    int16,
    int32,
    int64,
    integer,
    issubdtype,
    number,
    promote_types,
    signedinteger,
    uint8,
    uint16,
    uint32,
    uint64,
    unsignedinteger,
)
from .core.device import (  # noqa: F401
    Device,
    DeviceType,
    Stream,
    cpu,
    default_device,
    default_stream,
    device_count,
    device_info,
    gpu,
    is_available,
    new_stream,
    set_default_device,
    set_default_stream,
    stream,
    ThreadLocalStream,
    clear_streams,
    new_thread_local_stream,
)
from .constants import e, euler_gamma, inf, nan, newaxis, pi  # noqa: F401
from .printing import PrintOptions, get_printoptions, printoptions, set_printoptions  # noqa: F401
from .core.evaluate import async_eval, eval  # noqa: F401
from .core.device import synchronize  # noqa: F401
from .ops import *  # noqa: F401,F403
from .ops import abs, divmod, round  # noqa: F401
from .core.array import Array as array  # noqa: F401,E402  (the class; nv.array(obj) builds one)

__version__ = "0.1.0"
from .backends.cpu.memory import (  # noqa: F401,E402
    clear_cache,
    get_active_memory,
    get_cache_memory,
    get_peak_memory,
    reset_peak_memory,
    set_cache_limit,
    set_memory_limit,
    set_wired_limit,
)
from .backends.cpu._eltwise import set_flush_denormals  # noqa: F401,E402
from . import cuda, metal  # noqa: F401,E402
from . import utils  # noqa: E402,F401
from .transforms import custom_function, grad, jvp, value_and_grad, vjp, vmap  # noqa: E402,F401
from .transforms.checkpoint import checkpoint  # noqa: E402,F401
from .compile import compile, disable_compile, enable_compile  # noqa: E402,F401
from .export_dot import export_to_dot  # noqa: E402,F401
from .export import FunctionExporter, export_function, exporter, import_function  # noqa: E402,F401
from . import random  # noqa: E402,F401
from . import distributed  # noqa: E402,F401
from . import fast  # noqa: E402,F401
from . import fft  # noqa: E402,F401
import importlib as _importlib  # noqa: E402

linalg = _importlib.import_module(".linalg", __name__)  # not ops.linalg, which `ops import *` bound
from .ops.conv import conv1d, conv2d, conv3d  # noqa: E402,F401
from .files import load, save, save_gguf, save_safetensors, savez, savez_compressed  # noqa: E402,F401
from .backends.cpu.jit import clear_kernel_cache  # noqa: E402,F401
