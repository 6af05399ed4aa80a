"""nuvec.codegen: the element-wise kernel generator (IR, dialects C / CUDA / Metal, math library).

Example::

    from nuvec.codegen import KernelSpec, generate, supports
    spec = KernelSpec.single("tanh", ("float32",), "float32")
    c_source = generate(spec)                 # what the CPU backend compiles
    supports("erf", "bfloat16")               # True
"""

from .generator import kernel_name, single_name
from .source import generate, generate_many
from .ir import DTYPES, ITEMSIZE, KernelSpec, Node
from .ops import result_dtype, supports

__all__ = [
    "KernelSpec",
    "Node",
    "DTYPES",
    "ITEMSIZE",
    "generate",
    "generate_many",
    "kernel_name",
    "single_name",
    "supports",
    "result_dtype",
]
