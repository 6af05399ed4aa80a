"""nuvec's file of exported functions, written atomically and read without trusting it.

The file is a safetensors file (``nuvec/files/safetensors.py`` reads it, checking every
size against the file): its tensors are the constants (``c0``, ``c1``, ..., each stored once
for all the traces that use it; a constant with zero strides is stored as its smallest
slice, and one whose strides permute a C-ordered array's, a transposed weight, as that array
and the permutation, so that it is read back in its layout: on the GPU, cuBLAS picks its
kernel, and so the bits of a product, by the operands' layout), and its metadata holds
``format: nuvec.function``, ``version``, the user's ``metadata`` string and ``function``,
a JSON document::

    {"shapeless": false,
     "traces": [{"kwargs": ["z"],                       # sorted keyword names
                 "inputs": [[[3], "int32"], [[3], "int32"]],
                 "constants": [["c0", [16, 2048]]],    # tensor name, shape it broadcasts to
                                                        # (and the axes of a permuted one)
                 "steps": [{"op": "elementwise.Binary", "state": ["add"],
                            "args": [0, 1], "outs": [[[3], "int32"]]}],
                 "outputs": [3]}]}

A step's ``op`` names a primitive class of ``nuvec.primitives`` and ``state`` its
constructor's arguments (floats as ``{"f": hex}``, tuples ``{"t": [...]}``, lists
``{"l": [...]}``, dtypes ``{"d": name}``). No code is stored, and reading builds only
primitives from a fixed list. A file is checked whole before anything is returned: its
structure, every value number (a step reads only earlier values), and every step's outputs,
inferred again from its inputs' recorded shapes and dtypes, must be the recorded ones.

    write(path, traces, shapeless, metadata, pool)
    traces, shapeless, metadata = read(path)
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from typing import Any

import numpy as np

from ..codegen.ops import BINARY, UNARY
from ..core import dtypes as dt
from ..core.array import Array
from ..core.device import current_stream
from ..core.evaluate import eval
from ..core.primitive import Primitive
from ..files import safetensors
from ..files._source import Source, checked_shape, write_file
from ..primitives import (
    bitcast,
    depends,
    elementwise,
    fft,
    indexing,
    linalg,
    misc,
    norm,
    quantized,
    random,
    reduction,
    shape,
    sort,
)
from ..ops.shape import transpose
from .graph import Step, Trace, apply

FORMAT = "nuvec.function"
VERSION = "1"

#: the modules whose primitives a file may name (not fused kernels, user kernels, which
#: carry source code, nor collectives, which hold a process group)
MODULES = {
    m.__name__.rsplit(".", 1)[1]: m
    for m in (
        bitcast,
        depends,
        elementwise,
        fft,
        indexing,
        linalg,
        misc,
        norm,
        quantized,
        random,
        reduction,
        shape,
        sort,
    )
}
_ELEMENTWISE_OPS = None  # filled on first read: the engine's op names


def _excluded(cls: type) -> bool:
    """Whether the format leaves ``cls`` out: a forwarding primitive's values are exported as
    the graph that computes them (its rules stay behind)."""
    return issubclass(cls, misc.Forwarding)


class ExportError(ValueError):
    """A primitive that the file format cannot hold."""


# ---- primitives and their state ----------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _init_names(cls: Any) -> tuple[str, ...]:
    init = cls.__init__
    if init is object.__init__:
        return ()
    names = []
    for p in list(inspect.signature(init).parameters.values())[1:]:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            return ()
        names.append(p.name)
    return tuple(names)


def primitive_ref(prim: Primitive) -> tuple[str, list]:
    """(``module.Class``, encoded constructor arguments) of ``prim``, checked to rebuild an
    equal primitive; ExportError where the format cannot hold it."""
    cls = type(prim)
    mod = cls.__module__.rsplit(".", 1)[-1]
    if MODULES.get(mod) is None or cls.__module__ != MODULES[mod].__name__ or _excluded(cls):
        raise ExportError(f"the operation '{prim.name}' ({cls.__name__}) cannot be exported")
    try:
        names = _init_names(cls)  # type: ignore[arg-type]  # mypy: classes are hashable
        state = [getattr(prim, n) for n in names]
        encoded = [_encode(v) for v in state]
        same = cls(*[_decode(v) for v in encoded]) == prim
    except (AttributeError, TypeError, ValueError):
        same = False
    if not same:
        raise ExportError(
            f"the operation '{prim.name}' ({cls.__name__}) has parameters that cannot be "
            f"stored: {prim.params!r}"
        )
    return f"{mod}.{cls.__name__}", encoded


# MLX's primitive classes whose name nuvec's class of the same name reports as it is.
_MLX_CLASSES = frozenset(
    "AddMM ArgPartition ArgReduce ArgSort AsType Broadcast Cholesky Concatenate Copy Depends "
    "Eig Eigh ExpandDims FFT Flatten Gather GatherAxis Inverse LUF LogSumExp Matmul "
    "NumberOfElements Pad Partition QRF QuantizedMatmul RandomBits Reshape SVD Scatter "
    "ScatterAxis Select Slice SliceUpdate Softmax Sort Squeeze StopGradient Transpose "
    "Unflatten".split()
)
# nuvec operation names whose MLX primitive is not their CamelCase spelling.
_MLX_NAMES = {
    "logaddexp": "LogAddExp",
    "erfinv": "ErfInv",
    "all": "And",
    "any": "Or",
    "cumsum": "CumSum",
    "cumprod": "CumProd",
    "cummax": "CumMax",
    "cummin": "CumMin",
    "logcumsumexp": "CumLogAddExp",
    "custom_function": "CustomTransforms",
    "broadcast_to": "Broadcast",
    "slice_update": "SliceUpdate",
}


def mlx_name(prim: Primitive) -> str:
    """MLX's name for the primitive ``prim`` stands for (``Subtract``, ``AsType``, ``Sum``),
    what MLX's export callback reports; nuvec's own names stay in the file format."""
    cls = type(prim).__name__
    if cls in _MLX_CLASSES:
        return cls
    n = prim.name
    if n in _MLX_NAMES:
        return _MLX_NAMES[n]
    if n.startswith("arc"):  # arcsin -> ArcSin, arctan2 -> ArcTan2
        return "Arc" + n[3:].capitalize()
    return "".join(part.capitalize() for part in n.split("_"))


_LOG_BASES = {"log2": 0, "log10": 1, "log": 2}  # MLX's Log::Base: two, ten, e


def mlx_arguments(prim: Primitive) -> list:
    """The arguments MLX's export callback reports for ``prim``: an element-wise operation's
    name is its primitive's, so only the logarithm's base remains (MLX's ``Log::Base``);
    other primitives report their constructor arguments."""
    if type(prim).__name__ in ("Unary", "Binary"):
        base = _LOG_BASES.get(prim.name)
        return [] if base is None else [base]
    return primitive_state(prim)


def primitive_state(prim: Primitive) -> list:
    """The constructor arguments of ``prim`` (what an export callback reports; its
    parameters where they cannot be read back)."""
    names = _init_names(type(prim))  # type: ignore[arg-type]  # mypy: classes are hashable
    try:
        return [getattr(prim, n) for n in names]
    except AttributeError:
        return list(prim.params)


def _encode(v: Any) -> Any:
    if v is None or type(v) in (bool, int, str):
        return v
    if isinstance(v, (np.bool_, np.integer)):
        return v.item()
    if isinstance(v, (float, np.floating)):
        return {"f": float(v).hex()}
    if isinstance(v, dt.Dtype):
        return {"d": v.name}
    if type(v) in (tuple, list):
        return {"t" if type(v) is tuple else "l": [_encode(x) for x in v]}
    raise TypeError(type(v).__name__)


def _decode(v: Any) -> Any:
    if v is None or type(v) in (bool, int, str):
        return v
    if type(v) is dict and len(v) == 1:
        ((k, x),) = v.items()
        if k == "f" and type(x) is str:
            return float.fromhex(x)
        if k == "d" and type(x) is str:
            return dt.from_name(x)
        if k in ("t", "l") and type(x) is list:
            items = [_decode(y) for y in x]
            return tuple(items) if k == "t" else items
    raise ValueError(f"an invalid value {_short(v)}")


def _primitive(src: Source, op: Any, state: Any, where: str) -> Primitive:
    """The primitive a step names, from the fixed list only."""
    if type(op) is not str or op.count(".") != 1:
        raise src.error(f"{where}: an invalid op {_short(op)}")
    mod, name = op.split(".")
    m = MODULES.get(mod)
    cls = getattr(m, name, None) if m is not None and not name.startswith("_") else None
    if (
        not isinstance(cls, type)
        or not issubclass(cls, Primitive)
        or m is None
        or cls.__module__ != m.__name__
        or _excluded(cls)
    ):
        raise src.error(f"{where}: {_short(op)} is not an operation nuvec can import")
    if type(state) is not list:
        raise src.error(f"{where}: the state of {op} is not a list")
    try:
        prim = cls(*[_decode(v) for v in state])
    except Exception as e:  # a constructor given what it never expects: the file is bad
        raise src.error(f"{where}: {op} cannot be built from {_short(state)} ({e})") from None
    if isinstance(prim, (elementwise.Unary, elementwise.Binary)):
        known = UNARY if type(prim) is elementwise.Unary else BINARY
        if prim.op not in known:
            raise src.error(f"{where}: {_short(prim.op)} is not an element-wise operation")
    return prim


# ---- writing ----------------------------------------------------------------------------


class ConstantPool:
    """The constants of one file: each distinct array (by dtype, shape and bytes) stored once,
    however many traces capture it."""

    def __init__(self) -> None:
        self.host: dict[str, np.ndarray] = {}  # tensor name -> compact host data
        self._by_content: dict[tuple, str] = {}
        self._by_id: dict[int, tuple[Array, str, tuple, tuple | None]] = {}

    def add(self, a: Array) -> tuple[str, tuple, tuple | None]:
        """(tensor name, shape, axes) of ``a``: ``a`` is the tensor broadcast to the shape, or
        where axes is not None, the tensor transposed by them."""
        hit = self._by_id.get(id(a))
        if hit is not None and hit[0] is a:
            return hit[1], hit[2], hit[3]
        h = a._host()  # (np.asarray refuses bfloat16, whose buffer format NumPy lacks)
        axes = None
        if 0 in h.strides:
            h_ = h[tuple(slice(0, 1) if st == 0 else slice(None) for st in h.strides)]
        elif not h.flags.c_contiguous:
            order = tuple(int(i) for i in np.argsort([-st for st in h.strides], kind="stable"))
            if h.transpose(order).flags.c_contiguous:
                h_, axes = h.transpose(order), tuple(int(i) for i in np.argsort(order))
            else:
                h_ = h
        else:
            h_ = h
        compact = h_ if h_.flags.c_contiguous else h_.copy(order="C")
        key = (
            compact.dtype.str,
            compact.shape,
            h.shape,
            hashlib.blake2b(compact.reshape(-1).view(np.uint8)).digest(),  # type: ignore[arg-type]
        )
        name = self._by_content.get(key)
        if name is None:
            name = f"c{len(self.host)}"
            self.host[name] = compact
            self._by_content[key] = name
        self._by_id[id(a)] = (a, name, tuple(h.shape), axes)
        return name, tuple(h.shape), axes


def encode_trace(t: Trace, pool: ConstantPool) -> dict:
    steps = []
    for st in t.steps:
        op, state = primitive_ref(st.prim)
        outs = [[list(s), d.name] for s, d in st.outs]
        steps.append({"op": op, "state": state, "args": list(st.args), "outs": outs})
    consts = [pool.add(c) for c in t.constants]
    return {
        "kwargs": list(t.kwarg_keys),
        "inputs": [[list(s), d.name] for s, d in t.inputs],
        "constants": [
            [name, list(s)] if axes is None else [name, list(s), list(axes)]
            for name, s, axes in consts
        ],
        "steps": steps,
        "outputs": list(t.outputs),
        **({"conditions": [_encode_condition(c) for c in t.conditions]} if t.conditions else {}),
    }


def _encode_condition(c: tuple) -> list:
    op, a, b, outcome = c
    return [op, _encode_size(a), _encode_size(b), outcome]


def _encode_size(e: Any) -> Any:
    if type(e) is int:
        return e
    if e[0] == "dim":
        return list(e)
    if e[0] == "check":
        return ["check", _encode_size(e[1]), [e[2][0], e[2][1]]]
    return [e[0], _encode_size(e[1]), _encode_size(e[2])]


def write(file, encoded: list[dict], shapeless: bool, metadata: str, pool: ConstantPool) -> None:
    """Writes the encoded traces and the pool's constants to ``file`` (atomically)."""
    doc = json.dumps({"shapeless": shapeless, "traces": encoded}, separators=(",", ":"))
    meta = {"format": FORMAT, "version": VERSION, "metadata": metadata, "function": doc}
    write_file(file, lambda f: safetensors.write(f, pool.host, meta), "export_function")


# ---- reading ----------------------------------------------------------------------------


def read(file, what: str = "import_function") -> tuple[list[Trace], bool, str]:
    """(traces, shapeless, metadata) of an exported-function file; ValueError naming the file
    for anything damaged, inconsistent or not nuvec's."""
    src = Source.open(file, what)
    tensors, meta = safetensors.read(src)
    if meta.get("format") != FORMAT:
        raise src.error(f"not a function exported by nuvec (no format {FORMAT!r} in its metadata)")
    if meta.get("version") != VERSION:
        raise src.error(f"version {_short(meta.get('version'))} of the format, not {VERSION}")
    try:
        doc = json.loads(meta.get("function", ""))
    except (json.JSONDecodeError, RecursionError, ValueError) as e:
        raise src.error(f"a malformed function document ({_short(str(e))})") from None
    if (
        not isinstance(doc, dict)
        or set(doc) != {"shapeless", "traces"}
        or type(doc["shapeless"]) is not bool
        or type(doc["traces"]) is not list
    ):
        raise src.error("a function document that is not {shapeless, traces}")
    user = meta.get("metadata", "")
    stream = current_stream()
    consts = {
        name: Array.constant(h, stream, dt.from_numpy(h.dtype)) for name, h in tensors.items()
    }
    traces = [_read_trace(src, t, k, consts) for k, t in enumerate(doc["traces"])]
    return traces, doc["shapeless"], user


def _read_trace(src: Source, doc: Any, k: int, consts: dict) -> Trace:
    where = f"trace {k}"
    if not isinstance(doc, dict) or set(doc) - {"conditions"} != {
        "kwargs",
        "inputs",
        "constants",
        "steps",
        "outputs",
    }:
        raise src.error(
            f"{where} is not {{kwargs, inputs, constants, steps, outputs(, conditions)}}"
        )
    keys = doc["kwargs"]
    if type(keys) is not list or not all(type(x) is str for x in keys) or keys != sorted(set(keys)):
        raise src.error(f"{where}: the keyword names are not a sorted list of distinct strings")
    inputs = _specs(src, doc["inputs"], f"{where}'s inputs")
    if len(keys) > len(inputs):
        raise src.error(f"{where}: more keyword names than inputs")
    t = Trace(tuple(keys), inputs)
    conds = doc.get("conditions", [])
    if type(conds) is not list or not conds and "conditions" in doc:
        raise src.error(f"{where}: the conditions are not a non-empty list")
    t.conditions = tuple(
        _condition(src, c, inputs, f"{where}'s condition {j}") for j, c in enumerate(conds)
    )
    if type(doc["constants"]) is not list:
        raise src.error(f"{where}: the constants are not a list")
    for j, c in enumerate(doc["constants"]):
        if type(c) is not list or len(c) not in (2, 3) or type(c[0]) is not str:
            raise src.error(f"{where}: constant {j} is not [tensor name, shape(, axes)]")
        if c[0] not in consts:
            raise src.error(f"{where}: constant {j} names no tensor of the file")
        w = f"{where}'s constant {j}"
        tensor = consts[c[0]] if len(c) == 2 else _permuted(src, consts[c[0]], c[2], w)
        t.constants.append(_broadcast_constant(src, tensor, c[1], w))
    n = len(inputs) + len(t.constants)
    if type(doc["steps"]) is not list:
        raise src.error(f"{where}: the steps are not a list")
    for j, s in enumerate(doc["steps"]):
        w = f"{where}, step {j}"
        if not isinstance(s, dict) or set(s) != {"op", "state", "args", "outs"}:
            raise src.error(f"{w} is not {{op, state, args, outs}}")
        prim = _primitive(src, s["op"], s["state"], w)
        args = _ids(src, s["args"], n, f"{w}'s arguments")
        outs = _specs(src, s["outs"], f"{w}'s outputs")
        if not outs:
            raise src.error(f"{w} has no outputs")
        t.steps.append(Step(prim, args, tuple(outs)))
        n += len(outs)
    t.outputs = list(_ids(src, doc["outputs"], n, f"{where}'s outputs"))
    _check_shapes(src, t, where)
    return t


_SIZE_OPS = ("+", "-", "*", "//", "%")
_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")


def _condition(src: Source, c: Any, inputs: list, where: str) -> tuple:
    """A shapeless trace's condition ``[op, size, size, outcome]`` (see core.shapeless)."""
    if type(c) is not list or len(c) != 4 or c[0] not in _COMPARISONS or type(c[3]) is not bool:
        raise src.error(f"{where} is not [comparison, size, size, outcome]")
    return (c[0], _size(src, c[1], inputs, where, 0), _size(src, c[2], inputs, where, 0), c[3])


def _size(src: Source, e: Any, inputs: list, where: str, depth: int) -> Any:
    """A size expression of a condition: an int, ``["dim", input, axis]``, ``[op, size,
    size]`` or ``["check", size, [low, what]]``, checked against the trace's inputs."""
    if type(e) is int and abs(e) < 1 << 63:
        return e
    if type(e) is not list or not e or depth > 64:
        raise src.error(f"{where}: a size that is not an int or a size expression")
    if e[0] == "dim" and len(e) == 3 and all(type(x) is int for x in e[1:]):
        if 0 <= e[1] < len(inputs) and 0 <= e[2] < len(inputs[e[1]][0]):
            return ("dim", e[1], e[2])
        raise src.error(f"{where}: dimension {e[2]} of input {e[1]} does not exist")
    if e[0] in _SIZE_OPS and len(e) == 3:
        return (
            e[0],
            _size(src, e[1], inputs, where, depth + 1),
            _size(src, e[2], inputs, where, depth + 1),
        )
    if (
        e[0] == "check"
        and len(e) == 3
        and type(e[2]) is list
        and len(e[2]) == 2
        and type(e[2][0]) is int
        and type(e[2][1]) is str
    ):
        return ("check", _size(src, e[1], inputs, where, depth + 1), (e[2][0], e[2][1]))
    raise src.error(f"{where}: a size expression of an unknown form")


def _permuted(src: Source, c: Array, axes: Any, where: str) -> Array:
    """``c`` transposed by ``axes``, evaluated: a strided view in the layout it was saved from."""
    if (
        type(axes) is not list
        or sorted(axes) != list(range(c.ndim))
        or any(type(i) is not int for i in axes)
    ):
        raise src.error(f"{where}: axes {axes!r} are not a permutation of {c.ndim} axes")
    out = transpose(c, axes)
    eval(out)
    return out


def _broadcast_constant(src: Source, c: Array, dims: Any, where: str) -> Array:
    shape = checked_shape(src, dims, where)
    if shape == c.shape:
        return c
    if len(shape) != len(c.shape) or any(m not in (1, d) for m, d in zip(c.shape, shape)):
        raise src.error(f"{where}: a tensor of shape {c.shape} does not broadcast to {shape}")
    data = np.broadcast_to(c._host(), shape)
    return Array.constant(data, c.stream, c.dtype)


def _specs(src: Source, doc: Any, where: str) -> list[tuple[tuple[int, ...], Any]]:
    if type(doc) is not list:
        raise src.error(f"{where} are not a list")
    out = []
    for j, d in enumerate(doc):
        if type(d) is not list or len(d) != 2 or type(d[1]) is not str:
            raise src.error(f"{where}: entry {j} is not [shape, dtype]")
        try:
            dtype = dt.from_name(d[1])
        except KeyError:
            raise src.error(f"{where}: entry {j} has an unknown dtype {_short(d[1])}") from None
        out.append((checked_shape(src, d[0], f"{where}: entry {j}"), dtype))
    return out


def _ids(src: Source, doc: Any, n: int, where: str) -> tuple[int, ...]:
    if type(doc) is not list or not all(type(i) is int and 0 <= i < n for i in doc):
        raise src.error(f"{where} are not a list of values numbered below {n}")
    return tuple(doc)


def _check_shapes(src: Source, t: Trace, where: str) -> None:
    """Replays ``t`` on data-less placeholders and compares every step's outputs with the
    recorded ones, so that a replay on arrays of the recorded signature makes what the file
    says (nothing is computed or allocated here)."""
    values = [Array.placeholder(s, d, tracer=False) for s, d in t.inputs]
    values += [Array.placeholder(c.shape, c.dtype, tracer=False) for c in t.constants]
    for j, st in enumerate(t.steps):
        try:
            got = apply(st.prim, [values[i] for i in st.args], len(st.outs))
        except Exception as e:  # what the primitive's own checks refuse: the file is bad
            raise src.error(f"{where}, step {j} ({st.prim.name}): {_short(str(e), 200)}") from None
        if len(got) != len(st.outs):
            raise src.error(
                f"{where}, step {j} ({st.prim.name}): {len(got)} outputs, not {len(st.outs)}"
            )
        for a, (s, d) in zip(got, st.outs):
            if type(a.dtype) is not dt.Dtype or tuple(a.shape) != s or a.dtype != d:
                made = f"{getattr(a.dtype, 'name', _short(a.dtype))}{list(a.shape)}"
                raise src.error(
                    f"{where}, step {j} ({st.prim.name}): makes {made}, "
                    f"the file says {d.name}{list(s)}"
                )
        values.extend(got)


def _short(x: Any, limit: int = 80) -> str:
    r = x if isinstance(x, str) else repr(x)
    return r if len(r) <= limit else r[: limit - 3] + "..."
