/* nv_ops.h -- element operations of every dtype, shared by every kernel dialect.
 *
 * Naming: nv_<op>_<suffix>(args), suffix one of b u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 c64.
 * float16 and bfloat16 values live in float32 registers (already rounded to their format);
 * the generator applies nv_round_f16 / nv_round_bf16 after each float32 operation.
 *
 * Defined results where C leaves them undefined (never UB, never a trap):
 *   integer + - * negative abs square power: wrap around (two's complement), abs(MIN) == MIN
 *   floor_divide(a, 0) == 0, remainder(a, 0) == 0 (as NumPy);
 *   floor_divide(MIN, -1) == MIN, remainder(MIN, -1) == 0
 *   integer power with a negative exponent: 1 for a == 1, +-1 for a == -1, else 0
 *   left_shift by a count < 0 or >= bits: 0; right_shift by such a count: -1 for negative
 *   a, else 0 (as NumPy)
 *   float -> int32 / int64: truncate toward zero; outside the range and NaN: INT_MIN (x86's
 *   "integer indefinite", as NumPy and MLX give on x86-64: -3e9 -> int32 -2147483648)
 *   float -> uint32 / uint64: below 2^(n-1) as the signed conversion (so -1e9 -> uint32
 *   3294967296), from 2^(n-1) on that of x - 2^(n-1) with the top bit flipped (inf -> 0): the
 *   x86-64 sequence NumPy's contiguous loops and MLX use; float16 -> uint32 is the low half of
 *   the int64 conversion (NaN, +-inf -> 0), as NumPy's and MLX's float16 loops give
 *   float -> 8/16-bit integer: the low bits of the truncated int32 (as NumPy and MLX: 300.5 ->
 *   uint8 44); outside int32's range and NaN: those of INT32_MIN (0), as x86's conversion gives
 *   float64 / int -> float16 / bfloat16: correctly rounded (no double rounding)
 *   complex -> real: the real part; complex -> bool: re != 0 || im != 0
 * The prelude provides NV_FN, bit casts (nv_f2u, nv_u2f and, with float64, nv_d2u, nv_u2d),
 * the fixed-width integer types, NV_NOFUSE(x) (x, opaque to re-association and fusion
 * where the compiler needs telling), and defines NV_NO_F64 where float64 does not exist.
 *
 * NV_VECTORIZED_LOOPS (the C dialect, whose loops the C compiler vectorizes) selects, for the
 * ops whose plain form keeps a loop scalar (a data-dependent loop, a division, a libm call, a
 * conversion the vector ISA lacks), forms in straight-line code with the same results; the
 * GPU dialects keep the plain forms.
 */

typedef struct { float re; float im; } nv_c64;

/* vector conversions between 64-bit integers and float64 (AVX-512DQ, aarch64) and float32
 * (AVX-512DQ); elsewhere the C dialect converts through bit operations (same results) */
#if defined(NV_VECTORIZED_LOOPS) && (defined(__AVX512DQ__) || defined(__aarch64__))
#define NV_VECTOR_CVT64 1
#endif
#if defined(NV_VECTORIZED_LOOPS) && defined(__AVX512DQ__)
#define NV_VECTOR_CVT64_F32 1
#endif

/* ---- float16 / bfloat16 <-> float32 ------------------------------------------------------ */

#ifndef NV_HALF_CONVERSIONS   /* a dialect may provide hardware conversions (same bits) */
NV_FN float nv_f16_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = (uint32_t)(h & 0x7fffu);
    uint32_t r = nv_f2u(nv_u2f(em << 13) * 0x1p112f);   /* rebias; subnormals become normal */
    r = em >= 0x7c00u ? (r | 0x7f800000u) : r;           /* inf / nan */
    return nv_u2f(r | s);
}

NV_FN uint16_t nv_f32_to_f16(float f)
{
    uint32_t x = nv_f2u(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    uint32_t nrm = ax - 0x38000000u;
    nrm = (nrm + 0xfffu + ((nrm >> 13) & 1u)) >> 13;     /* round to nearest even */
    uint32_t sub = nv_f2u(nv_u2f(ax) + 0.5f) - 0x3f000000u;
    uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);
    uint32_t h = ax >= 0x38800000u ? nrm : sub;
    h = ax >= 0x477ff000u ? 0x7c00u : h;
    h = ax > 0x7f800000u ? nan : h;
    return (uint16_t)(h | sign);
}

NV_FN float nv_bf16_to_f32(uint16_t b) { return nv_u2f((uint32_t)b << 16); }

NV_FN uint16_t nv_f32_to_bf16(float f)
{
    uint32_t x = nv_f2u(f);
    uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    uint32_t nan = (x >> 16) | 0x0040u;
    return (uint16_t)(((x & 0x7fffffffu) > 0x7f800000u) ? nan : r);
}

#endif

/* round a float32 value to the nearest float16 / bfloat16 value, kept as float32 */
#ifndef NV_HALF_ROUNDING
NV_FN float nv_round_f16(float f) { return nv_f16_to_f32(nv_f32_to_f16(f)); }
NV_FN float nv_round_bf16(float f) { return nv_bf16_to_f32(nv_f32_to_bf16(f)); }
#endif

/* ---- integers ------------------------------------------------------------------------------- */

#define NV_INT_COMMON(S, T, W, BITS)                                                          \
NV_FN T nv_add_##S(T a, T b) { return (T)((W)a + (W)b); }                                   \
NV_FN T nv_subtract_##S(T a, T b) { return (T)((W)a - (W)b); }                              \
NV_FN T nv_multiply_##S(T a, T b) { return (T)((W)a * (W)b); }                              \
NV_FN T nv_negative_##S(T a) { return (T)((W)0 - (W)a); }                                   \
NV_FN T nv_square_##S(T a) { return (T)((W)a * (W)a); }                                    \
NV_FN T nv_maximum_##S(T a, T b) { return a > b ? a : b; }                                  \
NV_FN T nv_minimum_##S(T a, T b) { return a < b ? a : b; }                                  \
NV_FN T nv_bitwise_and_##S(T a, T b) { return (T)(a & b); }                                 \
NV_FN T nv_bitwise_or_##S(T a, T b) { return (T)(a | b); }                                  \
NV_FN T nv_bitwise_xor_##S(T a, T b) { return (T)(a ^ b); }                                 \
NV_FN T nv_bitwise_invert_##S(T a) { return (T)(~(W)a); }                                   \
NV_FN T nv_copy_##S(T a) { return a; }                                                      \
NV_FN T nv_floor_##S(T a) { return a; }                                                     \
NV_FN T nv_ceil_##S(T a) { return a; }                                                      \
NV_FN T nv_round_##S(T a) { return a; }                                                     \
NV_FN T nv_real_##S(T a) { return a; }                                                      \
NV_FN T nv_imag_##S(T a) { return (T)0; }                                                   \
NV_FN T nv_conjugate_##S(T a) { return a; }                                                 \
NV_FN uint8_t nv_isnan_##S(T a) { return 0; }                                               \
NV_FN uint8_t nv_isinf_##S(T a) { return 0; }                                               \
NV_FN uint8_t nv_isposinf_##S(T a) { return 0; }                                            \
NV_FN uint8_t nv_isneginf_##S(T a) { return 0; }                                            \
NV_FN uint8_t nv_isfinite_##S(T a) { return 1; }                                            \
NV_FN T nv_left_shift_##S(T a, T b)                                                         \
{                                                                                           \
    int ok = (b >= (T)0) & (b < (T)(BITS));                                                \
    return ok ? (T)((W)a << (ok ? b : (T)0)) : (T)0;                                        \
}

/* Integer division and power without branches or data-dependent loops (NV_VECTORIZED_LOOPS):
 * x86 and NEON have no vector integer division, but the quotient of integers of at most 16
 * bits is exact as float32 and of 32 bits as float64: a / d is an integer (exact) or at least
 * 1/|d| from one, a relative distance of at least 1/|a| >= 2^-16 (2^-32), more than the
 * division's rounding error of 2^-24 (2^-53), so truncating the rounded quotient gives the
 * integer one. 64-bit operands (float64 holds 53 bits) take two such quotients and a
 * correction (nv_quot_u64, with the float64 conversions). Power squares over every bit of the
 * exponent (a fixed count, unrolled): the squarings after the last set bit leave the result as
 * it is. */
#if defined(NV_VECTORIZED_LOOPS)
NV_FN uint64_t nv_quot_u64(uint64_t n, uint64_t d);
NV_FN int64_t nv_quot_i64(int64_t a, int64_t d);
#define NV_QUOTU64(T, a, d) nv_quot_u64(a, d)
#define NV_QUOTI64(T, a, d) nv_quot_i64(a, d)
#define NV_QUOT16(T, a, d) ((T)(int32_t)((float)(a) / (float)(d)))
#define NV_QUOT32(T, a, d) ((T)(int32_t)((double)(a) / (double)(d)))
#define NV_REM(T, W, a, d, q) ((T)((W)(a) - (W)(q) * (W)(d)))
#define NV_POW_LOOP(W, r, base, e, NBITS)                                                     \
    _Pragma("GCC unroll 64")                                                                \
    for (int k = 0; k < (NBITS); k++) {                                                     \
        W bit = e & (W)1;                       /* r times base or 1, as arithmetic */      \
        r = r * ((base & ((W)0 - bit)) | (bit ^ (W)1));                                     \
        base = base * base;                                                                 \
        e >>= 1;                                                                            \
    }
/* 0 <= a / d < 2^32 truncated, through float64: the conversions of uint32 <-> float64 as bit
 * operations (x86 before AVX-512 has only the signed ones) */
NV_FN uint32_t nv_quot_u32(uint32_t a, uint32_t d)
{
    double fa = nv_u2d(0x4330000000000000ull | a) - 0x1p52;
    double fd = nv_u2d(0x4330000000000000ull | d) - 0x1p52;
    return (uint32_t)nv_d2u(floor(fa / fd) + 0x1p52);
}
#define NV_QUOTU32(T, a, d) nv_quot_u32(a, d)
/* a^b for b < 0: 1 for a = 1, +-1 for a = -1, else 0, as arithmetic (nested selects on a
 * broadcast a are unswitched into loops GCC then does not vectorize) */
#define NV_POW_NEG(T, W, a, b)                                                                \
    ((T)((W)((a) == (T)1 | (a) == (T)(-1)) - (W)2 * ((W)((a) == (T)(-1)) & (W)(b) & (W)1)))
#else
#define NV_POW_NEG(T, W, a, b)                                                                \
    ((a) == (T)1 ? (T)1 : ((a) == (T)(-1) ? (T)(((b) & (T)1) ? -1 : 1) : (T)0))
#define NV_QUOT16(T, a, d) ((T)((a) / (d)))
#define NV_QUOT32(T, a, d) ((T)((a) / (d)))
#define NV_QUOTU32(T, a, d) ((T)((a) / (d)))
#define NV_QUOTU64(T, a, d) ((T)((a) / (d)))
#define NV_QUOTI64(T, a, d) ((T)((a) / (d)))
#define NV_REM(T, W, a, d, q) ((T)((a) % (d)))
#define NV_POW_LOOP(W, r, base, e, NBITS)                                                     \
    for (; e != (W)0; e >>= 1) {                                                            \
        r = (e & (W)1) ? r * base : r;                                                      \
        base = base * base;                                                                 \
    }
#endif

#define NV_INT_SIGNED(S, T, W, BITS, TMIN, QUOT)                                              \
NV_INT_COMMON(S, T, W, BITS)                                                                \
NV_FN T nv_abs_##S(T a) { return a < (T)0 ? (T)((W)0 - (W)a) : a; }                         \
NV_FN T nv_sign_##S(T a) { return (T)((a > (T)0) - (a < (T)0)); }                           \
NV_FN T nv_right_shift_##S(T a, T b)                                                        \
{                                                                                           \
    int ok = (b >= (T)0) & (b < (T)(BITS));                                                \
    T fill = a < (T)0 ? (T)(-1) : (T)0;                                                     \
    return ok ? (T)(a >> (ok ? b : (T)0)) : fill;                                           \
}                                                                                           \
NV_FN T nv_floor_divide_##S(T a, T b)                                                       \
{                                                                                           \
    int bad = (b == (T)0) | (a == (T)(TMIN) & b == (T)(-1));                              \
    T d = bad ? (T)1 : b;                                                                   \
    T q = QUOT(T, a, d), r = NV_REM(T, W, a, d, q);                                         \
    q = (r != (T)0 & ((r < (T)0) != (d < (T)0))) ? (T)((W)q - (W)1) : q;                   \
    return b == (T)0 ? (T)0 : q;                                                            \
}                                                                                           \
NV_FN T nv_remainder_##S(T a, T b)                                                          \
{                                                                                           \
    int bad = (b == (T)0) | (a == (T)(TMIN) & b == (T)(-1));                              \
    T d = bad ? (T)1 : b;                                                                   \
    T r = NV_REM(T, W, a, d, QUOT(T, a, d));                                                \
    r = (r != (T)0 & ((r < (T)0) != (d < (T)0))) ? (T)(r + d) : r;                         \
    return b == (T)0 ? (T)0 : r;                                                            \
}                                                                                           \
NV_FN T nv_power_##S(T a, T b)                                                              \
{                                                                                           \
    W r = 1, base = (W)a, e = (W)b;                                                         \
    NV_POW_LOOP(W, r, base, e, BITS - 1)                                                    \
    T neg = NV_POW_NEG(T, W, a, b);                                                         \
    return b < (T)0 ? neg : (T)r;                                                           \
}

#define NV_INT_UNSIGNED(S, T, W, BITS, QUOT)                                                  \
NV_INT_COMMON(S, T, W, BITS)                                                                \
NV_FN T nv_abs_##S(T a) { return a; }                                                       \
NV_FN T nv_sign_##S(T a) { return (T)(a > (T)0); }                                          \
NV_FN T nv_right_shift_##S(T a, T b)                                                        \
{                                                                                           \
    int ok = b < (T)(BITS);                                                                 \
    return ok ? (T)(a >> (ok ? b : (T)0)) : (T)0;                                           \
}                                                                                           \
NV_FN T nv_floor_divide_##S(T a, T b) { return b == (T)0 ? (T)0 : QUOT(T, a, (b ? b : (T)1)); } \
NV_FN T nv_remainder_##S(T a, T b)                                                          \
{                                                                                           \
    T d = b ? b : (T)1;                                                                     \
    return b == (T)0 ? (T)0 : NV_REM(T, W, a, d, QUOT(T, a, d));                            \
}                                                                                           \
NV_FN T nv_power_##S(T a, T b)                                                              \
{                                                                                           \
    W r = 1, base = (W)a, e = (W)b;                                                         \
    NV_POW_LOOP(W, r, base, e, BITS)                                                        \
    return (T)r;                                                                            \
}

NV_INT_SIGNED(i8, int8_t, uint32_t, 8, -128, NV_QUOT16)
NV_INT_SIGNED(i16, int16_t, uint32_t, 16, -32768, NV_QUOT16)
NV_INT_SIGNED(i32, int32_t, uint32_t, 32, (-2147483647 - 1), NV_QUOT32)
NV_INT_SIGNED(i64, int64_t, uint64_t, 64, (-9223372036854775807ll - 1), NV_QUOTI64)
NV_INT_UNSIGNED(u8, uint8_t, uint32_t, 8, NV_QUOT16)
NV_INT_UNSIGNED(u16, uint16_t, uint32_t, 16, NV_QUOT16)
NV_INT_UNSIGNED(u32, uint32_t, uint32_t, 32, NV_QUOTU32)
NV_INT_UNSIGNED(u64, uint64_t, uint64_t, 64, NV_QUOTU64)

#if defined(NV_VECTORIZED_LOOPS)
/* power's split form (ElementwiseOp.split_int) for 32 and 64 bits: where no exponent of a
 * block is negative or 2^8 or more, 8 squarings give the result of a squaring per bit */
#define NV_POWER_SPLIT(S, T, W)                                                               \
NV_FN uint32_t nv_power_large_##S(T a, T b) { return (uint32_t)(((W)b >> 8) != (W)0); }      \
NV_FN T nv_power_small_##S(T a, T b)                                                        \
{                                                                                           \
    W r = 1, base = (W)a, e = (W)b;                                                         \
    NV_POW_LOOP(W, r, base, e, 8)                                                           \
    return (T)r;                                                                            \
}
NV_POWER_SPLIT(i32, int32_t, uint32_t)
NV_POWER_SPLIT(i64, int64_t, uint64_t)
NV_POWER_SPLIT(u32, uint32_t, uint32_t)
NV_POWER_SPLIT(u64, uint64_t, uint64_t)
#endif

/* ---- bool (uint8_t holding 0 or 1) ----------------------------------------------------------- */

NV_FN uint8_t nv_add_b(uint8_t a, uint8_t b) { return (uint8_t)(a | b); }
NV_FN uint8_t nv_multiply_b(uint8_t a, uint8_t b) { return (uint8_t)(a & b); }
NV_FN uint8_t nv_maximum_b(uint8_t a, uint8_t b) { return (uint8_t)(a | b); }
NV_FN uint8_t nv_minimum_b(uint8_t a, uint8_t b) { return (uint8_t)(a & b); }
NV_FN uint8_t nv_bitwise_and_b(uint8_t a, uint8_t b) { return (uint8_t)(a & b); }
NV_FN uint8_t nv_bitwise_or_b(uint8_t a, uint8_t b) { return (uint8_t)(a | b); }
NV_FN uint8_t nv_bitwise_xor_b(uint8_t a, uint8_t b) { return (uint8_t)(a ^ b); }
NV_FN uint8_t nv_bitwise_invert_b(uint8_t a) { return (uint8_t)(a ^ 1u); }
NV_FN uint8_t nv_abs_b(uint8_t a) { return a; }
NV_FN uint8_t nv_copy_b(uint8_t a) { return a; }
NV_FN uint8_t nv_real_b(uint8_t a) { return a; }
NV_FN uint8_t nv_imag_b(uint8_t a) { return 0; }
NV_FN uint8_t nv_conjugate_b(uint8_t a) { return a; }
NV_FN uint8_t nv_isnan_b(uint8_t a) { return 0; }
NV_FN uint8_t nv_isinf_b(uint8_t a) { return 0; }
NV_FN uint8_t nv_isposinf_b(uint8_t a) { return 0; }
NV_FN uint8_t nv_isneginf_b(uint8_t a) { return 0; }
NV_FN uint8_t nv_isfinite_b(uint8_t a) { return 1; }

/* ---- float32 ------------------------------------------------------------------------------ */

NV_FN float nv_add_f32(float a, float b) { return a + b; }
NV_FN float nv_subtract_f32(float a, float b) { return a - b; }
NV_FN float nv_multiply_f32(float a, float b) { return a * b; }
NV_FN float nv_divide_f32(float a, float b) { return a / b; }
NV_FN float nv_negative_f32(float a) { return -a; }
NV_FN float nv_square_f32(float a) { return a * a; }
NV_FN float nv_reciprocal_f32(float a) { return 1.0f / a; }
NV_FN float nv_abs_f32(float a) { return fabsf(a); }
NV_FN float nv_sqrt_f32(float a) { return sqrtf(a); }
NV_FN float nv_rsqrt_f32(float a) { return 1.0f / sqrtf(a); }
NV_FN float nv_copy_f32(float a) { return a; }
NV_FN float nv_real_f32(float a) { return a; }
NV_FN float nv_imag_f32(float a) { return 0.0f; }
NV_FN float nv_conjugate_f32(float a) { return a; }
NV_FN float nv_sign_f32(float a)
{
    return a > 0.0f ? 1.0f : (a < 0.0f ? -1.0f : (a == a ? 0.0f : a));
}
/* NaN propagates; on equal values the second argument is returned (as NumPy) */
NV_FN float nv_maximum_f32(float a, float b) { return a != a ? a : (a > b ? a : b); }
NV_FN float nv_minimum_f32(float a, float b) { return a != a ? a : (a < b ? a : b); }
NV_FN float nv_floor_f32(float a) { return floorf(a); }
NV_FN float nv_ceil_f32(float a) { return ceilf(a); }
NV_FN float nv_round_f32(float a) { return rintf(a); }
NV_FN uint8_t nv_isnan_f32(float a) { return (uint8_t)(a != a); }
NV_FN uint8_t nv_isinf_f32(float a) { return (uint8_t)(fabsf(a) == NV_INF_F); }
NV_FN uint8_t nv_isposinf_f32(float a) { return (uint8_t)(a == NV_INF_F); }
NV_FN uint8_t nv_isneginf_f32(float a) { return (uint8_t)(a == -NV_INF_F); }
NV_FN uint8_t nv_isfinite_f32(float a) { return (uint8_t)(fabsf(a) < NV_INF_F); }
NV_FN float nv_arcsin_f32(float a) { return nv_asin_f32(a); }
NV_FN float nv_arccos_f32(float a) { return nv_acos_f32(a); }
NV_FN float nv_arctan_f32(float a) { return nv_atan_f32(a); }
NV_FN float nv_arcsinh_f32(float a) { return nv_asinh_f32(a); }
NV_FN float nv_arccosh_f32(float a) { return nv_acosh_f32(a); }
NV_FN float nv_arctanh_f32(float a) { return nv_atanh_f32(a); }
NV_FN float nv_power_f32(float a, float b) { return nv_pow_f32(a, b); }
NV_FN float nv_arctan2_f32(float a, float b) { return nv_atan2_f32(a, b); }

/* fmodf(a, b). In the C dialect (NV_VECTORIZED_LOOPS) exactly, in straight-line code, as a
 * libm call would keep the loop scalar: |a| = A 2^(ea-150) and |b| = B 2^(eb-150) with integers
 * A, B < 2^24, and where |a| >= |b| (so ea >= eb) fmod(a, b) = (A 2^(ea-eb) mod B) 2^(eb-150)
 * with a's sign. A 2^(ea-eb) mod B is reduced in float64, 28 bits of the shift at a time: with
 * X < B < 2^24, X 2^s < 2^52 and X 2^s / B is an integer or at least 1/B from one, more than
 * its rounding error (below X 2^s 2^-53 / B), so floor gives the exact quotient and X 2^s - q B
 * is exact. NaN operands, an infinite a and b = 0 give glibc's (a b) / (a b): the NaN that a
 * product of a and b passes on (nv_nan_of_product), or the machine's default NaN. */
#if defined(NV_VECTORIZED_LOOPS)
/* the NaN that a b gives where a or b is NaN, quieted: a signalling one first on aarch64, then
 * the first operand's (x86: the first operand's). Written out, as a compiler may swap the
 * operands of a multiplication. */
NV_FN float nv_nan_of_product(float a, float b)
{
    uint32_t ua = nv_f2u(a), ub = nv_f2u(b);
    uint32_t a_nan = (ua & 0x7fffffffu) > 0x7f800000u;
#if defined(__aarch64__)
    uint32_t b_snan = (ub & 0x7fffffffu) > 0x7f800000u & (ub & 0x00400000u) == 0u;
    uint32_t a_snan = a_nan & (ua & 0x00400000u) == 0u;
    uint32_t pick_a = a_snan | (a_nan & !b_snan);
#else
    uint32_t pick_a = a_nan;
#endif
    return nv_u2f((pick_a ? ua : ub) | 0x00400000u);
}
NV_FN float nv_fmod_f32(float a, float b)
{
    /* every condition on 32-bit lanes: GCC vectorizes no select between masks of two widths */
    uint32_t ua = nv_f2u(a) & 0x7fffffffu, ub = nv_f2u(b) & 0x7fffffffu;
    uint32_t ea = ua >> 23, eb = ub >> 23;
    uint32_t ia = (ua & 0x7fffffu) | (ea != 0u ? 0x800000u : 0u);
    uint32_t ib = (ub & 0x7fffffu) | (eb != 0u ? 0x800000u : 0u);
    ea = ea != 0u ? ea : 1u;                    /* subnormals: exponent 1, no implicit bit */
    eb = eb != 0u ? eb : 1u;
    ib = ib != 0u ? ib : 1u;                    /* b = 0: a harmless divisor, result below */
    int32_t shift = (int32_t)ea - (int32_t)eb;
    double ma = (double)(int32_t)ia, mb = (double)(int32_t)ib;
    double x = ma - floor(ma / mb) * mb;
    _Pragma("GCC unroll 10")
    for (int32_t k = 0; k < 10; k++) {          /* ea - eb <= 253 < 10 * 28 */
        int32_t s = shift - 28 * k;
        s = s < 0 ? 0 : (s > 28 ? 28 : s);
        x = x * nv_u2d((uint64_t)(s + 1023) << 52);
        x = x - floor(x / mb) * mb;
    }
    float r = (float)(x * nv_u2d((uint64_t)(eb + (1023u - 150u)) << 52));
    r = fabsf(a) < fabsf(b) ? a : copysignf(r, a);
    float ab = a * b;
    float special = a != a | b != b ? nv_nan_of_product(a, b) : ab / ab;
    return fabsf(a) < NV_INF_F & fabsf(b) > 0.0f ? r : special;
}

/* fmodf(a, b) where nv_fmod_large_f32(a, b) is 0: where a and b are finite, b nonzero and
 * |a| < 2^22 |b|, the quotient q = trunc(a / b) is |a / b| truncated or, where the division
 * rounded up to the next integer, one more in magnitude; a - q b is a multiple of ulp(b) (or
 * a - b with b/2 <= |a| <= 2|b|) below |b| in magnitude, so the fma gives it exactly, and the
 * one correction (an opposite sign) adds b back exactly. Elsewhere, NaN and infinite operands
 * and b = 0, as nv_fmod_f32 (so that those, NaN among data say, do not send their blocks
 * through the full reduction). */
NV_FN uint32_t nv_fmod_large_f32(float a, float b)
{
    float ab = fabsf(b);
    return (uint32_t)((fabsf(a) >= 0x1p22f * ab) & (fabsf(a) < NV_INF_F) & (ab > 0.0f));
}
NV_FN float nv_fmod_small_f32(float a, float b)
{
    float q = truncf(a / b);
    float r = fmaf(-q, b, a);
    r = (r != 0.0f & ((r < 0.0f) != (a < 0.0f))) ? r + copysignf(b, a) : r;
    r = r != 0.0f ? r : copysignf(0.0f, a);
    r = nv_blend(fabsf(a) < fabsf(b), a, r);    /* b infinite: a */
    /* nv_fmod_f32's (a b) / (a b) without a second division: where neither is NaN, both are
     * the machine's default NaN (an infinite a b less itself, or a zero one times infinity) */
    float ab = a * b;
    float special = nv_blend(a != a | b != b, nv_nan_of_product(a, b), (ab - ab) * NV_INF_F);
    return nv_blend(fabsf(a) < NV_INF_F & fabsf(b) > 0.0f, r, special);
}
#endif

/* Python / NumPy floor division and remainder from the exact fmod ``mod`` of a and bb (b, or
 * 1 where b = 0): q = round((a - mod) / bb) adjusted so that a = q bb + r with r of the sign of
 * bb. */
NV_FN float nv_floor_divide_mod(float a, float b, float bb, float mod)
{
    float div = (a - mod) / bb;
    div = (mod != 0.0f & ((bb < 0.0f) != (mod < 0.0f))) ? div - 1.0f : div;
    float fl = floorf(div);
    fl = (div - fl > 0.5f) ? fl + 1.0f : fl;
    fl = div != 0.0f ? fl : copysignf(0.0f, a / bb);
    return b == 0.0f ? a / b : fl;
}

NV_FN float nv_remainder_mod(float bb, float mod)
{
    float adj = (mod != 0.0f & ((bb < 0.0f) != (mod < 0.0f))) ? mod + bb : mod;
    return mod != 0.0f ? adj : copysignf(0.0f, bb);
}

/* The C dialect's forms take b for bb (no select on b, which GCC would fold into the guards'
 * masks and then not vectorize): where b = 0 floor_divide's result is a / b whatever the rest
 * gives, and remainder's is fmod(a, 0), a NaN, which nv_remainder_mod passes through. */
#if defined(NV_VECTORIZED_LOOPS)
NV_FN float nv_floor_divide_f32(float a, float b)
{
    return nv_floor_divide_mod(a, b, b, nv_fmod_f32(a, b));
}
NV_FN float nv_remainder_f32(float a, float b) { return nv_remainder_mod(b, nv_fmod_f32(a, b)); }

/* the split forms (ElementwiseOp.split): the same bits where nv_fmod_large_f32(a, b) is 0 */
NV_FN float nv_floor_divide_small_f32(float a, float b)
{
    return nv_floor_divide_mod(a, b, b, nv_fmod_small_f32(a, b));
}
NV_FN float nv_remainder_small_f32(float a, float b)
{
    return nv_remainder_mod(b, nv_fmod_small_f32(a, b));
}
#else
NV_FN float nv_floor_divide_f32(float a, float b)
{
    float bb = b == 0.0f ? 1.0f : b;
    return nv_floor_divide_mod(a, b, bb, fmodf(a, bb));
}

NV_FN float nv_remainder_f32(float a, float b)
{
    float bb = b == 0.0f ? 1.0f : b;
    return b == 0.0f ? fmodf(a, b) : nv_remainder_mod(bb, fmodf(a, bb));
}
#endif

#define NV_CMP(S, T)                                                                          \
NV_FN uint8_t nv_equal_##S(T a, T b) { return (uint8_t)(a == b); }                           \
NV_FN uint8_t nv_not_equal_##S(T a, T b) { return (uint8_t)(a != b); }                       \
NV_FN uint8_t nv_less_##S(T a, T b) { return (uint8_t)(a < b); }                             \
NV_FN uint8_t nv_less_equal_##S(T a, T b) { return (uint8_t)(a <= b); }                      \
NV_FN uint8_t nv_greater_##S(T a, T b) { return (uint8_t)(a > b); }                          \
NV_FN uint8_t nv_greater_equal_##S(T a, T b) { return (uint8_t)(a >= b); }                   \
NV_FN uint8_t nv_logical_and_##S(T a, T b) { return (uint8_t)((a != (T)0) & (b != (T)0)); }   \
NV_FN uint8_t nv_logical_or_##S(T a, T b) { return (uint8_t)((a != (T)0) | (b != (T)0)); }    \
NV_FN uint8_t nv_logical_not_##S(T a) { return (uint8_t)(a == (T)0); }

NV_CMP(b, uint8_t)
NV_CMP(u8, uint8_t)
NV_CMP(u16, uint16_t)
NV_CMP(u32, uint32_t)
NV_CMP(u64, uint64_t)
NV_CMP(i8, int8_t)
NV_CMP(i16, int16_t)
NV_CMP(i32, int32_t)
NV_CMP(i64, int64_t)
NV_CMP(f32, float)

/* ---- float32 -> integer: x86-64's conversions (see the header) ---------------------------- */

NV_FN int32_t nv_f32_to_i32(float x)
{
    int in = x > -0x1p31f & x < 0x1p31f;
    int32_t r = (int32_t)(in ? x : 0.0f);
    return in ? r : (-2147483647 - 1);
}
#if defined(NV_VECTORIZED_LOOPS) && !defined(NV_VECTOR_CVT64_F32)
/* |x| = top 2^-down with top the significand shifted to bit 63 or below: truncated, top >> down
 * where 1 <= down < 64, 0 from 64 on, INT64_MIN for down < 1 (|x| >= 2^63, inf, NaN); then
 * negated where neg. Every step on 64-bit lanes, and as masks rather than selects (GCC threads
 * nested selects into more paths than it if-converts); the shift count masked to 0..63. */
NV_FN int64_t nv_trunc_signed(uint64_t top, int64_t down, int neg)
{
    uint64_t mag = (top >> ((uint64_t)down & 63u)) & (0u - (uint64_t)(down < 64));
    mag = down >= 1 ? mag : 0x8000000000000000ull;
    uint64_t s = 0u - (uint64_t)neg;
    return (int64_t)((mag ^ s) - s);
}
/* |x| = top 2^(ex - 190) */
NV_FN uint64_t nv_f32_top(int64_t u) { return (uint64_t)((u & 0x7fffff) | 0x800000) << 40; }
NV_FN int64_t nv_f32_to_i64(float x)
{
    int64_t u = (int64_t)(int32_t)nv_f2u(x);    /* the sign extended */
    int64_t ex = (u >> 23) & 0xff;
    return nv_trunc_signed(nv_f32_top(u), 190 - ex, u < 0);
}
NV_FN uint64_t nv_f32_to_u64(float x)
{
    int64_t u = (int64_t)(int32_t)nv_f2u(x);
    int64_t ex = (u >> 23) & 0xff;
    uint64_t hi = 0u - (uint64_t)(u >= 0x5f000000 & u <= 0x7f800000);   /* 2^63 <= x <= inf */
    uint64_t top = nv_f32_top(u) & (0u - (uint64_t)(ex == 190));   /* x < 2^64: x itself */
    return (top & hi) | ((uint64_t)nv_f32_to_i64(x) & ~hi);
}
#else
NV_FN int64_t nv_f32_to_i64(float x)
{
    int in = x > -0x1p63f & x < 0x1p63f;
    int64_t r = (int64_t)(in ? x : 0.0f);
    return in ? r : (-9223372036854775807ll - 1);
}
#endif
NV_FN uint32_t nv_f32_to_u32(float x)
{
    int hi = x >= 0x1p31f;   /* x - 2^31 is exact there */
    return (uint32_t)nv_f32_to_i32(hi ? x - 0x1p31f : x) ^ (hi ? 0x80000000u : 0u);
}
#if !defined(NV_VECTORIZED_LOOPS) || defined(NV_VECTOR_CVT64_F32)
NV_FN uint64_t nv_f32_to_u64(float x)
{
    int hi = x >= 0x1p63f;
    return (uint64_t)nv_f32_to_i64(hi ? x - 0x1p63f : x) ^ (hi ? 0x8000000000000000ull : 0ull);
}
#endif
NV_FN uint32_t nv_f16_to_u32(float x) { return (uint32_t)nv_f32_to_i64(x); }
/* float -> 8/16-bit: the low bits of int32 (in range) or of INT32_MIN (out of range, NaN) */
NV_FN uint32_t nv_f32_low32(float x)
{
    int in = x > -0x1p31f & x < 0x1p31f;
    int32_t r = (int32_t)(in ? x : 0.0f);
    return in ? (uint32_t)r : 0x80000000u;
}
NV_FN int8_t nv_f32_to_i8(float x) { return (int8_t)(uint8_t)nv_f32_low32(x); }
NV_FN int16_t nv_f32_to_i16(float x) { return (int16_t)(uint16_t)nv_f32_low32(x); }
NV_FN uint8_t nv_f32_to_u8(float x) { return (uint8_t)nv_f32_low32(x); }
NV_FN uint16_t nv_f32_to_u16(float x) { return (uint16_t)nv_f32_low32(x); }

/* integer -> float32: wrap the conversion, (float)i, in this. A zero result is +0.0 there, but
 * GCC (-fno-trapping-math, with a one-instruction round, as x86-64-v3's) rewrites
 * (float)(int)x as truncf(x), which keeps x's sign: -0.3 -> int 0 -> -0.0. Clearing the sign
 * of a zero gives the conversion's bits back, and the loop still vectorises. */
NV_FN float nv_from_int_f32(float f) { return nv_u2f(nv_f2u(f) & (f == 0.0f ? 0x7fffffffu : ~0u)); }

/* integers wider than 24 bits -> float32, rounded to odd: a later rounding to bfloat16 is then
 * correctly rounded (float32 has more than 2 bits beyond bfloat16's 8). The C dialect's forms,
 * and its 64-bit integer -> float32 conversions, are in the float64 section. */
#if !defined(NV_VECTORIZED_LOOPS)
NV_FN float nv_i64_to_f32(int64_t i) { return (float)i; }
NV_FN float nv_u64_to_f32(uint64_t i) { return (float)i; }
NV_FN float nv_i64_to_f32_odd(int64_t i)
{
    float f = nv_from_int_f32((float)i);
    float fc = f >= 0x1p63f ? 0x1p62f : f;
    int64_t back = (int64_t)fc;
    int exact = f < 0x1p63f & back == i;
    uint32_t b = nv_f2u(f);
    int away = f >= 0x1p63f ? 0 : ((i > back) == (f > 0.0f));   /* is |i| beyond |f| ? */
    uint32_t odd = (b & 1u) ? b : (away ? b + 1u : b - 1u);
    return (exact | (b & 1u)) ? f : nv_u2f(odd);
}
NV_FN float nv_u64_to_f32_odd(uint64_t i)
{
    float f = nv_from_int_f32((float)i);
    uint64_t back = f >= 0x1p64f ? 0ull : (uint64_t)(f >= 0x1p64f ? 0.0f : f);
    int exact = f < 0x1p64f & back == i;
    uint32_t b = nv_f2u(f);
    int away = f >= 0x1p64f ? 0 : (i > back);
    uint32_t odd = (b & 1u) ? b : (away ? b + 1u : b - 1u);
    return (exact | (b & 1u)) ? f : nv_u2f(odd);
}
NV_FN float nv_i32_to_f32_odd(int32_t i) { return nv_i64_to_f32_odd((int64_t)i); }
NV_FN float nv_u32_to_f32_odd(uint32_t i) { return nv_i64_to_f32_odd((int64_t)i); }
#endif

/* ---- complex64 ---------------------------------------------------------------------------- */

NV_FN nv_c64 nv_c64_make(float re, float im) { nv_c64 z; z.re = re; z.im = im; return z; }
NV_FN nv_c64 nv_add_c64(nv_c64 a, nv_c64 b) { return nv_c64_make(a.re + b.re, a.im + b.im); }
NV_FN nv_c64 nv_subtract_c64(nv_c64 a, nv_c64 b) { return nv_c64_make(a.re - b.re, a.im - b.im); }
/* NV_NOFUSE keeps GCC's vectoriser from turning this into fmaddsub (its complex-multiply
 * pattern ignores -ffp-contract=off, and only in the vector body: results would depend on
 * an element's position) */
NV_FN nv_c64 nv_multiply_c64(nv_c64 a, nv_c64 b)
{
    return nv_c64_make(NV_NOFUSE(a.re * b.re) - NV_NOFUSE(a.im * b.im),
                       NV_NOFUSE(a.re * b.im) + NV_NOFUSE(a.im * b.re));
}
NV_FN nv_c64 nv_square_c64(nv_c64 a) { return nv_multiply_c64(a, a); }
NV_FN nv_c64 nv_negative_c64(nv_c64 a) { return nv_c64_make(-a.re, -a.im); }
NV_FN nv_c64 nv_conjugate_c64(nv_c64 a) { return nv_c64_make(a.re, -a.im); }
NV_FN nv_c64 nv_copy_c64(nv_c64 a) { return a; }
NV_FN float nv_real_c64(nv_c64 a) { return a.re; }
NV_FN float nv_imag_c64(nv_c64 a) { return a.im; }
NV_FN float nv_abs_c64(nv_c64 a) { return nv_hypot_f32(a.re, a.im); }
NV_FN uint8_t nv_equal_c64(nv_c64 a, nv_c64 b) { return (uint8_t)((a.re == b.re) & (a.im == b.im)); }
NV_FN uint8_t nv_not_equal_c64(nv_c64 a, nv_c64 b) { return (uint8_t)((a.re != b.re) | (a.im != b.im)); }
NV_FN uint8_t nv_isnan_c64(nv_c64 a) { return (uint8_t)((a.re != a.re) | (a.im != a.im)); }
NV_FN uint8_t nv_isinf_c64(nv_c64 a) { return (uint8_t)((fabsf(a.re) == NV_INF_F) | (fabsf(a.im) == NV_INF_F)); }
NV_FN uint8_t nv_isfinite_c64(nv_c64 a) { return (uint8_t)((fabsf(a.re) < NV_INF_F) & (fabsf(a.im) < NV_INF_F)); }

/* Smith's division (as NumPy): scale by the larger part of the divisor */
NV_FN nv_c64 nv_divide_c64(nv_c64 a, nv_c64 b)
{
    float abr = fabsf(b.re), abi = fabsf(b.im);
    int rbig = abr >= abi;
    int zero = (abr == 0.0f) & (abi == 0.0f);
    float rat = rbig ? b.im / (zero ? 1.0f : b.re) : b.re / b.im;
    float scl = rbig ? 1.0f / (b.re + NV_NOFUSE(b.im * rat)) : 1.0f / (b.im + NV_NOFUSE(b.re * rat));
    float ar = NV_NOFUSE(a.re * rat), ai = NV_NOFUSE(a.im * rat);
    float r1 = rbig ? (a.re + ai) * scl : (ar + a.im) * scl;
    float i1 = rbig ? (a.im - ar) * scl : (ai - a.re) * scl;
    r1 = zero ? a.re / abr : r1;
    i1 = zero ? a.im / abr : i1;
    return nv_c64_make(r1, i1);
}

NV_FN nv_c64 nv_exp_c64(nv_c64 z)
{
    float e = nv_exp_f32(z.re);
    float c = nv_cos_f32(z.im), s = nv_sin_f32(z.im);
    nv_c64 r = nv_c64_make(e * c, e * s);
    r.im = z.im == 0.0f ? z.im : r.im;            /* exp(x + 0i) = exp(x) + 0i exactly */
    r.re = z.im == 0.0f ? e : r.re;
    return r;
}

/* log|z| = log(a^2 + b^2) / 2 with a^2 + b^2 carried as hi + lo, so that |z| near 1 keeps
 * its relative accuracy; inputs are scaled by a power of two only when the squares would
 * overflow or underflow (then |log|z|| is large and the added e ln2 cancels nothing) */
NV_FN nv_c64 nv_log_c64(nv_c64 z)
{
    float x = fabsf(z.re), y = fabsf(z.im);
    float mx = x > y ? x : y;
    float big = mx > 0x1p60f ? 1.0f : 0.0f, small = mx < 0x1p-60f ? 1.0f : 0.0f;
    float sc = big > 0.0f ? 0x1p-80f : (small > 0.0f ? 0x1p80f : 1.0f);
    float e = big > 0.0f ? 80.0f : (small > 0.0f ? -80.0f : 0.0f);   /* |z| = 2^e |z sc| */
    float xs = x * sc, ys = y * sc;
    nv_ff px = nv_two_prod(xs, xs), py = nv_two_prod(ys, ys);
    nv_ff s = nv_two_sum(px.hi, py.hi);
    float sl = s.lo + px.lo + py.lo;
    float sh = s.hi > 0.0f ? s.hi : 1.0f;
    nv_ff l = nv_log_ff(sh);
    float lr = 0.5f * l.hi + 0.5f * (l.lo + sl / sh);
    nv_ff ke = nv_two_prod(e, 0x1.62e43p-1f);
    float re = (ke.hi + lr) + (ke.lo + e * -0x1.05c61p-29f);
    re = (mx == 0.0f) ? -NV_INF_F : re;
    re = (mx == NV_INF_F) ? NV_INF_F : re;
    re = (mx == mx) ? re : mx;
    return nv_c64_make(re, nv_atan2_f32(z.im, z.re));
}

NV_FN nv_c64 nv_sqrt_c64(nv_c64 z)
{
    float a = z.re, b = z.im;
    float mx = fabsf(a) > fabsf(b) ? fabsf(a) : fabsf(b);
    /* scale by an even power of two so that |a| + |z| cannot overflow or underflow */
    float sc = mx > 0x1p100f ? 0x1p-100f : (mx < 0x1p-100f ? 0x1p100f : 1.0f);
    float un = mx > 0x1p100f ? 0x1p50f : (mx < 0x1p-100f ? 0x1p-50f : 1.0f);
    float as = a * sc, bs = b * sc;
    float m = nv_hypot_f32(as, bs);
    float t = sqrtf(0.5f * (fabsf(as) + m));
    float tt = t > 0.0f ? 2.0f * t : 1.0f;
    float re = a >= 0.0f ? t : fabsf(bs) / tt;
    float im = a >= 0.0f ? bs / tt : copysignf(t, b);
    nv_c64 r = nv_c64_make(re * un, im * un);
    r = mx == 0.0f ? nv_c64_make(0.0f, b) : r;
    r = (a != a) | (b != b) ? nv_c64_make(NV_NAN_F, NV_NAN_F) : r;
    r = fabsf(b) == NV_INF_F ? nv_c64_make(NV_INF_F, b) : r;
    return r;
}

NV_FN nv_c64 nv_sin_c64(nv_c64 z)
{
    float ch = nv_cosh_f32(z.im), sh = nv_sinh_f32(z.im);
    float s = nv_sin_f32(z.re), c = nv_cos_f32(z.re);
    nv_c64 r = nv_c64_make(s * ch, c * sh);
    r.im = z.im == 0.0f ? z.im * c : r.im;
    return r;
}

NV_FN nv_c64 nv_cos_c64(nv_c64 z)
{
    float ch = nv_cosh_f32(z.im), sh = nv_sinh_f32(z.im);
    float s = nv_sin_f32(z.re), c = nv_cos_f32(z.re);
    nv_c64 r = nv_c64_make(c * ch, -(s * sh));
    return r;
}

/* ---- float64 ------------------------------------------------------------------------------ */
#ifndef NV_NO_F64

/* integer -> float64: as nv_from_int_f32 */
NV_FN double nv_from_int_f64(double d)
{
    return nv_u2d(nv_d2u(d) & (d == 0.0 ? 0x7fffffffffffffffull : ~0ull));
}

NV_FN double nv_add_f64(double a, double b) { return a + b; }
NV_FN double nv_subtract_f64(double a, double b) { return a - b; }
NV_FN double nv_multiply_f64(double a, double b) { return a * b; }
NV_FN double nv_divide_f64(double a, double b) { return a / b; }
NV_FN double nv_negative_f64(double a) { return -a; }
NV_FN double nv_square_f64(double a) { return a * a; }
NV_FN double nv_reciprocal_f64(double a) { return 1.0 / a; }
NV_FN double nv_abs_f64(double a) { return fabs(a); }
NV_FN double nv_sqrt_f64(double a) { return sqrt(a); }
NV_FN double nv_rsqrt_f64(double a) { return 1.0 / sqrt(a); }
NV_FN double nv_copy_f64(double a) { return a; }
NV_FN double nv_real_f64(double a) { return a; }
NV_FN double nv_imag_f64(double a) { return 0.0; }
NV_FN double nv_conjugate_f64(double a) { return a; }
NV_FN double nv_sign_f64(double a) { return a > 0.0 ? 1.0 : (a < 0.0 ? -1.0 : (a == a ? 0.0 : a)); }
NV_FN double nv_maximum_f64(double a, double b) { return a != a ? a : (a > b ? a : b); }
NV_FN double nv_minimum_f64(double a, double b) { return a != a ? a : (a < b ? a : b); }
NV_FN double nv_floor_f64(double a) { return floor(a); }
NV_FN double nv_ceil_f64(double a) { return ceil(a); }
NV_FN double nv_round_f64(double a) { return rint(a); }
NV_FN uint8_t nv_isnan_f64(double a) { return (uint8_t)(a != a); }
NV_FN uint8_t nv_isinf_f64(double a) { return (uint8_t)(fabs(a) == NV_INF_D); }
NV_FN uint8_t nv_isposinf_f64(double a) { return (uint8_t)(a == NV_INF_D); }
NV_FN uint8_t nv_isneginf_f64(double a) { return (uint8_t)(a == -NV_INF_D); }
NV_FN uint8_t nv_isfinite_f64(double a) { return (uint8_t)(fabs(a) < NV_INF_D); }
/* fmod(a, b). In the C dialect (NV_VECTORIZED_LOOPS) exactly, in straight-line code, as
 * nv_fmod_f32 with 53-bit significands: |a| = A 2^(ea-1075) and |b| = B 2^(eb-1075) with
 * integers A, B < 2^53 (held as float64), and where |a| >= |b| fmod(a, b) = (A 2^(ea-eb) mod B)
 * 2^(eb-1075) with a's sign. Each step reduces x 2^s mod B for x < B and s <= 52: the quotient
 * x 2^s / B < 2^52 rounds into [m, m + 1] around its floor m (rounding is monotonic and m + 1
 * <= 2^52 is a float64), so q, its rounding's floor, is m or m + 1, and x 2^s - q B, an integer
 * below B in magnitude, is exact in one fma; where it is negative (q = m + 1), adding B back is
 * exact. The first step takes A (A / B < 2^53, the same argument), then 40 steps of up to 52
 * bits cover ea - eb <= 2045. The result, x 2^(eb-1075), is scaled by two powers of two so that
 * neither is subnormal: the first product is a normal number, the second the exact result. NaN
 * operands, an infinite a and b = 0 give glibc's (a b) / (a b), as nv_fmod_f32. Selects on a
 * value of one operand alone are nv_blend_d's bit operations, and the clamp is arithmetic: in a
 * loop that reads that operand once, gcc vectorizes no select on a loop invariant. */
#if defined(NV_VECTORIZED_LOOPS)
/* as nv_nan_of_product, for float64 */
NV_FN double nv_nan_of_product_d(double a, double b)
{
    uint64_t ua = nv_d2u(a), ub = nv_d2u(b);
    uint64_t a_nan = (ua & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
#if defined(__aarch64__)
    uint64_t b_snan = (ub & 0x7fffffffffffffffull) > 0x7ff0000000000000ull
                      & (ub & 0x0008000000000000ull) == 0u;
    uint64_t a_snan = a_nan & (ua & 0x0008000000000000ull) == 0u;
    uint64_t pick_a = a_snan | (a_nan & !b_snan);
#else
    uint64_t pick_a = a_nan;
#endif
    return nv_u2d((pick_a ? ua : ub) | 0x0008000000000000ull);
}
/* x 2^s mod B for 0 <= x < B (x 2^s given as xs) */
NV_FN double nv_fmod_step_d(double xs, double mb)
{
    double r = fma(-floor(xs / mb), mb, xs);
    return r < 0.0 ? r + mb : r;
}
NV_FN double nv_fmod_f64(double a, double b)
{
    uint64_t ua = nv_d2u(a) & 0x7fffffffffffffffull, ub = nv_d2u(b) & 0x7fffffffffffffffull;
    int64_t ea = (int64_t)(ua >> 52), eb = (int64_t)(ub >> 52);
    /* 2^52 + the fraction, less 2^52 for subnormals (exponent 1, no implicit bit) */
    double ma = nv_u2d((ua & 0xfffffffffffffull) | 0x4330000000000000ull);
    double mb = nv_u2d((ub & 0xfffffffffffffull) | 0x4330000000000000ull);
    ma = ma - nv_blend_d(ea == 0, 0x1p52, 0.0);
    mb = mb - nv_blend_d(eb == 0, 0x1p52, 0.0);
    ea = ea + (int64_t)(ea == 0);
    eb = eb + (int64_t)(eb == 0);
    mb = nv_blend_d(mb != 0.0, mb, 1.0);        /* b = 0: a harmless divisor, result below */
    int64_t shift = ea - eb;
    double x = nv_fmod_step_d(ma, mb);
    _Pragma("GCC unroll 40")
    for (int64_t k = 0; k < 40; k++) {
        int64_t s = shift - 52 * k;
        s = s & ~(s >> 63);                     /* clamped to [0, 52] */
        s = s - 52;
        s = 52 + (s & (s >> 63));
        x = nv_fmod_step_d(x * nv_u2d((uint64_t)(s + 1023) << 52), mb);
    }
    int64_t e1 = (eb - 1075) >> 1, e2 = (eb - 1075) - e1;
    double r = x * nv_u2d((uint64_t)(e1 + 1023) << 52) * nv_u2d((uint64_t)(e2 + 1023) << 52);
    r = nv_blend_d(fabs(a) < fabs(b), a, copysign(r, a));
    double ab = a * b;
    double special = nv_blend_d(a != a | b != b, nv_nan_of_product_d(a, b), ab / ab);
    return nv_blend_d(fabs(a) < NV_INF_D & fabs(b) > 0.0, r, special);
}

/* fmod(a, b) where nv_fmod_large_f64(a, b) is 0: where a and b are finite, b nonzero and
 * |a| < 2^51 |b|, as nv_fmod_small_f32 (the quotient below 2^51: its rounding's truncation is
 * |a / b| truncated or one more in magnitude, and the rest is exact as there); elsewhere, NaN
 * and infinite operands and b = 0, as nv_fmod_f64 (so that those, NaN among data say, do not
 * send their blocks through the full reduction). */
NV_FN uint32_t nv_fmod_large_f64(double a, double b)
{
    double ab = fabs(b);
    return (uint32_t)((fabs(a) >= 0x1p51 * ab) & (fabs(a) < NV_INF_D) & (ab > 0.0));
}
NV_FN double nv_fmod_small_f64(double a, double b)
{
    double q = trunc(a / b);
    double r = fma(-q, b, a);
    r = (r != 0.0 & ((r < 0.0) != (a < 0.0))) ? r + copysign(b, a) : r;
    r = r != 0.0 ? r : copysign(0.0, a);
    r = nv_blend_d(fabs(a) < fabs(b), a, r);    /* b infinite: a */
    double ab = a * b;                          /* (a b) / (a b) as in nv_fmod_small_f32 */
    double special = nv_blend_d(a != a | b != b, nv_nan_of_product_d(a, b), (ab - ab) * NV_INF_D);
    return nv_blend_d(fabs(a) < NV_INF_D & fabs(b) > 0.0, r, special);
}
#endif

/* Python / NumPy floor division and remainder from the exact fmod ``mod`` of a and bb, as the
 * float32 ones (nv_floor_divide_mod) */
NV_FN double nv_floor_divide_mod_d(double a, double b, double bb, double mod)
{
    double div = (a - mod) / bb;
    div = (mod != 0.0 & ((bb < 0.0) != (mod < 0.0))) ? div - 1.0 : div;
    double fl = floor(div);
    fl = (div - fl > 0.5) ? fl + 1.0 : fl;
    fl = div != 0.0 ? fl : copysign(0.0, a / bb);
    return b == 0.0 ? a / b : fl;
}
NV_FN double nv_remainder_mod_d(double bb, double mod)
{
    double adj = (mod != 0.0 & ((bb < 0.0) != (mod < 0.0))) ? mod + bb : mod;
    return mod != 0.0 ? adj : copysign(0.0, bb);
}
/* the C dialect's forms take b for bb, as the float32 ones */
#if defined(NV_VECTORIZED_LOOPS)
NV_FN double nv_floor_divide_f64(double a, double b)
{
    return nv_floor_divide_mod_d(a, b, b, nv_fmod_f64(a, b));
}
NV_FN double nv_remainder_f64(double a, double b)
{
    return nv_remainder_mod_d(b, nv_fmod_f64(a, b));
}
/* the split forms (ElementwiseOp.split_f64): the same bits where nv_fmod_large_f64(a, b) is 0 */
NV_FN double nv_floor_divide_small_f64(double a, double b)
{
    return nv_floor_divide_mod_d(a, b, b, nv_fmod_small_f64(a, b));
}
NV_FN double nv_remainder_small_f64(double a, double b)
{
    return nv_remainder_mod_d(b, nv_fmod_small_f64(a, b));
}
#else
NV_FN double nv_floor_divide_f64(double a, double b)
{
    double bb = b == 0.0 ? 1.0 : b;
    return nv_floor_divide_mod_d(a, b, bb, fmod(a, bb));
}
NV_FN double nv_remainder_f64(double a, double b)
{
    double bb = b == 0.0 ? 1.0 : b;
    return b == 0.0 ? fmod(a, b) : nv_remainder_mod_d(bb, fmod(a, bb));
}
#endif
NV_CMP(f64, double)

NV_FN int32_t nv_f64_to_i32(double x)
{
    int in = x > -2147483649.0 & x < 2147483648.0;
    int32_t r = (int32_t)(in ? x : 0.0);
    return in ? r : (-2147483647 - 1);
}
#if defined(NV_VECTORIZED_LOOPS) && !defined(NV_VECTOR_CVT64)
/* |x| = top 2^(ex - 1086) */
NV_FN uint64_t nv_f64_top(int64_t u)
{
    return (((uint64_t)u & 0xfffffffffffffull) | 0x10000000000000ull) << 11;
}
NV_FN int64_t nv_f64_to_i64(double x)
{
    int64_t u = (int64_t)nv_d2u(x);
    int64_t ex = (u >> 52) & 0x7ff;
    return nv_trunc_signed(nv_f64_top(u), 1086 - ex, u < 0);
}
NV_FN uint64_t nv_f64_to_u64(double x)
{
    int64_t u = (int64_t)nv_d2u(x);
    int64_t ex = (u >> 52) & 0x7ff;
    uint64_t hi = 0u - (uint64_t)(u >= 0x43e0000000000000ll & u <= 0x7ff0000000000000ll);
    uint64_t top = nv_f64_top(u) & (0u - (uint64_t)(ex == 1086));   /* x < 2^64: x itself */
    return (top & hi) | ((uint64_t)nv_f64_to_i64(x) & ~hi);   /* hi: 2^63 <= x <= inf */
}
#else
NV_FN int64_t nv_f64_to_i64(double x)
{
    int in = x > -0x1p63 & x < 0x1p63;
    int64_t r = (int64_t)(in ? x : 0.0);
    return in ? r : (-9223372036854775807ll - 1);
}
NV_FN uint64_t nv_f64_to_u64(double x)
{
    int hi = x >= 0x1p63;
    return (uint64_t)nv_f64_to_i64(hi ? x - 0x1p63 : x) ^ (hi ? 0x8000000000000000ull : 0ull);
}
#endif
NV_FN uint32_t nv_f64_to_u32(double x)
{
    int hi = x >= 0x1p31;
    return (uint32_t)nv_f64_to_i32(hi ? x - 0x1p31 : x) ^ (hi ? 0x80000000u : 0u);
}
NV_FN uint32_t nv_f64_low32(double x)
{
    int in = x > -0x1p31 & x < 0x1p31;
    int32_t r = (int32_t)(in ? x : 0.0);
    return in ? (uint32_t)r : 0x80000000u;
}
NV_FN int8_t nv_f64_to_i8(double x) { return (int8_t)(uint8_t)nv_f64_low32(x); }
NV_FN int16_t nv_f64_to_i16(double x) { return (int16_t)(uint16_t)nv_f64_low32(x); }
NV_FN uint8_t nv_f64_to_u8(double x) { return (uint8_t)nv_f64_low32(x); }
NV_FN uint16_t nv_f64_to_u16(double x) { return (uint16_t)nv_f64_low32(x); }

/* float64 -> float32 rounded to odd (see nv_i64_to_f32_odd) */
NV_FN float nv_f64_to_f32_odd(double d)
{
    float f = (float)d;
    uint32_t b = nv_f2u(f);
    int inexact = (double)f != d & d == d;
    int away = fabs(d) > fabs((double)f);
    uint32_t odd = (b & 1u) ? b : (away ? b + 1u : b - 1u);
    /* f == 0 but d != 0: the odd neighbour away from zero is the smallest subnormal */
    return (inexact & !(b & 1u)) ? nv_u2f(odd) : f;
}

/* 64-bit integers -> float64, rounded to nearest */
#if defined(NV_VECTORIZED_LOOPS) && !defined(NV_VECTOR_CVT64)
/* the halves as exact float64 values by their bits, 2^84 + h 2^32 and 2^52 + l, less
 * 2^84 + 2^52 (exact), then one rounding in their sum */
NV_FN double nv_u64_to_f64(uint64_t u)
{
    double hi = nv_u2d(0x4530000000000000ull | (u >> 32)) - 0x1.00000001p84;
    return hi + nv_u2d(0x4330000000000000ull | (u & 0xffffffffull));
}
NV_FN double nv_i64_to_f64(int64_t i)
{
    double d = nv_u64_to_f64(i < 0 ? 0 - (uint64_t)i : (uint64_t)i);
    return i < 0 ? -d : d;
}
#else
NV_FN double nv_u64_to_f64(uint64_t u) { return (double)u; }
NV_FN double nv_i64_to_f64(int64_t i) { return (double)i; }
#endif

#if defined(NV_VECTORIZED_LOOPS)
/* u rounded to odd at bit 11 where it has more than 53 bits: the bits below 11 or'ed into bit
 * 11, so it is exact in float64 and a rounding to 26 bits or fewer (float32 and its odd form,
 * whose bfloat16 rounding then is that of u) gives that of u */
NV_FN uint64_t nv_u64_odd53(uint64_t u)
{
    uint64_t odd = (u & ~0x7ffull) | ((u & 0x7ffull) != 0 ? 0x800ull : 0ull);
    return u >> 53 != 0 ? odd : u;
}
/* i rounded to odd so, in float64 (the sign on the float64 value: 64-bit lanes throughout) */
NV_FN double nv_i64_odd53(int64_t i)
{
    double d = nv_u64_to_f64(nv_u64_odd53(i < 0 ? 0 - (uint64_t)i : (uint64_t)i));
    return i < 0 ? -d : d;
}
#if defined(NV_VECTOR_CVT64_F32)
NV_FN float nv_i64_to_f32(int64_t i) { return (float)i; }
NV_FN float nv_u64_to_f32(uint64_t i) { return (float)i; }
#else
NV_FN float nv_u64_to_f32(uint64_t u) { return (float)nv_u64_to_f64(nv_u64_odd53(u)); }
NV_FN float nv_i64_to_f32(int64_t i) { return (float)nv_i64_odd53(i); }
#endif
NV_FN float nv_u64_to_f32_odd(uint64_t u)
{
    return nv_f64_to_f32_odd(nv_u64_to_f64(nv_u64_odd53(u)));
}
NV_FN float nv_i64_to_f32_odd(int64_t i) { return nv_f64_to_f32_odd(nv_i64_odd53(i)); }
/* 32-bit integers are exact in float64 */
NV_FN float nv_i32_to_f32_odd(int32_t i) { return nv_f64_to_f32_odd((double)i); }
NV_FN float nv_u32_to_f32_odd(uint32_t u) { return nv_f64_to_f32_odd(nv_u64_to_f64(u)); }

/* n / d truncated, d >= 1 (NV_QUOTU64), through float64 quotients scaled by k = 1 - 2^-50 so
 * that they fall below the exact one: fl(fl(fl(n) / fl(d)) k) is within (1 + 2^-53)^4 /
 * (1 - 2^-53) of (n / d) k, so in (1 - 2^-49, 1) times n / d. Its truncation q0 <= n / d thus
 * leaves t = n - q0 d in [0, n] (no wrap-around) with t < 2^-49 n + d <= 2^15 + d, and the
 * second such quotient q1 of t leaves t - q1 d in [0, 2^-49 t + d): below 2d, as 2^-49 t < 2^15
 * < d or, where d <= 2^15, t < 2^16 and 2^-49 t < 1. One comparison then gives the last unit;
 * q1 < 2^17 converts through the 2^52 shift. */
NV_FN uint64_t nv_quot_u64(uint64_t n, uint64_t d)
{
    const double k = 0x1.ffffffffffff8p-1;
    double fd = nv_u64_to_f64(d);
    uint64_t q0 = nv_f64_to_u64(nv_u64_to_f64(n) / fd * k);
    uint64_t t = n - q0 * d;
    double q1f = trunc(nv_u64_to_f64(t) / fd * k);
    uint64_t q1 = nv_d2u(q1f + 0x1p52) - 0x4330000000000000ull;
    t = t - q1 * d;
    return q0 + q1 + (uint64_t)(t >= d);
}
/* a / d truncated, d != 0 and not a = INT64_MIN with d = -1 (NV_QUOTI64), on the magnitudes */
NV_FN int64_t nv_quot_i64(int64_t a, int64_t d)
{
    uint64_t q = nv_quot_u64(a < 0 ? 0 - (uint64_t)a : (uint64_t)a,
                             d < 0 ? 0 - (uint64_t)d : (uint64_t)d);
    return (int64_t)((a < 0) != (d < 0) ? 0 - q : q);
}

/* floor_divide and remainder's split forms (ElementwiseOp.split_int) for 64 bits: where every
 * operand of a block is in [-2^51, 2^51) (unsigned: below 2^52), both are exact in float64
 * through the shifted constant's low bits, and the floor of their rounded quotient is that of
 * the exact one (as NV_QUOT32: a non-integer a / d is at least 1/|a| >= 2^-51 of itself from
 * an integer, more than the rounding's 2^-53); the remainder a - q d, an integer below |d|, and
 * q d, at most |a| + |d| in magnitude, are exact too. b = 0 gives 0, as the full forms. */
NV_FN uint32_t nv_div_large_i64(int64_t a, int64_t b)
{
    return (uint32_t)((((uint64_t)a + 0x8000000000000ull) | ((uint64_t)b + 0x8000000000000ull))
                      >> 52 != 0u);
}
NV_FN uint32_t nv_div_large_u64(uint64_t a, uint64_t b) { return (uint32_t)((a | b) >> 52 != 0u); }
NV_FN double nv_small_i64_to_f64(int64_t a)
{
    return nv_u2d((uint64_t)a + 0x4338000000000000ull) - 0x1.8p52;
}
NV_FN int64_t nv_small_f64_to_i64(double x)
{
    return (int64_t)(nv_d2u(x + 0x1.8p52) - 0x4338000000000000ull);
}
NV_FN double nv_small_u64_to_f64(uint64_t a) { return nv_u2d(a | 0x4330000000000000ull) - 0x1p52; }
NV_FN uint64_t nv_small_f64_to_u64(double x) { return nv_d2u(x + 0x1p52) - 0x4330000000000000ull; }
#define NV_DIV_SPLIT(S, T)                                                                    \
NV_FN T nv_floor_divide_small_##S(T a, T b)                                                 \
{                                                                                           \
    double fd = nv_small_##S##_to_f64(b != (T)0 ? b : (T)1);                                \
    T q = nv_small_f64_to_##S(floor(nv_small_##S##_to_f64(a) / fd));                        \
    return b != (T)0 ? q : (T)0;                                                            \
}                                                                                           \
NV_FN T nv_remainder_small_##S(T a, T b)                                                    \
{                                                                                           \
    double fa = nv_small_##S##_to_f64(a);                                                   \
    double fd = nv_small_##S##_to_f64(b != (T)0 ? b : (T)1);                                \
    T r = nv_small_f64_to_##S(fa - floor(fa / fd) * fd);                                    \
    return b != (T)0 ? r : (T)0;                                                            \
}
NV_DIV_SPLIT(i64, int64_t)
NV_DIV_SPLIT(u64, uint64_t)
#endif
#endif /* NV_NO_F64 */
