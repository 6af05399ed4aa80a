"""Shape primitives: views and rearrangements of an array's elements.

Views on the CPU (the output aliases the input's memory): Broadcast, Reshape (when the
layout allows), ExpandDims, Squeeze, Flatten, Transpose, Slice. Copies: SliceUpdate,
Concatenate, Pad.

Transform rules follow MLX: a view's vjp is the matching inverse rearrangement of the
cotangent; its jvp applies the primitive to the tangent; its vmap applies the primitive with
the batch axis added to its parameters (``nuvec.transforms.rules.shape``).
"""

from __future__ import annotations

from ..core import shapeless
from ..core.primitive import Primitive
from .indexing import IndexOutOfBounds
from .reduction import Reduce, sum_dtype


class _View(Primitive):
    """A single-input rearrangement; unbatched input stays unbatched under vmap."""

    __slots__ = ()
    view = True


class _ToShape(_View):
    """A view whose one parameter is its output shape (a traced size: shapeless refuses it)."""

    __slots__ = ("shape",)
    fixes_shape = True

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(shape)

    @property
    def params(self) -> tuple:
        return (self.shape,)

    def infer(self, inputs):
        return [(self.shape, inputs[0]._dtype)]


# The shape two shapes broadcast to, by the pair (the ops and the inference of Broadcast and
# the products ask for the same few pairs again and again); outside shapeless traces only,
# whose shapes may hold sizes that record their use
_PAIRS: dict = {}


def broadcast_shape(shapes, name: str) -> tuple[int, ...]:
    """The shape ``shapes`` broadcast to (NumPy's rules), or a ValueError naming ``name``."""
    if len(shapes) == 2 and not shapeless.running:
        a, b = shapes
        if type(a) is tuple and type(b) is tuple:
            key = (a, b)
            out = _PAIRS.get(key)
            if out is None:
                out = _broadcast_shape(shapes, name)
                if all(type(d) is int for d in a) and all(type(d) is int for d in b):
                    if len(_PAIRS) >= 4096:
                        _PAIRS.clear()
                    _PAIRS[key] = out
            return out
    return _broadcast_shape(shapes, name)


def _broadcast_shape(shapes, name: str) -> tuple[int, ...]:
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        off = nd - len(s)
        for i, d in enumerate(s):
            o = out[off + i]
            if o == 1:
                out[off + i] = d
            elif d != 1 and d != o:
                listed = " and ".join(str(tuple(x)) for x in shapes)
                raise ValueError(f"{name}: shapes {listed} cannot be broadcast together")
    return tuple(out)


class Broadcast(_ToShape):
    """Broadcasts input 0 to ``shape`` (a view with zero strides on the CPU).

    Shapeless forms (MLX's): with more inputs, to the shape all of them broadcast to (what
    ``broadcast_arrays`` and ``*_like`` record), re-inferred at each replay; with one input
    and ``expect`` (the traced input shape), a target that may have come from that shape, so
    a replay on another input shape is refused rather than guessed.

    ``fill``: the output is a buffer of its own holding the broadcast values (what ``zeros``,
    ``ones`` and ``full`` make, as MLX's ``Full``: writable through NumPy, counted as active
    memory), not a view. Compile treats both forms alike: the values are the same."""

    __slots__ = ("expect", "fill")
    name = "broadcast_to"
    fixes_shape = False

    def __init__(
        self, shape: tuple[int, ...], expect: tuple[int, ...] | None = None, fill: bool = False
    ) -> None:
        self.shape = tuple(shape)
        self.expect = None if expect is None else tuple(expect)
        self.fill = bool(fill)

    @property
    def params(self) -> tuple:
        if self.fill:
            return (self.shape, self.expect, True)
        return (self.shape,) if self.expect is None else (self.shape, self.expect)

    @property
    def relative(self) -> bool:
        return True

    def infer(self, inputs):
        x = inputs[0]
        if len(inputs) > 1:
            return [(broadcast_shape([y._shape for y in inputs], "broadcast_arrays"), x._dtype)]
        if self.expect is not None and x._shape != self.expect:
            raise ValueError(
                f"broadcast_to: traced (shapeless) for an input of shape {self.expect} "
                f"broadcast to {self.shape}; this target does not follow from the inputs, so "
                f"it cannot be replayed on an input of shape {x._shape}"
            )
        if broadcast_shape([x._shape, self.shape], "broadcast_to") != self.shape:
            raise ValueError(f"broadcast_to: cannot broadcast shape {x._shape} to {self.shape}")
        return [(self.shape, x._dtype)]

    def resolve(self, inputs):
        if len(inputs) == 1 and self.expect is None:
            return self, inputs
        ((shape, _),) = self.infer(inputs)
        return Broadcast(shape), inputs[:1]


class SumToShape(Primitive):
    """Input 0 summed (keepdims) over its ``lead`` leading axes and the axes where input 1
    (of rank ``ndim - lead``) has size 1 and input 0 does not: Broadcast's vjp under a
    shapeless trace, as one sum whose axes follow each replay's shapes."""

    __slots__ = ("lead",)
    name = "sum"
    relative = True

    def __init__(self, lead: int) -> None:
        self.lead = lead

    @property
    def params(self) -> tuple:
        return (self.lead,)

    def axes(self, g, x) -> tuple[int, ...]:
        n = self.lead
        return tuple(range(n)) + tuple(
            n + i for i, d in enumerate(x._shape) if d == 1 and g._shape[n + i] != 1
        )

    def infer(self, inputs):
        g, x = inputs
        axes = set(self.axes(g, x))
        return [(tuple(1 if i in axes else d for i, d in enumerate(g._shape)), g._dtype)]

    def resolve(self, inputs):
        g, x = inputs
        axes = self.axes(g, x)
        if not axes:  # the eager rule returns g itself: an identity view
            return Reshape(g._shape), (g,)
        return Reduce("sum", axes, True, sum_dtype(g._dtype)), (g,)


class ReshapeLike(_View):
    """Input 0 reshaped to input 1's shape (the sizes must match): a view's vjp under a
    shapeless trace, whose target is the primal's shape on each replay."""

    __slots__ = ()
    name = "reshape"
    relative = True

    def infer(self, inputs):
        g, x = inputs
        return [(reshape_shape(g._shape, x._shape), g._dtype)]

    def resolve(self, inputs):
        return Reshape(inputs[1]._shape), inputs[:1]


def reshape_shape(shape, spec, name: str = "reshape") -> tuple[int, ...]:
    """The shape ``spec`` (one entry may be -1) gives an array of ``shape``; a ValueError
    naming ``name`` when the sizes do not match."""
    size = 1
    for d in shape:
        size *= d
    known, infer = 1, None
    for i, d in enumerate(spec):
        if d == -1:
            infer = i
        else:
            known *= d
    out = list(spec)
    if infer is not None:
        if known == 0 or size % known:
            raise ValueError(
                f"{name}: cannot reshape an array of shape {tuple(shape)} to {tuple(spec)}"
            )
        out[infer] = size // known
    elif known != size:
        raise ValueError(
            f"{name}: cannot reshape an array of shape {tuple(shape)} to {tuple(spec)}"
        )
    return tuple(out)


class Reshape(_ToShape):
    """A new shape of the same size (a view where the layout allows, else a copy). Under a
    shapeless trace ``shape`` may keep one -1, inferred from the input's size at each replay;
    every form checks the size. ``expect``: the traced input shape, for sizes that nuvec's own
    operations computed from traced shapes (so a replay on another input shape is refused)."""

    __slots__ = ("expect",)
    name = "reshape"
    fixes_shape = False

    def __init__(self, shape: tuple[int, ...], expect: tuple[int, ...] | None = None) -> None:
        self.shape = tuple(shape)
        self.expect = None if expect is None else tuple(expect)

    @property
    def params(self) -> tuple:
        return (self.shape,) if self.expect is None else (self.shape, self.expect)

    @property
    def relative(self) -> bool:
        return -1 in self.shape or self.expect is not None

    def infer(self, inputs):
        x = inputs[0]
        if self.expect is not None and x._shape != self.expect:
            raise ValueError(
                f"reshape: traced (shapeless) for an input of shape {self.expect} reshaped to "
                f"{self.shape}, sizes computed from the traced shapes, so it cannot be replayed "
                f"on an input of shape {x._shape}"
            )
        return [(reshape_shape(x._shape, self.shape), x._dtype)]

    def resolve(self, inputs):
        self.infer(inputs)
        return Reshape(reshape_shape(inputs[0]._shape, self.shape)), inputs


class _Sized(_View):
    """Base of the views to sizes read from arrays' shapes in the traced function: ``spec``
    holds per dimension an int or an expression of ``core.shapeless.evaluate`` over the
    shapes of the inputs (input 0 is the viewed one), evaluated again on each replay."""

    __slots__ = ("spec",)
    relative = True

    def __init__(self, spec) -> None:
        self.spec = tuple(spec)

    @property
    def params(self) -> tuple:
        return (self.spec,)

    def sizes(self, inputs) -> tuple[int, ...]:
        shapes = [x._shape for x in inputs]
        return tuple(shapeless.evaluate(e, shapes) for e in self.spec)

    def infer(self, inputs):
        return [(self.target(inputs), inputs[0]._dtype)]


class SizedReshape(_Sized):
    """A reshape to sizes read from arrays' shapes in the traced function (``x.reshape(
    x.shape[0] * x.shape[1], -1)`` under a shapeless trace); ``spec`` entries may be -1."""

    __slots__ = ()
    name = "reshape"

    def target(self, inputs) -> tuple[int, ...]:
        spec = self.sizes(inputs)
        if spec.count(-1) > 1 or any(d < -1 for d in spec):
            raise ValueError(f"reshape: invalid shape {spec} (sizes of a shapeless replay)")
        return reshape_shape(inputs[0]._shape, spec)

    def resolve(self, inputs):
        return Reshape(self.target(inputs)), inputs[:1]


class SizedBroadcast(_Sized):
    """Input 0 broadcast to sizes read from arrays' shapes in the traced function
    (``nv.zeros(x.shape)``, ``nv.broadcast_to(v, (x.shape[0], 4))`` under a shapeless trace)."""

    __slots__ = ()
    name = "broadcast_to"

    def target(self, inputs) -> tuple[int, ...]:
        shape = self.sizes(inputs)
        v = inputs[0]._shape
        if any(d < 0 for d in shape) or broadcast_shape([v, shape], "broadcast_to") != shape:
            raise ValueError(f"broadcast_to: cannot broadcast shape {v} to {shape}")
        return shape

    def resolve(self, inputs):
        return Broadcast(self.target(inputs)), inputs[:1]


def _shift(e, front):
    """A size expression with the axes of the inputs marked in ``front`` moved up by one."""
    if type(e) is int:
        return e
    if e[0] == "dim":
        return ("dim", e[1], e[2] + front[e[1]])
    if e[0] == "check":
        return ("check", _shift(e[1], front), e[2])
    return (e[0], _shift(e[1], front), _shift(e[2], front))


class Unflatten(_View):
    """Splits axis ``axis`` into ``shape`` (one entry may be -1, inferred from the axis's size
    at each call): what ``unflatten`` records under a shapeless trace."""

    __slots__ = ("axis", "shape")
    name = "unflatten"
    relative = True

    def __init__(self, axis: int, shape: tuple[int, ...]) -> None:
        self.axis, self.shape = axis, tuple(shape)

    @property
    def params(self) -> tuple:
        return (self.axis, self.shape)

    def infer(self, inputs):
        s, ax = inputs[0]._shape, self.axis
        split = reshape_shape((s[ax],), self.shape, "unflatten")
        return [(s[:ax] + split + s[ax + 1 :], inputs[0]._dtype)]

    def resolve(self, inputs):
        ((shape, _),) = self.infer(inputs)
        return Reshape(shape), inputs


class ExpandDims(_View):
    """Inserts size-1 axes at ``axes`` (sorted positions in the output). Holds no size, so
    shapeless compilation accepts it."""

    __slots__ = ("axes",)
    name = "expand_dims"

    def __init__(self, axes: tuple[int, ...]) -> None:
        self.axes = tuple(axes)

    @property
    def params(self) -> tuple:
        return (self.axes,)

    def infer(self, inputs):
        shape = list(inputs[0]._shape)
        for ax in self.axes:
            shape.insert(ax, 1)
        return [(tuple(shape), inputs[0]._dtype)]


class Squeeze(_View):
    """Removes the size-1 axes ``axes`` (sorted). Holds no size. ``every``: they were all the
    size-1 axes (``squeeze()`` under a shapeless trace), which a replay checks."""

    __slots__ = ("axes", "every")
    name = "squeeze"

    def __init__(self, axes: tuple[int, ...], every: bool = False) -> None:
        self.axes = tuple(axes)
        self.every = every

    @property
    def params(self) -> tuple:
        return (self.axes, True) if self.every else (self.axes,)

    def infer(self, inputs):
        s = inputs[0]._shape
        drop = set(self.axes)
        if self.every and [i for i, d in enumerate(s) if d == 1] != list(self.axes):
            raise ValueError(
                f"squeeze: traced (shapeless) with the size-1 axes {self.axes}; shape {s} has "
                "other ones, and squeezing them would change the rank the trace relied on"
            )
        for ax in self.axes:
            if ax >= len(s) or s[ax] != 1:
                raise ValueError(f"squeeze: cannot squeeze axis {ax} of shape {s}")
        shape = tuple(d for i, d in enumerate(s) if i not in drop)
        return [(shape, inputs[0]._dtype)]


class Flatten(_View):
    """Merges axes ``start..end`` (inclusive) into one. Holds no size."""

    __slots__ = ("start", "end")
    name = "flatten"

    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end

    @property
    def params(self) -> tuple:
        return (self.start, self.end)

    def infer(self, inputs):
        s = inputs[0]._shape
        n = 1
        for d in s[self.start : self.end + 1]:
            n *= d
        return [(s[: self.start] + (n,) + s[self.end + 1 :], inputs[0]._dtype)]


class Transpose(_View):
    """Permutes the axes: output axis ``i`` is input axis ``axes[i]`` (a strided view)."""

    __slots__ = ("axes",)
    name = "transpose"

    def __init__(self, axes: tuple[int, ...]) -> None:
        self.axes = tuple(axes)

    @property
    def params(self) -> tuple:
        return (self.axes,)

    @property
    def is_identity(self) -> bool:
        """True for the identity permutation (compile may drop such a node)."""
        return self.axes == tuple(range(len(self.axes)))

    def infer(self, inputs):
        s = inputs[0]._shape
        return [(tuple(s[a] for a in self.axes), inputs[0]._dtype)]


def slice_shape(shape, start, stop, strides) -> tuple[int, ...]:
    """The shape a normalised slice gives (see ``Slice``)."""
    out = []
    for b, e, s in zip(start, stop, strides):
        out.append(max(0, (e - b + s - 1) // s) if s > 0 else max(0, (b - e - s - 1) // -s))
    return tuple(out)


class _Box(Primitive):
    """A primitive whose parameters are a strided box, one ``(start, stop, stride)`` per
    axis, normalised as ``slice.indices`` gives them (a negative stride may have
    ``stop == -1``: "before 0")."""

    __slots__ = ("start", "stop", "strides")
    fixes_shape = True

    def __init__(self, start, stop, strides) -> None:
        self.start, self.stop, self.strides = tuple(start), tuple(stop), tuple(strides)

    @property
    def params(self) -> tuple:
        return (self.start, self.stop, self.strides)


class Slice(_Box, _View):
    """The input's strided box (see ``_Box``). A view on the CPU."""

    __slots__ = ()
    name = "slice"

    def infer(self, inputs):
        return [
            (slice_shape(inputs[0]._shape, self.start, self.stop, self.strides), inputs[0]._dtype)
        ]


class SliceUpdate(_Box):
    """A copy of input 0 with the box of ``Slice(start, stop, strides)`` replaced by input 1
    (which has the box's shape and input 0's dtype)."""

    __slots__ = ()
    name = "slice_update"

    def infer(self, inputs):
        a, u = inputs
        box = slice_shape(a._shape, self.start, self.stop, self.strides)
        if u._shape != box:
            raise ValueError(f"slice_update: the update has shape {u._shape}, the slice {box}")
        if u._dtype != a._dtype:
            raise TypeError(
                f"slice_update: update dtype {u._dtype.name} differs from {a._dtype.name}"
            )
        return [(a._shape, a._dtype)]


def slice_triplet(sl: slice, n: int) -> tuple[int, int, int]:
    """A Python slice's (start, stop, step) on an axis of size ``n``; every empty slice gets
    one form (Python's may start at -1)."""
    b, e, s = sl.indices(n)
    if (e <= b) if s > 0 else (e >= b):
        return 0, 0, 1
    return b, e, s


def index_box(shape, spec, name: str = "getitem") -> tuple[tuple, tuple, tuple]:
    """The normalised ``Slice`` box of ``spec`` on ``shape``: per axis an int (that one
    element; negative counts from the end; out of bounds raises as indexing does) or a
    ``(start, stop, step)`` of Python slice bounds (None allowed)."""
    start, stop, strides = [], [], []
    for ax, (e, n) in enumerate(zip(spec, shape)):
        if type(e) is int:
            if not -n <= e < n:
                raise IndexOutOfBounds(
                    f"{name}: index {e} is out of bounds for axis {ax} with size {n}"
                )
            b = e + n if e < 0 else e
            b, en, s = b, b + 1, 1
        else:
            b, en, s = slice_triplet(slice(*e), n)
        start.append(b)
        stop.append(en)
        strides.append(s)
    return tuple(start), tuple(stop), tuple(strides)


class RelativeSlice(_View):
    """A slice kept in the user's terms (``index_box``'s ``spec``: ints and Python slice
    bounds), normalised on each input shape: what indexing records under a shapeless trace,
    so that ``x[:, -1]`` or ``x[1:]`` replays on any shape as the uncompiled call would."""

    __slots__ = ("spec",)
    name = "slice"
    relative = True

    def __init__(self, spec) -> None:
        self.spec = tuple(spec)

    @property
    def params(self) -> tuple:
        return (self.spec,)

    def box(self, shape) -> tuple[tuple, tuple, tuple]:
        return index_box(shape, self.spec)

    def infer(self, inputs):
        x = inputs[0]
        return [(slice_shape(x._shape, *self.box(x._shape)), x._dtype)]

    def resolve(self, inputs):
        return Slice(*self.box(inputs[0]._shape)), inputs


class RelativeSliceUpdate(Primitive):
    """``SliceUpdate`` of a ``RelativeSlice``'s box, normalised on each input shape (``x[i] =
    v`` under a shapeless trace)."""

    __slots__ = ("spec",)
    name = "slice_update"
    relative = True

    def __init__(self, spec) -> None:
        self.spec = tuple(spec)

    @property
    def params(self) -> tuple:
        return (self.spec,)

    def concrete(self, shape) -> SliceUpdate:
        return SliceUpdate(*index_box(shape, self.spec, "setitem"))

    def infer(self, inputs):
        return self.concrete(inputs[0]._shape).infer(inputs)

    def resolve(self, inputs):
        return self.concrete(inputs[0]._shape), inputs


class Concatenate(Primitive):
    """Joins the inputs (one dtype, shapes equal but on ``axis``) along ``axis``."""

    __slots__ = ("axis",)
    name = "concatenate"

    def __init__(self, axis: int) -> None:
        self.axis = axis

    @property
    def params(self) -> tuple:
        return (self.axis,)

    def infer(self, inputs):
        ax = self.axis
        first = inputs[0]._shape
        n = 0
        for x in inputs:
            s = x._shape
            if len(s) != len(first) or s[:ax] != first[:ax] or s[ax + 1 :] != first[ax + 1 :]:
                raise ValueError(
                    "concatenate: shapes "
                    + ", ".join(str(y._shape) for y in inputs)
                    + f" differ outside axis {ax}"
                )
            n += s[ax]
        return [(first[:ax] + (n,) + first[ax + 1 :], inputs[0]._dtype)]

    def _offsets(self, primals):
        offs = [0]
        for x in primals:
            offs.append(offs[-1] + x.shape[self.axis])
        return offs


class Pad(Primitive):
    """Input 0 padded with ``low[i]`` / ``high[i]`` copies of input 1 (a 0-d array of the
    same dtype) before / after axis ``i``."""

    __slots__ = ("low", "high")
    name = "pad"

    def __init__(self, low, high) -> None:
        self.low, self.high = tuple(low), tuple(high)

    @property
    def params(self) -> tuple:
        return (self.low, self.high)

    def infer(self, inputs):
        a, v = inputs
        if v._shape != ():
            raise ValueError(f"pad: the pad value must be a scalar, got shape {v._shape}")
        shape = tuple(d + lo + hi for d, lo, hi in zip(a._shape, self.low, self.high))
        return [(shape, a._dtype)]

    def _inner(self, shape):
        stop = tuple(lo + d for lo, d in zip(self.low, shape))
        return Slice(self.low, stop, (1,) * len(shape))
