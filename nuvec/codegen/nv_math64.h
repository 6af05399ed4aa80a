/* nv_math64.h -- nuvec's float64 math library: exp, expm1, log, log1p, log2, log10, and
 * sigmoid, tanh, sinh, cosh, logaddexp and power built on them; sin, cos, tan; arctan, arctan2,
 * arcsin, arccos; arcsinh, arccosh, arctanh (on the logarithm); erf, erfinv. Shared by the C
 * and CUDA dialects (Metal has no float64: NV_NO_F64), so the GPU computes the CPU's bits.
 *
 * The rules of nv_math.h hold: straight-line code (selects, no branches, no tables in memory),
 * so that a C compiler vectorizes the loops that call it (4 lanes with AVX2, 8 with AVX-512,
 * 2 with NEON) and every element gets the same operations wherever it falls; only IEEE-754
 * operations with one rounding each (+ - * / sqrt and explicit fma), never contracted. No
 * 64-bit integer <-> float64 conversions (AVX2 has none): integers reach float64 through a
 * shifted constant's low bits. No 64 x 64-bit integer products (NEON has none): 32 x 32 -> 64.
 * The one branch is the GPU's choice of trigonometric reduction (nv_rem_pio2_any_d), whose
 * two sides give the bits that C's selects do.
 *
 * Accuracy (float64, sampled over the whole range and the hard regions by
 * tests/engine/test_accuracy_f64.py against x87 80-bit long double; the measured maxima are in
 * benchmarks/README.md): exp, log, power, sin, cos, arctan, arctan2, arcsin, arccos, arcsinh,
 * arccosh, arctanh and erf below 1 ulp (faithfully rounded: the result is one of the two floats
 * around the exact value), expm1, log1p, log2, log10, sigmoid, tanh, sinh, cosh and tan within
 * 2 ulp of the correctly rounded result, logaddexp within 2 ulp where its result is not a
 * cancellation (see nv_logaddexp_f64). Polynomial coefficients come from
 * nuvec/codegen/tools/fitpoly64.py (nv_coeffs64.h).
 *
 * Error analyses below count in ulps of the result, "pre-rounding" meaning the error of the
 * value the last operation rounds: below 1/2 ulp, the result is faithful.
 */
#ifndef NV_NO_F64

#define NV_INF_D nv_u2d(0x7ff0000000000000ull)
#define NV_NAN_D nv_u2d(0x7ff8000000000000ull)

typedef struct { double hi; double lo; } nv_dd;            /* unevaluated sum hi + lo */

/* a + b = hi + lo exactly, where |a| >= |b| or a == 0 */
NV_FN nv_dd nv_fast_two_sum_d(double a, double b)
{
    nv_dd r; r.hi = a + b; r.lo = b - (r.hi - a); return r;
}

/* a + b = hi + lo exactly, either of them the larger */
NV_FN nv_dd nv_two_sum_d(double a, double b)
{
    nv_dd r;
    r.hi = a + b;
    double bb = r.hi - a;
    r.lo = (a - (r.hi - bb)) + (b - bb);
    return r;
}

/* c ? a : b. In C, as bit operations on a mask (nv_blend's reason: a select on a condition of
 * the value a broadcast loop reads once is a select on a loop invariant, which gcc does not
 * vectorize); on the GPU the select itself. The same bits either way. */
#if defined(__CUDA_ARCH__)
NV_FN double nv_blend_d(int c, double a, double b) { return c ? a : b; }
#else
NV_FN double nv_blend_d(int c, double a, double b)
{
    uint64_t m = 0ull - (uint64_t)(c != 0);
    return nv_u2d((nv_d2u(a) & m) | (nv_d2u(b) & ~m));
}
#endif

/* ---- exp family ---------------------------------------------------------------------------
 * x = n ln2 + r + e: n the nearest integer to x log2(e), rounded by adding 1.5 2^52 (whose
 * low bits then hold n: 2^n is built from them with integer operations), r = x - n ln2 with
 * ln2 as hi + lo (x - n ln2_hi is exact as one fma: a multiple of 2^-54 below 1/2), and e
 * the rounding error of r, so that r's own rounding (up to 0.35 ulp of exp) is not lost.
 * exp(x) = 2^n (1 + r + q), q = r^2 P(r) + e (1 + r), |r| <= 0.3466, |q| < 0.07. */

#define NV_LOG2E_D 0x1.71547652b82fep+0
#define NV_LN2_HI_D 0x1.62e42fefa39efp-1
#define NV_LN2_LO_D 0x1.abc9e3b39803fp-56
#define NV_SHIFT_D 0x1.8p52

typedef struct { double t; double r; double q; } nv_expparts;

/* the parts of exp(x + xl) for |x| <= 750 and |xl| <= 2^-40 |x|: t = 1.5 2^52 + n */
NV_FN nv_expparts nv_exp_parts2(double x, double xl, int with_xl)
{
    nv_expparts p;
    p.t = fma(x, NV_LOG2E_D, NV_SHIFT_D);
    double n = p.t - NV_SHIFT_D;
    double rh = fma(-n, NV_LN2_HI_D, x);
    p.r = fma(-n, NV_LN2_LO_D, rh);
    /* rh - r is exact where |n ln2_lo| <= |rh| / 2 (Sterbenz); elsewhere |r| < 2^-43 and
     * its rounding error is far below what exp can show */
    double e = fma(-n, NV_LN2_LO_D, rh - p.r);
    e = with_xl ? e + xl : e;                   /* with_xl: a constant where inlined */
    /* exp(r + e) = (1 + r + r^2 P) (1 + e): e q's share is below 2^-59 without xl */
    p.q = fma(p.r * p.r, nv_poly64_exp(p.r), fma(e, p.r, e));
    p.q = with_xl ? fma(e, p.q, p.q) : p.q;
    return p;
}

NV_FN nv_expparts nv_exp_parts(double x) { return nv_exp_parts2(x, 0.0, 0); }

/* 2^(n + m) as a float64 from t = 1.5 2^52 + n, for the integer constant m where n + m is in
 * [-1022, 1023]: the low 12 bits of t's bits are n's, shifted into the exponent field */
NV_FN double nv_pow2_from_t(double t, int64_t m)
{
    return nv_u2d((nv_d2u(t) << 52) + ((uint64_t)(1023 + m) << 52));
}

/* x clamped to [lo, hi]; NaN stays NaN (each caller selects x for it). Both comparisons are
 * of x, so that each select is one compare and one blend (no NaN rules to keep between them) */
NV_FN double nv_clamp_d(double x, double lo, double hi)
{
    double v = x < lo ? lo : x;
    return x > hi ? hi : v;
}

/* exp(x) = 2^n (1 + r + q), with 1 + r = h + l exactly, as s1 (h + l + q) s2, s1 = 2^(n - j)
 * and s2 = 2^j, j = 64 for n > 0 and -64 otherwise: s1 is normal over the whole range, the
 * fma rounds s1 (h + (l + q)) once (the rounding of l + q costs 1/16 ulp at most), and the
 * product by s2 is exact but for a subnormal or an overflowing result, which it rounds once
 * more. x is clamped to [-746, 710] (exp(-746) rounds to 0, exp(710) overflows); below the
 * clamp s2 = 0, an exact product in place of one that underflows, which x86 cores run in
 * microcode. Pre-rounding error below a seventh of an ulp (q's roundings); NaN returns x. */
NV_FN double nv_exp_f64(double x)
{
    double xc = nv_clamp_d(x, -746.0, 710.0);
    nv_expparts p = nv_exp_parts(xc);
    uint64_t s2 = p.t > NV_SHIFT_D ? 0x43f0000000000000ull : 0x3bf0000000000000ull;
    s2 = xc == -746.0 ? 0ull : s2;
    double s1 = nv_u2d((nv_d2u(p.t) << 52) + (0x7fe0000000000000ull - s2));    /* 2^(n-j) */
    double h = 1.0 + p.r;
    double l = (1.0 - h) + p.r;
    double y = fma(s1, h, s1 * (l + p.q)) * nv_u2d(s2);
    return x == x ? y : x;
}

/* exp(x) - 1 = (2^n - 1) + 2^n r + 2^n q: 2^n - 1 is exact for n <= 53, 2^n r is exact, and
 * their sum is split exactly (|2^n - 1| >= |2^n r| or 2^n = 1), so only 2^n q's additions
 * round before the last (pre-rounding error below half an ulp; above n = 53 the rounding of
 * 2^n - 1 adds at most half an ulp). For n > 0 the terms are scaled by 2^-64 and the result by
 * 2^64 (exact, but where it overflows), so the whole range needs no separate exp. Below -40 the
 * result is -1 (the clamp); -0 returns -0, NaN returns x. */
NV_FN double nv_expm1_f64(double x)
{
    double xc = nv_clamp_d(x, -40.0, 710.0);
    nv_expparts p = nv_exp_parts(xc);
    uint64_t j = p.t > NV_SHIFT_D ? 0x0400000000000000ull : 0ull;     /* 64 << 52 or 0 */
    double s1 = nv_u2d((nv_d2u(p.t) << 52) + (0x3ff0000000000000ull - j));    /* 2^(n-j) */
    double one = nv_u2d(0x3ff0000000000000ull - j);                           /* 2^-j */
    nv_dd a = nv_fast_two_sum_d(s1 - one, s1 * p.r);
    double y = (a.hi + fma(s1, p.q, a.lo)) * nv_u2d(0x3ff0000000000000ull + j);
    y = x == 0.0 ? x : y;
    return x == x ? y : x;
}

/* ---- log family ---------------------------------------------------------------------------
 * x = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact), s = f / (2 + f), z = s^2:
 * log(1 + f) = f - c_h + s (c_h + z P(z)) with c_h = f^2 / 2 (the identity f - 2s = s f =
 * c_h - s c_h, and 2 atanh(s) - 2s = s z P(z)). f^2 is split exactly into c_h + c_l (c_h
 * = f f / 2 rounded, c_l its error, by an fma), and k ln2_hi + f - c_h is summed exactly (ln2_hi
 * has 42 bits, so k ln2_hi is exact; two fast two-sums, each with the larger term first), so
 * the roundings before the last one are those of the small terms: s (c_h + zP) (at most 0.02,
 * the division's error reaching it through s), c_l, k ln2_lo and the sums of these, a tenth of
 * an ulp of the result or so. */

#define NV_LN2_HI42_D 0x1.62e42fefa3800p-1                /* 42 bits: k ln2_hi is exact */
#define NV_LN2_LO42_D 0x1.ef35793c7673p-45
#define NV_SQRT_HALF_BITS 0x3fe6a09e667f3bcdull

/* log x = k ln2 + f - ch + rest, k, f, ch exact values, |rest| < 0.03 */
typedef struct { double k; double f; double ch; double rest; } nv_logparts64;

/* the reduction of a positive normal float64 u (its bits): k + 1023, k as a float64, and m */
typedef struct { uint64_t kb; double k; double m; } nv_logred64;

NV_FN nv_logred64 nv_log_reduce64(uint64_t u)
{
    /* (u - bits(sqrt(1/2))) >> 52 is k, as a signed difference; adding 1023 << 52 first
     * keeps it nonnegative (k + 1023 in [1, 2047]) for a logical shift */
    nv_logred64 p;
    p.kb = (u - NV_SQRT_HALF_BITS + 0x3ff0000000000000ull) >> 52;
    p.m = nv_u2d(u - (p.kb << 52) + 0x3ff0000000000000ull);
    p.k = nv_u2d(p.kb | 0x4330000000000000ull) - 0x1.00000000003ffp+52;  /* kb - 1023 */
    return p;
}

/* the parts of log(2^k (1 + f + fl)), |f| <= sqrt(2) - 1, |fl| <= ulp(f) (or f = 0), fl's
 * share taken as fl / (1 + f) = fl (1 - f), off by fl f^2 / (1 + f) < ulp(f) / 8 */
NV_FN nv_logparts64 nv_log_parts_f(double k, double f, double fl)
{
    double s = f / (2.0 + f);
    double z = s * s;
    double sq = f * f;
    double ch = 0.5 * sq;
    double cl = 0.5 * fma(f, f, -sq);
    nv_logparts64 p;
    p.k = k;
    p.f = f;
    p.ch = ch;
    p.rest = fma(s, fma(z, nv_poly64_log(z), ch), fma(-fl, f, fl) - cl);
    return p;
}

/* the parts of log x for positive finite x (normal, or subnormal: scaled by 2^52 first) */
NV_FN nv_logparts64 nv_log_parts64(double x)
{
    int sub = x < 0x1p-1022;
    nv_logred64 p = nv_log_reduce64(nv_d2u(sub ? x * 0x1p52 : x));
    return nv_log_parts_f(p.k - (sub ? 52.0 : 0.0), p.m - 1.0, 0.0);
}

/* log as hi + lo, |lo| <= ulp(hi) or so */
NV_FN nv_dd nv_log_sum(nv_logparts64 p)
{
    nv_dd a = nv_fast_two_sum_d(p.k * NV_LN2_HI42_D, p.f);    /* |k ln2| > |f| or k = 0 */
    nv_dd b = nv_fast_two_sum_d(a.hi, -p.ch);                   /* |a.hi| > 0.27 or k = 0 */
    b.lo = (a.lo + b.lo) + fma(p.k, NV_LN2_LO42_D, p.rest);
    return b;
}

/* a logarithm's value where x is positive and finite, else its limit: -inf at +-0, NaN
 * below, x itself at +inf and NaN */
NV_FN double nv_log_select_d(double x, double res)
{
    double sp = x == 0.0 ? -NV_INF_D : (x < 0.0 ? NV_NAN_D : x);
    return x > 0.0 & x < NV_INF_D ? res : sp;
}

NV_FN double nv_log_f64(double x)
{
    nv_dd s = nv_log_sum(nv_log_parts64(x));
    return nv_log_select_d(x, s.hi + s.lo);
}

#define NV_INVLN2_HI_D 0x1.71547652b82fep+0
#define NV_INVLN2_LO_D 0x1.777d0ffda0d24p-56
#define NV_INVLN10_HI_D 0x1.bcb7b1526e50ep-2
#define NV_INVLN10_LO_D 0x1.95355baaafad3p-57
#define NV_LG2_HI42_D 0x1.34413509f7800p-2              /* log10(2), 42 bits */
#define NV_LG2_LO42_D 0x1.fef311f12b358p-46

/* (f - ch + rest) / ln(b) as hi + lo for 1/ln(b) = c_hi + c_lo: f c_hi and ch c_hi exactly
 * as products and their errors (fma), their difference split exactly (|f| > |ch|), the rest
 * rounded */
NV_FN nv_dd nv_log_scaled(nv_logparts64 p, double c_hi, double c_lo)
{
    double t = p.f * c_hi;
    double u = p.ch * c_hi;
    nv_dd v = nv_fast_two_sum_d(t, -u);
    double err = fma(p.f, c_hi, -t) - fma(p.ch, c_hi, -u);
    v.lo = v.lo + (err + fma(p.f - p.ch, c_lo, p.rest * c_hi));
    return v;
}

/* log2 x = k + log(m) / ln2: k + hi is summed exactly (|hi| <= 1/2 < |k| where k != 0) */
NV_FN double nv_log2_f64(double x)
{
    nv_logparts64 p = nv_log_parts64(x);
    nv_dd v = nv_log_scaled(p, NV_INVLN2_HI_D, NV_INVLN2_LO_D);
    nv_dd s = nv_fast_two_sum_d(p.k, v.hi);
    return nv_log_select_d(x, s.hi + (s.lo + v.lo));
}

/* log10 x = k log10(2) + log(m) / ln10: k log10(2)_hi is exact (42 bits) and larger than
 * |log10(m)| <= 0.16 where k != 0 */
NV_FN double nv_log10_f64(double x)
{
    nv_logparts64 p = nv_log_parts64(x);
    nv_dd v = nv_log_scaled(p, NV_INVLN10_HI_D, NV_INVLN10_LO_D);
    nv_dd s = nv_fast_two_sum_d(p.k * NV_LG2_HI42_D, v.hi);
    return nv_log_select_d(x, s.hi + (s.lo + fma(p.k, NV_LG2_LO42_D, v.lo)));
}

/* log(uh + ul + ul2) as hi + lo, uh positive, normal and finite, |ul| <= ulp(uh), |ul2| <=
 * ulp(ul) (with_ul2 a constant; 0 leaves ul2 out): uh = 2^k m as above and c = ul 2^-k
 * (exact; the scale is 0 for k >= 1023, uh >= 2^1022.5, where every caller's ul is 0), |c| <=
 * ulp(m) <= |m - 1| unless m = 1, so m - 1 + c = f + fl exactly (fast two-sum), and ul2 2^-k
 * joins fl */
NV_FN nv_dd nv_log_dd2(double uh, double ul, double ul2, int with_ul2)
{
    nv_logred64 p = nv_log_reduce64(nv_d2u(uh));
    uint64_t kb = p.kb < 2046u ? p.kb : 2046u;
    double scale = nv_u2d(0x7fe0000000000000ull - (kb << 52));             /* 2^-k */
    nv_dd a = nv_fast_two_sum_d(p.m - 1.0, ul * scale);
    a.lo = with_ul2 ? a.lo + ul2 * scale : a.lo;
    return nv_log_sum(nv_log_parts_f(p.k, a.hi, a.lo));
}

/* log1p x = log(uh + ul), uh + ul = 1 + x exactly (uh >= 2^-53 is normal for x > -1); for
 * |x| >= 2^60, ul (at most 1) is dropped: it would only add subnormal arithmetic there.
 * log1p(+-0) = +-0, -1 gives -inf, below it NaN, +inf and NaN return x. */
NV_FN double nv_log1p_f64(double x)
{
    double uh = 1.0 + x;
    double ul = fabs(x) <= 1.0 ? (1.0 - uh) + x : (x - uh) + 1.0;
    ul = fabs(x) < 0x1p60 ? ul : 0.0;
    nv_dd s = nv_log_dd2(uh, ul, 0.0, 0);
    double res = s.hi + s.lo;
    double sp = uh == 0.0 ? -NV_INF_D : (uh < 0.0 ? NV_NAN_D : x);
    res = uh > 0.0 & uh < NV_INF_D ? res : sp;
    return x == 0.0 ? x : res;
}

/* ---- hyperbolic ------------------------------------------------------------------------------ */

/* e^a / 2 for 0 <= a <= 711, normalized hi + lo, scaled by 2^-64 where n > 512 (then the
 * scale is 2^64, else 1): finite wherever cosh is */
typedef struct { nv_dd e; double scale; } nv_exphalf;

NV_FN nv_exphalf nv_exp_half_dd(double a)
{
    nv_expparts p = nv_exp_parts(a);
    int big = p.t > NV_SHIFT_D + 512.0;
    uint64_t j = big ? 0x0400000000000000ull : 0ull;
    double s1 = nv_u2d((nv_d2u(p.t) << 52) + (0x3fe0000000000000ull - j)); /* 2^(n-1-j) */
    double h = 1.0 + p.r;
    double l = (1.0 - h) + p.r;
    nv_exphalf r;
    r.e = nv_fast_two_sum_d(s1 * h, s1 * (l + p.q));
    r.scale = nv_u2d(0x3ff0000000000000ull + j);
    return r;
}

/* cosh a = e^a / 2 + 1 / (4 e^a / 2): both terms positive, the second (below 1/2) rounded
 * once by the division and once in its sum with the low part (1/4 ulp in all); above
 * n = 512 it is 0 next to the first. NaN returns x. */
NV_FN double nv_cosh_f64(double x)
{
    double a = fabs(x);
    a = a < 711.0 ? a : 711.0;                  /* NaN gives 711 too: x is returned */
    nv_exphalf eh = nv_exp_half_dd(a);
    double d = 0.25 / eh.e.hi;
    d = eh.scale == 1.0 ? d : 0.0;
    double v = (eh.e.hi + (eh.e.lo + d)) * eh.scale;
    return x == x ? v : x;
}

/* |x| < 1: a + a^3 P(a^2) (a^3 P at most 0.18 of the result); above, e^a / 2 - 1 / (4 e^a / 2)
 * as cosh (the difference cancels at most a factor 1.3). The sign of x is or-ed in (sinh(-0)
 * is -0); NaN returns x. */
NV_FN double nv_sinh_f64(double x)
{
    double a = fabs(x);
    double z = a * a;
    double small = fma(a * z, nv_poly64_sinh(z), a);
    double ac = a < 711.0 ? a : 711.0;
    nv_exphalf eh = nv_exp_half_dd(ac);
    double d = 0.25 / eh.e.hi;
    d = eh.scale == 1.0 ? d : 0.0;
    double big = (eh.e.hi + (eh.e.lo - d)) * eh.scale;
    double v = a < 1.0 ? small : big;
    v = nv_u2d(nv_d2u(v) | (nv_d2u(x) & 0x8000000000000000ull));
    return x == x ? v : x;
}

/* tanh a = m / (m + 2), m = expm1(2a) = (2^n - 1) + 2^n r + 2^n q carried as hi + lo (as in
 * nv_expm1_f64; n <= 58 here, so no split scaling), m + 2 as hi + lo, and the quotient
 * corrected once by its remainder: the pre-rounding error is m's relative error (about
 * 2^-55) and the remainder's roundings. a = |x| is clamped at 20, where the quotient rounds
 * to 1. The sign of x is or-ed in; NaN returns x. */
NV_FN double nv_tanh_f64(double x)
{
    double a = fabs(x);
    a = a < 20.0 ? a : 20.0;
    nv_expparts p = nv_exp_parts(a + a);
    double s = nv_pow2_from_t(p.t, 0);
    nv_dd m = nv_fast_two_sum_d(s - 1.0, s * p.r);
    m = nv_fast_two_sum_d(m.hi, fma(s, p.q, m.lo));
    double dh = m.hi + 2.0;
    double dl = (m.hi <= 2.0 ? (2.0 - dh) + m.hi : (m.hi - dh) + 2.0) + m.lo;
    double inv = 1.0 / dh;
    double q0 = m.hi * inv;
    double rem = fma(-q0, dh, m.hi) + fma(-q0, dl, m.lo);
    double v = fma(rem, inv, q0);
    v = nv_u2d(nv_d2u(v) | (nv_d2u(x) & 0x8000000000000000ull));
    return x == x ? v : x;
}

/* ---- sigmoid, logaddexp ---------------------------------------------------------------------- */

/* t = e^y for -746 <= y <= 0 from exp's parts: hi + lo (exp's steps before its last rounding,
 * t <= 1), scaled by 2^64 where n < -960 (deep) so that it stays normal; unscale is then 2^-64,
 * else 1 */
typedef struct { nv_dd t; int deep; double unscale; } nv_expneg;

NV_FN nv_expneg nv_exp_neg_dd(nv_expparts p)
{
    nv_expneg e;
    e.deep = p.t < NV_SHIFT_D - 960.0;
    uint64_t j = e.deep ? 0x0400000000000000ull : 0ull;
    double s1 = nv_u2d((nv_d2u(p.t) << 52) + (0x3ff0000000000000ull + j));   /* 2^(n+j) */
    double h = 1.0 + p.r;
    double l = (1.0 - h) + p.r;
    e.t = nv_fast_two_sum_d(s1 * h, s1 * (l + p.q));
    e.unscale = nv_u2d(0x3ff0000000000000ull - j);
    return e;
}

/* 1 / (1 + t) for x >= 0 and t / (1 + t) for x < 0, t = exp(-|x|) carried as hi + lo (exp's
 * steps before its last rounding), the quotient corrected once by its remainder. Where
 * |x| > 665 (n < -960) t is scaled by 2^64 to stay normal: the result is 1 for x >= 0 (t is
 * still far below 2^-54) and t itself for x < 0, rounded once from hi + lo (subnormal results
 * twice, the second rounding dominating). NaN returns x. */
NV_FN double nv_sigmoid_f64(double x)
{
    double a = fabs(x);
    a = a < 746.0 ? a : 746.0;                  /* NaN gives 746 too: x is returned */
    nv_expneg e = nv_exp_neg_dd(nv_exp_parts(-a));
    nv_dd t = e.t;
    nv_dd d = nv_fast_two_sum_d(1.0, t.hi);
    d.lo = d.lo + t.lo;
    int pos = x >= 0.0;
    double nh = pos ? 1.0 : t.hi, nl = pos ? 0.0 : t.lo;
    double inv = 1.0 / d.hi;
    double q0 = nh * inv;
    double rem = fma(-q0, d.hi, nh) + fma(-q0, d.lo, nl);
    double v = fma(rem, inv, q0);
    double tiny = (t.hi + t.lo) * e.unscale;
    v = e.deep & !pos ? tiny : v;
    return x == x ? v : x;
}

/* log(e^x + e^y) = m + log1p(t), m = max(x, y), t = exp(d) with d = min - max <= 0 split
 * exactly into hi + lo (two-sum) so that d's rounding does not reach t, t carried as hi + lo,
 * 1 + t too, and log1p(t) as hi + lo (nv_log_dd2); m + its hi part is split exactly, so the
 * errors before the last rounding are about 2^-57 of log1p(t) <= ln2: within 2 ulp of the
 * result where it does not cancel (|result| >= |m| / 2 or so), and within 2 ulp of the result
 * plus under half an ulp of m where it does. Where t would be subnormal (d < -708),
 * log1p(t) = t, scaled as in nv_sigmoid_f64. x == y gives x + ln2 (infinities too); a NaN
 * gives x + y. */
NV_FN double nv_logaddexp_f64(double x, double y)
{
    double m = x > y ? x : y;
    double mn = x > y ? y : x;
    double dh = mn - m;
    double bb = dh - mn;
    double dl = (mn - (dh - bb)) - (m + bb);
    int far = dh < -746.0;                      /* and -inf (and NaN: x + y is returned) */
    dh = far ? -746.0 : dh;
    dl = far ? 0.0 : dl;
    nv_expneg e = nv_exp_neg_dd(nv_exp_parts2(dh, dl, 1));
    nv_dd t = e.t;
    nv_dd u = nv_fast_two_sum_d(1.0, t.hi);
    nv_dd lg = nv_log_dd2(u.hi, u.lo, t.lo, 1);
    double tiny = (t.hi + t.lo) * e.unscale;
    lg.hi = e.deep ? tiny : lg.hi;
    lg.lo = e.deep ? 0.0 : lg.lo;
    /* m + lg.hi exactly (two-sum: either may be the larger) */
    double sh = m + lg.hi;
    double sb = sh - m;
    double sl = (m - (sh - sb)) + (lg.hi - sb);
    sl = fabs(m) < NV_INF_D ? sl : 0.0;         /* m = +-inf: sl is NaN (inf - inf) */
    double v = sh + (sl + lg.lo);
    v = x == y ? x + NV_LN2_HI_D : v;
    return x == x & y == y ? v : x + y;
}

/* ---- power -------------------------------------------------------------------------------- */

#define NV_TWO_THIRDS_HI 0x1.5555555555555p-1
#define NV_TWO_THIRDS_LO 0x1.5555555555555p-55
#define NV_TWO_FIFTHS_HI 0x1.999999999999ap-2
#define NV_TWO_FIFTHS_LO -0x1.999999999999ap-56

/* log x as hi + lo to about 2^-66 of its value, for positive finite x (pow's: y log x reaches
 * 745 and must stay within a small fraction of an ulp of exp's argument): x = 2^k m as in
 * nv_log_parts64, s = f / (2 + f) as hi + lo (f times 1 / (2 + f), corrected by the remainder
 * that an fma takes exactly), log m = 2s + s z R(z), z = s^2 as hi + lo, R = 2/3 + 2z/5 +
 * z^2 R2(z) with 2/3 and 2/5 as hi + lo and z^2 R2 (at most 4e-4 of R) in float64, the products
 * s z R carried as hi + lo; k ln2 with ln2's low part multiplied exactly. */
NV_FN nv_dd nv_log_pow_dd(double x)
{
    int sub = x < 0x1p-1022;
    nv_logred64 p = nv_log_reduce64(nv_d2u(sub ? x * 0x1p52 : x));
    double k = p.k - (sub ? 52.0 : 0.0);
    double f = p.m - 1.0;
    double dh = 2.0 + f;
    double dl = (2.0 - dh) + f;                 /* 2 + f = dh + dl exactly */
    double inv = 1.0 / dh;
    double sh = f * inv;
    double sl = (fma(-sh, dh, f) - sh * dl) * inv;
    double zh = sh * sh;
    double zl = fma(sh, sh, -zh) + 2.0 * sh * sl;
    double uh = zh * NV_TWO_FIFTHS_HI;          /* 2z/5 */
    double ul = fma(zh, NV_TWO_FIFTHS_HI, -uh) + (zl * NV_TWO_FIFTHS_HI + zh * NV_TWO_FIFTHS_LO);
    nv_dd r = nv_fast_two_sum_d(NV_TWO_THIRDS_HI, uh);
    r.lo = r.lo + ((NV_TWO_THIRDS_LO + ul) + (zh * zh) * nv_poly64_log_r2(zh));
    double ph = sh * zh;                        /* s z */
    double pl = fma(sh, zh, -ph) + (sh * zl + sl * zh);
    double th = ph * r.hi;                      /* s z R */
    double tl = fma(ph, r.hi, -th) + (ph * r.lo + pl * r.hi);
    nv_dd a = nv_fast_two_sum_d(2.0 * sh, th);  /* |2s| > |s z R| */
    double kl = k * NV_LN2_LO42_D;
    nv_dd b = nv_fast_two_sum_d(k * NV_LN2_HI42_D, a.hi);
    double lo = b.lo + ((a.lo + (2.0 * sl + tl)) + (kl + fma(k, NV_LN2_LO42_D, -kl)));
    return nv_fast_two_sum_d(b.hi, lo);
}

/* |x|^y for finite x != 0 and finite y: exp(y log|x|) with y log|x| = t as hi + lo (t's error
 * about 2^-66 |t|, so at most 2^-56.5 at the overflow and underflow thresholds) and exp's steps
 * with t's low part in the reduction (nv_exp_parts2); the argument is clamped as in
 * nv_exp_f64, t's low part dropped where it is */
NV_FN double nv_pow_abs_f64(double ax, double y)
{
    nv_dd l = nv_log_pow_dd(ax);
    double th = y * l.hi;
    double tl = fma(y, l.hi, -th) + y * l.lo;
    double tc = nv_clamp_d(th, -746.0, 710.0);
    tl = tc == th ? tl : 0.0;
    nv_expparts p = nv_exp_parts2(tc, tl, 1);
    uint64_t s2 = p.t > NV_SHIFT_D ? 0x43f0000000000000ull : 0x3bf0000000000000ull;
    s2 = tc == -746.0 ? 0ull : s2;
    double s1 = nv_u2d((nv_d2u(p.t) << 52) + (0x7fe0000000000000ull - s2));
    double h = 1.0 + p.r;
    double lo = (1.0 - h) + p.r;
    return fma(s1, h, s1 * (lo + p.q)) * nv_u2d(s2);
}

/* x^y with C99's (and NumPy's) special cases: y = +-0 or x = 1 give 1 (NaN too), then a NaN
 * argument gives itself (x's where both are; a sum of the operand with itself, so the payload
 * does not depend on a commutative sum's order); |y| = inf gives 1 for |x| = 1, else 0 or inf;
 * x = +-0 or +-inf give 0 or inf; a negative x (-0 and -inf too) flips the sign for an odd
 * integer y, and gives NaN for a non-integer y where it is finite and nonzero. Every select on
 * the arguments is a blend (nv_blend_d). */
NV_FN double nv_power_f64(double x, double y)
{
    double ax = fabs(x);
    int regular = ax > 0.0 & ax < NV_INF_D;
    double r = nv_pow_abs_f64(nv_blend_d(regular, ax, 1.0), nv_blend_d(fabs(y) < NV_INF_D, y, 0.0));
    double lim = nv_blend_d((ax == 0.0) == (y > 0.0), 0.0, NV_INF_D);
    r = nv_blend_d(regular, r, lim);
    double ylim = nv_blend_d(ax == 1.0, 1.0, nv_blend_d((ax < 1.0) == (y > 0.0), 0.0, NV_INF_D));
    r = nv_blend_d(fabs(y) == NV_INF_D, ylim, r);
    double yh = 0.5 * y;
    int odd = (floor(yh) != yh) & (fabs(y) < 0x1p53);
    double neg = nv_blend_d(odd, -r, r);
    neg = nv_blend_d(floor(y) != y, nv_blend_d(regular, NV_NAN_D, r), neg);
    r = nv_blend_d((int)(nv_d2u(x) >> 63), neg, r);
    r = nv_blend_d(y != y, y + y, r);
    r = nv_blend_d(x != x, x + x, r);
    return nv_blend_d((y == 0.0) | (x == 1.0), 1.0, r);
}

/* ---- sin / cos / tan --------------------------------------------------------------------------
 * |x| = q pi/2 + r, r carried as hi + lo, |r| <= pi/4 (and a little), by one of two reductions,
 * each element by its own |x| (so that its bits depend on x alone): below NV_TRIG_SMALL_D,
 * Cody-Waite with pi/2 in three float64 pieces; from there on, Payne-Hanek: integer arithmetic
 * on 1216 bits of 2/pi, exact for every finite double. The C kernels run the Cody-Waite
 * functions alone (nv_sin_small_f64, ...) over blocks without an argument in
 * [NV_TRIG_SMALL_D, inf) (nv_trig_large_f64, the guard of ElementwiseOp.split_f64), the full
 * ones over the other blocks; inf and NaN give the same bits through both. The closest double
 * to a multiple of pi/2 is about 2^-61 from it, so r must be right to some 2^-120 absolute:
 * both reductions are (see each), and r's relative error stays below 2^-62. */

typedef struct { uint64_t q; double hi; double lo; } nv_reduced64;

#define NV_TRIG_SMALL_D 0x1p32
#define NV_2_OVER_PI_D 0x1.45f306dc9c883p-1
/* pi/2 = P1 + P2 + P3 + (about 2^-163) */
#define NV_PIO2_1_D 0x1.921fb54442d18p+0
#define NV_PIO2_2_D 0x1.1a62633145c07p-54
#define NV_PIO2_3_D -0x1.f1976b7ed8fbcp-110

/* |x| = q pi/2 + (hi + lo) for |x| < NV_TRIG_SMALL_D (Cody-Waite). q = rint(|x| 2/pi) through
 * the shift constant (its low bits hold q); |x| - q P1 is exact as one fma (below 1 in
 * magnitude, a multiple of 2^-53 or of ulp(x)); q P2 is split exactly into p2 + e2 and r1 - p2
 * exactly into hi + lo; e2 + q P3 is rounded once: an absolute error of about q 2^-159 <
 * 2^-127, with P1 + P2 + P3's own. inf and NaN give NaN pieces (the callers return x - x). */
NV_FN nv_reduced64 nv_rem_pio2_small_d(double x)
{
    double a = fabs(x);
    double t = fma(a, NV_2_OVER_PI_D, NV_SHIFT_D);
    double q = t - NV_SHIFT_D;
    double r1 = fma(-q, NV_PIO2_1_D, a);
    double p2 = q * NV_PIO2_2_D;
    double e2 = fma(q, NV_PIO2_2_D, -p2);
    nv_dd h = nv_two_sum_d(r1, -p2);
    double lo = h.lo - fma(q, NV_PIO2_3_D, e2);
    nv_dd r = nv_fast_two_sum_d(h.hi, lo);
    nv_reduced64 out;
    out.q = nv_d2u(t) & 3u;
    out.hi = r.hi;
    out.lo = r.lo;
    return out;
}

/* bits 1..1184 of 2/pi (bit 1 the first after the binary point), 32 to a word, most
 * significant first; word 0 (zeros) stands for the bits above the binary point */
#define NV_TPW1 0xa2f9836eu
#define NV_TPW2 0x4e441529u
#define NV_TPW3 0xfc2757d1u
#define NV_TPW4 0xf534ddc0u
#define NV_TPW5 0xdb629599u
#define NV_TPW6 0x3c439041u
#define NV_TPW7 0xfe5163abu
#define NV_TPW8 0xdebbc561u
#define NV_TPW9 0xb7246e3au
#define NV_TPW10 0x424dd2e0u
#define NV_TPW11 0x06492eeau
#define NV_TPW12 0x09d1921cu
#define NV_TPW13 0xfe1deb1cu
#define NV_TPW14 0xb129a73eu
#define NV_TPW15 0xe88235f5u
#define NV_TPW16 0x2ebb4484u
#define NV_TPW17 0xe99c7026u
#define NV_TPW18 0xb45f7e41u
#define NV_TPW19 0x3991d639u
#define NV_TPW20 0x835339f4u
#define NV_TPW21 0x9c845f8bu
#define NV_TPW22 0xbdf9283bu
#define NV_TPW23 0x1ff897ffu
#define NV_TPW24 0xde05980fu
#define NV_TPW25 0xef2f118bu
#define NV_TPW26 0x5a0a6d1fu
#define NV_TPW27 0x6d367ecfu
#define NV_TPW28 0x27cb09b7u
#define NV_TPW29 0x4f463f66u
#define NV_TPW30 0x9e5fea2du
#define NV_TPW31 0x7527bac7u
#define NV_TPW32 0xebe5f17bu
#define NV_TPW33 0x3d0739f7u
#define NV_TPW34 0x8a5292eau
#define NV_TPW35 0x6bfb5fb1u
#define NV_TPW36 0x1f8d5d08u
#define NV_TPW37 0x56033046u

typedef struct { uint32_t w[7]; } nv_tpw_window;

#define NV_TPW_AT(k, a, b, c, d, e, f, g)                                                        \
    m = 0u - (uint32_t)(k0 == k);                                                               \
    r.w[0] |= (a) & m; r.w[1] |= (b) & m; r.w[2] |= (c) & m; r.w[3] |= (d) & m;                 \
    r.w[4] |= (e) & m; r.w[5] |= (f) & m; r.w[6] |= (g) & m;

/* words k0 .. k0 + 6 of the table, 0 <= k0 <= 31: masks rather than a table in memory, which
 * would take a gather (NEON has none) and a constant bank of its own on the GPU */
NV_FN nv_tpw_window nv_tpw_words(uint32_t k0)
{
    nv_tpw_window r = {{0u, 0u, 0u, 0u, 0u, 0u, 0u}};
    uint32_t m;
    NV_TPW_AT(0, 0u, NV_TPW1, NV_TPW2, NV_TPW3, NV_TPW4, NV_TPW5, NV_TPW6)
    NV_TPW_AT(1, NV_TPW1, NV_TPW2, NV_TPW3, NV_TPW4, NV_TPW5, NV_TPW6, NV_TPW7)
    NV_TPW_AT(2, NV_TPW2, NV_TPW3, NV_TPW4, NV_TPW5, NV_TPW6, NV_TPW7, NV_TPW8)
    NV_TPW_AT(3, NV_TPW3, NV_TPW4, NV_TPW5, NV_TPW6, NV_TPW7, NV_TPW8, NV_TPW9)
    NV_TPW_AT(4, NV_TPW4, NV_TPW5, NV_TPW6, NV_TPW7, NV_TPW8, NV_TPW9, NV_TPW10)
    NV_TPW_AT(5, NV_TPW5, NV_TPW6, NV_TPW7, NV_TPW8, NV_TPW9, NV_TPW10, NV_TPW11)
    NV_TPW_AT(6, NV_TPW6, NV_TPW7, NV_TPW8, NV_TPW9, NV_TPW10, NV_TPW11, NV_TPW12)
    NV_TPW_AT(7, NV_TPW7, NV_TPW8, NV_TPW9, NV_TPW10, NV_TPW11, NV_TPW12, NV_TPW13)
    NV_TPW_AT(8, NV_TPW8, NV_TPW9, NV_TPW10, NV_TPW11, NV_TPW12, NV_TPW13, NV_TPW14)
    NV_TPW_AT(9, NV_TPW9, NV_TPW10, NV_TPW11, NV_TPW12, NV_TPW13, NV_TPW14, NV_TPW15)
    NV_TPW_AT(10, NV_TPW10, NV_TPW11, NV_TPW12, NV_TPW13, NV_TPW14, NV_TPW15, NV_TPW16)
    NV_TPW_AT(11, NV_TPW11, NV_TPW12, NV_TPW13, NV_TPW14, NV_TPW15, NV_TPW16, NV_TPW17)
    NV_TPW_AT(12, NV_TPW12, NV_TPW13, NV_TPW14, NV_TPW15, NV_TPW16, NV_TPW17, NV_TPW18)
    NV_TPW_AT(13, NV_TPW13, NV_TPW14, NV_TPW15, NV_TPW16, NV_TPW17, NV_TPW18, NV_TPW19)
    NV_TPW_AT(14, NV_TPW14, NV_TPW15, NV_TPW16, NV_TPW17, NV_TPW18, NV_TPW19, NV_TPW20)
    NV_TPW_AT(15, NV_TPW15, NV_TPW16, NV_TPW17, NV_TPW18, NV_TPW19, NV_TPW20, NV_TPW21)
    NV_TPW_AT(16, NV_TPW16, NV_TPW17, NV_TPW18, NV_TPW19, NV_TPW20, NV_TPW21, NV_TPW22)
    NV_TPW_AT(17, NV_TPW17, NV_TPW18, NV_TPW19, NV_TPW20, NV_TPW21, NV_TPW22, NV_TPW23)
    NV_TPW_AT(18, NV_TPW18, NV_TPW19, NV_TPW20, NV_TPW21, NV_TPW22, NV_TPW23, NV_TPW24)
    NV_TPW_AT(19, NV_TPW19, NV_TPW20, NV_TPW21, NV_TPW22, NV_TPW23, NV_TPW24, NV_TPW25)
    NV_TPW_AT(20, NV_TPW20, NV_TPW21, NV_TPW22, NV_TPW23, NV_TPW24, NV_TPW25, NV_TPW26)
    NV_TPW_AT(21, NV_TPW21, NV_TPW22, NV_TPW23, NV_TPW24, NV_TPW25, NV_TPW26, NV_TPW27)
    NV_TPW_AT(22, NV_TPW22, NV_TPW23, NV_TPW24, NV_TPW25, NV_TPW26, NV_TPW27, NV_TPW28)
    NV_TPW_AT(23, NV_TPW23, NV_TPW24, NV_TPW25, NV_TPW26, NV_TPW27, NV_TPW28, NV_TPW29)
    NV_TPW_AT(24, NV_TPW24, NV_TPW25, NV_TPW26, NV_TPW27, NV_TPW28, NV_TPW29, NV_TPW30)
    NV_TPW_AT(25, NV_TPW25, NV_TPW26, NV_TPW27, NV_TPW28, NV_TPW29, NV_TPW30, NV_TPW31)
    NV_TPW_AT(26, NV_TPW26, NV_TPW27, NV_TPW28, NV_TPW29, NV_TPW30, NV_TPW31, NV_TPW32)
    NV_TPW_AT(27, NV_TPW27, NV_TPW28, NV_TPW29, NV_TPW30, NV_TPW31, NV_TPW32, NV_TPW33)
    NV_TPW_AT(28, NV_TPW28, NV_TPW29, NV_TPW30, NV_TPW31, NV_TPW32, NV_TPW33, NV_TPW34)
    NV_TPW_AT(29, NV_TPW29, NV_TPW30, NV_TPW31, NV_TPW32, NV_TPW33, NV_TPW34, NV_TPW35)
    NV_TPW_AT(30, NV_TPW30, NV_TPW31, NV_TPW32, NV_TPW33, NV_TPW34, NV_TPW35, NV_TPW36)
    NV_TPW_AT(31, NV_TPW31, NV_TPW32, NV_TPW33, NV_TPW34, NV_TPW35, NV_TPW36, NV_TPW37)
    return r;
}
#undef NV_TPW_AT

/* the low and high 32 bits of a 64-bit word */
#define NV_LO32(v) ((v) & 0xffffffffull)
#define NV_HI32(v) ((v) >> 32)

/* |x| = q pi/2 + (hi + lo) for finite |x| >= 2^22 (Payne-Hanek). |x| = m 2^s, m the 53-bit
 * integer significand; the bits of 2/pi of weight 2^(s-2) and above add multiples of 4 to
 * x 2/pi, so the 192-bit window W of the bits from 2^(1-s) down does the rest: x 2/pi =
 * m W 2^-190 mod 4, up to less than 2^-137. Of P = m W mod 2^192, the high 128 bits
 * (2^-126 units, the top two bits the quadrant) are summed column by column in 32-bit digits
 * (11 products; the low 64 bits reach them through the carries only, the ones above 2^192
 * are multiples of 4). The fraction F around the nearest quadrant is then |F| < 2^125 (and at
 * least about 2^64 for any double: r's relative error below 2^-62), cut into three pieces of
 * at most 42 bits that convert exactly (through the shift constant 2^52: AVX2 has no 64-bit
 * conversion), summed as hi + lo and multiplied by pi/2 2^-126. Every product is of two
 * 32-bit values, computed as such (m's halves converted from float64, W's digits shifted
 * from 32-bit words): the vector ISAs have that multiply, and NEON has no 64-bit one. Other x
 * (below 2^22, inf, NaN) give meaningless pieces (the window is out of the table, or the
 * significand is not one; no undefined operation): the callers select their own values. */
NV_FN nv_reduced64 nv_rem_pio2_large_d(double x)
{
    uint64_t u = nv_d2u(x) & 0x7fffffffffffffffull;
    /* m = m2 2^32 + m1 2^16 + m0 in float64, each piece then exactly a float32 (its bits
     * give it as a 32-bit integer) */
    double md = nv_u2d((u & 0x000fffffffffffffull) | 0x4330000000000000ull);
    double m2d = floor(md * 0x1p-32);
    double rd = fma(m2d, -0x1p32, md);
    double m1d = floor(rd * 0x1p-16);
    double m0d = fma(m1d, -0x1p16, rd);
    uint32_t m2 = nv_f2u((float)m2d + 0x1p23f) - 0x4b000000u;
    uint32_t m1 = nv_f2u((float)m1d + 0x1p23f) - 0x4b000000u;
    uint32_t m0 = nv_f2u((float)m0d + 0x1p23f) - 0x4b000000u;
    uint32_t p0 = (uint32_t)(u >> 52) - 1045u;  /* bit index of W's top bit, word 0 first */
    uint32_t bo = p0 & 31u;
    nv_tpw_window t = nv_tpw_words(p0 >> 5);
    /* << (31 - bo) >> 1 is >> (32 - bo), 0 for bo = 0; d5 is W's most significant digit */
    uint32_t d5 = (t.w[0] << bo) | (t.w[1] >> (31u - bo) >> 1);
    uint32_t d4 = (t.w[1] << bo) | (t.w[2] >> (31u - bo) >> 1);
    uint32_t d3 = (t.w[2] << bo) | (t.w[3] >> (31u - bo) >> 1);
    uint32_t d2 = (t.w[3] << bo) | (t.w[4] >> (31u - bo) >> 1);
    uint32_t d1 = (t.w[4] << bo) | (t.w[5] >> (31u - bo) >> 1);
    uint32_t d0 = (t.w[5] << bo) | (t.w[6] >> (31u - bo) >> 1);
    /* the low and high 32-bit halves of m by each digit: pjk = m_j d_k, j = 0 the low half
     * (two products of 16 and 32 bits) */
#define NV_MUL_LO(d) ((((uint64_t)m1 * (d)) << 16) + (uint64_t)m0 * (d))
    uint64_t p00 = NV_MUL_LO(d0), p01 = NV_MUL_LO(d1), p02 = NV_MUL_LO(d2);
    uint64_t p03 = NV_MUL_LO(d3), p04 = NV_MUL_LO(d4), p05 = NV_MUL_LO(d5);
#undef NV_MUL_LO
    uint64_t p10 = (uint64_t)m2 * d0, p11 = (uint64_t)m2 * d1, p12 = (uint64_t)m2 * d2;
    uint64_t p13 = (uint64_t)m2 * d3, p14 = (uint64_t)m2 * d4;
    uint64_t c = NV_HI32(p00) + NV_LO32(p01) + NV_LO32(p10);
    c = NV_HI32(c) + NV_HI32(p01) + NV_HI32(p10) + NV_LO32(p02) + NV_LO32(p11);
    uint64_t lo = NV_LO32(c);
    c = NV_HI32(c) + NV_HI32(p02) + NV_HI32(p11) + NV_LO32(p03) + NV_LO32(p12);
    lo |= c << 32;
    c = NV_HI32(c) + NV_HI32(p03) + NV_HI32(p12) + NV_LO32(p04) + NV_LO32(p13);
    uint64_t hi = NV_LO32(c);
    c = NV_HI32(c) + NV_HI32(p04) + NV_HI32(p13) + NV_LO32(p05) + NV_LO32(p14);
    hi |= c << 32;
    uint64_t q = (hi + 0x2000000000000000ull) >> 62;
    hi -= q << 62;                              /* F = hi:lo, signed */
    uint64_t neg = hi >> 63, nm = 0ull - neg;   /* |F|: the 128-bit negation where negative */
    uint64_t carry = neg & (uint64_t)(lo == 0ull);
    lo = (lo ^ nm) + neg;
    hi = (hi ^ nm) + carry;
    uint64_t f2 = hi >> 20;
    uint64_t f1 = ((hi & 0xfffffull) << 22) | (lo >> 42);
    uint64_t f0 = lo & 0x3ffffffffffull;
    double e2 = (nv_u2d(0x4330000000000000ull | f2) - 0x1p52) * 0x1p-42;
    double e1 = (nv_u2d(0x4330000000000000ull | f1) - 0x1p52) * 0x1p-84;
    double e0 = (nv_u2d(0x4330000000000000ull | f0) - 0x1p52) * 0x1p-126;
    nv_dd a = nv_fast_two_sum_d(e2, e1);
    nv_dd b = nv_fast_two_sum_d(a.hi, e0);
    double fh = b.hi, fl = a.lo + b.lo;         /* |F| 2^-126, in quarter turns */
    double rh = fh * NV_PIO2_1_D;
    double rl = fma(fh, NV_PIO2_1_D, -rh) + fma(fh, NV_PIO2_2_D, fl * NV_PIO2_1_D);
    nv_dd r = nv_fast_two_sum_d(rh, rl);
    nv_reduced64 out;
    out.q = q & 3u;
    out.hi = nv_blend_d((int)neg, -r.hi, r.hi);
    out.lo = nv_blend_d((int)neg, -r.lo, r.lo);
    return out;
}
#undef NV_LO32
#undef NV_HI32

/* whether finite x is at or above NV_TRIG_SMALL_D in magnitude (where the *_small functions
 * below do not hold): the guard the C kernels or over a block */
NV_FN uint32_t nv_trig_large_f64(double x)
{
    uint64_t u = nv_d2u(x) & 0x7fffffffffffffffull;
    uint64_t s = nv_d2u(NV_TRIG_SMALL_D);
    return (uint32_t)(u - s < 0x7ff0000000000000ull - s);
}

/* the reduction of any x, each element by its own |x|: a branch on the GPU (its warps rarely
 * diverge), selects in C, where the kernels call this only on blocks that hold a large x */
NV_FN nv_reduced64 nv_rem_pio2_any_d(double x)
{
#if defined(__CUDA_ARCH__)
    if (fabs(x) < NV_TRIG_SMALL_D)
        return nv_rem_pio2_small_d(x);
    return nv_rem_pio2_large_d(x);
#else
    nv_reduced64 s = nv_rem_pio2_small_d(x), b = nv_rem_pio2_large_d(x);
    int small = fabs(x) < NV_TRIG_SMALL_D;
    s.q = small ? s.q : b.q;
    s.hi = nv_blend_d(small, s.hi, b.hi);
    s.lo = nv_blend_d(small, s.lo, b.lo);
    return s;
#endif
}

/* sin(h + l) as hi + lo (hi its rounded value), |h| <= pi/4, |l| <= ulp(h): h + t with
 * t = h z S(z) + l (1 - z/2), z = h^2 (|t| < 0.11 |h|; t's roundings cost about 0.1 ulp) */
NV_FN nv_dd nv_sin_kernel_d(double h, double l)
{
    double z = h * h;
    double t = fma(h * z, nv_poly64_sin(z), l * fma(-0.5, z, 1.0));
    return nv_fast_two_sum_d(h, t);
}

/* cos(h + l) as hi + lo: w = 1 - z/2 and its rounding error, z^2 C(z), -h l, and z's own
 * rounding error (as fdlibm's __kernel_cos, with z's error too) */
NV_FN nv_dd nv_cos_kernel_d(double h, double l)
{
    double z = h * h;
    double zl = fma(h, h, -z);
    double hz = 0.5 * z;
    double w = 1.0 - hz;
    double c = ((1.0 - w) - hz) + (fma(z * z, nv_poly64_cos(z), -h * l) - 0.5 * zl);
    return nv_fast_two_sum_d(w, c);
}

/* sin, cos, tan of x from the reduction r of |x|; the sign of x is or-ed in for the odd ones
 * (so sin(-0) is -0); inf and NaN give x - x (NaN) */
NV_FN double nv_sin_reduced_d(double x, nv_reduced64 r)
{
    nv_dd s = nv_sin_kernel_d(r.hi, r.lo), c = nv_cos_kernel_d(r.hi, r.lo);
    double v = nv_blend_d((int)(r.q & 1u), c.hi, s.hi);
    uint64_t sg = ((r.q & 2u) << 62) ^ (nv_d2u(x) & 0x8000000000000000ull);
    v = nv_u2d(nv_d2u(v) ^ sg);
    return fabs(x) < NV_INF_D ? v : x - x;
}

NV_FN double nv_cos_reduced_d(double x, nv_reduced64 r)
{
    nv_dd s = nv_sin_kernel_d(r.hi, r.lo), c = nv_cos_kernel_d(r.hi, r.lo);
    double v = nv_blend_d((int)(r.q & 1u), s.hi, c.hi);
    v = nv_u2d(nv_d2u(v) ^ (((r.q + 1u) & 2u) << 62));
    return fabs(x) < NV_INF_D ? v : x - x;
}

/* s / c (or -c / s for odd q) from both as hi + lo, the quotient corrected once by its
 * remainder: the pre-rounding error is s's and c's (about 2^-56 each) */
NV_FN double nv_tan_reduced_d(double x, nv_reduced64 r)
{
    nv_dd s = nv_sin_kernel_d(r.hi, r.lo), c = nv_cos_kernel_d(r.hi, r.lo);
    int odd = (int)(r.q & 1u);
    double nh = nv_blend_d(odd, c.hi, s.hi), nl = nv_blend_d(odd, c.lo, s.lo);
    double dh = nv_blend_d(odd, s.hi, c.hi), dl = nv_blend_d(odd, s.lo, c.lo);
    double q0 = nh / dh;
    double rem = fma(-q0, dh, nh) + fma(-q0, dl, nl);
    double v = q0 + rem / dh;
    v = nv_blend_d(odd, -v, v);
    v = nv_u2d(nv_d2u(v) ^ (nv_d2u(x) & 0x8000000000000000ull));
    return fabs(x) < NV_INF_D ? v : x - x;
}

NV_FN double nv_sin_f64(double x) { return nv_sin_reduced_d(x, nv_rem_pio2_any_d(x)); }
NV_FN double nv_cos_f64(double x) { return nv_cos_reduced_d(x, nv_rem_pio2_any_d(x)); }
NV_FN double nv_tan_f64(double x) { return nv_tan_reduced_d(x, nv_rem_pio2_any_d(x)); }

/* the same bits for |x| < NV_TRIG_SMALL_D, inf and NaN */
NV_FN double nv_sin_small_f64(double x) { return nv_sin_reduced_d(x, nv_rem_pio2_small_d(x)); }
NV_FN double nv_cos_small_f64(double x) { return nv_cos_reduced_d(x, nv_rem_pio2_small_d(x)); }
NV_FN double nv_tan_small_f64(double x) { return nv_tan_reduced_d(x, nv_rem_pio2_small_d(x)); }

/* ---- inverse trigonometric -------------------------------------------------------------------
 * atan: the ratio reduced to u, |u| <= tan(pi/8), by one quotient (atan(t) = pi/4 +
 * atan((t - 1) / (t + 1)) and pi/2 + atan(-1 / t)), carried as hi + lo (the quotient corrected by
 * its remainder), then atan u = u + u^3 P(u^2) added to the base angle as hi + lo. asin, acos:
 * asin t = t + t^3 Q(t^2) for |t| <= 1/2, and through asin(sqrt((1 - |x|) / 2)) above, the
 * square root carried as hi + lo; the angles pi/4 ... pi as hi + lo. The roundings before the
 * last one add about a tenth of an ulp. */

#define NV_PIO2_HI_D 0x1.921fb54442d18p+0
#define NV_PIO2_LO_D 0x1.1a62633145c07p-54
#define NV_PIO4_HI_D 0x1.921fb54442d18p-1
#define NV_PIO4_LO_D 0x1.1a62633145c07p-55
#define NV_3PIO4_HI_D 0x1.2d97c7f3321d2p+1
#define NV_3PIO4_LO_D 0x1.a79394c9e8a0ap-54
#define NV_PI_HI_D 0x1.921fb54442d18p+1
#define NV_PI_LO_D 0x1.1a62633145c07p-53
#define NV_TAN_PI8_D 0x1.a827999fcef32p-2
#define NV_TAN_3PI8_D 0x1.3504f333f9de6p+1

/* atan2(y, x) = +-(b + atan(u)) with b in {0, pi/4, pi/2, 3pi/4, pi}: for x >= +0 (sign bit
 * clear) atan(ay / ax) below tan(pi/8), pi/4 + atan((ay - ax) / (ay + ax)) up to tan(3pi/8),
 * pi/2 + atan(-ax / ay) above; for x <= -0, pi minus those. ax and ay are scaled together
 * first where the larger is huge (by 2^-600) or the smaller tiny (by 2^600, where the larger
 * is below 2^100), exact where it matters, so that the sums do not overflow and the quotient's
 * remainder is exact but where the quotient is below 2^-1000 (and atan its own value, rounded
 * once by the division, the remainder's error adding at most a quarter of an ulp). An infinite operand makes the
 * quotient 0 (both infinite: pi/4 or 3pi/4), both zero too (0 or pi); the sign of y is or-ed
 * in (C99's special values); a NaN gives x + y. */
NV_FN double nv_arctan2_f64(double y, double x)
{
    double ax = fabs(x), ay = fabs(y);
    double mx = ax > ay ? ax : ay, mn = ax > ay ? ay : ax;
    int up = (mn < 0x1p-900) & (mx < 0x1p100);
    double sc = nv_blend_d(mx > 0x1p1000, 0x1p-600, nv_blend_d(up, 0x1p600, 1.0));
    ax = ax * sc;
    ay = ay * sc;
    int inf = (ax == NV_INF_D) | (ay == NV_INF_D);
    int both_inf = (ax == NV_INF_D) & (ay == NV_INF_D);
    int r1 = (ay <= NV_TAN_PI8_D * ax) & !both_inf;
    int r3 = ay > NV_TAN_3PI8_D * ax;
    nv_dd n = nv_two_sum_d(ay, -ax), d = nv_two_sum_d(ay, ax);
    double nh = nv_blend_d(r1, ay, nv_blend_d(r3, -ax, n.hi));
    double nl = nv_blend_d(r1 | r3, 0.0, n.lo);
    double dh = nv_blend_d(r1, ax, nv_blend_d(r3, ay, d.hi));
    double dl = nv_blend_d(r1 | r3, 0.0, d.lo);
    int zero = inf | (dh == 0.0);               /* dh = 0: both zero */
    nh = nv_blend_d(zero, 0.0, nh);
    nl = nv_blend_d(zero, 0.0, nl);
    dh = nv_blend_d(zero, 1.0, dh);
    dl = nv_blend_d(zero, 0.0, dl);
    double uh = nh / dh;
    double ul = (fma(-uh, dh, nh) + (nl - uh * dl)) / dh;
    int xneg = (int)(nv_d2u(x) >> 63);
    double bh = nv_blend_d(r1, 0.0, nv_blend_d(r3, NV_PIO2_HI_D, NV_PIO4_HI_D));
    double bl = nv_blend_d(r1, 0.0, nv_blend_d(r3, NV_PIO2_LO_D, NV_PIO4_LO_D));
    double bnh = nv_blend_d(r1, NV_PI_HI_D, nv_blend_d(r3, NV_PIO2_HI_D, NV_3PIO4_HI_D));
    double bnl = nv_blend_d(r1, NV_PI_LO_D, nv_blend_d(r3, NV_PIO2_LO_D, NV_3PIO4_LO_D));
    bh = nv_blend_d(xneg, bnh, bh);
    bl = nv_blend_d(xneg, bnl, bl);
    uh = nv_blend_d(xneg, -uh, uh);
    ul = nv_blend_d(xneg, -ul, ul);
    double z = uh * uh;
    double t = fma(uh * z, nv_poly64_atan(z), fma(-ul, z, ul));   /* atan(uh + ul) - uh */
    nv_dd s = nv_two_sum_d(bh, uh);
    double v = s.hi + (s.lo + (t + bl));
    v = nv_u2d(nv_d2u(v) | (nv_d2u(y) & 0x8000000000000000ull));
    return (x == x) & (y == y) ? v : x + y;
}

NV_FN double nv_arctan_f64(double x) { return nv_arctan2_f64(x, 1.0); }

/* asin(t) - t = t z Q(z), z = t^2 */
NV_FN double nv_asin_tail_d(double t, double z) { return t * z * nv_poly64_asin(z); }

/* asin(a) for a = |x| as b + sg (th + tt): a <= 1/2: 0 + (a + tail); above, with
 * z = (1 - a) / 2 (exact) and sqrt(z) = sh + sl, pi/2 - 2 (sh + sl + tail(sh)) */
typedef struct { double th; double tt; double sq; int big; } nv_asinparts;

NV_FN nv_asinparts nv_asin_parts(double x)
{
    double a = fabs(x);
    double z = (1.0 - a) * 0.5;
    double sh = sqrt(z);
    double sl = fma(-sh, sh, z) / (sh + sh);
    sl = nv_blend_d(sh > 0.0, sl, 0.0);
    nv_asinparts p;
    p.big = a > 0.5;
    double t = nv_blend_d(p.big, sh, x);
    double tz = nv_blend_d(p.big, z, x * x);
    double tail = nv_asin_tail_d(t, tz);
    p.th = t;                                   /* the signed x where small */
    p.tt = nv_blend_d(p.big, sl + tail, tail);
    p.sq = sh;
    return p;
}

/* asin x: x + tail for |x| <= 1/2, else +-(pi/2 - 2 (sh + sl + tail)) with pi/2 - 2 sh summed
 * exactly; NaN for |x| > 1, NaN returns x */
NV_FN double nv_arcsin_f64(double x)
{
    nv_asinparts p = nv_asin_parts(x);
    nv_dd d = nv_two_sum_d(NV_PIO2_HI_D, -2.0 * p.th);
    double big = d.hi + (d.lo + (NV_PIO2_LO_D - 2.0 * p.tt));
    big = nv_u2d(nv_d2u(big) | (nv_d2u(x) & 0x8000000000000000ull));
    double v = nv_blend_d(p.big, big, p.th + p.tt);
    v = fabs(x) <= 1.0 ? v : NV_NAN_D;
    return x == x ? v : x;
}

/* acos x: pi/2 - (x + tail) for |x| <= 1/2; 2 (sh + sl + tail) for x > 1/2; pi - that for
 * x < -1/2; each first sum exact */
NV_FN double nv_arccos_f64(double x)
{
    nv_asinparts p = nv_asin_parts(x);
    int neg = x < 0.0;
    double bh = nv_blend_d(p.big, nv_blend_d(neg, NV_PI_HI_D, 0.0), NV_PIO2_HI_D);
    double bl = nv_blend_d(p.big, nv_blend_d(neg, NV_PI_LO_D, 0.0), NV_PIO2_LO_D);
    /* the term added to b: -(x + tail), +-2 (sh + sl + tail) */
    double sg = nv_blend_d(p.big & !neg, 2.0, nv_blend_d(p.big, -2.0, -1.0));
    nv_dd d = nv_two_sum_d(bh, sg * p.th);
    double v = d.hi + (d.lo + fma(sg, p.tt, bl));
    v = fabs(x) <= 1.0 ? v : NV_NAN_D;
    return x == x ? v : x;
}

/* ---- inverse hyperbolic ----------------------------------------------------------------------
 * Each as the logarithm of an argument carried as hi + lo to about 2^-104 of itself
 * (nv_log_dd2), so that log's own error (a tenth of an ulp before its last rounding) is what
 * remains. Above 2^28 the argument is 2a (the rest below 2^-57 of it): log a + ln2. */

/* log(uh + ul) + (big ? ln2 : 0) rounded, where big implies log(uh) > 19 */
NV_FN double nv_log_dd_plus_ln2(double uh, double ul, int big)
{
    nv_dd lg = nv_log_dd2(uh, ul, 0.0, 0);
    nv_dd s = nv_fast_two_sum_d(lg.hi, nv_blend_d(big, NV_LN2_HI_D, 0.0));
    return s.hi + (s.lo + (lg.lo + nv_blend_d(big, NV_LN2_LO_D, 0.0)));
}

/* asinh a = log(a + sqrt(a^2 + 1)): a^2 + 1 = wh + wl (a^2 exactly as a product and its error),
 * sqrt(w) = sh + sl, a + sh exactly (sh > a); below 2^-28, x itself (x^3 / 6 < 2^-57 x). The
 * sign of x is or-ed in; inf and NaN return x. */
NV_FN double nv_arcsinh_f64(double x)
{
    double a = fabs(x);
    double ph = a * a;
    nv_dd w = nv_two_sum_d(1.0, ph);
    w.lo = w.lo + fma(a, a, -ph);
    double sh = sqrt(w.hi);
    double sl = (fma(-sh, sh, w.hi) + w.lo) / (sh + sh);
    nv_dd u = nv_fast_two_sum_d(sh, a);
    u = nv_fast_two_sum_d(u.hi, u.lo + sl);
    int big = a > 0x1p28;
    double v = nv_log_dd_plus_ln2(nv_blend_d(big, a, u.hi), nv_blend_d(big, 0.0, u.lo), big);
    v = nv_u2d(nv_d2u(v) | (nv_d2u(x) & 0x8000000000000000ull));
    return (a >= 0x1p-28) & (a < NV_INF_D) ? v : x;
}

/* acosh x = log(x + sqrt(x^2 - 1)) for x >= 1: x^2 - 1 = wh + wl exactly (x^2 as a product and
 * its error, its difference with 1 by a two-sum), sqrt(w) = sh + sl, x + sh exactly (x > sh).
 * acosh(1) = +0; NaN below 1; inf and NaN return x. */
NV_FN double nv_arccosh_f64(double x)
{
    double ph = x * x;
    nv_dd w = nv_two_sum_d(ph, -1.0);
    w.lo = w.lo + fma(x, x, -ph);
    double sh = sqrt(w.hi);
    double sl = (fma(-sh, sh, w.hi) + w.lo) / (sh + sh);
    sl = nv_blend_d(sh > 0.0, sl, 0.0);
    nv_dd u = nv_fast_two_sum_d(x, sh);
    u = nv_fast_two_sum_d(u.hi, u.lo + sl);
    int big = x > 0x1p28;
    double xr = nv_blend_d(x >= 1.0, x, 1.0);   /* keeps log's argument in its domain */
    double v = nv_log_dd_plus_ln2(nv_blend_d(big, xr, nv_blend_d(x >= 1.0, u.hi, 1.0)),
                                  nv_blend_d(big | (x < 1.0), 0.0, u.lo), big);
    v = x >= 1.0 ? v : NV_NAN_D;
    return (x == x) & (x < NV_INF_D) ? v : x;
}

/* atanh a = log((1 + a) / (1 - a)) / 2: the quotient of the exact sums as hi + lo (corrected
 * by its remainder); below 2^-28, x itself (x^3 / 3 < 2^-57 x). The sign of x is or-ed in;
 * +-1 give +-inf, beyond them NaN; NaN returns x. */
NV_FN double nv_arctanh_f64(double x)
{
    double a = fabs(x);
    double ar = a < 1.0 ? a : 0.5;              /* keeps log's argument in its domain */
    nv_dd n = nv_two_sum_d(1.0, ar), d = nv_two_sum_d(1.0, -ar);
    double qh = n.hi / d.hi;
    double ql = (fma(-qh, d.hi, n.hi) + (n.lo - qh * d.lo)) / d.hi;
    nv_dd lg = nv_log_dd2(qh, ql, 0.0, 0);
    double v = 0.5 * (lg.hi + lg.lo);
    v = a < 1.0 ? v : (a == 1.0 ? NV_INF_D : NV_NAN_D);
    v = nv_u2d(nv_d2u(v) | (nv_d2u(x) & 0x8000000000000000ull));
    return a >= 0x1p-28 ? v : x;
}

/* ---- erf ------------------------------------------------------------------------------------
 * a = |x|: below 3/4, erf a = a + a P(a^2); from there, 1 - erfc a with erfc a = exp(-a^2) F(a),
 * F (erfc(a) exp(a^2), about 1 / (a sqrt(pi)), smooth) as F(c) + t Q(t), t = a - c, in one of
 * three intervals: the three polynomials are evaluated and one selected (no branch; their chains
 * are independent). F(c) is a hi + lo constant and F carried as hi + lo (its rounding would
 * cost a third of an ulp of erf), a^2 split exactly into hi + lo, both in exp's reduction
 * (nv_exp_parts2), exp(-a^2) F carried as hi + lo and 1 - hi summed exactly: erfc's absolute
 * error stays near 2^-57, a tenth of an ulp of erf (above 0.7 there). a is clamped at 6, where
 * erf rounds to 1. */

/* F(c) = erfc(c) exp(c^2) at the centres c = 1.25, 2.5, 4.625 */
#define NV_ERFC_F1_HI 0x1.78a692138767ap-2
#define NV_ERFC_F1_LO 0x1.4797400f19192p-63
#define NV_ERFC_F2_HI 0x1.afbb3f3b7343bp-3
#define NV_ERFC_F2_LO -0x1.9f40bca142466p-58
#define NV_ERFC_F3_HI 0x1.e8b725e90fb8dp-4
#define NV_ERFC_F3_LO 0x1.6a2cc3496a0adp-58

NV_FN double nv_erf_f64(double x)
{
    double a = fabs(x);
    double small = fma(x, nv_poly64_erf_small(x * x), x);
    double ac = a < 6.0 ? a : 6.0;              /* NaN gives 6 too: x is returned */
    int i1 = ac < 1.75, i2 = ac < 3.25;
    /* ac - c is exact: ac and c within a factor 2 in each interval */
    double t1 = ac - 1.25, t2 = ac - 2.5, t3 = ac - 4.625;
    double q1 = nv_poly64_erfc1(t1), q2 = nv_poly64_erfc2(t2), q3 = nv_poly64_erfc3(t3);
    double t = nv_blend_d(i1, t1, nv_blend_d(i2, t2, t3));
    double q = nv_blend_d(i1, q1, nv_blend_d(i2, q2, q3));
    double ch = nv_blend_d(i1, NV_ERFC_F1_HI, nv_blend_d(i2, NV_ERFC_F2_HI, NV_ERFC_F3_HI));
    double cl = nv_blend_d(i1, NV_ERFC_F1_LO, nv_blend_d(i2, NV_ERFC_F2_LO, NV_ERFC_F3_LO));
    double tq = t * q;
    nv_dd f = nv_fast_two_sum_d(ch, tq);        /* |t Q| < F(c) / 3 */
    f.lo = f.lo + (fma(t, q, -tq) + cl);
    double sh = ac * ac;
    double sl = fma(ac, ac, -sh);
    nv_expparts p = nv_exp_parts2(-sh, -sl, 1);
    double s = nv_pow2_from_t(p.t, 0);          /* n >= -52 */
    double h = 1.0 + p.r;
    double eh = s * h, el = s * (((1.0 - h) + p.r) + p.q);     /* exp(-a^2) = eh + el */
    double ph = eh * f.hi;
    double pl = fma(eh, f.hi, -ph) + (eh * f.lo + el * f.hi);
    nv_dd d = nv_fast_two_sum_d(1.0, -ph);      /* erfc a <= 0.29 */
    double big = d.hi + (d.lo - pl);
    big = nv_u2d(nv_d2u(big) | (nv_d2u(x) & 0x8000000000000000ull));
    double v = nv_blend_d(a < 0.75, small, big);
    return x == x ? v : x;
}

/* ---- erfinv ---------------------------------------------------------------------------------
 * a = |x| < 1: erfinv a = a G(w), w = -log(1 - a^2) in [0, 36.05] (1 - a^2 >= 2^-52 for a < 1),
 * G as G(c) + t Q(t), t = v - c: v = w, c = 3.125 below w = 6.25; else v = u = sqrt(w), c = 3.25
 * below u = 4, c = 5 above: the three polynomials Q evaluated and one selected (their chains are
 * independent). 1 - a^2 is carried as hi + lo, (1 - a)(1 + a) from a = 1/2 on (1 - a exact,
 * 1 + a a two-sum), 1 - a^2 by an exact square and a two-sum below, its logarithm as hi + lo
 * (nv_log_dd2) and u too, so that v is known to about 2^-100 of itself: v - c = t + tl with t
 * rounded and tl its error (t is exact for the square roots, within a factor 2 of c), whose
 * share of G is tl Q(t) (G' = Q + t Q', where t Q' adds a few hundredths of an ulp). G(c) is a
 * hi + lo constant, c + t Q summed as hi + lo (|t Q| < G(c) / 2), and a G rounded once, so
 * that Q's own rounding (its relative error times |t Q| / G <= 0.9) and the fits' remain. +-1
 * give +-inf, beyond them NaN, NaN returns x, and the sign of x is or-ed in. */

/* G(c) at c = 3.125 (w), 3.25 and 5 (sqrt(w)) */
#define NV_ERFINV_GC_HI 0x1.a755e7c99ae86p+0
#define NV_ERFINV_GC_LO -0x1.b3639c30931fcp-56
#define NV_ERFINV_G1_HI 0x1.8abcc380d5a48p+1
#define NV_ERFINV_G1_LO -0x1.92060f0628130p-54
#define NV_ERFINV_G2_HI 0x1.3664ddd1ad7fbp+2
#define NV_ERFINV_G2_LO -0x1.7c90e434da15ap-54

NV_FN double nv_erfinv_f64(double x)
{
    double a = fabs(x);
    double ac = a < 1.0 ? a : 0.0;
    double om = 1.0 - ac;                       /* exact for a >= 1/2 */
    nv_dd op = nv_two_sum_d(1.0, ac);
    double ph = om * op.hi;
    double pl = fma(om, op.hi, -ph) + om * op.lo;
    double sh = ac * ac;
    nv_dd oms = nv_two_sum_d(1.0, -sh);         /* 1 - a^2 for a < 1/2 */
    double sl = oms.lo - fma(ac, ac, -sh);
    int big = ac >= 0.5;
    nv_dd h = nv_fast_two_sum_d(nv_blend_d(big, ph, oms.hi), nv_blend_d(big, pl, sl));
    nv_dd lg = nv_log_dd2(h.hi, h.lo, 0.0, 0);
    nv_dd w = nv_fast_two_sum_d(-lg.hi, -lg.lo);
    nv_dd tc = nv_two_sum_d(w.hi, -3.125);
    double uh = sqrt(w.hi);
    double ul = (fma(-uh, uh, w.hi) + w.lo) / (uh + uh);
    double t1 = uh - 3.25, t2 = uh - 5.0;       /* exact where selected */
    double qc = nv_poly64_erfinv_c(tc.hi);
    double q1 = nv_poly64_erfinv_t1(t1);
    double q2 = nv_poly64_erfinv_t2(t2);
    int ic = w.hi < 6.25, i1 = uh < 4.0;
    double t = nv_blend_d(ic, tc.hi, nv_blend_d(i1, t1, t2));
    double tl = nv_blend_d(ic, tc.lo + w.lo, ul);
    double q = nv_blend_d(ic, qc, nv_blend_d(i1, q1, q2));
    double ch = nv_blend_d(ic, NV_ERFINV_GC_HI, nv_blend_d(i1, NV_ERFINV_G1_HI, NV_ERFINV_G2_HI));
    double cl = nv_blend_d(ic, NV_ERFINV_GC_LO, nv_blend_d(i1, NV_ERFINV_G1_LO, NV_ERFINV_G2_LO));
    double tq = t * q;
    nv_dd g = nv_fast_two_sum_d(ch, tq);
    g.lo = g.lo + (fma(t, q, -tq) + fma(tl, q, cl));
    double res = fma(a, g.hi, a * g.lo);
    res = a < 1.0 ? res : (a == 1.0 ? NV_INF_D : NV_NAN_D);
    res = nv_u2d(nv_d2u(res) | (nv_d2u(x) & 0x8000000000000000ull));
    return x == x ? res : x;
}

#endif /* NV_NO_F64 */
