"""Linear algebra and comparisons of whole arrays: matmul, addmm, inner, outer, tensordot,
einsum, isclose, allclose, array_equal.

``matmul`` follows NumPy: batch dimensions broadcast, a 1-D first operand is a row and a 1-D
second operand a column (their added axis is dropped from the result). Integer matmul is
supported (NumPy's integer loops, wrapping on overflow); float16/bfloat16 are multiplied in
float32 and rounded once. ``tensordot``, ``inner`` and ``einsum`` are built from transposes,
reshapes and matmul, so their gradients come from those primitives' rules.

>>> import nuvec as nv
>>> a = nv.array([[1.0, 2.0], [3.0, 4.0]])
>>> (a @ nv.array([1.0, 1.0])).tolist()
[3.0, 7.0]
>>> nv.einsum("ij,jk->ik", a, a).tolist()
[[7.0, 10.0], [15.0, 22.0]]
"""

from __future__ import annotations

import numbers
from typing import Sequence

from ..core import dtypes as dt
from ..core.array import Array
from ..core.device import resolve_stream
from ..primitives.linalg import AddMM, Matmul
from ._common import as_array, operands
from .creation import array
from .elementwise import (
    abs,
    add,
    astype,
    equal,
    isfinite,
    isnan,
    less_equal,
    logical_and,
    logical_or,
    multiply,
    subtract,
)
from .reduction import all as rall
from ._common import normalize_axis
from .reduction import sum as rsum
from .shape import (
    broadcast_shapes,
    broadcast_to,
    expand_dims,
    reshape,
    slice_axes,
    squeeze,
    transpose,
)


def _check_matmul(a: Array, b: Array, name: str) -> None:
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(
            f"{name}: inputs must have at least one dimension, got shapes {a._shape} and {b._shape}"
        )
    if a._dtype == dt.bool_:
        raise TypeError(f"{name}: not defined for bool inputs")
    k_a = a._shape[-1]
    k_b = b._shape[0] if b.ndim == 1 else b._shape[-2]
    if k_a != k_b:
        raise ValueError(
            f"{name}: last dimension of the first input (shape {a._shape}) must "
            f"match the {'first' if b.ndim == 1 else 'second-to-last'} dimension "
            f"of the second input (shape {b._shape})"
        )


def _as_matrices(a: Array, b: Array):
    """1-D operands as a row / a column, with the axes to drop from the product."""

    drop = []
    if a.ndim == 1:
        a = expand_dims(a, 0)
        drop.append(-2)
    if b.ndim == 1:
        b = expand_dims(b, 1)
        drop.append(-1)
    return a, b, drop


def _drop(out: Array, drop: list) -> Array:

    if not drop:
        return out
    return squeeze(out, tuple(out.ndim + ax for ax in drop))


def matmul(a, b, /, *, stream=None) -> Array:
    """Matrix product with NumPy's rules for batch dimensions and 1-D operands.

    >>> import nuvec as nv
    >>> nv.matmul(nv.ones((2, 3, 4)), nv.ones((4,))).shape
    (2, 3)
    """

    a, b = operands(a, b, "matmul")
    _check_matmul(a, b, "matmul")
    a, b, drop = _as_matrices(a, b)
    # the batch dimensions broadcast in Matmul's inference (its error names matmul)
    out = Array.make(Matmul(), [a, b], resolve_stream(stream))
    return _drop(out, drop)


def addmm(c, a, b, /, alpha: float = 1.0, beta: float = 1.0, *, stream=None) -> Array:
    """``alpha * (a @ b) + beta * c`` in one pass (``c`` broadcasts to the product's shape).

    >>> import nuvec as nv
    >>> nv.addmm(nv.ones((2,)), nv.ones((2, 3)), nv.ones((3, 2)), alpha=2.0).tolist()
    [[7.0, 7.0], [7.0, 7.0]]
    """

    a, b = operands(a, b, "addmm")
    c = as_array(c, "addmm")
    d = dt.promote_types(a._dtype, c._dtype)
    a, b, c = astype(a, d), astype(b, d), astype(c, d)
    _check_matmul(a, b, "addmm")
    if d.kind not in "fc" or a.ndim == 1 or b.ndim == 1:
        # integer results or vector operands: the plain composition
        prod = matmul(a, b, stream=stream)
        return add(
            multiply(prod, alpha) if alpha != 1 else prod,
            multiply(c, beta) if beta != 1 else c,
            stream=stream,
        )
    shape = broadcast_shapes(a._shape[:-2], b._shape[:-2], name="addmm") + (
        a._shape[-2],
        b._shape[-1],
    )
    try:
        fits = broadcast_shapes(c._shape, shape, name="addmm") == shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"addmm: c of shape {c._shape} does not broadcast to the product's shape {shape}"
        )
    if beta == 0:
        out = Array.make(Matmul(), [a, b], resolve_stream(stream))
        return multiply(out, alpha, stream=stream) if alpha != 1 else out
    return Array.make(AddMM(alpha, beta), [c, a, b], resolve_stream(stream))


def _contract(a: Array, b: Array, axes_a: list, axes_b: list, stream) -> Array:
    """Sums a * b over the paired axes: free axes of a, then free axes of b."""

    free_a = [i for i in range(a.ndim) if i not in axes_a]
    free_b = [i for i in range(b.ndim) if i not in axes_b]
    k = 1
    for ax in axes_a:
        k *= a._shape[ax]
    m = 1
    for ax in free_a:
        m *= a._shape[ax]
    n = 1
    for ax in free_b:
        n *= b._shape[ax]
    pa, pb = free_a + list(axes_a), list(axes_b) + free_b
    at = transpose(a, pa) if pa != list(range(a.ndim)) else a
    bt = transpose(b, pb) if pb != list(range(b.ndim)) else b
    out = Array.make(Matmul(), [reshape(at, (m, k)), reshape(bt, (k, n))], resolve_stream(stream))
    return reshape(out, [a._shape[i] for i in free_a] + [b._shape[i] for i in free_b])


def _axis_list(axes, ndim: int, name: str) -> list:

    if isinstance(axes, numbers.Integral):
        axes = [axes]
    return [normalize_axis(ax, ndim, name) for ax in axes]


def tensordot(a, b, /, axes: int | Sequence[Sequence[int]] = 2, *, stream=None) -> Array:
    """Sum of products over ``axes``: an int n (the last n axes of ``a`` with the first n of
    ``b``) or a pair of axis lists.

    >>> import nuvec as nv
    >>> nv.tensordot(nv.ones((2, 3, 4)), nv.ones((3, 4, 5))).shape
    (2, 5)
    """
    a, b = operands(a, b, "tensordot")
    if isinstance(axes, numbers.Integral):
        n = int(axes)
        if n < 0 or n > a.ndim or n > b.ndim:
            raise ValueError(f"tensordot: axes={n} is invalid for shapes {a._shape} and {b._shape}")
        axes_a, axes_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        try:
            xa, xb = axes  # type: ignore[misc]  # a pair here, else the error below
        except (TypeError, ValueError):
            raise ValueError("tensordot: axes must be an int or a pair of axis lists") from None
        axes_a = _axis_list(xa, a.ndim, "tensordot")
        axes_b = _axis_list(xb, b.ndim, "tensordot")
        if len(axes_a) != len(axes_b):
            raise ValueError(
                f"tensordot: {len(axes_a)} axes of a cannot pair with {len(axes_b)} axes of b"
            )
        if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
            raise ValueError("tensordot: repeated axis")
    for i, j in zip(axes_a, axes_b):
        if a._shape[i] != b._shape[j]:
            raise ValueError(
                f"tensordot: axis {i} of a (size {a._shape[i]}) does not match "
                f"axis {j} of b (size {b._shape[j]})"
            )
    if a._dtype == dt.bool_:
        raise TypeError("tensordot: not defined for bool inputs")
    return _contract(a, b, axes_a, axes_b, stream)


def inner(a, b, /, *, stream=None) -> Array:
    """Sum of products over the last axes (a product when either is a scalar).

    >>> import nuvec as nv
    >>> nv.inner(nv.array([1, 2]), nv.array([3, 4])).item()
    11
    """

    a, b = operands(a, b, "inner")
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b, stream=stream)
    if a._shape[-1] != b._shape[-1]:
        raise ValueError(f"inner: last dimensions of shapes {a._shape} and {b._shape} differ")
    if a._dtype == dt.bool_:
        raise TypeError("inner: not defined for bool inputs")
    return _contract(a, b, [a.ndim - 1], [b.ndim - 1], stream)


def outer(a, b, /, *, stream=None) -> Array:
    """Outer product of the flattened inputs.

    >>> import nuvec as nv
    >>> nv.outer(nv.array([1, 2]), nv.array([1, 10])).tolist()
    [[1, 10], [2, 20]]
    """

    a, b = operands(a, b, "outer")
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)), stream=stream)


# -- einsum -------------------------------------------------------------------------------


def _parse_term(term: str, ndim: int | None, n_ell: int, where: str):
    """Labels of one einsum term: letters, and ('...', j) for broadcast (ellipsis) dims,
    right-aligned to ``n_ell`` of them."""
    if term.count("...") > 1:
        raise ValueError(f"einsum: more than one ellipsis in {where} {term!r}")
    head, ell, tail = term.partition("...")
    for ch in head + tail:
        if not ch.isalpha():
            raise ValueError(f"einsum: invalid character {ch!r} in {where} {term!r}")
    if not ell:
        if ndim is not None and len(head) != ndim:
            raise ValueError(
                f"einsum: {where} {term!r} has {len(head)} labels for an operand of "
                f"{ndim} dimensions"
            )
        return list(head)
    k = (ndim - len(head) - len(tail)) if ndim is not None else n_ell
    if k < 0:
        raise ValueError(
            f"einsum: {where} {term!r} has more labels than the operand's {ndim} dimensions"
        )
    return list(head) + [("...", j) for j in range(n_ell - k, n_ell)] + list(tail)


def _diagonal(x: Array, labels: list, stream):
    """Takes diagonals over repeated labels of one operand."""

    while True:
        seen: dict = {}
        pair = None
        for i, lab in enumerate(labels):
            if lab in seen:
                pair = (seen[lab], i)
                break
            seen[lab] = i
        if pair is None:
            return x, labels
        p, q = pair
        if x._shape[p] != x._shape[q]:
            raise ValueError(
                f"einsum: repeated label {labels[p]!r} has sizes {x._shape[p]} and {x._shape[q]}"
            )
        n = x._shape[p]
        rest = [i for i in range(x.ndim) if i not in (p, q)]
        perm = rest + [p, q]
        x = transpose(x, perm) if perm != list(range(x.ndim)) else x
        x = reshape(x, x._shape[:-2] + (n * n,))
        if n > 0:
            x = slice_axes(x, [0] * x.ndim, x._shape, [1] * (x.ndim - 1) + [n + 1])
        labels = [labels[i] for i in rest] + [labels[p]]


def _sum_out(x: Array, labels: list, keep: set):

    axes = [i for i, lab in enumerate(labels) if lab not in keep]
    if not axes:
        return x, labels
    return rsum(x, axis=axes), [lab for lab in labels if lab in keep]


def _pair(a: Array, la: list, b: Array, lb: list, keep: set, stream):
    """Contracts two labelled operands; the result's labels are batch, a's, then b's."""

    sb = set(lb)
    sa = set(la)
    a, la = _sum_out(a, la, keep | sb)
    b, lb = _sum_out(b, lb, keep | sa)
    batch = [lab for lab in la if lab in sb and lab in keep]
    contr = [lab for lab in la if lab in sb and lab not in keep]
    a_only = [lab for lab in la if lab not in sb]
    b_only = [lab for lab in lb if lab not in sa]

    def arrange(x, lx, order):
        perm = [lx.index(lab) for lab in order]
        return transpose(x, perm) if perm != list(range(x.ndim)) else x

    def size(x, lx, labs):
        n = 1
        for lab in labs:
            n *= x._shape[lx.index(lab)]
        return n

    at = arrange(a, la, batch + a_only + contr)
    bt = arrange(b, lb, batch + contr + b_only)
    bshape_a = tuple(a._shape[la.index(lab)] for lab in batch)
    bshape_b = tuple(b._shape[lb.index(lab)] for lab in batch)
    m, k, n = size(a, la, a_only), size(a, la, contr), size(b, lb, b_only)
    at = reshape(at, bshape_a + (m, k))
    bt = reshape(bt, bshape_b + (k, n))
    out = Array.make(Matmul(), [at, bt], resolve_stream(stream))
    shape = (
        out._shape[: len(batch)]
        + tuple(a._shape[la.index(lab)] for lab in a_only)
        + tuple(b._shape[lb.index(lab)] for lab in b_only)
    )
    return reshape(out, shape), batch + a_only + b_only


def einsum(subscripts: str, *operands, stream=None) -> Array:
    """Einstein summation: ``nv.einsum("bij,bjk->bik", a, b)``. Supports implicit outputs,
    ellipses (broadcast dimensions), repeated labels in one operand (diagonals, traces) and
    any number of operands (contracted left to right).

    >>> import nuvec as nv
    >>> nv.einsum("ii", nv.array([[1, 2], [3, 4]])).item()
    5
    """

    if not isinstance(subscripts, str):
        raise TypeError("einsum: subscripts must be a string")
    if not operands:
        raise ValueError("einsum: at least one operand is needed")
    spec = subscripts.replace(" ", "")
    lhs, arrow, rhs = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(
            f"einsum: {len(terms)} input terms in {subscripts!r} for {len(operands)} operands"
        )
    xs = [as_array(x, "einsum") for x in operands]
    d = xs[0]._dtype
    for x in xs[1:]:
        d = dt.promote_types(d, x._dtype)
    if d == dt.bool_:
        raise TypeError("einsum: not defined for bool inputs")
    xs = [astype(x, d) for x in xs]
    n_ell = 0
    for t, x in zip(terms, xs):
        if "..." in t:
            n_ell = max(n_ell, x.ndim - len(t.replace("...", "")))
    labels = [_parse_term(t, x.ndim, n_ell, "term") for t, x in zip(terms, xs)]
    # sizes: letters must agree; ellipsis dimensions broadcast
    sizes: dict = {}
    for x, labs in zip(xs, labels):
        for lab, s in zip(labs, x._shape):
            old = sizes.get(lab)
            if old is None or old == 1:
                sizes[lab] = s
            elif s != old and s != 1:
                what = "broadcast dimensions" if isinstance(lab, tuple) else f"label {lab!r}"
                raise ValueError(f"einsum: {what} have sizes {old} and {s}")
    if arrow:
        out = _parse_term(rhs, None, n_ell, "output")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: repeated label in output {rhs!r}")
        for lab in out:
            if lab not in sizes:
                raise ValueError(f"einsum: output label {lab!r} is not in any input")
    else:
        counts: dict = {}
        for labs in labels:
            for lab in labs:
                counts[lab] = counts.get(lab, 0) + 1
        out = [("...", j) for j in range(n_ell)] + sorted(
            lab for lab, c in counts.items() if isinstance(lab, str) and c == 1
        )
    # broadcast size-1 ellipsis dims that meet a larger size
    for i, (x, labs) in enumerate(zip(xs, labels)):
        target = tuple(sizes[lab] for lab in labs)
        if target != x._shape:
            xs[i] = broadcast_to(x, target)
    ops_ = []
    for x, labs in zip(xs, labels):
        x, labs = _diagonal(x, labs, stream)
        ops_.append((x, labs))
    outset = set(out)
    # sum out labels that only one operand has and the output does not need
    for i, (x, labs) in enumerate(ops_):
        others = set()
        for j, (_, lj) in enumerate(ops_):
            if j != i:
                others |= set(lj)
        ops_[i] = _sum_out(x, labs, outset | others)
    acc, la = ops_[0]
    for i in range(1, len(ops_)):
        later = set(outset)
        for _, lj in ops_[i + 1 :]:
            later |= set(lj)
        acc, la = _pair(acc, la, ops_[i][0], ops_[i][1], later, stream)
    acc, la = _sum_out(acc, la, outset)
    perm = [la.index(lab) for lab in out]
    return transpose(acc, perm) if perm != list(range(acc.ndim)) else acc


# -- closeness and equality ---------------------------------------------------------------


def isclose(
    a, b, /, rtol: float = 1e-05, atol: float = 1e-08, *, equal_nan: bool = False, stream=None
) -> Array:
    """``|a - b| <= atol + rtol * |b|`` element-wise (infinities close only to themselves;
    NaNs close to each other when ``equal_nan``). Integers are compared in float32.

    >>> import nuvec as nv
    >>> nv.isclose(nv.array([1.0, 2.0]), nv.array([1.0 + 1e-9, 2.1])).tolist()
    [True, False]
    """

    a, b = operands(a, b, "isclose")
    if a._dtype.kind not in "fc":
        a, b = astype(a, dt.float32), astype(b, dt.float32)
    diff = abs(subtract(a, b))
    close = logical_and(less_equal(diff, add(multiply(abs(b), rtol), atol)), isfinite(b))
    same = equal(a, b)  # infinities of one sign
    if equal_nan:
        same = logical_or(same, logical_and(isnan(a), isnan(b)))
    return logical_or(close, same, stream=stream)


def allclose(
    a, b, /, rtol: float = 1e-05, atol: float = 1e-08, *, equal_nan: bool = False, stream=None
) -> Array:
    """True when every element pair is close (see ``isclose``); inputs broadcast."""

    return rall(isclose(a, b, rtol, atol, equal_nan=equal_nan), stream=stream)


def array_equal(a, b, /, equal_nan: bool = False, *, stream=None) -> Array:
    """True when the arrays have one shape and equal elements (dtypes may differ).

    >>> import nuvec as nv
    >>> nv.array_equal(nv.array([1, 2]), nv.array([1.0, 2.0])).item()
    True
    """

    a, b = as_array(a, "array_equal"), as_array(b, "array_equal")
    if a._shape != b._shape:
        return array(False)
    a, b = operands(a, b, "array_equal")
    eq = equal(a, b)
    if equal_nan and a._dtype.kind in "fc":
        eq = logical_or(eq, logical_and(isnan(a), isnan(b)))
    return rall(eq, stream=stream)


__all__ = [
    "matmul",
    "addmm",
    "tensordot",
    "inner",
    "outer",
    "einsum",
    "isclose",
    "allclose",
    "array_equal",
]
