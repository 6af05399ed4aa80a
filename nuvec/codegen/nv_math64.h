/* nv_math64.h -- nuvec's float64 math library: exp, expm1, log, log1p, log2, log10, and
 * sigmoid, tanh, sinh, cosh, logaddexp and power built on them. Shared by the C and CUDA
 * dialects (Metal has no float64: NV_NO_F64), so the GPU computes the CPU's bits.
 *
 * The rules of nv_math.h hold: straight-line code (selects, no branches, no tables in memory),
 * so that a C compiler vectorizes the loops that call it (4 lanes with AVX2, 8 with AVX-512,
 * 2 with NEON) and every element gets the same operations wherever it falls; only IEEE-754
 * operations with one rounding each (+ - * / and explicit fma), never contracted. No 64-bit
 * integer <-> float64 conversions (AVX2 has none): integers reach float64 through a shifted
 * constant's low bits.
 *
 * Accuracy (float64, sampled over the whole range and the hard regions by
 * tests/engine/test_accuracy_f64.py against x87 80-bit long double; the measured maxima are in
 * benchmarks/README.md): exp, log and power below 1 ulp (faithfully rounded: the result is one
 * of the two floats around the exact value), expm1, log1p, log2, log10, sigmoid, tanh, sinh,
 * cosh within 2 ulp of the correctly rounded result, logaddexp within 2 ulp where its result
 * is not a cancellation (see nv_logaddexp_f64). Polynomial coefficients come from
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

/* 1 / (1 + t) for x >= 0 and t / (1 + t) for x < 0, t = exp(-|x|) carried as hi + lo (exp's
 * steps before its last rounding), the quotient corrected once by its remainder. Where
 * |x| > 665 (n < -960) t is scaled by 2^64 to stay normal: the result is 1 for x >= 0 (t is
 * still far below 2^-54) and t itself for x < 0, rounded once from hi + lo (subnormal results
 * twice, the second rounding dominating). NaN returns x. */
NV_FN double nv_sigmoid_f64(double x)
{
    double a = fabs(x);
    a = a < 746.0 ? a : 746.0;                  /* NaN gives 746 too: x is returned */
    nv_expparts p = nv_exp_parts(-a);
    int deep = p.t < NV_SHIFT_D - 960.0;
    uint64_t j = deep ? 0x0400000000000000ull : 0ull;
    double s1 = nv_u2d((nv_d2u(p.t) << 52) + (0x3ff0000000000000ull + j));   /* 2^(n+j) */
    double h = 1.0 + p.r;
    double l = (1.0 - h) + p.r;
    nv_dd t = nv_fast_two_sum_d(s1 * h, s1 * (l + p.q));                     /* t <= 1 */
    nv_dd d = nv_fast_two_sum_d(1.0, t.hi);
    d.lo = d.lo + t.lo;
    int pos = x >= 0.0;
    double nh = pos ? 1.0 : t.hi, nl = pos ? 0.0 : t.lo;
    double inv = 1.0 / d.hi;
    double q0 = nh * inv;
    double rem = fma(-q0, d.hi, nh) + fma(-q0, d.lo, nl);
    double v = fma(rem, inv, q0);
    double tiny = (t.hi + t.lo) * nv_u2d(0x3ff0000000000000ull - j);
    v = deep & !pos ? tiny : v;
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
    nv_expparts p = nv_exp_parts2(dh, dl, 1);
    int deep = p.t < NV_SHIFT_D - 960.0;
    uint64_t j = deep ? 0x0400000000000000ull : 0ull;
    double s1 = nv_u2d((nv_d2u(p.t) << 52) + (0x3ff0000000000000ull + j));   /* 2^(n+j) */
    double h = 1.0 + p.r;
    double l = (1.0 - h) + p.r;
    nv_dd t = nv_fast_two_sum_d(s1 * h, s1 * (l + p.q));                     /* t <= 1 */
    nv_dd u = nv_fast_two_sum_d(1.0, t.hi);
    nv_dd lg = nv_log_dd2(u.hi, u.lo, t.lo, 1);
    double tiny = (t.hi + t.lo) * nv_u2d(0x3ff0000000000000ull - j);
    lg.hi = deep ? tiny : lg.hi;
    lg.lo = deep ? 0.0 : lg.lo;
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

#endif /* NV_NO_F64 */
