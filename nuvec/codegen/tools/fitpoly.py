"""Fit the polynomial coefficients of nv_math.h (developer tool, not used at run time).

Each approximation is a polynomial sum(c_k * t**k) fitted to a target function over an
interval, minimising the weighted maximum error (Lawson's iteratively reweighted least
squares, which converges to the minimax fit). The coefficients are then rounded to float32
one at a time, lowest degree first, refitting the remaining ones after each rounding, so the
rounding of a coefficient is absorbed by the ones still free.

Usage::

    python -m nuvec.codegen.tools.fitpoly            # print every fit with its error
    python -m nuvec.codegen.tools.fitpoly exp sin    # only some

The printed hex literals are what nv_math.h holds; rerun this after changing a fit.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

import mpmath as mp
import numpy as np

mp.mp.dps = 40


@dataclass
class Fit:
    name: str
    target: Callable[[mp.mpf], mp.mpf]  # function of t to approximate
    lo: float
    hi: float
    degree: int  # highest power of t
    weight: Callable[[mp.mpf], mp.mpf]  # error that matters = weight(t) * (p(t) - target(t))
    split0: bool = False  # c_0 kept as float32 hi + lo (when c_0 dominates)
    estrin: bool = False  # evaluated by Estrin's scheme (a shorter chain of fma than Horner's)
    pairs: bool = False  # pairs c_2i + t c_2i+1, then Horner's scheme in t^2 over the pairs
    exact0: bool = False  # c_0 = target(lo) rounded to float32, the rest fitted around it
    # also nv_poly_<name>_half(t): 2 P(2 t) with the same roundings scaled by powers of 2 (each
    # c_k times 2^(k+1), exact), for arguments that come halved (tanh's); pairs only
    half: bool = False


def _f32(x: float) -> float:
    return float(np.float32(x))


def _lawson(A: np.ndarray, b: np.ndarray, w: np.ndarray, iters: int = 200) -> np.ndarray:
    """Minimise max |w * (A c - b)| by Lawson's reweighting of least squares."""
    lam = np.full(len(b), 1.0 / len(b))
    c = None
    for _ in range(iters):
        sw = np.sqrt(lam) * w
        c, *_ = np.linalg.lstsq(A * sw[:, None], b * sw, rcond=None)
        err = np.abs(w * (A @ c - b))
        lam = lam * err
        s = lam.sum()
        if s == 0:
            break
        lam /= s
    return c


def fit(f: Fit, npts: int = 3000) -> tuple[list[float], float]:
    """Return float32 coefficients c_0..c_degree and the max weighted error over a dense grid."""
    k = np.arange(npts)
    ts = 0.5 * (f.lo + f.hi) + 0.5 * (f.hi - f.lo) * np.cos(np.pi * (k + 0.5) / npts)
    ts = np.concatenate([ts, [f.lo, f.hi]])
    y = np.array([float(f.target(mp.mpf(t))) for t in ts])
    w = np.array([float(f.weight(mp.mpf(t))) for t in ts])
    fixed: list[float] = []
    c0_lo = 0.0
    if f.split0:  # c_0 as hi + lo: fit it unrounded, freeze it, then fit the rest
        A = np.vander(ts, f.degree + 1, increasing=True)
        c0 = float(_lawson(A, y, w)[0])
        fixed.append(_f32(c0))
        c0_lo = _f32(c0 - fixed[0])
        y = y - c0_lo
    elif f.exact0:  # the value at lo itself: arguments near lo get it to the last bit
        fixed.append(_f32(float(f.target(mp.mpf(f.lo)))))
    for i in range(len(fixed), f.degree + 1):
        # remaining free powers i..degree; the fixed ones are subtracted from the target
        A = np.vander(ts, f.degree + 1, increasing=True)
        b = y - A[:, :i] @ np.array(fixed) if i else y.copy()
        c = _lawson(A[:, i:], b, w)
        fixed.append(_f32(c[0]))
    # evaluate the error in high precision on a denser grid
    dense = np.linspace(f.lo, f.hi, 4001)
    err = 0.0
    for t in dense:
        tm = mp.mpf(float(t))
        p = mp.mpf(0)
        for ck in reversed(fixed):
            p = p * tm + mp.mpf(ck)
        p += c0_lo
        err = max(err, abs(float(f.weight(tm) * (p - f.target(tm)))))
    return fixed + ([c0_lo] if f.split0 else []), err


def _safe(g, at0):
    """g(t) with its limit at t == 0 supplied (targets like (sin t - t)/t**3)."""
    return lambda t: at0 if t == 0 else g(t)


def odd_fit(name: str, fn: Callable, c3, hi: float, degree: int) -> Fit:
    """The fit of an odd function as fn(x) = x + x^3 P(x^2): P in t = x^2 over [0, hi], with
    its value at 0 given (``c3``, the x^3 coefficient of fn), the error relative to fn."""
    return Fit(
        name,
        _safe(lambda t: (fn(mp.sqrt(t)) - mp.sqrt(t)) / mp.sqrt(t) ** 3, c3),
        0.0,
        hi,
        degree,
        lambda t: mp.sqrt(t) ** 3 / fn(mp.sqrt(t)) if t else 0,
    )


FITS: dict[str, Fit] = {}


def _add(f: Fit) -> None:
    FITS[f.name] = f


LN2 = mp.log(2)
# exp(r) = 1 + r + r^2 * P(r), |r| <= ln2/2; error relative to exp(r). In pairs, Horner's scheme
# in r^2: r^2 is what exp's r + r^2 P(r) needs anyway, so the shorter chain costs no operation
_add(
    Fit(
        "exp",
        _safe(lambda r: (mp.exp(r) - 1 - r) / r**2, mp.mpf(0.5)),
        -0.3466,
        0.3466,
        4,
        lambda r: r**2 / mp.exp(r),
        pairs=True,
        half=True,
    )
)
# the same for a bfloat16 x and a result rounded to bfloat16 (exp of x <= 0, tanh and sigmoid
# of the GPU's bfloat16 kernels): a degree less, which changes no rounded result (every
# bfloat16 input: tests/engine/test_narrow_math.py)
_add(
    Fit(
        "exp_bf16",
        _safe(lambda r: (mp.exp(r) - 1 - r) / r**2, mp.mpf(0.5)),
        -0.3466,
        0.3466,
        3,
        lambda r: r**2 / mp.exp(r),
        pairs=True,
        half=True,
    )
)
# 2^f - 1 = f P(f), |f| <= 1/2, for erf's 2^G (G = log2 erfc, below): its result (at most
# erfc(1) = 0.16, subtracted from 1) passes on at most a fifth of the relative error
_add(
    Fit(
        "exp2m1_erfc",
        _safe(lambda f: (mp.power(2, f) - 1) / f, LN2),
        -0.5,
        0.5,
        4,
        lambda f: abs(f) / mp.power(2, f),
    )
)
# 2^f = 1 + ln2 f + f^2 P(f), |f| <= 1/2: nv_exp2_ff takes ln2 f exactly (ln2 as hi + lo)
# and rounds once at the end; error relative to 2^f
_add(
    Fit(
        "exp2",
        _safe(lambda f: (mp.power(2, f) - 1 - LN2 * f) / f**2, LN2**2 / 2),
        -0.5,
        0.5,
        5,
        lambda f: f**2 / mp.power(2, f),
    )
)
# sin r = r + r^3 P(r^2), |r| <= pi/4 (t = r^2)
_add(odd_fit("sin", mp.sin, mp.mpf(-1) / 6, float(mp.pi / 4) ** 2, 3))
# cos r = 1 - r^2/2 + r^4 P(r^2)
_add(
    Fit(
        "cos",
        _safe(lambda t: (mp.cos(mp.sqrt(t)) - 1 + t / 2) / t**2, mp.mpf(1) / 24),
        0.0,
        float(mp.pi / 4) ** 2,
        3,
        lambda t: t**2 / mp.cos(mp.sqrt(t)),
    )
)
# log m = 2s + s^3 P(s^2), s = (m-1)/(m+1), |s| <= 3 - 2*sqrt(2)
_S = float(3 - 2 * mp.sqrt(2))
_add(
    Fit(
        "log",
        _safe(
            lambda t: (2 * mp.atanh(mp.sqrt(t)) - 2 * mp.sqrt(t)) / mp.sqrt(t) ** 3, mp.mpf(2) / 3
        ),
        0.0,
        _S**2 * 1.0001,
        3,
        lambda t: mp.sqrt(t) ** 3 / (2 * mp.atanh(mp.sqrt(t))) if t else 0,
    )
)
# log(1 + r) = r + r^2 P(r), r = m - 1, m in [2/3, 4/3) (nv_log_f32, no division); error
# relative to log(1 + r), which the result's other terms (k ln2) only make larger
_M0 = float(np.frombuffer(np.uint32(0x3F2AAAAB).tobytes(), np.float32)[0])  # 2/3 rounded up
_add(
    Fit(
        "log1p_r",
        _safe(lambda r: (mp.log1p(r) - r) / r**2, mp.mpf(-0.5)),
        _M0 - 1,
        2 * _M0 - 1,
        8,
        lambda r: r**2 / abs(mp.log1p(r)) if r else 0,
        estrin=True,
    )
)
# sinh x = x + x^3 P(x^2), |x| <= 1
_add(odd_fit("sinh", mp.sinh, mp.mpf(1) / 6, 1.0, 4))
# asin x = x + x^3 P(x^2), |x| <= 1/2
_add(odd_fit("asin", mp.asin, mp.mpf(1) / 6, 0.25, 5))
# atan x = x + x^3 P(x^2), |x| <= 1
_add(odd_fit("atan", mp.atan, mp.mpf(-1) / 3, 1.0, 9))
# erf a = a + a P(a^2), a < ERF_SPLIT: P approximates erf(a)/a - 1, at most 2/sqrt(pi) - 1 =
# 0.128 in magnitude there, so its rounding reaches erf scaled down by that much (no hi + lo
# constant needed); error relative to erf
ERF_SPLIT = 0.921875
_ERF_P = _safe(lambda t: mp.erf(mp.sqrt(t)) / mp.sqrt(t) - 1, 2 / mp.sqrt(mp.pi) - 1)  # of t = a^2


def _erf_weight(t):
    return mp.sqrt(t) / mp.erf(mp.sqrt(t)) if t else mp.sqrt(mp.pi) / 2


_add(
    Fit(
        "erf",
        _ERF_P,
        0.0,
        ERF_SPLIT**2,
        5,
        _erf_weight,
        exact0=True,
    )
)
# erf a = a + a P(a^2) for a bfloat16 a <= ERF_ONE_BF16, with its result rounded to bfloat16
# (nv_erf_bf16): one polynomial for the whole range, as a bfloat16 result needs far less
# accuracy than float32 erf's 2 ulp; above ERF_ONE_BF16, erf > 1 - 2^-9 rounds to 1 there
# (erf(2.2) = 0.99814). Exhaustively checked (every bfloat16 a) against nv_erf_f32 rounded.
ERF_ONE_BF16 = 2.2
_add(
    Fit(
        "erf_bf16",
        _ERF_P,
        0.0,
        ERF_ONE_BF16**2,
        7,
        _erf_weight,
        exact0=True,
    )
)
# erfc a = 2^G(a - ERFC_SHIFT), ERF_SPLIT <= a <= ERF_ONE (G = log2 erfc, -a^2 log2(e) and all).
# ERFC_SHIFT = 2 ERF_SPLIT, so that a - ERFC_SHIFT is exact (Sterbenz) for every such a. Error
# that reaches erf: ln2 erfc * dG, relative to erf
ERFC_SHIFT = 2 * ERF_SPLIT
# from ERF_ONE up erfc(a) < 2^-25 (erfc(3.92) = 2.96e-8): 1 - erfc rounds to 1
ERF_ONE = 3.92
_add(
    Fit(
        "erfc_log2",
        lambda u: mp.log(mp.erfc(u + ERFC_SHIFT)) / LN2,
        ERF_SPLIT - ERFC_SHIFT,
        ERF_ONE - ERFC_SHIFT,
        5,
        lambda u: LN2 * mp.erfc(u + ERFC_SHIFT) / mp.erf(u + ERFC_SHIFT),
    )
)


def _erfinv_of_w(w):
    a = mp.sqrt(-mp.expm1(-w))
    return mp.erfinv(a) / a if a else mp.sqrt(mp.pi) / 2


# erfinv a = a * P(w - 2.5), w = -log(1 - a^2) <= 5
_add(Fit("erfinv_c", lambda u: _erfinv_of_w(u + 2.5), -2.5, 2.5, 10, lambda u: 1, True))
# erfinv a = a * P(sqrt(w) - 3), 5 <= w <= 16.7
_add(
    Fit(
        "erfinv_t",
        lambda v: _erfinv_of_w((v + 3) ** 2),
        float(mp.sqrt(5)) - 3,
        float(mp.sqrt(16.7)) - 3,
        9,
        lambda v: 1,
        True,
    )
)


def hexf(x: float) -> str:
    """A float32 value as a C hex literal with an f suffix."""
    if x == 0:
        return "0x0p+0f"
    h = float(x).hex()  # e.g. 0x1.5555540000000p-3
    mant, exp = h.split("p")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}p{exp}f"


HEADER = """/* nv_coeffs.h -- GENERATED by nuvec/codegen/tools/fitpoly.py; do not edit by hand.
 * nv_poly_<name>(t) = sum c_k t^k (Horner's or Estrin's scheme with fma); see fitpoly.py for
 * what each approximates and nv_math.h for where it is used. Max weighted error of each fit in
 * its comment. */
"""


def _estrin(coeffs: list[float]) -> list[str]:
    """The body of sum c_k t^k by Estrin's scheme: pairs c_2i + t c_2i+1, then pairs of those
    with t^2, and so on (t^2, t^4, ... computed once)."""
    lines, terms, power = [], [hexf(c) for c in coeffs], "t"
    level = 0
    while len(terms) > 1:
        nxt = []
        for i in range(0, len(terms) - 1, 2):
            nxt.append(f"p{level}_{i // 2}")
            pair = f"fmaf({power}, {terms[i + 1]}, {terms[i]})"
            lines.append(f"    float p{level}_{i // 2} = {pair};")
        if len(terms) % 2:
            nxt.append(terms[-1])
        terms = nxt
        if len(terms) > 1:
            lines.append(f"    float t{2 << level} = {power} * {power};")
            power = f"t{2 << level}"
        level += 1
    lines.append(f"    return {terms[0]};")
    return lines


def _pairs(coeffs: list[float]) -> list[str]:
    """The body of sum c_k t^k as pairs c_2i + t c_2i+1 (an odd top coefficient alone), then
    Horner's scheme in t^2 over the pairs: half Horner's chain for one more product (t^2)."""
    c = [hexf(x) for x in coeffs]
    terms = [
        f"fmaf(t, {c[i + 1]}, {c[i]})" if i + 1 < len(c) else c[i] for i in range(0, len(c), 2)
    ]
    lines = [f"    float q{i} = {t};" for i, t in enumerate(terms[:-1])]
    lines.append("    float t2 = t * t;")
    p = terms[-1]
    for i in reversed(range(len(terms) - 1)):
        p = f"fmaf(t2, {p}, q{i})"
    lines.append(f"    return {p};")
    return lines


def emit(names: list[str]) -> str:
    """C source of the polynomial functions (dialect-neutral: NV_FN and fmaf)."""
    out = [HEADER]
    for name in names:
        coeffs, err = fit(FITS[name])
        c0_lo = coeffs.pop() if FITS[name].split0 else None
        out.append(f"/* {name}: on [{FITS[name].lo:.6g}, {FITS[name].hi:.6g}], error {err:.2e} */")
        out.append(f"NV_FN float nv_poly_{name}(float t)\n{{")
        if FITS[name].estrin or FITS[name].pairs:
            out += _estrin(coeffs) if FITS[name].estrin else _pairs(coeffs)
            out.append("}\n")
            if FITS[name].half:
                out.append(f"/* {name}_half: 2 nv_poly_{name}(2 t), exactly */")
                out.append(f"NV_FN float nv_poly_{name}_half(float t)\n{{")
                out += _pairs([c * 2.0 ** (k + 1) for k, c in enumerate(coeffs)])
                out.append("}\n")
            continue
        out.append(f"    float p = fmaf(t, {hexf(coeffs[-1])}, {hexf(coeffs[-2])});")
        for c in reversed(coeffs[1:-2]):
            out.append(f"    p = fmaf(t, p, {hexf(c)});")
        if c0_lo is None:
            out.append(f"    p = fmaf(t, p, {hexf(coeffs[0])});")
            out.append("    return p;\n}\n")
        else:  # c_0 = hi + lo: one rounding at the end
            out.append(f"    return {hexf(coeffs[0])} + fmaf(t, p, {hexf(c0_lo)});\n}}\n")
    return "\n".join(out)


def write_or_print(src: str, names: list[str], header: str) -> None:
    """The fits of ``names`` printed, or, with no names (every fit), written to ``header``
    beside the math library."""
    if names:
        print(src)
    else:
        import pathlib

        path = pathlib.Path(__file__).resolve().parent.parent / header
        path.write_text(src)
        print(f"wrote {path}")


def main(names: list[str]) -> None:
    write_or_print(emit(names or list(FITS)), names, "nv_coeffs.h")


if __name__ == "__main__":
    main(sys.argv[1:])
