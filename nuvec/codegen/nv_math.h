/* nv_math.h -- nuvec's float32 math library, shared by every kernel dialect (C, CUDA, MSL).
 *
 * Every function is straight-line code (selects, no branches, no tables in memory), so that a
 * C compiler vectorises the loops that call it and so that each element gets exactly the same
 * operations whether it falls in a vector body, a scalar tail, or another thread's share.
 * Only IEEE-754 operations with one rounding each are used (+ - * / sqrt, fma), never
 * contracted (build with -ffp-contract=off), never fast-math. float16 and bfloat16 compute in
 * float32 through these functions and round after each operation (nv_ops.h).
 *
 * Accuracy (float32, measured over the whole range by tests/engine/test_accuracy.py): exp, log,
 * sin, cos, tanh, sigmoid and erf within 2 ulp of the correctly rounded result, the others
 * within 4 ulp. Polynomial coefficients come from nuvec/codegen/tools/fitpoly.py.
 *
 * The including dialect prelude provides:
 *   NV_FN                     function qualifier ("static inline", "__device__ inline", ...)
 *   nv_f2u(float)->uint32_t, nv_u2f(uint32_t)->float   bit casts
 *   int32_t uint32_t int64_t uint64_t (and the 8/16-bit ones)
 *   fmaf sqrtf fabsf copysignf  (correctly rounded / exact)
 * and the struct nv_ff below is declared here.
 */

typedef struct { float hi; float lo; } nv_ff;        /* unevaluated sum hi + lo */

#define NV_INF_F nv_u2f(0x7f800000u)
#define NV_NAN_F nv_u2f(0x7fc00000u)

/* ---- small exact helpers ----------------------------------------------------------------- */

/* 2^k as a float, for k in [-126, 127] */
NV_FN float nv_pow2i(int32_t k) { return nv_u2f((uint32_t)(k + 127) << 23); }

/* a + b = s + e exactly (|a| >= |b| or a == 0) */
NV_FN nv_ff nv_fast_two_sum(float a, float b)
{
    nv_ff r; r.hi = a + b; r.lo = b - (r.hi - a); return r;
}

/* a + b = s + e exactly, any order */
NV_FN nv_ff nv_two_sum(float a, float b)
{
    nv_ff r;
    r.hi = a + b;
    float bb = r.hi - a;
    r.lo = (a - (r.hi - bb)) + (b - bb);
    return r;
}

/* a * b = p + e exactly (barring underflow) */
NV_FN nv_ff nv_two_prod(float a, float b)
{
    nv_ff r; r.hi = a * b; r.lo = fmaf(a, b, -r.hi); return r;
}

/* a / b, correctly rounded, where a = +0 or a is in [2^-60, 2^60], and b in [1, 2^60]. On the
 * GPU: the steps of CUDA's IEEE division when its range check (FCHK) passes, which it does for
 * such operands (a, b, 1/b and a/b are normal and far from overflow), without the check and
 * the branch to the slow path: about five fewer instructions issued. Elsewhere the division
 * itself. Outside that domain the GPU's quotient may differ in the last bits (see each
 * caller); within a few ulp for 0 <= a < 2^-60. */
#if defined(__CUDA_ARCH__)
NV_FN float nv_div_normal(float a, float b)
{
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
    float e = fmaf(-b, r, 1.0f);
    r = fmaf(r, e, r);
    float q = a * r;
    return fmaf(r, fmaf(-b, q, a), q);
}
#else
NV_FN float nv_div_normal(float a, float b) { return a / b; }
#endif

/* a / b within an ulp, for a caller checked to round its result to bfloat16 the same way
 * whichever of the candidates below the quotient is (nv_tanh_bf16): a times a reciprocal of b
 * that is one of the two floats around 1/b. On the GPU the estimate after one Newton step:
 * whatever the estimate's bits (within 2^-22 of 1/b), the step leaves it within 2^-43 of 1/b
 * before its rounding, so within the floats around 1/b. Elsewhere the float nearest to 1/b,
 * or, for the tests, the one below or above it (NV_DIV_FAITHFUL_TEST -1 or 1): the three
 * cover every reciprocal the GPU's step can give. */
#if defined(__CUDA_ARCH__)
NV_FN float nv_div_faithful(float a, float b)
{
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
    return a * fmaf(r, fmaf(-b, r, 1.0f), r);
}
#elif defined(NV_DIV_FAITHFUL_TEST)
NV_FN float nv_div_faithful(float a, float b)
{
    return a * nextafterf(1.0f / b, NV_DIV_FAITHFUL_TEST * NV_INF_F);
}
#else
NV_FN float nv_div_faithful(float a, float b) { return a * (1.0f / b); }
#endif

/* c ? a : b. In C, as bit operations on a mask: gcc cannot vectorize a select between two
 * comparison results, which is what it makes of some selects whose value is compared later
 * (a NaN test of a selected value); the mask keeps such a select one of plain integers. On the
 * GPU the select itself (one instruction). The same bits either way. */
#if defined(__CUDA_ARCH__)
NV_FN float nv_blend(int c, float a, float b) { return c ? a : b; }
#else
NV_FN float nv_blend(int c, float a, float b)
{
    uint32_t m = 0u - (uint32_t)(c != 0);
    return nv_u2f((nv_f2u(a) & m) | (nv_f2u(b) & ~m));
}
#endif

/* round to the nearest integer (ties to even) for |x| < 2^22, as a float; NaN stays NaN */
NV_FN float nv_rint_small(float x)
{
    return (x + 0x1.8p23f) - 0x1.8p23f;
}

/* ---- exp family ---------------------------------------------------------------------------
 * x = n ln2 + r, |r| <= ln2/2 (Cody-Waite with fma: the first step is exact), then
 * exp(r) = 1 + r + r^2 P(r) and a scaling by 2^n such that a subnormal result is rounded only
 * once. Every variant below has nv_exp_f32's bits on its domain. */

#define NV_LN2_HI 0x1.62e43p-1f
#define NV_LN2_LO -0x1.05c61p-29f
#define NV_LOG2E 0x1.715476p+0f

NV_FN float nv_exp_poly(float r)
{
    return fmaf(r * r, nv_poly_exp(r), r);     /* exp(r) - 1 */
}

/* exp(r) - 1 a degree short, for the variants whose result is rounded to bfloat16 */
NV_FN float nv_exp_poly_bf16(float r)
{
    return fmaf(r * r, nv_poly_exp_bf16(r), r);
}

#if defined(__CUDA_ARCH__)
/* the float minimum / maximum against a constant b that is no NaN, returning a NaN a: one
 * instruction (min.NaN, from sm_80 on) as fminf / fmaxf, which would return b. With it a NaN
 * argument gives a NaN through the functions below that clamp their argument, so that a caller
 * that rounds to float16 / bfloat16 (where every NaN becomes the canonical one), or whose result
 * only float32 arithmetic reads (which returns the canonical NaN: the CUDA dialect's
 * nan_forms), can leave out their final NaN select (nv_tanh_value and the like) */
NV_FN float nv_fmin_nan(float a, float b)
{
#if __CUDA_ARCH__ >= 800
    float r;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return a > b ? b : a;
#endif
}
NV_FN float nv_fmax_nan(float a, float b)
{
#if __CUDA_ARCH__ >= 800
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return a < b ? b : a;
#endif
}
#endif

/* x clamped to [lo, hi] (lo < 0 < hi; NaN gives lo or hi) as two integer minimums on its bits,
 * one instruction each where float selects with NaN rules take a compare and a blend: as
 * unsigned numbers the negative floats beyond lo are the larger ones, as signed numbers the
 * positive floats beyond hi */
NV_FN float nv_clamp_bits(float x, float lo, float hi)
{
#if defined(__CUDA_ARCH__)
    /* the float minimum and maximum are single instructions there too, and take -x or |x| as
     * an operand; a NaN stays a NaN, which every caller replaces by x anyway */
    return nv_fmin_nan(nv_fmax_nan(x, lo), hi);
#else
    uint32_t u = nv_f2u(x), ul = nv_f2u(lo);
    u = u < ul ? u : ul;
    int32_t i = (int32_t)u, ih = (int32_t)nv_f2u(hi);
    return nv_u2f((uint32_t)(i < ih ? i : ih));
#endif
}

/* min(a, hi) for a >= +0 or a NaN with its sign bit clear (which gives hi, on the GPU the NaN),
 * hi > 0: on the GPU the float minimum (one instruction, which also takes |x| as its operand),
 * elsewhere an integer minimum on the bits (ordered as the floats are here) */
NV_FN float nv_min_pos(float a, float hi)
{
#if defined(__CUDA_ARCH__)
    return nv_fmin_nan(a, hi);
#else
    int32_t i = (int32_t)nv_f2u(a), ih = (int32_t)nv_f2u(hi);
    return nv_u2f((uint32_t)(i < ih ? i : ih));
#endif
}

/* Whether exp's clamp at -104 gives an exact 0 (a product by 0 instead of one that underflows,
 * which x86 cores run in microcode). GPUs run underflowing products at full speed, and there
 * the product (1 + p(r)) 2^(n+64) 2^-64 for x = -104 (n = -150, r = -0.0279) is 0.486 2^-149,
 * which rounds to the same +0: one compare and select fewer on the GPU, the same bits. */
#if defined(__CUDA_ARCH__)
#define NV_EXP_ZERO_BELOW_CLAMP 0
#else
#define NV_EXP_ZERO_BELOW_CLAMP 1
#endif

/* exp(x) as 2^n (1 + p(r)), x = n ln2 + r. The scaling is two products: s1 = 2^(n - j) (from
 * the bits of t, which hold n), then s2 = 2^j with j = 64 for n > 0 and -64 otherwise, so
 * s1 (1 + p) is always normal (rounded once, as an fma; the same as rounding 1 + p and scaling
 * exactly) and the product by s2 rounds a subnormal or overflowing result once. x is clamped
 * to [-104, 89], so n is in [-150, 128] (89 gives inf). Below -104 the result is 0 through
 * s2 = 0: an exact product instead of one that underflows, which x86 cores run in microcode (a
 * softmax over a -1e9 mask took 3x longer). NaN returns x itself (nv_exp_f32: the same bits
 * everywhere). */
NV_FN float nv_exp_value(float x)
{
    float xc = nv_clamp_bits(x, -104.0f, 89.0f);
    float t = fmaf(xc, NV_LOG2E, 0x1.8p23f);
    float n = t - 0x1.8p23f;
    float r = fmaf(-n, NV_LN2_HI, xc);
    r = fmaf(-n, NV_LN2_LO, r);
    float p = nv_exp_poly(r);
    uint32_t s2 = n > 0.0f ? 0x5f800000u : 0x1f800000u;     /* 2^64 : 2^-64 */
    s2 = NV_EXP_ZERO_BELOW_CLAMP && xc == -104.0f ? 0u : s2;
    float s1 = nv_u2f((nv_f2u(t) << 23) + (0x7f000000u - s2)); /* 2^(n + 127 - j) */
    return fmaf(p, s1, s1) * nv_u2f(s2);
}

/* nv_exp_value and the like (nv_tanh_value, nv_sigmoid_value, nv_erf_value): the function but
 * for its NaN select, which returns x itself; on the GPU they give some NaN for a NaN x */
NV_FN float nv_exp_f32(float x)
{
    float e = nv_exp_value(x);
    return (x == x) ? e : x;
}

/* exp(x) for x <= -0, as nv_exp_f32 (n <= 0 picks j = -64 there), with fewer steps; a NaN
 * with its sign bit set (as -|x| gives) returns 0 (on the GPU a NaN), for the caller to select.
 * narrow: for a bfloat16 x and a result rounded to bfloat16, without the reduction's second
 * step (n ln2_lo) and with the polynomial a degree short (nv_exp_poly_bf16) */
NV_FN float nv_exp_nonpos_steps(float x, int narrow)
{
#if defined(__CUDA_ARCH__)
    float xc = nv_fmax_nan(x, -104.0f);
#else
    uint32_t u = nv_f2u(x), ul = nv_f2u(-104.0f);
    float xc = nv_u2f(u < ul ? u : ul);
#endif
    float t = fmaf(xc, NV_LOG2E, 0x1.8p23f);
    float n = t - 0x1.8p23f;
    float r = fmaf(-n, NV_LN2_HI, xc);
    r = narrow ? r : fmaf(-n, NV_LN2_LO, r);
    float p = narrow ? nv_exp_poly_bf16(r) : nv_exp_poly(r);
    float s1 = nv_u2f((nv_f2u(t) << 23) + 0x5f800000u);         /* 2^(n + 64) */
    return fmaf(p, s1, s1) * (NV_EXP_ZERO_BELOW_CLAMP && xc == -104.0f ? 0.0f : 0x1p-64f);
}

NV_FN float nv_exp_nonpos(float x) { return nv_exp_nonpos_steps(x, 0); }

/* nv_exp_nonpos for a bfloat16 x and a result rounded to bfloat16 (the GPU's bfloat16
 * kernels), in its narrow steps, which change no rounded result (every bfloat16 x <= -0:
 * tests/engine/test_narrow_math.py) */
NV_FN float nv_exp_nonpos_bf16(float x) { return nv_exp_nonpos_steps(x, 1); }

/* exp(x) for x = -|y| (x <= -0 or a NaN): nv_exp_f32's bits (checked over every such float32
 * on the CPU), the generator's choice where exp's argument is negative(abs(y)) */
NV_FN float nv_exp_negabs_f32(float x)
{
    float e = nv_exp_nonpos(x);
    return (x == x) ? e : x;
}

/* exp(x) - 1 as 2^n (1 + q) - 1 = 2^n q + (2^n - 1), one fma; 2^n - 1 is exact for n <= 24
 * and rounds to 2^n above, where the result's ulp is at least 2. As in nv_exp_f32 the scaling
 * is split in two for n > 0 (2^(n-64) here, 2^64 after, exact but for an overflow, which
 * rounds once), so the whole range needs no separate exp; for n <= 0, 2^n >= 2^-43 is normal.
 * Below -30 the result is -1 (the clamp), NaN returns x. */
NV_FN float nv_expm1_f32(float x)
{
    float xc = nv_clamp_bits(x, -30.0f, 89.0f);
    float t = fmaf(xc, NV_LOG2E, 0x1.8p23f);
    float n = t - 0x1.8p23f;
    float r = fmaf(-n, NV_LN2_HI, xc);
    r = fmaf(-n, NV_LN2_LO, r);
    float q = nv_exp_poly(r);                   /* exp(r) - 1 */
    uint32_t j = n > 0.0f ? 0x20000000u : 0u;   /* 64 << 23 or 0 */
    float s1 = nv_u2f((nv_f2u(t) << 23) + (0x3f800000u - j));   /* 2^(n - j) */
    float one = nv_u2f(0x3f800000u - j);                        /* 2^-j */
    float res = fmaf(s1, q, s1 - one) * nv_u2f(0x3f800000u + j);
    return (x == x) ? res : x;
}

/* 2^f 2^fl for |f| <= 1/2 and |fl| <= 2^-17 (nv_exp2_ff's steps before the scaling by 2^n) */
NV_FN float nv_exp2_frac(float f, float fl)
{
    nv_ff a = nv_two_prod(NV_LN2_HI, f);            /* ln2_hi f exactly */
    nv_ff s = nv_fast_two_sum(1.0f, a.hi);          /* |a.hi| < 1/2 */
    float lo = s.lo + (a.lo + fmaf(NV_LN2_LO, f, (f * f) * nv_poly_exp2(f)));
    return s.hi + fmaf(s.hi + lo, NV_LN2_HI * fl, lo);     /* (s.hi + lo) 2^fl */
}

/* 2^(t.hi + t.lo), |t.lo| <= ulp(t.hi). t.hi = n + f with n an integer and |f| <= 1/2 (both
 * exact); 2^f = 1 + ln2 f + f^2 P(f) with ln2 f taken exactly (ln2 as hi + lo), times
 * 2^t.lo = 1 + ln2 t.lo (t.lo^2 is below 2^-34), all summed as hi + lo and rounded once: the
 * result before the scaling by 2^n is within about 0.52 ulp, so pow is correctly rounded but
 * where the exact value lies within a few hundredths of an ulp of a rounding boundary */
NV_FN float nv_exp2_ff(float th, float tl)
{
    float xc = th > 200.0f ? 200.0f : th;
    xc = xc < -200.0f ? -200.0f : xc;
    xc = (th == th) ? xc : 0.0f;
    float t = xc + 0x1.8p23f;
    float n = t - 0x1.8p23f;
    int32_t ni = (int32_t)(nv_f2u(t) - 0x4b400000u);
    float fl = xc == th ? tl : 0.0f;                /* tl only if not clamped */
    float e = nv_exp2_frac(xc - n, fl);             /* xc - n exact */
    int32_t k = ni > 300 ? 300 : ni;
    k = k < -300 ? -300 : k;
    /* three steps so that 2^k with |k| up to 300 saturates to inf / 0 with one rounding */
    int32_t k1 = k / 3;
    int32_t k2 = (k - k1) / 2;
    int32_t k3 = k - k1 - k2;
    e = ((e * nv_pow2i(k1)) * nv_pow2i(k2)) * nv_pow2i(k3);
    return (th == th) ? e : th;
}

/* ---- log family ---------------------------------------------------------------------------
 * x = 2^k m, m in [sqrt(1/2), sqrt(2)), s = (m - 1) / (m + 1) carried as hi + lo,
 * log m = 2s + s^3 P(s^2). Returned as an unevaluated sum (k, hi, lo): log x = k ln2 + hi + lo. */

typedef struct { float k; float hi; float lo; } nv_logparts;

/* x, scaled by 2^23 where it is zero or subnormal (positive), and the 23 that the scaling
 * adds to its exponent (else 0): a logarithm's reduction of a normal number then serves */
typedef struct { float x; float k; } nv_unsub;

NV_FN nv_unsub nv_unsubnormal(float x)
{
    int32_t sub = nv_f2u(x) < 0x00800000u ? 1 : 0;
    nv_unsub r;
    r.x = sub ? x * 0x1p23f : x;
    r.k = (float)(-sub & 23);
    return r;
}

/* the parts of a positive normal x (nv_log_parts scales a subnormal one first) */
NV_FN nv_logparts nv_log_parts_normal(float x)
{
    uint32_t u = nv_f2u(x);
    int32_t k = (int32_t)(u - 0x3f3504f3u) >> 23;
    float m = nv_u2f(u - ((uint32_t)k << 23));
    float f = m - 1.0f;                         /* exact */
    float dh = 2.0f + f;
    float dl = (2.0f - dh) + f;
    float sh = f / dh;
    float e = fmaf(-sh, dh, f);
    e = fmaf(-sh, dl, e);
    float sl = e / dh;
    float z = sh * sh;
    float p = nv_poly_log(z);
    nv_logparts r;
    r.k = (float)k;
    r.hi = 2.0f * sh;
    r.lo = fmaf(sh * z, p, 2.0f * sl);
    return r;
}

NV_FN nv_logparts nv_log_parts(float x)
{
    nv_unsub s = nv_unsubnormal(x);
    nv_logparts r = nv_log_parts_normal(s.x);
    r.k = r.k - s.k;                            /* exact: small integers */
    return r;
}

#define NV_LN2_HI_L 0x1.62e4p-1f                /* 15 bits: k * hi is exact */
#define NV_LN2_LO_L 0x1.7f7d1cp-20f

/* log x as hi + lo (finite positive x only) */
NV_FN nv_ff nv_log_ff(float x)
{
    nv_logparts p = nv_log_parts(x);
    nv_ff s = nv_fast_two_sum(p.k * NV_LN2_HI_L, p.hi);
    s.lo = s.lo + fmaf(p.k, NV_LN2_LO_L, p.lo);
    return s;
}

/* The division-free reduction of log, log2, log10 and log1p: x = 2^k m with m in [2/3, 4/3)
 * and r = m - 1 (exact: m is within a factor 2 of 1), for positive x (a subnormal is scaled by
 * 2^23 first); for zero, inf, NaN and negative x the parts are meaningless and every caller
 * selects its special value instead. log x = k ln2 + r + r^2 P(r) with P = nv_poly_log1p_r:
 * one polynomial over the whole range, no quotient, no further split. */
typedef struct { float k; float r; } nv_logred;

/* nv_log_reduce for positive normal x */
NV_FN nv_logred nv_log_reduce_normal(float x)
{
    uint32_t u = nv_f2u(x);
    int32_t k = (int32_t)(u - 0x3f2aaaabu) >> 23;
    nv_logred p;
    p.r = nv_u2f(u - ((uint32_t)k << 23)) - 1.0f;
    p.k = (float)k;
    return p;
}

NV_FN nv_logred nv_log_reduce(float x)
{
    nv_unsub s = nv_unsubnormal(x);
    nv_logred p = nv_log_reduce_normal(s.x);
    p.k = p.k - s.k;                            /* exact: small integers */
    return p;
}

/* a logarithm's value res where x is positive and finite, else its limit: -inf at +-0, NaN
 * below, x itself at +inf and NaN (u - 1 is below 0x7f7fffff exactly for the positive finite
 * x) */
NV_FN float nv_log_select(float x, float res)
{
    float sp = x == 0.0f ? -NV_INF_F : (x < 0.0f ? NV_NAN_F : x);
    return nv_f2u(x) - 1u < 0x7f7fffffu ? res : sp;
}

/* The guard of the split forms of log, log2 and log10 (ElementwiseOp.split): 0 where x is
 * positive, normal and finite, where nv_log*_regular_f32 skip the subnormal scaling and the
 * limits */
NV_FN uint32_t nv_log_irregular_f32(float x)
{
    return (uint32_t)(nv_f2u(x) - 0x00800000u >= 0x7f000000u);
}

/* log x = k ln2 + r + r^2 P(r). k ln2_hi + r is summed exactly (|k ln2_hi| > |r| where
 * k != 0), so the errors before the last rounding are those of r^2 P, at most a fifth of the
 * result. */
NV_FN float nv_log_reduced(nv_logred p)
{
    float r = p.r;
    nv_ff s = nv_fast_two_sum(p.k * NV_LN2_HI_L, r);
    float lo = fmaf(r * r, nv_poly_log1p_r(r), fmaf(p.k, NV_LN2_LO_L, s.lo));
    return s.hi + lo;
}

NV_FN float nv_log_f32(float x) { return nv_log_select(x, nv_log_reduced(nv_log_reduce(x))); }
NV_FN float nv_log_regular_f32(float x) { return nv_log_reduced(nv_log_reduce_normal(x)); }

#define NV_INVLN2_HI 0x1.715476p+0f
#define NV_INVLN2_LO 0x1.4ae0cp-26f
#define NV_INVLN10_HI 0x1.bcb7b2p-2f
#define NV_INVLN10_LO -0x1.5b235ep-27f
#define NV_LG2_HI 0x1.344p-2f                  /* log10(2), 15 bits */
#define NV_LG2_LO 0x1.3509f8p-18f

/* log2 x = k + (r + q) / ln2 with q = r^2 P(r) (nv_log_reduce), 1/ln2 as hi + lo: r / ln2 is
 * r c_hi (rounded) plus the fma's exact error of that product, r c_lo and q c_hi, and k + r c_hi
 * is summed exactly (|r c_hi| < 1 <= |k| where k != 0): every error before the last rounding
 * is a small fraction of an ulp of the result (at most 1 ulp in all, over every float32). */
NV_FN float nv_log2_reduced(nv_logred p)
{
    float r = p.r;
    float q = (r * r) * nv_poly_log1p_r(r);
    float t = r * NV_INVLN2_HI;
    float lo = fmaf(q, NV_INVLN2_HI, fmaf(r, NV_INVLN2_LO, fmaf(r, NV_INVLN2_HI, -t)));
    nv_ff s = nv_fast_two_sum(p.k, t);
    return s.hi + (s.lo + lo);
}

NV_FN float nv_log2_f32(float x) { return nv_log_select(x, nv_log2_reduced(nv_log_reduce(x))); }
NV_FN float nv_log2_regular_f32(float x) { return nv_log2_reduced(nv_log_reduce_normal(x)); }

/* log10 x = k log10(2) + (r + q) / ln10, as log2: k log10(2)_hi is exact (15 bits) and larger
 * than |r / ln10| <= 0.145 where k != 0, so it sums exactly with r c_hi */
NV_FN float nv_log10_reduced(nv_logred p)
{
    float r = p.r;
    float q = (r * r) * nv_poly_log1p_r(r);
    float t = r * NV_INVLN10_HI;
    float lo = fmaf(q, NV_INVLN10_HI, fmaf(r, NV_INVLN10_LO, fmaf(r, NV_INVLN10_HI, -t)));
    nv_ff s = nv_fast_two_sum(p.k * NV_LG2_HI, t);
    return s.hi + (s.lo + fmaf(p.k, NV_LG2_LO, lo));
}

NV_FN float nv_log10_f32(float x) { return nv_log_select(x, nv_log10_reduced(nv_log_reduce(x))); }
NV_FN float nv_log10_regular_f32(float x) { return nv_log10_reduced(nv_log_reduce_normal(x)); }

/* log(1 + x) as hi + lo, x > -1 finite: 1 + x is split exactly, log1p = log(u) + ul/u */
NV_FN nv_ff nv_log1p_ff(float x)
{
    float uh = 1.0f + x;
    float ul = fabsf(x) <= 1.0f ? (1.0f - uh) + x : (x - uh) + 1.0f;
    nv_ff s = nv_log_ff(uh);
    s.lo = s.lo + (fabsf(x) < 0x1p100f ? ul / uh : 0.0f);
    return s;
}

/* log1p x without a division: 1 + x = uh + ul exactly, uh = 2^k m as in nv_log_reduce (uh >=
 * 2^-24 is normal), so 1 + x = 2^k (1 + r + c) with c = ul 2^-k, exact (|x| >= 2^100 drops
 * it: it is negligible there and would be subnormal). |c| <= ulp(m) / 2 <= |r| unless r = 0,
 * so r + c = a + e exactly (fast two-sum), and log(1 + a + e) = log1p(a) + e / (1 + a), with
 * e / (1 + a) taken as e (1 - a): off by e a^2 / (1 + a) <= ulp(a) / 18. This is that sum
 * for finite x > -1 (log1p's split form); nv_log1p_f32 adds the limits, and log1p(+-0) = +-0. */
NV_FN float nv_log1p_regular_f32(float x)
{
    float uh = 1.0f + x;
    float ul = fabsf(x) <= 1.0f ? (1.0f - uh) + x : (x - uh) + 1.0f;
    uint32_t us = nv_f2u(uh);
    int32_t k = (int32_t)(us - 0x3f2aaaabu) >> 23;
    float r = nv_u2f(us - ((uint32_t)k << 23)) - 1.0f;
    float c = ul * nv_u2f(0x3f800000u - ((uint32_t)k << 23));   /* ul 2^-k */
    c = fabsf(x) < 0x1p100f ? c : 0.0f;
    nv_ff a = nv_fast_two_sum(r, c);
    float kf = (float)k;
    nv_ff s = nv_fast_two_sum(kf * NV_LN2_HI_L, a.hi);
    float e = fmaf(-a.lo, a.hi, a.lo);
    float lo = fmaf(a.hi * a.hi, nv_poly_log1p_r(a.hi), fmaf(kf, NV_LN2_LO_L, s.lo + e));
    return s.hi + lo;
}

NV_FN float nv_log1p_f32(float x)
{
    float uh = 1.0f + x;
    float res = nv_log1p_regular_f32(x);
    /* x = -1 gives uh = 0, x < -1 a negative uh; +inf and NaN stay x */
    float sp = uh == 0.0f ? -NV_INF_F : (uh < 0.0f ? NV_NAN_F : x);
    res = nv_f2u(uh) - 1u < 0x7f7fffffu ? res : sp;
    return x == 0.0f ? x : res;
}

/* The guard of log1p's split form: 0 for x in (-1, 2^100) but +-0, where 1 + x is positive,
 * normal and finite and nv_log1p_f32 is nv_log1p_regular_f32 */
NV_FN uint32_t nv_log1p_irregular_f32(float x)
{
    return (uint32_t)(!(x > -1.0f & x < 0x1p100f) | (x == 0.0f));
}

/* ---- sin / cos / tan ----------------------------------------------------------------------
 * Two argument reductions by pi/2, each element picking one by its own |x|, so that the result
 * depends on x alone: below NV_TRIG_SMALL, Cody-Waite (|x| - q pi/2 with pi/2 in three float
 * pieces, q the nearest integer to |x| 2/pi); from there on, integer arithmetic on the bits of
 * 2/pi (Payne-Hanek), as accurate for huge arguments as for small ones. The C kernels run the
 * Cody-Waite functions alone (nv_sin_small_f32, ...) over blocks without an argument in
 * [NV_TRIG_SMALL, inf) (nv_trig_large_f32), and the full ones over the other blocks; NaN and
 * inf give the same bits through both. */

/* words of floor(2/pi * 2^320), least significant first, from index 3 */
#define NV_TP3 0xfe5163abu
#define NV_TP4 0x3c439041u
#define NV_TP5 0xdb629599u
#define NV_TP6 0xf534ddc0u
#define NV_TP7 0xfc2757d1u
#define NV_TP8 0x4e441529u
#define NV_TP9 0xa2f9836eu
#define NV_TP10 0x0u

/* word i of the table; masks rather than selects so that no compiler turns this into a
 * lookup in memory (which would stop vectorisation) */
NV_FN uint32_t nv_tp_word(int32_t i)
{
    return (NV_TP3 & (0u - (uint32_t)(i == 3))) | (NV_TP4 & (0u - (uint32_t)(i == 4)))
         | (NV_TP5 & (0u - (uint32_t)(i == 5))) | (NV_TP6 & (0u - (uint32_t)(i == 6)))
         | (NV_TP7 & (0u - (uint32_t)(i == 7))) | (NV_TP8 & (0u - (uint32_t)(i == 8)))
         | (NV_TP9 & (0u - (uint32_t)(i == 9))) | (NV_TP10 & (0u - (uint32_t)(i == 10)));
}

typedef struct { int32_t q; float hi; float lo; } nv_reduced;

/* |x| = q pi/2 + (hi + lo), |hi + lo| <= pi/4 (about), for finite x (Payne-Hanek): |x| =
 * m 2^(E-150), Y = m 2^(E-150) (2/pi) mod 4 in 2.62 fixed point from a 96-bit window of 2/pi;
 * the window is picked from the constant words above by selects (no memory table) */
NV_FN nv_reduced nv_rem_pio2(float x)
{
    uint32_t u = nv_f2u(x) & 0x7fffffffu;
    int32_t big = u > 0x3f490fdbu ? 1 : 0;      /* |x| > pi/4 */
    uint32_t ue = big & u < 0x7f800000u ? u : 0x3f800000u;   /* a harmless value otherwise */
    int32_t ex = (int32_t)(ue >> 23);           /* biased exponent, 126..254 */
    uint32_t m = (ue & 0x7fffffu) | 0x800000u;
    int32_t sft = 376 - ex;
    int32_t wi = sft >> 5;
    int32_t bo = sft & 31;
    uint32_t w0 = nv_tp_word(wi), w1 = nv_tp_word(wi + 1);
    uint32_t w2 = nv_tp_word(wi + 2), w3 = nv_tp_word(wi + 3);
    /* 32-bit windows (w_hi:w_lo) >> bo; << (31 - bo) << 1 is << (32 - bo), 0 for bo = 0 */
    uint32_t g0 = (w0 >> bo) | (w1 << (31 - bo) << 1);
    uint32_t g1 = (w1 >> bo) | (w2 << (31 - bo) << 1);
    uint32_t g2 = (w2 >> bo) | (w3 << (31 - bo) << 1);
    /* 32 x 32 -> 64-bit products, which the vector ISAs have (NEON has no 64-bit multiply) */
    uint64_t y = (((uint64_t)m * g2) << 32) + (uint64_t)m * g1 + (((uint64_t)m * g0) >> 32);
    uint64_t q = ((y + 0x2000000000000000ull) >> 62) & 3u;
    uint64_t fr = y - (q << 62);                /* signed fraction, two's complement */
    /* split the signed 62-bit fraction into three exactly representable pieces */
    int32_t c2 = ((int32_t)((uint32_t)(fr >> 42) << 10)) >> 10;
    int32_t c1 = (int32_t)((uint32_t)(fr >> 21) & 0x1fffffu);
    int32_t c0 = (int32_t)((uint32_t)fr & 0x1fffffu);
    nv_ff a = nv_two_sum((float)c2 * 0x1p42f, (float)c1 * 0x1p21f);
    nv_ff b = nv_two_sum(a.hi, (float)c0);
    float fh = b.hi, fl = a.lo + b.lo;
    /* times pi/2 * 2^-62 */
    float rh = fh * 0x1.921fb6p-62f;
    float rl = fmaf(fh, 0x1.921fb6p-62f, -rh) + fmaf(fh, -0x1.777a5cp-87f, fl * 0x1.921fb6p-62f);
    nv_ff r = nv_fast_two_sum(rh, rl);
    nv_reduced out;
    out.q = big ? (int32_t)q : 0;
    out.hi = big ? r.hi : nv_u2f(u);
    out.lo = big ? r.lo : 0.0f;
    return out;
}

/* the bound of the Cody-Waite reduction: every float32 below it is reduced accurately enough
 * for sin and cos to stay within 2 ulp (tests/engine/test_accuracy.py checks all of them) */
#define NV_TRIG_SMALL 0x1p22f
#define NV_2_OVER_PI 0x1.45f306p-1f
/* pi/2 = P1 + P2 + P3 + (about 1e-23) */
#define NV_PIO2_P1 0x1.921fb6p+0f
#define NV_PIO2_P2 -0x1.777a5cp-25f
#define NV_PIO2_P3 -0x1.ee59dap-50f

/* |x| = q pi/2 + (hi + lo), |hi + lo| <= pi/4 (about), for |x| < NV_TRIG_SMALL (Cody-Waite).
 * q = rint(|x| 2/pi) through the magic constant 1.5 2^23, whose low bits then hold q. |x| - q P1
 * is exact (a multiple of ulp(P1) = 2^-23 below 2 in magnitude, as one fma), q P2 is split
 * exactly into p2 + e2, (r1 - p2) exactly into hi + lo; the rest, e2 + q P3, is rounded once.
 * inf and NaN give NaN pieces (the callers return x - x for them). */
NV_FN nv_reduced nv_rem_pio2_small(float x)
{
    float a = fabsf(x);
    float t = fmaf(a, NV_2_OVER_PI, 0x1.8p23f);
    float q = t - 0x1.8p23f;
    float r1 = fmaf(-q, NV_PIO2_P1, a);
    float p2 = q * NV_PIO2_P2;
    float e2 = fmaf(q, NV_PIO2_P2, -p2);
    nv_ff h = nv_two_sum(r1, -p2);
    float lo = h.lo - fmaf(q, NV_PIO2_P3, e2);
    nv_ff r = nv_fast_two_sum(h.hi, lo);
    nv_reduced out;
    out.q = (int32_t)(nv_f2u(t) & 3u);
    out.hi = r.hi;
    out.lo = r.lo;
    return out;
}

/* whether finite x is at or above NV_TRIG_SMALL in magnitude (where the *_small functions
 * below do not hold): the flag the C kernels or over a block */
NV_FN uint32_t nv_trig_large_f32(float x)
{
    uint32_t u = nv_f2u(x) & 0x7fffffffu;
    return (uint32_t)(u - nv_f2u(NV_TRIG_SMALL) < 0x7f800000u - nv_f2u(NV_TRIG_SMALL));
}

/* the reduction of any x: each element by its own |x|; a branch on the GPU (its warps rarely
 * diverge), selects in C, where the kernels call this only on blocks that hold a large x */
NV_FN nv_reduced nv_rem_pio2_any(float x)
{
#if defined(__CUDA_ARCH__) || defined(__METAL_VERSION__)
    if (fabsf(x) < NV_TRIG_SMALL)
        return nv_rem_pio2_small(x);
    return nv_rem_pio2(x);
#else
    nv_reduced s = nv_rem_pio2_small(x), b = nv_rem_pio2(x);
    int32_t small = fabsf(x) < NV_TRIG_SMALL;
    s.q = small ? s.q : b.q;
    s.hi = small ? s.hi : b.hi;
    s.lo = small ? s.lo : b.lo;
    return s;
#endif
}

/* sin and cos of hi + lo, |hi| <= pi/4 */
NV_FN float nv_sin_kernel(float h, float l)
{
    float z = h * h;
    float p = nv_poly_sin(z);
    return h + fmaf(h * z, p, l * fmaf(-0.5f, z, 1.0f));
}

NV_FN float nv_cos_kernel(float h, float l)
{
    float z = h * h;
    float p = nv_poly_cos(z);
    float hz = 0.5f * z;
    float w = 1.0f - hz;
    float c = ((1.0f - w) - hz) + fmaf(z * z, p, -h * l);
    return w + c;
}

/* sin, cos, tan of x from its reduction r of |x|; the sign of x is or-ed in for the odd ones
 * (so sin(-0) is -0); inf and NaN give x - x */
NV_FN float nv_sin_reduced(float x, nv_reduced r)
{
    float s = nv_sin_kernel(r.hi, r.lo), c = nv_cos_kernel(r.hi, r.lo);
    float v = (r.q & 1) ? c : s;
    uint32_t sg = ((uint32_t)(r.q & 2) << 30) ^ (nv_f2u(x) & 0x80000000u);
    v = nv_u2f(nv_f2u(v) ^ sg);
    return fabsf(x) < NV_INF_F ? v : x - x;
}

NV_FN float nv_cos_reduced(float x, nv_reduced r)
{
    float s = nv_sin_kernel(r.hi, r.lo), c = nv_cos_kernel(r.hi, r.lo);
    float v = (r.q & 1) ? s : c;
    v = nv_u2f(nv_f2u(v) ^ ((uint32_t)((r.q + 1) & 2) << 30));
    return fabsf(x) < NV_INF_F ? v : x - x;
}

NV_FN float nv_tan_reduced(float x, nv_reduced r)
{
    float s = nv_sin_kernel(r.hi, r.lo), c = nv_cos_kernel(r.hi, r.lo);
    float v = (r.q & 1) ? -c / s : s / c;
    v = nv_u2f(nv_f2u(v) ^ (nv_f2u(x) & 0x80000000u));
    return fabsf(x) < NV_INF_F ? v : x - x;
}

NV_FN float nv_sin_f32(float x) { return nv_sin_reduced(x, nv_rem_pio2_any(x)); }
NV_FN float nv_cos_f32(float x) { return nv_cos_reduced(x, nv_rem_pio2_any(x)); }
NV_FN float nv_tan_f32(float x) { return nv_tan_reduced(x, nv_rem_pio2_any(x)); }

/* the same bits for |x| < NV_TRIG_SMALL, inf and NaN */
NV_FN float nv_sin_small_f32(float x) { return nv_sin_reduced(x, nv_rem_pio2_small(x)); }
NV_FN float nv_cos_small_f32(float x) { return nv_cos_reduced(x, nv_rem_pio2_small(x)); }
NV_FN float nv_tan_small_f32(float x) { return nv_tan_reduced(x, nv_rem_pio2_small(x)); }

/* ---- inverse trigonometric ----------------------------------------------------------------- */

#define NV_PIO2_HI 0x1.921fb6p+0f
#define NV_PIO2_LO -0x1.777a5cp-25f
#define NV_PI_HI 0x1.921fb6p+1f
#define NV_PI_LO -0x1.777a5cp-24f

/* asin(t) = t + t^3 P(t^2) for |t| <= 1/2 */
NV_FN float nv_asin_poly(float t)
{
    float z = t * t;
    return fmaf(t * z, nv_poly_asin(z), t);
}

NV_FN float nv_asin_f32(float x)
{
    float a = fabsf(x);
    float z = (1.0f - a) * 0.5f;               /* exact for a >= 1/2 */
    float s = sqrtf(z);
    float big = NV_PIO2_HI - (2.0f * nv_asin_poly(s) - NV_PIO2_LO);
    float v = a <= 0.5f ? nv_asin_poly(a) : big;
    v = copysignf(v, x);
    return a <= 1.0f ? v : (x == x ? NV_NAN_F : x);
}

NV_FN float nv_acos_f32(float x)
{
    float a = fabsf(x);
    float z = (1.0f - a) * 0.5f;
    float s = sqrtf(z);
    float hs = 2.0f * nv_asin_poly(s);         /* acos(a) for a >= 1/2 */
    float small = NV_PIO2_HI - (nv_asin_poly(x) - NV_PIO2_LO);
    float v = x > 0.5f ? hs : small;
    v = x < -0.5f ? NV_PI_HI - (hs - NV_PI_LO) : v;
    return a <= 1.0f ? v : (x == x ? NV_NAN_F : x);
}

/* atan(t) for 0 <= t <= 1 */
NV_FN float nv_atan_poly(float t)
{
    float z = t * t;
    return fmaf(t * z, nv_poly_atan(z), t);
}

NV_FN float nv_atan_f32(float x)
{
    float a = fabsf(x);
    int32_t inv = a > 1.0f ? 1 : 0;
    float t = inv ? 1.0f / a : a;
    float p = nv_atan_poly(t);
    float v = inv ? NV_PIO2_HI - (p - NV_PIO2_LO) : p;
    return (x == x) ? copysignf(v, x) : x;
}

NV_FN float nv_atan2_f32(float y, float x)
{
    float ax = fabsf(x), ay = fabsf(y);
    int32_t swap = ay > ax ? 1 : 0;
    float num = swap ? ax : ay, den = swap ? ay : ax;
    int32_t both_inf = (ax == NV_INF_F) & (ay == NV_INF_F);
    int32_t both_zero = (ax == 0.0f) & (ay == 0.0f);
    float t = num / (both_zero ? 1.0f : den);
    t = both_inf ? 1.0f : t;
    float p = nv_atan_poly(t);
    p = swap ? NV_PIO2_HI - (p - NV_PIO2_LO) : p;
    int32_t xneg = (nv_f2u(x) >> 31) != 0;
    p = xneg ? NV_PI_HI - (p - NV_PI_LO) : p;
    float v = copysignf(p, y);
    return (x == x & y == y) ? v : x + y;
}

/* ---- hyperbolic ----------------------------------------------------------------------------- */

/* exp(a) / 2 for a >= +0 (a NaN with its sign bit clear gives inf): nv_exp_f32's steps with
 * 2^(n-1) split as 2^(n-65) 2^64, so that it is finite up to 89.4 where exp(a) is not; the
 * same bits as nv_exp_f32(a) / 2 where that is finite */
NV_FN float nv_exp_half_nonneg(float a)
{
    float ac = nv_min_pos(a, 90.0f);
    float t = fmaf(ac, NV_LOG2E, 0x1.8p23f);
    float n = t - 0x1.8p23f;
    float r = fmaf(-n, NV_LN2_HI, ac);
    r = fmaf(-n, NV_LN2_LO, r);
    float p = nv_exp_poly(r);
    float s1 = nv_u2f((nv_f2u(t) << 23) + 0x1f000000u);         /* 2^(n - 65) */
    return fmaf(p, s1, s1) * 0x1p64f;
}

/* |x| < 1: a + a^3 P(a^2); above, e^a / 2 - 1 / (4 e^a / 2) (inf - 0 once e^a / 2 overflows) */
NV_FN float nv_sinh_f32(float x)
{
    float a = fabsf(x);
    float z = a * a;
    float p = nv_poly_sinh(z);
    float small = fmaf(a * z, p, a);
    float eh = nv_exp_half_nonneg(a);
    float big = eh - 0.25f / eh;
    float v = a < 1.0f ? small : big;
    return (x == x) ? copysignf(v, x) : x;
}

NV_FN float nv_cosh_f32(float x)
{
    float eh = nv_exp_half_nonneg(fabsf(x));
    float v = eh + 0.25f / eh;
    return (x == x) ? v : x;
}

/* tanh a = m / (m + 2), m = expm1(2a), a = |x| clamped at 9.5 (where m / (m + 2) rounds to 1):
 * one path for every a, no polynomial of its own. m = 2^n q + (2^n - 1) with q = expm1(r) on
 * the reduced argument (nv_expm1_f32's steps; n <= 27 here, so 2^n is normal and needs no
 * split scaling, and 2^n - 1 is exact up to n = 24, above which its rounding is below 2^-24 of
 * m and damped by 2 / (m + 2)), one division. The reduction is one step, r = 2a - n ln2_hi
 * (exact): r is 2a itself for n = 0, and elsewhere leaving out n ln2_lo moves m + 1 by at most
 * |n| 2^-29 relative, which 2 / (m + 2) damps to about a tenth of an ulp. Below m = 2 (h = m / 2 < 1/2, a < ln2 / 2) the rounding of
 * m + 2 would reach the result undamped, so there v = h - h v0 = h (1 - v0), exact in value,
 * recomputes it from the quotient v0: v0's error enters multiplied by h, leaving about q's and
 * the fma's roundings (within 2 ulp over every float32, tests/engine/exhaustive_f32.py). The
 * sign of x is or-ed in (tanh(-0) is -0); NaN returns x. The quotient is nv_div_normal's: m + 2
 * is in [2, 2^28] and m is 0, in its domain, or below 2^-60, where h < 2^-61 and h - h v0
 * rounds to h for any v0 in [0, 2^-26] (h v0 is below half the gap under h), which covers
 * every quotient there on every device: the same bits everywhere. */
/* nv_exp_poly(2 rh) / 2, exactly: nv_poly_exp's steps on rh with each coefficient c_k times
 * 2^(k+1) (nv_poly_exp_half, nv_coeffs.h), so that each step's value is the original step's on
 * 2 rh times a power of 2 (the squares of both differ where they underflow, |rh| < 2^-63, where
 * the fmas they enter round to their addend either way). For tanh, whose reduced argument is
 * 2a - n ln2, this takes a - n ln2 / 2 and needs no 2a. narrow: nv_exp_poly_bf16's. */
NV_FN float nv_exp_poly_half(float rh, int narrow)
{
    float p = narrow ? nv_poly_exp_bf16_half(rh) : nv_poly_exp_half(rh);
    return fmaf(rh * rh, p, rh);
}

NV_FN float nv_tanh_steps(float x, int narrow)
{
    float a = nv_min_pos(fabsf(x), 9.5f);
    float t = fmaf(a, 2.0f * NV_LOG2E, 0x1.8p23f);
    float n = t - 0x1.8p23f;
    /* r / 2 = a - n ln2_hi / 2 (exact, as r is) and q / 2 = nv_exp_poly(r) / 2: m = 2^n q +
     * (2^n - 1) = 2^(n+1) (q / 2) + (2^n - 1), with 2^(n+1) from the bits of t and 2^n - 1 as
     * 2^(n+1) / 2 - 1, the same roundings with no 2a */
    float rh = fmaf(-n, 0.5f * NV_LN2_HI, a);
    float qh = nv_exp_poly_half(rh, narrow);
    float s2 = nv_u2f((nv_f2u(t) << 23) + 0x40000000u);         /* 2^(n+1) */
    float em = fmaf(s2, qh, fmaf(s2, 0.5f, -1.0f));
    float v0 = narrow ? nv_div_faithful(em, em + 2.0f) : nv_div_normal(em, em + 2.0f);
    float h = 0.5f * em;
    float v1 = fmaf(h, -v0, h);
    float v = !narrow && h < 0.5f ? v1 : v0;
    return nv_u2f(nv_f2u(v) | (nv_f2u(x) & 0x80000000u));
}

NV_FN float nv_tanh_value(float x) { return nv_tanh_steps(x, 0); }

/* tanh of a bfloat16 x for a result rounded to bfloat16 (the GPU's bfloat16 kernels), a NaN
 * for a NaN x on the GPU: exp's polynomial a degree short (nv_exp_poly_half's narrow one) and
 * the quotient v0 alone, within an ulp (nv_div_faithful), whose rounding to bfloat16 is that
 * of nv_tanh_f32 for every bfloat16 x and each reciprocal the quotient may take
 * (tests/engine/test_narrow_math.py checks all of them) */
NV_FN float nv_tanh_bf16(float x) { return nv_tanh_steps(x, 1); }

NV_FN float nv_tanh_f32(float x)
{
    float v = nv_tanh_value(x);
    return (x == x) ? v : x;
}

NV_FN float nv_asinh_f32(float x)
{
    float a = fabsf(x);
    float ac = a < 0x1p12f ? a : 0.0f;
    float z = ac * ac;
    float w = ac + z / (1.0f + sqrtf(1.0f + z));
    nv_ff s = nv_log1p_ff(w);
    nv_ff l = nv_log_ff(a < 0x1p12f ? 1.0f : a);
    float big = (l.hi + 0x1.62e43p-1f) + (l.lo + -0x1.05c61p-29f);
    float v = a < 0x1p12f ? s.hi + s.lo : big;
    v = a == NV_INF_F ? a : v;
    return (x == x) ? copysignf(v, x) : x;
}

NV_FN float nv_acosh_f32(float x)
{
    float xc = x < 0x1p12f ? x : 1.0f;
    float t = xc - 1.0f;
    float w = t + sqrtf(fmaf(t, t, 2.0f * t));
    nv_ff s = nv_log1p_ff(w > 0.0f ? w : 0.0f);
    nv_ff l = nv_log_ff(x < 0x1p12f ? 1.0f : (x < NV_INF_F ? x : 2.0f));
    float big = (l.hi + 0x1.62e43p-1f) + (l.lo + -0x1.05c61p-29f);
    float v = x < 0x1p12f ? s.hi + s.lo : big;
    v = x == NV_INF_F ? x : v;
    v = x >= 1.0f ? v : NV_NAN_F;
    return (x == x) ? v : x;
}

NV_FN float nv_atanh_f32(float x)
{
    float a = fabsf(x);
    float d = 1.0f - a;
    float w = 2.0f * a / (d > 0.0f ? d : 1.0f);
    nv_ff s = nv_log1p_ff(a < 1.0f ? w : 0.0f);
    float v = 0.5f * (s.hi + s.lo);
    v = a == 1.0f ? NV_INF_F : v;
    v = a <= 1.0f ? v : NV_NAN_F;
    return (x == x) ? copysignf(v, x) : x;
}

/* ---- sigmoid, erf, erfinv ------------------------------------------------------------------ */

/* 1 / (1 + t) for x >= 0 and t / (1 + t) for x < 0, t = exp(-|x|), as one correctly rounded
 * division: exp's error (damped by 1 / (1 + t) for x >= 0), the rounding of 1 + t and the
 * quotient's stay within 2 ulp over every float32 (tests/engine/exhaustive_f32.py). The
 * quotient is nv_div_normal's: 1 + t is in [1, 2] and the numerator in its domain but where
 * t < 2^-60; there 1 + t rounds to 1, whose reciprocal estimate one Newton step makes exactly
 * 1 (its error is far below 2^-12), so the steps return t exactly, as the division does. */
NV_FN float nv_sigmoid_steps(float x, int narrow)
{
    float t = nv_exp_nonpos_steps(-fabsf(x), narrow);   /* in [0, 1] */
    float num = x >= 0.0f ? 1.0f : t;
    return nv_div_normal(num, 1.0f + t);
}

NV_FN float nv_sigmoid_value(float x) { return nv_sigmoid_steps(x, 0); }

/* sigmoid of a bfloat16 x for a result rounded to bfloat16 (as nv_exp_nonpos_bf16; every
 * bfloat16 x: tests/engine/test_narrow_math.py) */
NV_FN float nv_sigmoid_bf16(float x) { return nv_sigmoid_steps(x, 1); }

NV_FN float nv_sigmoid_f32(float x)
{
    float v = nv_sigmoid_value(x);
    return (x == x) ? v : x;
}

/* a < 0.921875: a + a P(z), z = a^2, P(z) = erf(a)/a - 1 (nv_poly_erf): |P| <= 0.128, so its
 * rounding reaches erf scaled down by that much, and the final fma rounds once. Above, 1 - E
 * with E = 2^G, G = log2 erfc(a) as one polynomial in a - 1.84375 (nv_poly_erfc_log2; -a^2
 * log2(e) is part of it; the subtraction is exact, as a >= 1.84375 / 2), in [-26.4, -2.3]: its
 * error costs erf little as E <= erfc(0.921875) = 0.19 scales it down. G = n + f with n the
 * nearest integer (through the magic constant) and f = G - n exact (G and n within a factor 2),
 * so 2^G takes no product by log2(e) nor a reduction by ln2: 2^f = 1 + f P(f) as one fma, one
 * degree short of exp's accuracy (nv_poly_exp2m1_erfc, relative error 1e-7, damped like G's),
 * and 2^n is added to its exponent field (2^f in [0.7, 1.5] and n >= -26: a normal result,
 * exact). a is clamped at 3.92, where 1 - erfc(3.92) rounds to 1, so larger |x| give 1 with
 * no select. Both sides are computed for every element (one select): 17 multiplies and fmas,
 * the count that bounds erf on the two fma pipes of current x86 cores (within 2 ulp over every
 * float32, tests/engine/exhaustive_f32.py). */
NV_FN float nv_erf_value(float x)
{
    float a = fabsf(x);
    float small = fmaf(a, nv_poly_erf(a * a), a);
    float ac = nv_min_pos(a, 3.92f);
    float g = nv_poly_erfc_log2(ac - 1.84375f);         /* log2 erfc(ac) */
    float t = g + 0x1.8p23f;
    float n = t - 0x1.8p23f;
    float f = g - n;                                    /* exact */
    float e = fmaf(f, nv_poly_exp2m1_erfc(f), 1.0f);    /* 2^f */
    float mid = 1.0f - nv_u2f(nv_f2u(e) + (nv_f2u(t) << 23));   /* 1 - 2^n 2^f */
    /* >= 0: the sign of x is or-ed in; a NaN takes small, a NaN on every device */
    float v = a >= 0.921875f ? mid : small;
    return nv_u2f(nv_f2u(v) | (nv_f2u(x) & 0x80000000u));
}

NV_FN float nv_erf_f32(float x)
{
    float v = nv_erf_value(x);
    return (x == x) ? v : x;
}

/* erf of a bfloat16 x for a result rounded to bfloat16 (the GPU's bfloat16 kernels), a NaN for
 * a NaN x on the GPU: a + a P(a^2) with a = |x| clamped at 2.2, one polynomial of degree 7 in
 * a^2 (nv_poly_erf_bf16) for the whole range, where nv_erf_f32 takes two paths and 17 fmas.
 * From 2.2 up erf rounds to 1 in bfloat16. The constant term is nv_poly_erf's, so tiny
 * arguments (whose results lie closest to a rounding boundary) get nv_erf_f32's bits; every
 * bfloat16 x rounds as nv_erf_f32 does (tests/engine/test_narrow_math.py). */
NV_FN float nv_erf_bf16(float x)
{
    float a = nv_min_pos(fabsf(x), 2.2f);
    float v = fmaf(a, nv_poly_erf_bf16(a * a), a);
    return nv_u2f(nv_f2u(v) | (nv_f2u(x) & 0x80000000u));
}

NV_FN float nv_erfinv_f32(float x)
{
    float a = fabsf(x);
    float ac = a < 1.0f ? a : 0.0f;
    /* w = -log(1 - a^2), 1 - a^2 carried as hi + lo */
    float om = 1.0f - ac;                       /* exact for a >= 1/2 */
    nv_ff op = nv_two_sum(1.0f, ac);
    nv_ff pr = nv_two_prod(om, op.hi);
    float prl = fmaf(om, op.lo, pr.lo);
    nv_ff sq = nv_two_prod(ac, ac);
    nv_ff oms = nv_two_sum(1.0f, -sq.hi);      /* 1 - a^2 for a < 1/2 */
    float omsl = oms.lo - sq.lo;
    float hh = ac >= 0.5f ? pr.hi : oms.hi;
    float hl = ac >= 0.5f ? prl : omsl;
    nv_ff l = nv_log_ff(hh);
    float w = -(l.hi + (l.lo + hl / hh));
    float wc = w - 2.5f;
    float pc = nv_poly_erfinv_c(wc);
    float v = sqrtf(w > 0.0f ? w : 0.0f) - 3.0f;
    float pt = nv_poly_erfinv_t(v);
    float res = a * (w < 5.0f ? pc : pt);
    res = a == 1.0f ? NV_INF_F : res;
    res = a <= 1.0f ? res : NV_NAN_F;
    return (x == x) ? copysignf(res, x) : x;
}

/* ---- power, logaddexp ---------------------------------------------------------------------- */

/* y log2 x for finite y, from x's log parts p (finite x > 0): th = y hi rounded, with log2 x =
 * hi + lo, and (hi, lo) = th + its error and the product's lower part, renormalized */
typedef struct { float th; float hi; float lo; } nv_powexp;

NV_FN nv_powexp nv_pow_exponent(nv_logparts p, float y)
{
    float ph = p.hi * NV_INVLN2_HI;
    float pl = fmaf(p.hi, NV_INVLN2_HI, -ph) + fmaf(p.hi, NV_INVLN2_LO, p.lo * NV_INVLN2_HI);
    nv_ff l2 = nv_fast_two_sum(p.k, ph);
    float l2l = l2.lo + pl;
    nv_powexp t;
    t.th = y * l2.hi;
    float tl = fmaf(y, l2.hi, -t.th) + y * l2l;
    t.hi = t.th + tl;
    t.lo = tl - (t.hi - t.th);
    return t;
}

/* x^y = 2^(y log2 |x|) (nv_exp2_ff), then the IEEE limits and signs. Every select on the
 * arguments is a blend: in a loop over one array and one value read once (the C kernels'
 * broadcast loops), a select on that value's condition is a select on a loop invariant, which
 * gcc does not vectorize. */
NV_FN float nv_pow_f32(float x, float y)
{
    float ax = fabsf(x);
    nv_powexp t = nv_pow_exponent(nv_log_parts(nv_blend(ax > 0.0f & ax < NV_INF_F, ax, 1.0f)), y);
    /* y log2|x| overflowed: keep its sign */
    float th2 = nv_blend(fabsf(t.th) < NV_INF_F, t.hi, t.th);
    float r = nv_exp2_ff(th2, (th2 == th2 & fabsf(th2) < NV_INF_F) ? t.lo : 0.0f);
    /* |x| in {0, inf}: the limits */
    float lim = nv_blend((ax == 0.0f) == (y > 0.0f), 0.0f, NV_INF_F);
    r = nv_blend(ax == 0.0f | ax == NV_INF_F, lim, r);
    /* |y| = inf */
    float ylim = nv_blend(ax == 1.0f, 1.0f, nv_blend((ax < 1.0f) == (y > 0.0f), 0.0f, NV_INF_F));
    r = nv_blend(fabsf(y) == NV_INF_F, ylim, r);
    /* negative x (-0 and -inf too): an odd integer y flips the sign; a non-integer y is
     * invalid for finite nonzero x */
    float yh = 0.5f * y;
    float neg = nv_blend(floorf(yh) != yh & fabsf(y) < 0x1p24f, -r, r);
    neg = nv_blend(floorf(y) != y, nv_blend(ax > 0.0f & ax < NV_INF_F, NV_NAN_F, r), neg);
    r = nv_blend(nv_f2u(x) >> 31, neg, r);
    /* a NaN argument gives itself, quieted (x's where both are): a sum of one operand with
     * itself, so that the payload does not depend on the order of a commutative sum's
     * operands, which a vectorized loop may swap */
    r = nv_blend(y != y, y + y, r);
    r = nv_blend(x != x, x + x, r);
    return nv_blend(y == 0.0f | x == 1.0f, 1.0f, r);
}

/* The guard of power's split form (ElementwiseOp.split): 0 where x is positive, normal and
 * finite and |th| < 126 for th = y log2 x as nv_pow_f32 rounds it (a NaN or infinite th, from
 * a NaN or infinite y or a product that overflows, fails the comparison). It computes what
 * nv_pow_regular_f32 computes, so that in the C kernels' pass over a block, which takes both,
 * the compiler shares the work: the guard costs a comparison and a test of x's bits. */
NV_FN uint32_t nv_pow_irregular_f32(float x, float y)
{
    nv_powexp t = nv_pow_exponent(nv_log_parts_normal(x), y);
    return nv_log_irregular_f32(x) | (uint32_t)!(fabsf(t.hi) < 126.0f);
}

/* nv_pow_f32 where nv_pow_irregular_f32 is 0: none of the limits, no clamp, no subnormal x,
 * and y log2 x rounds to n in [-126, 126], so the product by 2^n, exact or rounded once into a
 * subnormal, gives nv_exp2_ff's three-step scaling's bits */
NV_FN float nv_pow_regular_f32(float x, float y)
{
    nv_powexp t = nv_pow_exponent(nv_log_parts_normal(x), y);
    float c = t.hi + 0x1.8p23f;
    float n = c - 0x1.8p23f;
    int32_t ni = (int32_t)(nv_f2u(c) - 0x4b400000u);
    return nv_exp2_frac(t.hi - n, t.lo) * nv_pow2i(ni);
}

NV_FN float nv_logaddexp_f32(float x, float y)
{
    float m = x > y ? x : y;
    float d = -fabsf(x - y);
    nv_ff l = nv_log1p_ff(nv_exp_f32(d));
    float v = m + (l.hi + l.lo);
    v = x == y ? x + 0x1.62e43p-1f : v;
    return (x == x & y == y) ? v : x + y;
}

/* ---- complex helpers ------------------------------------------------------------------------ */

/* sqrt(a^2 + b^2) without undue overflow, underflow or rounding */
NV_FN float nv_hypot_f32(float a, float b)
{
    float x = fabsf(a), y = fabsf(b);
    float mx = x > y ? x : y;
    uint32_t eb = nv_f2u(mx) & 0x7f800000u;
    eb = eb == 0u ? 0x00800000u : eb;             /* subnormal / zero: scale as 2^-126 */
    eb = eb >= 0x7f000000u ? 0x7e800000u : eb;    /* keep the scale finite */
    /* s = 2^-(e): x s, y s within [0, 2) */
    float sc = nv_u2f(0x7f000000u - eb);          /* 2^(127 - e) ... */
    float up = nv_u2f(eb);
    float xs = (x * sc) * 0.5f, ys = (y * sc) * 0.5f;
    /* the scaled values are exact unless they were subnormal and get rescaled */
    xs = mx < 0x1p-100f ? (x * 0x1p100f) : xs;
    ys = mx < 0x1p-100f ? (y * 0x1p100f) : ys;
    up = mx < 0x1p-100f ? 0x1p-100f : up * 2.0f;
    nv_ff px = nv_two_prod(xs, xs), py = nv_two_prod(ys, ys);
    nv_ff s = nv_two_sum(px.hi, py.hi);
    float sl = s.lo + px.lo + py.lo;
    float sh = s.hi + sl;
    sl = sl - (sh - s.hi);
    float r = sqrtf(sh);
    float corr = (fmaf(-r, r, sh) + sl) / (2.0f * (r > 0.0f ? r : 1.0f));
    float v = (r + corr) * up;
    v = (x == NV_INF_F | y == NV_INF_F) ? NV_INF_F : v;
    return v;
}
