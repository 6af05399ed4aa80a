"""Helpers shared by the op modules: turning inputs into arrays (``array``: host data, Python
scalars and sequences, DLPack producers), casts, weak scalar typing, argument checks."""

from __future__ import annotations

import numbers
import operator
from collections.abc import Sequence

import numpy as np

from ..core import dtypes as dt
from ..core import shapeless
from ..backends.registry import backend_of
from ..core.array import Array
from ..core.device import resolve_stream
from ..primitives.elementwise import AsType

SCALARS = (bool, int, float, complex)


def scalar_dtype(v) -> dt.Dtype:
    """The dtype a lone Python scalar gets (MLX: bool, int32 or int64 for an int outside
    int32's range, float32, complex64)."""
    if isinstance(v, bool):
        return dt.bool_
    if isinstance(v, int):
        return dt.int32 if -(2**31) <= v < 2**31 else dt.int64
    if isinstance(v, float):
        return dt.float32
    return dt.complex64


def weak_dtype(v, other: dt.Dtype) -> dt.Dtype:
    """The dtype of Python scalar ``v`` next to an array of dtype ``other`` (weak typing:
    ``float16_array * 2.0`` stays float16)."""
    if isinstance(v, bool):
        return other
    if isinstance(v, int):
        return dt.int32 if other == dt.bool_ else other
    if isinstance(v, float):
        return other if other.kind in "fc" else dt.float32
    return dt.complex64


def constant(value, dtype: dt.Dtype, stream=None) -> Array:
    """An evaluated 0-d array holding ``value``."""
    return Array.constant(np.array(value, dtype=dtype.np), resolve_stream(stream), dtype)


def cast(a: Array, d: dt.Dtype, stream=None) -> Array:
    """``a`` as dtype ``d``: ``a`` itself when it has it, else an AsType node (``astype``
    without its argument checks, for the ops' own casts)."""
    if a._dtype == d:
        return a
    return Array.make(AsType(d), [a], resolve_stream(stream))


def as_array(x, name: str = "operation") -> Array:
    """``x`` as an Array (Python scalars get their default dtype)."""
    if isinstance(x, Array):
        return x
    if isinstance(x, SCALARS):
        return constant(x, scalar_dtype(x))
    if isinstance(x, (np.ndarray, np.generic, list, tuple)) or hasattr(x, "__array__"):
        try:
            return array(x)
        except (TypeError, ValueError) as e:  # a ragged list: say which operation got it
            raise type(e)(f"{name}: {e}") from None
    raise TypeError(f"{name}: unsupported input type {type(x).__name__}")


_SCALAR_VIEWS: dict = {}  # (value key, dtype, shape) -> evaluated broadcast constant


def scalar_operand(v, dtype: dt.Dtype, like: Array) -> Array:
    """Python scalar ``v`` as an operand next to ``like``: where the backend broadcasts
    scalars (the CPU) an evaluated constant of ``like``'s shape (a zero-stride view of one
    value, kept in a small cache), so ``x * 2.0`` makes one graph node and nothing to
    broadcast at evaluation; elsewhere a 0-d constant
    (the op broadcasts it). Compile reads a zero-stride constant as the scalar it is. These
    arrays are operands only, never returned to the user, so sharing them is safe."""
    stream = like._stream
    if like._tracer and shapeless.relative(like):
        return constant(v, dtype, stream)
    # -0.0 and 0.0 are equal keys but different bits; NaN is never equal to itself. The
    # stream by identity (hashing one runs Python code): each entry holds its stream, so the
    # id cannot be reused by another stream while the entry exists
    key = (v if v or type(v) is not float else repr(v), dtype.name, like._shape, id(stream))
    c = _SCALAR_VIEWS.get(key)
    if c is not None:
        return c
    backend = backend_of(stream)
    if backend is None or not backend.broadcast_scalars or isinstance(v, complex) or v != v:
        return constant(v, dtype, stream)
    data = np.array(v, dtype=dtype.np)
    if like._shape:
        data = np.broadcast_to(data, like._shape)
    c = Array.constant(data, stream, dtype)
    if len(_SCALAR_VIEWS) >= 1024:
        _SCALAR_VIEWS.clear()
    _SCALAR_VIEWS[key] = c
    return c


def operands(a, b, name: str) -> tuple[Array, Array]:
    """Two arrays of one dtype, with MLX's promotion and weak Python scalars."""
    sa, sb = isinstance(a, SCALARS), isinstance(b, SCALARS)
    for v, other in ((a, b), (b, a)):
        if type(v) is int and isinstance(other, Array) and other._dtype.kind in "iu":
            info = np.iinfo(other._dtype.np)
            if not info.min <= v <= info.max:
                raise ValueError(
                    f"{name}: the Python int {v} does not fit in the array's dtype "
                    f"{other._dtype.name}"
                )
    if sa and not sb:
        b = as_array(b, name)
        a = scalar_operand(a, weak_dtype(a, b._dtype), b)
    elif sb and not sa:
        a = as_array(a, name)
        b = scalar_operand(b, weak_dtype(b, a._dtype), a)
    else:
        a, b = as_array(a, name), as_array(b, name)
    if a._dtype != b._dtype:
        d = dt.promote_types(a._dtype, b._dtype)
        a, b = cast(a, d), cast(b, d)
    return a, b


def normalize_axis(axis, ndim: int, name: str, *, scalar: bool = False, what: str = "axis") -> int:
    """``axis`` as an index in ``[0, ndim)``, a negative one counting from the end: the one
    axis check of nuvec's functions.

    A TypeError naming ``name`` unless ``axis`` is an integer (a Python or NumPy int; a bool
    is refused), a ValueError when it is out of bounds. ``scalar``: a 0-d array takes axis 0
    (the operations that treat it as one element). ``what`` names the argument in the
    messages (vmap's "input axis")."""
    if isinstance(axis, bool):
        raise TypeError(f"{name}: {what} must be an int, got bool")
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: {what} must be an int, got {type(axis).__name__}") from None
    if not -ndim <= ax < (max(ndim, 1) if scalar else ndim):
        raise ValueError(f"{name}: {what} {ax} is out of bounds for an array of dimension {ndim}")
    return ax % ndim if ndim else 0


def normalize_axes(axes: Sequence, ndim: int, name: str) -> tuple[int, ...]:
    """Each of ``axes`` through ``normalize_axis``, in the given order; a ValueError naming
    ``name`` when two of them are the same axis."""
    out = tuple(normalize_axis(a, ndim, name) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {tuple(axes)}")
    return out


_DIM_MAX = 2**31 - 1  # MLX's shapes are 32-bit


def dim_arg(d, name: str, what: str = "shape") -> int:
    """One dimension given to ``name``: an int (bools and floats are refused) within the 32-bit
    range of MLX's shapes (an OverflowError naming the value otherwise)."""
    if isinstance(d, bool):
        raise TypeError(f"{name}: {what} must hold ints, got a bool")
    try:
        d = operator.index(d)
    except TypeError:
        raise TypeError(f"{name}: {what} must hold ints, got {type(d).__name__}") from None
    if not -_DIM_MAX - 1 <= d <= _DIM_MAX:
        raise OverflowError(
            f"{name}: dimension {d} of the {what} is outside the supported range "
            f"[{-_DIM_MAX - 1}, {_DIM_MAX}]"
        )
    return d


def shape_arg(shape, name: str, allow_minus_one: bool = False) -> tuple[int, ...]:
    """A ``shape`` argument of ``name`` (an int or a sequence of ints) as a tuple of
    non-negative ints; with ``allow_minus_one`` a dimension may be -1 (reshape)."""
    if type(shape) is tuple and all(type(d) is int and 0 <= d <= _DIM_MAX for d in shape):
        return shape
    if isinstance(shape, (numbers.Integral, np.integer)):
        shape = (shape,)
    elif isinstance(shape, (Array, np.ndarray)) and shape.ndim == 1:
        shape = shape.tolist()
    elif isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise TypeError(
            f"{name}: shape must be an int or a sequence of ints, got {type(shape).__name__}"
        )
    out = tuple(dim_arg(d, name) for d in shape)
    for d in out:
        if d < 0 and not (allow_minus_one and d == -1):
            raise ValueError(f"{name}: negative dimension {d} in shape {out}")
    return out


# -- host data to arrays ---------------------------------------------------------------


def _infer_list_dtype(obj) -> dt.Dtype:
    kinds = set()
    for x in _flat(obj):
        if isinstance(x, Array):
            kinds.add(x.dtype)
        elif isinstance(x, SCALARS):
            kinds.add(scalar_dtype(x))
        elif isinstance(x, (np.generic, np.ndarray)):
            kinds.add(numpy_default_dtype(x.dtype))
        else:
            raise ValueError(f"array: unsupported element type {type(x).__name__}")
    if not kinds:
        return dt.float32  # an empty list (MLX)
    out = dt.bool_
    for k in kinds:
        out = dt.promote_types(out, k)
    return out


def numpy_default_dtype(d: np.dtype) -> dt.Dtype:
    """The dtype a NumPy array of dtype ``d`` gets without ``dtype=``: its own, except that
    float64 becomes float32 and complex128 complex64 (MLX's rule)."""
    out = dt.from_numpy(d)  # complex128 is complex64 already
    return dt.float32 if out == dt.float64 else out


def array(obj, dtype=None) -> Array:
    """An array from a scalar, nested sequence, NumPy array or nuvec array (copied).

    MLX's defaults: Python ints are int32 (int64 where one does not fit), floats float32;
    NumPy arrays keep their dtype, except float64 which becomes float32 (and complex128
    complex64) unless ``dtype`` says otherwise; an empty list is float32.

    >>> import numpy as np, nuvec as nv
    >>> nv.array([[1, 2], [3, 4]]).dtype
    nuvec.int32
    >>> nv.array(np.zeros(2)).dtype, nv.array(np.zeros(2), nv.float64).dtype
    (nuvec.float32, nuvec.float64)
    """
    d = dt.to_dtype(dtype) if dtype is not None else None
    if isinstance(obj, Array):
        return cast(obj, d) if d is not None else obj
    if isinstance(obj, (np.ndarray, np.generic)):
        for n in obj.shape:  # shapes are 32-bit: an OverflowError before any copy
            dim_arg(n, "array", "NumPy array's shape")
        src = numpy_default_dtype(obj.dtype)
        data = np.array(obj, dtype=(d or src).np, copy=True, order="C")
        return Array.constant(data, resolve_stream(None), d or src)
    if isinstance(obj, SCALARS) or isinstance(obj, (list, tuple)):
        if isinstance(obj, (list, tuple)) and any(isinstance(x, Array) for x in _flat(obj)):
            obj = _hostify(obj)
        target = d or _infer_list_dtype(obj)
        try:
            data = np.array(obj, dtype=target.np)
        except (ValueError, OverflowError) as e:
            raise ValueError(f"array: cannot build an array from this input ({e})") from None
        return Array.constant(data, resolve_stream(None), target)
    if hasattr(obj, "__dlpack__") or hasattr(obj, "__array__"):
        try:
            host = np.asarray(obj) if hasattr(obj, "__array__") else None
        except (TypeError, RuntimeError, ValueError):
            if not hasattr(obj, "__dlpack__"):
                raise
            host = None  # e.g. a torch bfloat16 tensor, which NumPy cannot hold
        if host is None:
            host = host_from_dlpack(obj, "array")
        return array(host, dtype)
    if isinstance(obj, (bytes, bytearray)):  # a buffer of bytes is uint8 (MLX)
        return array(np.frombuffer(obj, np.uint8), dtype)
    if isinstance(obj, memoryview):
        return array(np.asarray(obj), dtype)
    raise TypeError(f"array: unsupported input type {type(obj).__name__}")


class _Capsule:
    """Hands NumPy's ``from_dlpack`` a capsule already taken from the producer."""

    def __init__(self, capsule, device) -> None:
        self._capsule, self._device = capsule, device

    def __dlpack__(self, *args, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def _bfloat16_from_dlpack(x) -> np.ndarray | None:
    """``x``'s memory as a bfloat16 NumPy array when ``x`` is a bfloat16 DLPack tensor on the
    host, else None. NumPy imports no bfloat16 from DLPack, so the tensor's dtype is relabelled
    in the (unversioned, still unconsumed) capsule as uint16, imported without a copy, and
    viewed as ml_dtypes' bfloat16."""
    import ctypes

    try:
        capsule = x.__dlpack__()
        device = x.__dlpack_device__()
    except Exception:  # noqa: BLE001 (any refusal of the producer: not a bfloat16 import)
        return None
    api = ctypes.pythonapi
    api.PyCapsule_IsValid.restype = ctypes.c_int
    api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    if not api.PyCapsule_IsValid(capsule, b"dltensor"):
        return None
    # DLTensor: data (8 bytes), device (8), ndim (4), then dtype {code: u8, bits: u8, lanes: u16}
    dtype = (ctypes.c_uint8 * 4).from_address(api.PyCapsule_GetPointer(capsule, b"dltensor") + 20)
    if (dtype[0], dtype[1], dtype[2], dtype[3]) != (4, 16, 1, 0):  # kDLBfloat, 16 bits, 1 lane
        return None
    dtype[0] = 1  # kDLUInt: the same 16 bits
    return np.from_dlpack(_Capsule(capsule, device)).view(dt.bfloat16.np)


def host_from_dlpack(x, name: str) -> np.ndarray:
    """The host memory of a DLPack producer ``x`` as a NumPy array (no copy); a dtype NumPy
    cannot take (complex32) is a ValueError naming ``name``."""
    try:
        host = np.from_dlpack(x)
    except (RuntimeError, BufferError, TypeError) as e:
        bf = _bfloat16_from_dlpack(x)
        if bf is not None:
            return bf
        raise ValueError(f"{name}: cannot import this DLPack tensor ({e})") from None
    try:
        dt.from_numpy(host.dtype)
    except TypeError:
        raise ValueError(f"{name}: nuvec has no dtype for this DLPack tensor's data") from None
    return host


def _flat(obj):
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        else:
            yield x


def _hostify(obj):
    if isinstance(obj, (list, tuple)):
        return [_hostify(x) for x in obj]
    if isinstance(obj, Array):
        return obj._host()
    return obj
