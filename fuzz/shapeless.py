"""Differential fuzzing of ``nv.compile(f, shapeless=True)``: random programs of element-wise
ops, reductions, reshapes, transposes, slices, squeezes, broadcasts, matmuls, ``where``,
``astype``, Python scalars and several outputs, over float32, float16, bfloat16, int32 and
bool. Each program is compiled shapeless, traced on one shape and replayed on three others of
the same rank (one with a size-1 and one with a 0-size dimension). Every replay must equal the
uncompiled call bit for bit (NaN equal to NaN) or both must raise; a trace that refuses an
operation, or a replay that refuses a shape the trace relied on, with an error naming the
operation, is counted apart ("refused").

    python -m fuzz.shapeless --programs 10000 [--seed 0]

``tests/compile/test_shapeless_fuzz.py`` runs a few hundred of the same programs.
"""

from __future__ import annotations

import argparse
import random
import sys

import numpy as np

import nuvec as nv

DTYPES = ("float32", "float16", "bfloat16", "int32", "bool")
UNARY = ("exp", "abs", "negative", "sin", "tanh", "square", "sqrt", "isnan", "floor", "sigmoid")
BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "logaddexp", "greater")
SCALARS = (2, -1, 0.5, 3.0, True)


def _step(rng: random.Random, x, y):
    """One random operation on ``x`` (``y``: the other input, same rank)."""
    nd = x.ndim
    k = rng.randrange(13)
    if k == 0:
        return getattr(nv, rng.choice(UNARY))(x)
    if k == 1:
        s = rng.choice(SCALARS)
        op = getattr(nv, rng.choice(BINARY))
        return op(x, s) if rng.random() < 0.5 else op(s, x)
    if k == 2:
        return getattr(nv, rng.choice(BINARY))(x, y)
    if k == 3 and nd:
        op = rng.choice(("sum", "mean", "max", "var", "std", "prod", "any"))
        axis = rng.choice((None, rng.randrange(nd), tuple(range(nd))))
        return getattr(nv, op)(x, axis=axis, keepdims=rng.random() < 0.5)
    if k == 4:
        return nv.reshape(x, (-1,))
    if k == 5 and nd >= 2:
        return nv.transpose(x)
    if k == 6 and nd:
        b = rng.choice((None, 0, 1, -1))
        e = rng.choice((None, 1, 2, -1))
        return x[b:e]
    if k == 7:
        return nv.squeeze(x) if rng.random() < 0.5 else nv.expand_dims(x, 0)
    if k == 8:
        return nv.broadcast_arrays(x, y)[rng.randrange(2)]
    if k == 9 and nd >= 1:
        return x @ nv.transpose(x) if nd >= 2 else x @ x
    if k == 10:
        return nv.where(x > 0, x, rng.choice(SCALARS))
    if k == 11:
        return x.astype(rng.choice(DTYPES))
    if k == 12:
        return nv.zeros_like(x) + x if rng.random() < 0.5 else nv.ones_like(x) * 2
    return x + 1


def make_program(seed: int):
    """(function, dtype, rank, shapes): the program of ``seed`` and its trace shape first."""
    rng = random.Random(seed)
    dtype = rng.choice(DTYPES)
    rank = rng.randrange(1, 4)
    n_ops = rng.randrange(1, 6)
    steps = [rng.randrange(1 << 30) for _ in range(n_ops)]

    def fun(x, y):
        vals = [x]
        for s in steps:
            r = random.Random(s)
            vals.append(_step(r, vals[r.randrange(len(vals))], y))
        # every value is an output: no operation is dead code (the uncompiled call would run
        # it and a tape drop it, for any compile)
        return tuple(vals[1:]) if len(vals) > 2 else vals[-1]

    def shape():
        return tuple(rng.randrange(2, 5) for _ in range(rank))

    base = shape()
    one = list(shape())
    one[rng.randrange(rank)] = 1
    zero = list(shape())
    zero[rng.randrange(rank)] = 0
    return fun, dtype, rank, [base, shape(), tuple(one), tuple(zero)]


def _inputs(shape, dtype: str, seed: int):
    g = np.random.default_rng(seed)
    data = g.standard_normal(shape).astype(np.float32) * 3
    if dtype == "int32":
        data = np.round(data)
    elif dtype == "bool":
        data = data > 0
    return nv.array(data).astype(dtype)


def _outcome(fun, x, y):
    try:
        out = fun(x, y)
        outs = out if isinstance(out, tuple) else (out,)
        nv.eval(*outs)
        return [np.array(o) for o in outs]
    except Exception as e:  # noqa: BLE001  (any error: both sides must raise)
        return e


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.tobytes() == b.tobytes():
        return True
    if a.dtype.kind not in "fV" and str(a.dtype) != "bfloat16":
        return False
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    nan = np.isnan(fa)
    return bool(
        np.array_equal(nan, np.isnan(fb))
        and np.array_equal(fa[~nan], fb[~nan])
        and np.array_equal(np.signbit(fa[~nan]), np.signbit(fb[~nan]))
    )


def check(seed: int) -> str:
    """'ok', 'refused' (the trace or a replay named an operation it cannot replay), 'mismatch' or
    'one-sided' (one of the two calls raised)."""
    fun, dtype, _, shapes = make_program(seed)
    cf = nv.compile(fun, shapeless=True)
    for i, s in enumerate(shapes):
        x = _inputs(s, dtype, seed * 8 + i)
        y = _inputs(s, dtype, seed * 8 + i + 4)
        want = _outcome(fun, x, y)
        got = _outcome(cf, x, y)
        if (
            isinstance(got, ValueError)
            and not isinstance(want, Exception)
            and ("shapeless=True" in str(got) or "traced (shapeless)" in str(got))
        ):
            return "refused"
        if isinstance(want, Exception) or isinstance(got, Exception):
            if isinstance(want, Exception) != isinstance(got, Exception):
                return "one-sided"
            continue
        if len(want) != len(got) or not all(_same(a, b) for a, b in zip(want, got)):
            return "mismatch"
    return "ok"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--programs", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    counts: dict[str, list[int]] = {"ok": [], "refused": [], "mismatch": [], "one-sided": []}
    for seed in range(a.seed, a.seed + a.programs):
        counts[check(seed)].append(seed)
    for k, v in counts.items():
        print(f"{k}: {len(v)}" + (f" (seeds {v[:10]})" if v and k != "ok" else ""))
    return 1 if counts["mismatch"] or counts["one-sided"] else 0


if __name__ == "__main__":
    sys.exit(main())
