"""The CPU backend: registers how each primitive runs on NumPy arrays.

Element-wise primitives run through the generated C kernels (``kernels.run``); the other
families register themselves from the modules imported at the bottom.
"""

from . import elementwise  # noqa: F401
from . import shape  # noqa: F401
from . import indexing  # noqa: F401
from . import reduction  # noqa: F401
from . import sort  # noqa: F401
from . import linalg  # noqa: F401
from . import fft  # noqa: F401
from . import lapack  # noqa: F401
from . import misc  # noqa: F401,E402  (transform primitives: Copy, CustomFunction)
from . import norm  # noqa: F401,E402  (layer norm rows)
from . import compiled  # noqa: F401,E402  (fused kernels of nv.compile)
from . import random  # noqa: F401,E402  (threefry random bits on NumPy)
from . import distributed  # noqa: F401,E402  (collectives through a communicator)
from . import quantized  # noqa: F401,E402  (packed weights: quant_formats and nv_quant.c)
from . import bitcast  # noqa: F401,E402  (view and fp8 codes)
from . import depends  # noqa: F401,E402  (ordering edges)
