"""Fit the float64 polynomial coefficients of nv_math64.h (developer tool, not used at run time).

As fitpoly.py (Lawson's iteratively reweighted least squares towards the weighted minimax fit,
then the coefficients rounded one at a time, lowest degree first, the others refitted after
each), with float64 coefficients: each least-squares solve is refined with residuals taken in
mpmath (the target at 40 digits), since a fit in float64 alone stops at float64's rounding of
the coefficients, the very precision the fits need.

Usage::

    python -m nuvec.codegen.tools.fitpoly64            # write nv_coeffs64.h
    python -m nuvec.codegen.tools.fitpoly64 exp        # print some fits

The fits for nv_coeffs64.h take a few minutes (erfinv's targets, mpmath's erfinv, the longest).
"""

from __future__ import annotations

import sys

import mpmath as mp
import numpy as np

from .fitpoly import Fit, _safe, odd_fit, write_or_print

mp.mp.dps = 40


def _horner(c: list, t: mp.mpf) -> mp.mpf:
    p = mp.mpf(0)
    for ck in reversed(c):
        p = p * t + ck
    return p


def _weighted_lsq(ts, y, w, fixed: list, free: int, scale: float, iters: int) -> list:
    """The free coefficients (powers len(fixed) .. len(fixed) + free - 1) minimising
    max |w (p - y)| by Lawson's reweighting; each weighted least-squares solve in float64 on
    columns (t / scale)^k, refined three times on residuals computed in mpmath."""
    i0 = len(fixed)
    u = np.array([float(t) for t in ts]) / scale
    A = np.vander(u, i0 + free, increasing=True)[:, i0:]
    base = [y[j] - _horner(fixed, ts[j]) for j in range(len(ts))]
    lam = np.full(len(ts), 1.0 / len(ts))
    c = [mp.mpf(0)] * free

    def residual(c):
        return [
            base[j] - ts[j] ** i0 * _horner(c, ts[j]) if i0 else base[j] - _horner(c, ts[j])
            for j in range(len(ts))
        ]

    for _ in range(iters):
        sw = np.sqrt(lam) * w
        for _ in range(3):
            res = np.array([float(r) for r in residual(c)])
            d, *_ = np.linalg.lstsq(A * sw[:, None], res * sw, rcond=None)
            c = [
                ck + mp.mpf(float(dk)) / mp.mpf(scale) ** (i0 + k)
                for k, (ck, dk) in enumerate(zip(c, d))
            ]
        err = np.abs(w * np.array([float(r) for r in residual(c)]))
        lam = lam * err
        s = lam.sum()
        if s == 0:
            break
        lam /= s
    return c


def fit64(f: Fit, npts: int = 300, iters: int = 60) -> tuple[list[float], float]:
    """float64 coefficients c_0..c_degree and the max weighted error over a dense grid."""
    k = np.arange(npts)
    grid = 0.5 * (f.lo + f.hi) + 0.5 * (f.hi - f.lo) * np.cos(np.pi * (k + 0.5) / npts)
    ts = [mp.mpf(float(t)) for t in np.concatenate([grid, [f.lo, f.hi]])]
    y = [f.target(t) for t in ts]
    w = np.array([float(f.weight(t)) for t in ts])
    scale = max(abs(f.lo), abs(f.hi))
    fixed: list = []
    for i in range(f.degree + 1):
        c = _weighted_lsq(ts, y, w, fixed, f.degree + 1 - i, scale, iters if i == 0 else iters // 3)
        fixed.append(mp.mpf(float(c[0])))  # rounded to float64
    dense = np.linspace(f.lo, f.hi, 4001)
    err = max(
        abs(
            f.weight(mp.mpf(float(t)))
            * (_horner(fixed, mp.mpf(float(t))) - f.target(mp.mpf(float(t))))
        )
        for t in dense
    )
    return [float(c) for c in fixed], float(err)


FITS64: dict[str, Fit] = {}


def _add(f: Fit) -> None:
    FITS64[f.name] = f


# exp(r) = 1 + r + r^2 P(r), |r| <= ln2/2 (and a little: the reduction's n is rounded from
# x log2(e) with log2(e) rounded); error relative to exp(r)
_add(
    Fit(
        "exp",
        _safe(lambda r: (mp.exp(r) - 1 - r) / r**2, mp.mpf(0.5)),
        -0.34658,
        0.34658,
        10,
        lambda r: r**2 / mp.exp(r),
        pairs=True,
    )
)
# log(1 + f) = f - f^2/2 + s (f^2/2 + z P(z)), s = f / (2 + f), z = s^2, f in
# [sqrt(1/2) - 1, sqrt(2) - 1): z P(z) = (2 atanh(s) - 2s) / s; error relative to log(1 + f)
_S = 3 - 2 * mp.sqrt(2)
_add(
    Fit(
        "log",
        _safe(
            lambda t: (2 * mp.atanh(mp.sqrt(t)) - 2 * mp.sqrt(t)) / mp.sqrt(t) ** 3, mp.mpf(2) / 3
        ),
        0.0,
        float(_S**2) * 1.0001,
        6,
        lambda t: mp.sqrt(t) ** 3 / (2 * mp.atanh(mp.sqrt(t))) if t else 0,
    )
)
# pow's log: 2 atanh(s) = 2s + s z (2/3 + 2z/5 + z^2 R2(z)), z = s^2 as for log: R2(z) =
# ((2 atanh(s) - 2s) / (s z) - 2/3 - 2z/5) / z^2; error relative to 2 atanh(s) (R2's share of
# it is s z^3 R2)
_add(
    Fit(
        "log_r2",
        _safe(
            lambda t: (
                (
                    (2 * mp.atanh(mp.sqrt(t)) - 2 * mp.sqrt(t)) / mp.sqrt(t) ** 3
                    - mp.mpf(2) / 3
                    - 2 * t / 5
                )
                / t**2
            ),
            mp.mpf(2) / 7,
        ),
        0.0,
        float(_S**2) * 1.0001,
        6,
        lambda t: mp.sqrt(t) ** 7 / (2 * mp.atanh(mp.sqrt(t))) if t else 0,
    )
)
# sinh a = a + a^3 P(a^2), |a| <= 1; error relative to sinh a
_add(odd_fit("sinh", mp.sinh, mp.mpf(1) / 6, 1.0, 6))

# sin r = r + r^3 P(r^2), |r| <= pi/4 (and a little: q is rounded from |x| 2/pi with 2/pi
# rounded); error relative to sin r
_PIO4_SQ = float((mp.pi / 4) ** 2) * 1.001
_add(odd_fit("sin", mp.sin, -mp.mpf(1) / 6, _PIO4_SQ, 5))
# cos r = 1 - r^2/2 + r^4 P(r^2), |r| <= pi/4; error relative to cos r
_add(
    Fit(
        "cos",
        _safe(lambda t: (mp.cos(mp.sqrt(t)) - 1 + t / 2) / t**2, mp.mpf(1) / 24),
        0.0,
        _PIO4_SQ,
        5,
        lambda t: t**2 / mp.cos(mp.sqrt(t)),
    )
)
# atan u = u + u^3 P(u^2), |u| <= tan(pi/8) (the reductions' quotient, a little beyond);
# error relative to atan u
_add(odd_fit("atan", mp.atan, -mp.mpf(1) / 3, float(mp.tan(mp.pi / 8) ** 2) * 1.001, 10))
# asin t = t + t^3 P(t^2), |t| <= 1/2; error relative to asin t
_add(odd_fit("asin", mp.asin, mp.mpf(1) / 6, 0.25, 12))

# erf a = a + a P(a^2) for |a| <= 3/4; error relative to erf a
_add(
    Fit(
        "erf_small",
        _safe(lambda t: mp.erf(mp.sqrt(t)) / mp.sqrt(t) - 1, 2 / mp.sqrt(mp.pi) - 1),
        0.0,
        0.5626,
        10,
        lambda t: mp.sqrt(t) / mp.erf(mp.sqrt(t)) if t else mp.sqrt(mp.pi) / 2,
    )
)


def _erfc_scaled(c: float, lo: float, hi: float, degree: int, name: str) -> None:
    """erfc a = exp(-a^2) (F(c) + t P(t)), t = a - c, for a in [lo, hi]: F(a) = erfc(a) exp(a^2)
    (smooth, about 1 / (a sqrt(pi))), F(c) a hi + lo constant of nv_math64.h; the error that
    matters is erfc's absolute one (erf = 1 - erfc is above 0.7 there): weight exp(-a^2) t."""

    def f(a):
        return mp.erfc(a) * mp.exp(a**2)

    fc = f(mp.mpf(c))
    _add(
        Fit(
            name,
            _safe(lambda t: (f(c + t) - fc) / t, mp.diff(f, mp.mpf(c))),
            lo - c,
            hi - c,
            degree - 1,
            lambda t: mp.exp(-((c + t) ** 2)) * abs(t),
        )
    )


# erf's three intervals between 3/4 and 6 (where erf rounds to 1), centred at 1.25, 2.5, 4.625
_erfc_scaled(1.25, 0.75, 1.75, 16, "erfc1")
_erfc_scaled(2.5, 1.75, 3.25, 14, "erfc2")
_erfc_scaled(4.625, 3.25, 6.0, 10, "erfc3")

# erfinv a = a G(w), w = -log(1 - a^2) in [0, 36.05] (a < 1 in float64: 1 - a^2 >= 2^-52), G as
# G(c) + t Q(t) with t = v - c: v = w, c = 3.125 below w = 6.25; v = sqrt(w) in [2.5, 4], c =
# 3.25; v = sqrt(w) in [4, 6.005], c = 5 (the intervals as Giles, "Approximating the erfinv
# function", 2010). G(c) is a hi + lo constant of nv_math64.h; error relative to erfinv, so the
# weight is |t| / G.


def _erfinv_g(w: mp.mpf) -> mp.mpf:
    """erfinv(a) / a at a = sqrt(1 - exp(-w))."""
    if w == 0:
        return mp.sqrt(mp.pi) / 2
    a = mp.sqrt(-mp.expm1(-w))
    return mp.erfinv(a) / a


def _erfinv_fit(name: str, g, c: float, lo: float, hi: float, degree: int) -> None:
    gc = g(mp.mpf(c))
    _add(
        Fit(
            name,
            _safe(lambda t: (g(c + t) - gc) / t, mp.diff(g, mp.mpf(c))),
            lo - c,
            hi - c,
            degree - 1,
            lambda t: abs(t) / g(c + t),
        )
    )


_erfinv_fit("erfinv_c", _erfinv_g, 3.125, 0.0, 6.25, 24)
_erfinv_fit("erfinv_t1", lambda u: _erfinv_g(u * u), 3.25, 2.5, 4.0, 20)
_erfinv_fit("erfinv_t2", lambda u: _erfinv_g(u * u), 5.0, 4.0, 6.005, 18)


def hexd(x: float) -> str:
    """A float64 value as a C hex literal."""
    if x == 0:
        return "0x0p+0"
    mant, exp = float(x).hex().split("p")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}p{exp}"


HEADER = """/* nv_coeffs64.h -- GENERATED by nuvec/codegen/tools/fitpoly64.py; do not edit by hand.
 * nv_poly64_<name>(t) = sum c_k t^k in float64 (Horner's scheme with fma, or pairs c_2i +
 * t c_2i+1 and then Horner's scheme in t^2); see fitpoly64.py for what each approximates and
 * nv_math64.h for where it is used. Max weighted error of each fit in its comment. */
#ifndef NV_NO_F64
"""


def _body(f: Fit, coeffs: list[float]) -> list[str]:
    c = [hexd(x) for x in coeffs]
    if f.pairs:
        terms = [
            f"fma(t, {c[i + 1]}, {c[i]})" if i + 1 < len(c) else c[i] for i in range(0, len(c), 2)
        ]
        lines = [f"    double q{i} = {t};" for i, t in enumerate(terms[:-1])]
        lines.append("    double t2 = t * t;")
        p = terms[-1]
        for i in reversed(range(len(terms) - 1)):
            p = f"fma(t2, {p}, q{i})"
        return lines + [f"    return {p};"]
    lines = [f"    double p = fma(t, {c[-1]}, {c[-2]});"]
    lines += [f"    p = fma(t, p, {ck});" for ck in reversed(c[:-2])]
    return lines + ["    return p;"]


def emit(names: list[str]) -> str:
    out = [HEADER]
    for name in names:
        f = FITS64[name]
        coeffs, err = fit64(f)
        out.append(f"/* {name}: on [{f.lo:.6g}, {f.hi:.6g}], error {err:.2e} */")
        out.append(f"NV_FN double nv_poly64_{name}(double t)\n{{")
        out += _body(f, coeffs)
        out.append("}\n")
    out.append("#endif")
    return "\n".join(out) + "\n"


def main(names: list[str]) -> None:
    write_or_print(emit(names or list(FITS64)), names, "nv_coeffs64.h")


if __name__ == "__main__":
    main(sys.argv[1:])
