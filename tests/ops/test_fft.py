"""nv.fft against numpy.fft: every transform with sizes, axes and norms, frequencies and shifts,
dtypes, errors; vjp as the adjoint of the transform (and against finite differences of a
nonlinear loss), jvp, vmap against a loop, compiled equal to eager bit for bit."""

import itertools

import numpy as np
import pytest

import nuvec as nv

RNG = np.random.default_rng(0)


def crand(*shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


def rrand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def close(got, want, tol=2e-5):
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale)


ONE_D = ["fft", "ifft", "rfft", "irfft"]


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("n", [None, 5, 8, 13])
@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_one_dimensional(name, n, axis, norm):
    x = rrand(6, 9) if name == "rfft" else crand(6, 9)
    got = getattr(nv.fft, name)(nv.array(x), n=n, axis=axis, norm=norm)
    want = getattr(np.fft, name)(x, n=n, axis=axis, norm=norm)
    assert got.dtype == (nv.float32 if name == "irfft" else nv.complex64)
    close(got, want)


N_D = ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"]


@pytest.mark.parametrize("name", N_D)
@pytest.mark.parametrize(
    "axes,s", [(None, None), ((1, 2), None), ((2, 0), (5, 10)), ((0, 2), (7, 3)), ((-1,), (9,))]
)
def test_n_dimensional(name, axes, s):
    if axes is None and name.endswith("2"):
        axes = (-2, -1)
    x = rrand(4, 6, 8) if name.startswith("rfft") else crand(4, 6, 8)
    got = getattr(nv.fft, name)(nv.array(x), s=s, axes=axes)
    want = getattr(np.fft, name)(x, s=s, axes=axes)
    close(got, want)


def test_layouts_and_dtypes():
    x = crand(8, 6)
    close(nv.fft.fft(nv.array(x)[:, ::2]), np.fft.fft(x[:, ::2]))
    close(nv.fft.fft(nv.transpose(nv.array(x))), np.fft.fft(x.T))
    # real and integer input is transformed as complex64 / float32, float64 too (MLX's rule)
    r = RNG.integers(-4, 5, (5, 7))
    assert nv.fft.fft(nv.array(r)).dtype == nv.complex64
    close(nv.fft.fft(nv.array(r)), np.fft.fft(r))
    assert nv.fft.rfft(nv.array(r.astype(np.float64), dtype=nv.float64)).dtype == nv.complex64
    close(nv.fft.irfft(nv.array(np.fft.rfft(r))), np.fft.irfft(np.fft.rfft(r)))


def test_large_and_prime_sizes():
    for n in (1, 2, 17, 1153, 4096, 18247):
        x = crand(2, n)
        close(nv.fft.fft(nv.array(x)), np.fft.fft(x), tol=1e-4)
        close(nv.fft.ifft(nv.array(x)), np.fft.ifft(x), tol=1e-4)


def test_round_trip_odd_length():
    x = rrand(3, 11)
    back = nv.fft.irfft(nv.fft.rfft(nv.array(x)), n=11)
    close(back, x.astype(np.float64))


def test_freqs_and_shifts():
    for n, d in [(1, 1.0), (4, 0.5), (5, 0.25), (8, -0.5), (6, 1.0)]:
        f = nv.fft.fftfreq(n, d=d)
        assert f.dtype == nv.float32
        np.testing.assert_allclose(np.asarray(f), np.fft.fftfreq(n, d), rtol=1e-7)
        np.testing.assert_allclose(
            np.asarray(nv.fft.rfftfreq(n, d)), np.fft.rfftfreq(n, d), rtol=1e-7
        )
    x = rrand(5, 6, 7)
    for axes in (None, 0, -1, [0, 2], (1,)):
        np.testing.assert_array_equal(
            np.asarray(nv.fft.fftshift(nv.array(x), axes)), np.fft.fftshift(x, axes)
        )
        np.testing.assert_array_equal(
            np.asarray(nv.fft.ifftshift(nv.array(x), axes)), np.fft.ifftshift(x, axes)
        )
    e = nv.array(np.zeros((0,), np.float32))
    assert nv.fft.fftshift(e).shape == (0,)


def test_errors():
    with pytest.raises(ValueError, match="irfftn"):
        nv.fft.irfftn(nv.array(3.0))
    with pytest.raises(ValueError, match="fft: invalid norm"):
        nv.fft.fft(nv.array([1.0]), norm="invalid")
    with pytest.raises(ValueError, match="fft: axis 2"):
        nv.fft.fft(nv.ones((2, 2)), axis=2)
    with pytest.raises(ValueError, match="repeated axis"):
        nv.fft.fftn(nv.ones((2, 2)), axes=(0, 0))
    with pytest.raises(ValueError, match="transform size"):
        nv.fft.fft(nv.ones((4,)), n=0)
    with pytest.raises(ValueError, match="axes must be given"):
        nv.fft.fftn(nv.ones((4, 4)), s=(2, 2), axes=None)
    with pytest.raises(TypeError, match="fft: n must be an int"):
        nv.fft.fft(nv.ones((4,)), n=2.5)
    with pytest.raises(ValueError, match="fftfreq: n must be greater than 0"):
        nv.fft.fftfreq(0)
    with pytest.raises(ValueError, match="rfftfreq: d must be non-zero"):
        nv.fft.rfftfreq(4, d=0.0)
    with pytest.raises(ValueError, match="fftshift: axis -3"):
        nv.fft.fftshift(nv.ones((4, 4)), axes=[-3])


# -- transforms ----------------------------------------------------------------------------

CASES = [
    (nv.fft.fftn, np.fft.fftn, False),
    (nv.fft.ifftn, np.fft.ifftn, False),
    (nv.fft.rfftn, np.fft.rfftn, True),
    (nv.fft.irfftn, np.fft.irfftn, False),
]
AXES = [(-1,), (0,), (-2, -1), (-1, -2), (0, 1)]


def _inner(a, b):
    """The real inner product Re(sum(conj(a) * b)) that vjp is the adjoint under."""
    return float(
        np.real(np.vdot(np.asarray(a, np.complex128).ravel(), np.asarray(b, np.complex128).ravel()))
    )


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("axes", AXES)
@pytest.mark.parametrize("shape", [(3, 8, 6), (3, 7, 5)])
def test_vjp_is_the_adjoint(case, axes, shape):
    f_nv, f_np, real_in = CASES[case]
    x = rrand(*shape) if real_in else crand(*shape)
    if f_np is np.fft.irfftn:  # a spectrum of an odd-length signal: pass its length
        full = [shape[a] for a in axes]
        spec = np.fft.rfftn(rrand(*shape), axes=axes).astype(np.complex64)
        x, kw = spec, {"s": full}
    else:
        kw = {}
    y = f_np(x, axes=axes, **kw)
    g = (
        RNG.standard_normal(y.shape) + (0 if np.isrealobj(y) else 1j * RNG.standard_normal(y.shape))
    ).astype(y.dtype)
    _, (grad,) = nv.vjp(lambda a: f_nv(a, axes=axes, **kw), [nv.array(x)], [nv.array(g)])
    assert grad.shape == x.shape
    # <g, J t> = <vjp(g), t> for tangents t; for the inverse real transform J reads only the
    # Hermitian part of its input, so t is a spectrum of a real signal there
    for _ in range(3):
        if f_np is np.fft.irfftn:
            t = np.fft.rfftn(rrand(*shape), axes=axes)
        else:
            t = rrand(*shape) if real_in else crand(*shape)
        lhs = _inner(g, f_np(t, axes=axes, **kw))
        rhs = _inner(np.asarray(grad), t)
        assert abs(lhs - rhs) <= 1e-4 * (abs(lhs) + np.abs(g).sum()), (lhs, rhs)


def test_grad_of_power_matches_finite_differences():
    x = rrand(4, 6).astype(np.float64)
    w = np.arange(4 * 4, dtype=np.float64).reshape(4, 4)

    def loss(a):
        return nv.sum(nv.abs(nv.fft.rfft2(a)) ** 2 * nv.array(w, dtype=nv.float32))

    got = np.asarray(nv.grad(loss)(nv.array(x, dtype=nv.float32)))
    # central differences of the same loss in float64 (NumPy): float32 differences of a loss
    # in the thousands would carry errors near the tolerance
    eps = 1e-5
    num = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        p, m = x.copy(), x.copy()
        p[idx] += eps
        m[idx] -= eps
        fp, fm = ((np.abs(np.fft.rfft2(v)) ** 2 * w).sum() for v in (p, m))
        num[idx] = (fp - fm) / (2 * eps)
    np.testing.assert_allclose(got, num, rtol=1e-4, atol=1e-4 * np.abs(num).max())


@pytest.mark.parametrize("case,axes", itertools.product(range(len(CASES)), AXES))
def test_jvp_and_vmap(case, axes):
    f_nv, _, real_in = CASES[case]
    x = rrand(3, 8, 6) if real_in else crand(3, 8, 6)
    t = rrand(3, 8, 6) if real_in else crand(3, 8, 6)
    f = lambda a: f_nv(a, axes=axes)  # noqa: E731
    _, (tan,) = nv.jvp(f, [nv.array(x)], [nv.array(t)])
    close(tan, np.asarray(f(nv.array(t))))
    loop = np.stack([np.asarray(f(nv.array(x[i]))) for i in range(3)])
    close(nv.vmap(f)(nv.array(x)), loop)
    close(
        nv.vmap(f, in_axes=1, out_axes=1)(nv.array(x)),
        np.stack([np.asarray(f(nv.array(x[:, i]))) for i in range(8)], axis=1),
    )


def test_compiled_equals_eager():
    x = crand(4, 9)

    def f(a):
        return nv.fft.irfft(nv.fft.fft(a, n=12, norm="ortho"), n=11) * 3

    g = nv.compile(f)
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(g(nv.array(x))), np.asarray(f(nv.array(x))))
    grad = nv.compile(nv.grad(lambda a: nv.sum(nv.fft.rfft(a).abs())))
    r = nv.array(rrand(16))
    np.testing.assert_array_equal(
        np.asarray(grad(r)), np.asarray(nv.grad(lambda a: nv.sum(nv.fft.rfft(a).abs()))(r))
    )


def test_stream_keyword():
    x = nv.array(crand(8))
    close(nv.fft.fft(x, stream=nv.cpu), np.fft.fft(np.asarray(x)))
    assert nv.fft.fftfreq(4, stream=nv.cpu).shape == (4,)


# -- stft / istft --------------------------------------------------------------------------


def np_stft(x, n_fft, hop, win, center=True, pad_mode="reflect", norm="backward", onesided=True):
    """torch.stft's definition in NumPy: pad, frame, window (centred in the frame), DFT."""
    wl = win.shape[0]
    left = (n_fft - wl) // 2
    w = np.pad(win, (left, n_fft - wl - left))
    if center:
        p = n_fft // 2
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(p, p)], mode=pad_mode)
    count = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., t * hop : t * hop + n_fft] for t in range(count)], axis=-2) * w
    spec = (np.fft.rfft if onesided else np.fft.fft)(frames, axis=-1, norm=norm)
    return np.swapaxes(spec, -1, -2)


HANN = lambda n: (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)).astype(np.float32)  # noqa: E731


@pytest.mark.parametrize("n_fft,hop,wl", [(16, 4, 16), (16, 5, 12), (15, 3, 15), (8, 8, 8)])
@pytest.mark.parametrize(
    "center,pad_mode", [(True, "reflect"), (True, "constant"), (True, "edge"), (False, "reflect")]
)
@pytest.mark.parametrize("norm", ["backward", "ortho"])
def test_stft_against_numpy(n_fft, hop, wl, center, pad_mode, norm):
    x = rrand(2, 61)
    w = HANN(wl)
    got = nv.fft.stft(
        nv.array(x),
        n_fft,
        hop_length=hop,
        win_length=wl,
        window=nv.array(w),
        center=center,
        pad_mode=pad_mode,
        norm=norm,
    )
    assert got.dtype == nv.complex64
    close(got, np_stft(x, n_fft, hop, w, center, pad_mode, norm))
    two = nv.fft.stft(
        nv.array(x),
        n_fft,
        hop_length=hop,
        win_length=wl,
        window=nv.array(w),
        center=center,
        pad_mode=pad_mode,
        norm=norm,
        onesided=False,
    )
    close(two, np_stft(x, n_fft, hop, w, center, pad_mode, norm, onesided=False))


@pytest.mark.parametrize("n_fft,hop", [(16, 4), (16, 5), (15, 3), (12, 6)])
@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("onesided", [True, False])
def test_istft_inverts_stft(n_fft, hop, center, onesided):
    x = rrand(3, 80)
    w = nv.array(HANN(n_fft) + 0.1)  # never zero: every sample is recoverable
    spec = nv.fft.stft(
        nv.array(x), n_fft, hop_length=hop, window=w, center=center, onesided=onesided
    )
    back = nv.fft.istft(
        spec,
        n_fft,
        hop_length=hop,
        window=w,
        center=center,
        onesided=onesided,
        length=80 if center else None,
    )
    back = np.asarray(back)
    assert back.dtype == (np.float32 if onesided else np.complex64)
    covered = back.shape[-1]
    close(back, x[..., :covered].astype(back.dtype), tol=1e-5)


def test_stft_defaults_errors_and_gradient():
    x = rrand(50)
    got = nv.fft.stft(nv.array(x), 16)  # hop n_fft // 4, rectangular window, reflect pad
    close(got, np_stft(x, 16, 4, np.ones(16, np.float32)))
    with pytest.raises(ValueError, match="stft: pad_mode"):
        nv.fft.stft(nv.array(x), 16, pad_mode="wrap")
    with pytest.raises(ValueError, match="stft: win_length"):
        nv.fft.stft(nv.array(x), 16, win_length=20)
    with pytest.raises(ValueError, match="stft: window must have shape"):
        nv.fft.stft(nv.array(x), 16, window=nv.ones((8,)))
    with pytest.raises(ValueError, match="shorter than n_fft"):
        nv.fft.stft(nv.array(x[:5]), 16, center=False)
    with pytest.raises(ValueError, match="istft: 9 frequencies do not match"):
        nv.fft.istft(nv.zeros((9, 4), nv.complex64), 20)
    with pytest.raises(TypeError, match="stft: n_fft must be an int"):
        nv.fft.stft(nv.array(x), 16.0)
    # stft is linear in x: its vjp is its adjoint
    g = crand(9, 13)
    _, (grad,) = nv.vjp(lambda a: nv.fft.stft(a, 16), [nv.array(x)], [nv.array(g)])
    for _ in range(3):
        t = rrand(50)
        lhs = _inner(g, np_stft(t, 16, 4, np.ones(16, np.float32)))
        assert abs(lhs - _inner(np.asarray(grad), t)) <= 1e-4 * (abs(lhs) + np.abs(g).sum())
    # istft's gradient is finite where the window vanishes
    w = nv.array(HANN(16))
    loss = lambda s: nv.sum(nv.fft.istft(s, 16, window=w) ** 2)  # noqa: E731
    gs = np.asarray(nv.grad(loss)(nv.fft.stft(nv.array(x), 16, window=w)))
    assert np.isfinite(gs).all()
