"""Sizes read from ``x.shape`` under a shapeless trace record their arithmetic, so reshapes,
broadcasts and creations of those sizes replay on any shape as the uncompiled function runs
there; a comparison of the inputs' sizes (an if on a shape) answers with its traced outcome
and the compiled function traces again for shapes where it comes out otherwise; a size that
reaches other Python code (len(), int(), an index, a float) is refused with an error naming the
line, never baked. Reshapes to sizes that nuvec's own
operations computed from the traced shapes replay only on the traced input shape."""

import numpy as np
import pytest

import nuvec as nv

from conftest import assert_same


def arange(*shape):
    n = int(np.prod(shape))
    return nv.array((np.arange(n, dtype=np.float32) - n / 3).reshape(shape))


def same_as_uncompiled(fn, *shapes):
    g = nv.compile(fn, shapeless=True)
    for s in shapes:
        x = arange(*s)
        try:
            want = fn(x)
            nv.eval(want)
        except ValueError:
            with pytest.raises(ValueError):
                nv.eval(g(x))
            continue
        got = g(x)
        assert got.shape == want.shape
        assert_same(np.asarray(got), np.asarray(want))
    assert g.stats()["traces"] == 1
    return g


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.reshape(x.shape[0] * x.shape[1], -1),
        lambda x: nv.reshape(x, (x.shape[2], x.shape[0] * x.shape[1])) + 1,
        lambda x: x.reshape(-1, x.shape[-1] // 2, 2),
        lambda x: x.reshape(x.shape[-1] - 1 + 1, -1),
        lambda x: x.reshape(2 * x.shape[0], -1),
        lambda x: x.reshape(x.size),
    ],
)
def test_reshapes_to_sizes_read_from_the_shape(fn):
    same_as_uncompiled(fn, (2, 3, 4), (2, 3, 8), (5, 5, 6), (1, 1, 2), (3, 0, 2))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: nv.zeros(x.shape) + x,
        lambda x: nv.ones((x.shape[0], 2)) * x[:, :1],
        lambda x: nv.full(x.shape[-1], 3.0) - x,
        lambda x: nv.broadcast_to(x[:, :1], (x.shape[0], 2 * x.shape[1])),
        lambda x: nv.broadcast_to(x, (4,) + x.shape) * 2,
    ],
)
def test_creations_and_broadcasts_of_sizes_read_from_the_shape(fn):
    same_as_uncompiled(fn, (2, 3), (4, 1), (1, 5), (0, 2))


def test_gradients_and_vmaps_through_sized_reshapes_and_broadcasts():
    same_as_uncompiled(
        nv.grad(lambda x: (nv.reshape(x, (x.shape[1], x.shape[0])) ** 2).sum()), (2, 3), (4, 5)
    )
    same_as_uncompiled(
        nv.grad(lambda x: nv.broadcast_to(x[:, :1], (x.shape[0], 3 * x.shape[1])).sum()),
        (2, 3),
        (4, 1),
    )
    same_as_uncompiled(
        lambda x: nv.vmap(lambda r: r.reshape(r.shape[0] // 2, -1))(x), (2, 4), (3, 6)
    )
    same_as_uncompiled(lambda x: nv.vmap(lambda r: nv.ones(r.shape) * r)(x), (2, 3), (4, 1))


def _intermediate_branch(x):
    y = x.reshape(-1)
    if y.shape[0] > 2:  # the line named: no check of an intermediate's size before a replay
        return x
    return -x


@pytest.mark.parametrize(
    "fn",
    [
        _intermediate_branch,
        lambda x: x * x.shape[-1] ** -0.5,
        lambda x: x + len(x),
        lambda x: [r for r in x][0],
        lambda x: x[: x.shape[0] // 2],
        lambda x: x[x.shape[0] // 2 :, : x.shape[1] - 1],
        lambda x: x[:: x.shape[0]],
        lambda x: x[x.shape[0] - 1],
        lambda x: x + np.float32(x.shape[0]),
    ],
)
def test_a_size_reaching_python_code_is_refused_naming_the_line(fn):
    g = nv.compile(fn, shapeless=True)
    with pytest.raises(ValueError, match=r"\.shape \(traced as \d+\) \(at .*test_shapeless_sizes"):
        g(arange(3, 2))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: nv.arange(x.shape[-1]) + x,
        lambda x: nv.arange(x.shape[-1], dtype=nv.float32) * x,
        lambda x: x * nv.arange(2, 3 * x.shape[1] + 2, 3),
        lambda x: nv.arange(x.shape[1])[::-1] + x[:1],
        lambda x: nv.arange(7, x.shape[0] - 1, -2)[:1] * x[:1, :1],  # a negative step
        lambda x: nv.arange(x.shape[0] * x.shape[1]).reshape(x.shape) + x,
        lambda x: nv.ones((x.shape[1],), nv.int32) * nv.arange(x.shape[1]),
    ],
)
def test_ranges_of_sizes_read_from_the_shape(fn):
    same_as_uncompiled(fn, (2, 3), (4, 1), (1, 5), (3, 0), (0, 2))


@pytest.mark.parametrize(
    "fn, op",
    [
        (lambda x: nv.eye(x.shape[0]), "eye: n"),
        (lambda x: nv.linspace(0, 1, x.shape[0]), "linspace: num"),
        (lambda x: nv.linspace(0, x.shape[0], 4), "linspace: stop"),
        (lambda x: nv.arange(x.shape[0], 10), "arange: start"),
        (lambda x: nv.arange(0, 10, x.shape[0]), "arange: step"),
        (lambda x: nv.tri(x.shape[0]), "tri: n"),
    ],
)
def test_a_creation_that_cannot_follow_a_size_is_refused_naming_it(fn, op):
    g = nv.compile(fn, shapeless=True)
    with pytest.raises(
        ValueError, match=rf"{op} is a size read from \.shape .*\(at .*test_shapeless_sizes"
    ):
        g(arange(3))


def test_a_float_range_of_a_size_is_refused_naming_it():
    g = nv.compile(lambda x: nv.arange(0, x.shape[0], 0.5), shapeless=True)
    with pytest.raises(ValueError, match=r"arange: .* step must be an int, got float \(at .*"):
        g(arange(3))


def test_printing_a_size_shows_the_traced_value():
    seen = []

    def fn(x):
        seen.append(f"{x.shape} {x.shape[0]:>3}")
        return x * 2

    same_as_uncompiled(fn, (2, 3), (4, 5))
    # the eager calls, and the trace (once) in between
    assert seen == ["(2, 3)   2", "(2, 3)   2", "(4, 5)   4"]


def test_a_reshape_of_sizes_nuvec_computed_replays_only_on_the_traced_input_shape():
    # vmap's rule reshapes with the traced batch size: refused, never silently wrong
    g = nv.compile(lambda x: nv.vmap(lambda r: r.reshape(2, -1))(x), shapeless=True)
    assert_same(
        np.asarray(g(x := arange(3, 4))), np.asarray(nv.vmap(lambda r: r.reshape(2, -1))(x))
    )
    with pytest.raises(ValueError, match=r"reshape: traced \(shapeless\)"):
        g(arange(5, 4))


def test_gather_mm_follows_the_replayed_rows():
    idx = nv.array([0, 1, 2, 3])
    b = nv.array(np.random.default_rng(0).standard_normal((4, 8, 5)).astype(np.float32))

    def fn(x):
        return nv.gather_mm(x, b, lhs_indices=idx, rhs_indices=idx)

    g = nv.compile(fn, shapeless=True)
    for rows in (4, 8, 1):
        x = arange(4, rows, 8)
        assert_same(np.asarray(g(x)), np.asarray(fn(x)))
    g = nv.compile(lambda x: nv.gather_mm(x, b, rhs_indices=idx), shapeless=True)
    with pytest.raises(ValueError, match="gather_mm: under nv.compile"):
        g(arange(4, 2, 8))


def test_vmap_of_a_broadcast_against_a_constant():
    # the batched operand's own axes are aligned right against the constant's
    same_as_uncompiled(lambda x: nv.vmap(lambda r: nv.zeros((2, 3)) + r[0])(x), (2, 2), (3, 2))
    same_as_uncompiled(lambda x: nv.vmap(lambda r: nv.zeros((2, 3)) + r)(x), (2, 3), (3, 3))


def _branches(x, y):
    z = x * 2 if x.shape[0] > 2 else x
    if y.shape[0] == x.shape[1] - 1 or not y.shape[0]:
        return z[:, :1] - y.sum()
    return z + 1


def test_comparisons_of_input_sizes_trace_once_per_outcome():
    g = nv.compile(_branches, shapeless=True)
    cases = [((3, 2), (1,)), ((4, 5), (4,)), ((1, 2), (1,)), ((5, 2), (3,)), ((2, 3), (0,))]
    for xs, ys in cases + cases:
        x, y = arange(*xs), arange(*ys)
        assert_same(np.asarray(g(x, y)), np.asarray(_branches(x, y)))
    # the comparisons' outcomes: (T, T), (T, T), (F, T), (T, F, F), (F, F, T): 4 distinct
    assert g.stats()["traces"] == 4
    g(arange(1, 2), arange(3))  # the latest trace's `not y.shape[0]` (y0 != 0) now differs
    assert g.stats()["traces"] == 5 and g.stats()["last_miss"] == (
        "shapeless: a comparison of the traced shapes comes out otherwise: "
        "input 1's dim 0 != 0 (False at the trace)"
    )


def test_a_comparison_in_a_stateful_step_traces_per_outcome():
    state = [nv.zeros((1,))]

    def step(x):
        scale = 2.0 if x.shape[0] > 2 else 3.0
        state[0] = state[0] + (x * scale).sum()
        return state[0]

    g = nv.compile(step, inputs=state, outputs=state, shapeless=True)
    seen = [g(arange(n)).item() for n in (3, 1, 4, 2)]
    want, total = [], 0.0
    for n in (3, 1, 4, 2):
        total += float((np.asarray(arange(n)) * (2.0 if n > 2 else 3.0)).sum())
        want.append(total)
    assert seen == want
    assert g.stats()["traces"] == 2


def test_a_size_kept_past_its_trace_is_refused():
    kept = []

    def f(x):
        kept.append(x.shape[0])
        return x + 1

    nv.compile(f, shapeless=True)(arange(3))
    with pytest.raises(ValueError, match=r"\.shape \(traced as 3\)"):
        bool(kept[0] > 1)
