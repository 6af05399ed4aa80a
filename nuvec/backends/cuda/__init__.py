"""The CUDA backend: CuPy arrays in device memory, the generator's CUDA C kernels through
NVRTC for element-wise work, CuPy (cuBLAS, CUB, Thrust) for the rest.

Importing this package costs nothing where there is no GPU: ``device`` only probes CuPy when
asked, and the implementations (which import CuPy) register themselves only where a CUDA
device exists. ``runtime`` documents how data, bfloat16 and streams are handled.
"""

from . import device

if device.is_available():
    from . import elementwise, fft, indexing, linalg, misc, reduction, shape, solver, sort  # noqa: F401
    from . import quantized  # noqa: F401  (packed weights: NVRTC kernels)
    from . import custom_kernel  # noqa: F401  (nv.fast.cuda_kernel)
    from . import bitcast  # noqa: F401  (view and fp8 codes)
    from . import depends  # noqa: F401  (ordering edges)
    from . import distributed  # noqa: F401  (collectives: NCCL, or MPI through the host)

    from . import norm  # noqa: F401  (layer norm's row kernels)
    from . import random  # noqa: F401  (threefry random bits)
