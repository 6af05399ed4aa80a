"""The layers of ``nuvec.nn`` (each file one family)."""

from .activations import (  # noqa: F401
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    HardShrink,
    HardTanh,
    Hardswish,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU2,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Step,
    Tanh,
    celu,
    elu,
    gelu,
    gelu_approx,
    gelu_fast_approx,
    glu,
    hard_shrink,
    hard_tanh,
    hardswish,
    leaky_relu,
    log_sigmoid,
    log_softmax,
    mish,
    prelu,
    relu,
    relu2,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    step,
    tanh,
)
from .base import Module  # noqa: F401
from .containers import Sequential  # noqa: F401
from ...ops.conv import conv1d, conv2d, conv3d  # noqa: F401
from .convolution import Conv1d, Conv2d, Conv3d  # noqa: F401
from .convolution_transpose import (  # noqa: F401
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from .distributed import (  # noqa: F401
    AllToShardedLinear,
    FullyShardedModule,
    QuantizedAllToShardedLinear,
    QuantizedShardedToAllLinear,
    ShardedToAllLinear,
    fully_shard,
)
from .dropout import Dropout, Dropout2d, Dropout3d  # noqa: F401
from .embedding import Embedding  # noqa: F401
from .linear import Bilinear, Identity, Linear  # noqa: F401
from .normalization import BatchNorm, GroupNorm, InstanceNorm, LayerNorm, RMSNorm  # noqa: F401
from .pooling import (  # noqa: F401
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)
from .recurrent import GRU, LSTM, RNN  # noqa: F401
from .upsample import Upsample  # noqa: F401
from .quantized import QQLinear, QuantizedEmbedding, QuantizedLinear, quantize  # noqa: F401
from .positional_encoding import ALiBi, RoPE, SinusoidalPositionalEncoding  # noqa: F401
from .transformer import (  # noqa: F401
    MultiHeadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
    scaled_dot_product_attention,
)
