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
 */

typedef struct { float re; float im; } nv_c64;

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

#define NV_INT_SIGNED(S, T, W, BITS, TMIN)                                                    \
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
    T q = (T)(a / d), r = (T)(a % d);                                                       \
    q = (r != (T)0 & ((r < (T)0) != (d < (T)0))) ? (T)((W)q - (W)1) : q;                   \
    return b == (T)0 ? (T)0 : q;                                                            \
}                                                                                           \
NV_FN T nv_remainder_##S(T a, T b)                                                          \
{                                                                                           \
    int bad = (b == (T)0) | (a == (T)(TMIN) & b == (T)(-1));                              \
    T d = bad ? (T)1 : b;                                                                   \
    T r = (T)(a % d);                                                                       \
    r = (r != (T)0 & ((r < (T)0) != (d < (T)0))) ? (T)(r + d) : r;                         \
    return b == (T)0 ? (T)0 : r;                                                            \
}                                                                                           \
NV_FN T nv_power_##S(T a, T b)                                                              \
{                                                                                           \
    W r = 1, base = (W)a, e = (W)b;                                                         \
    for (; e != (W)0; e >>= 1) {                                                            \
        r = (e & (W)1) ? r * base : r;                                                      \
        base = base * base;                                                                 \
    }                                                                                       \
    T neg = a == (T)1 ? (T)1 : (a == (T)(-1) ? (T)((b & (T)1) ? -1 : 1) : (T)0);            \
    return b < (T)0 ? neg : (T)r;                                                           \
}

#define NV_INT_UNSIGNED(S, T, W, BITS)                                                        \
NV_INT_COMMON(S, T, W, BITS)                                                                \
NV_FN T nv_abs_##S(T a) { return a; }                                                       \
NV_FN T nv_sign_##S(T a) { return (T)(a > (T)0); }                                          \
NV_FN T nv_right_shift_##S(T a, T b)                                                        \
{                                                                                           \
    int ok = b < (T)(BITS);                                                                 \
    return ok ? (T)(a >> (ok ? b : (T)0)) : (T)0;                                           \
}                                                                                           \
NV_FN T nv_floor_divide_##S(T a, T b) { return b == (T)0 ? (T)0 : (T)(a / (b ? b : (T)1)); } \
NV_FN T nv_remainder_##S(T a, T b) { return b == (T)0 ? (T)0 : (T)(a % (b ? b : (T)1)); }   \
NV_FN T nv_power_##S(T a, T b)                                                              \
{                                                                                           \
    W r = 1, base = (W)a, e = (W)b;                                                         \
    for (; e != (W)0; e >>= 1) {                                                            \
        r = (e & (W)1) ? r * base : r;                                                      \
        base = base * base;                                                                 \
    }                                                                                       \
    return (T)r;                                                                            \
}

NV_INT_SIGNED(i8, int8_t, uint32_t, 8, -128)
NV_INT_SIGNED(i16, int16_t, uint32_t, 16, -32768)
NV_INT_SIGNED(i32, int32_t, uint32_t, 32, (-2147483647 - 1))
NV_INT_SIGNED(i64, int64_t, uint64_t, 64, (-9223372036854775807ll - 1))
NV_INT_UNSIGNED(u8, uint8_t, uint32_t, 8)
NV_INT_UNSIGNED(u16, uint16_t, uint32_t, 16)
NV_INT_UNSIGNED(u32, uint32_t, uint32_t, 32)
NV_INT_UNSIGNED(u64, uint64_t, uint64_t, 64)

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

/* Python / NumPy floor division and remainder from the exact fmod:
 * q = round((a - fmod(a, b)) / b) adjusted so that a = q b + r with r of the sign of b. */
NV_FN float nv_floor_divide_f32(float a, float b)
{
    float bb = b == 0.0f ? 1.0f : b;
    float mod = fmodf(a, bb);
    float div = (a - mod) / bb;
    div = (mod != 0.0f & ((bb < 0.0f) != (mod < 0.0f))) ? div - 1.0f : div;
    float fl = floorf(div);
    fl = (div - fl > 0.5f) ? fl + 1.0f : fl;
    fl = div != 0.0f ? fl : copysignf(0.0f, a / bb);
    return b == 0.0f ? a / b : fl;
}

NV_FN float nv_remainder_f32(float a, float b)
{
    float bb = b == 0.0f ? 1.0f : b;
    float mod = fmodf(a, bb);
    float adj = (mod != 0.0f & ((bb < 0.0f) != (mod < 0.0f))) ? mod + bb : mod;
    adj = mod != 0.0f ? adj : copysignf(0.0f, bb);
    return b == 0.0f ? fmodf(a, b) : adj;
}

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
NV_FN int64_t nv_f32_to_i64(float x)
{
    int in = x > -0x1p63f & x < 0x1p63f;
    int64_t r = (int64_t)(in ? x : 0.0f);
    return in ? r : (-9223372036854775807ll - 1);
}
NV_FN uint32_t nv_f32_to_u32(float x)
{
    int hi = x >= 0x1p31f;   /* x - 2^31 is exact there */
    return (uint32_t)nv_f32_to_i32(hi ? x - 0x1p31f : x) ^ (hi ? 0x80000000u : 0u);
}
NV_FN uint64_t nv_f32_to_u64(float x)
{
    int hi = x >= 0x1p63f;
    return (uint64_t)nv_f32_to_i64(hi ? x - 0x1p63f : x) ^ (hi ? 0x8000000000000000ull : 0ull);
}
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
 * correctly rounded (float32 has more than 2 bits beyond bfloat16's 8) */
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

#define NV_INF_D nv_u2d(0x7ff0000000000000ull)
#define NV_NAN_D nv_u2d(0x7ff8000000000000ull)

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
NV_FN double nv_exp_f64(double a) { return exp(a); }
NV_FN double nv_expm1_f64(double a) { return expm1(a); }
NV_FN double nv_log_f64(double a) { return log(a); }
NV_FN double nv_log1p_f64(double a) { return log1p(a); }
NV_FN double nv_log2_f64(double a) { return log2(a); }
NV_FN double nv_log10_f64(double a) { return log10(a); }
NV_FN double nv_sin_f64(double a) { return sin(a); }
NV_FN double nv_cos_f64(double a) { return cos(a); }
NV_FN double nv_tan_f64(double a) { return tan(a); }
NV_FN double nv_arcsin_f64(double a) { return asin(a); }
NV_FN double nv_arccos_f64(double a) { return acos(a); }
NV_FN double nv_arctan_f64(double a) { return atan(a); }
NV_FN double nv_sinh_f64(double a) { return sinh(a); }
NV_FN double nv_cosh_f64(double a) { return cosh(a); }
NV_FN double nv_tanh_f64(double a) { return tanh(a); }
NV_FN double nv_arcsinh_f64(double a) { return asinh(a); }
NV_FN double nv_arccosh_f64(double a) { return acosh(a); }
NV_FN double nv_arctanh_f64(double a) { return atanh(a); }
NV_FN double nv_erf_f64(double a) { return erf(a); }
NV_FN double nv_power_f64(double a, double b) { return pow(a, b); }
NV_FN double nv_arctan2_f64(double a, double b) { return atan2(a, b); }
/* 1 / (1 + t) or t / (1 + t), t = exp(-|x|): 1 + t carried as hi + lo, the quotient corrected
 * once */
NV_FN double nv_sigmoid_f64(double x)
{
    double t = exp(-fabs(x));
    double dh = 1.0 + t, dl = t - (dh - 1.0);
    double inv = 1.0 / dh;
    double num = x >= 0.0 ? 1.0 : t;
    double q = num * inv;
    double r = fma(-q, dh, num) - q * dl;
    double v = fma(r, inv, q);
    return x == x ? v : x;
}
NV_FN double nv_logaddexp_f64(double x, double y)
{
    double m = x > y ? x : y;
    double v = m + log1p(exp(-fabs(x - y)));
    v = x == y ? x + 0x1.62e42fefa39efp-1 : v;
    return (x == x & y == y) ? v : x + y;
}
/* erfinv: the float32 result refined by Halley steps on erf (erfc in the tails) */
NV_FN double nv_erfinv_f64(double x)
{
    double a = fabs(x);
    double om = 1.0 - a;                          /* exact for a >= 1/2 */
    double y = (double)nv_erfinv_f32((float)(a < 1.0 - 0x1p-23 ? a : 0.0));
    /* tail start: erfc(y) ~ exp(-y^2) / (y sqrt(pi)) */
    double t = sqrt(-log(om > 0.0 ? om : 1.0));
    double yt = t - log(t * 1.7724538509055159) / (2.0 * t);
    y = a < 1.0 - 0x1p-23 ? y : yt;
    for (int i = 0; i < 3; i++) {
        double f = a <= 0.5 ? erf(y) - a : om - erfc(y);
        double d = 1.1283791670955126 * exp(-y * y);
        y = y - f / (d + y * f);
    }
    y = a == 1.0 ? NV_INF_D : y;
    y = a == 0.0 ? 0.0 : y;
    y = a <= 1.0 ? y : NV_NAN_D;
    return x == x ? copysign(y, x) : x;
}
NV_FN double nv_floor_divide_f64(double a, double b)
{
    double bb = b == 0.0 ? 1.0 : b;
    double mod = fmod(a, bb);
    double div = (a - mod) / bb;
    div = (mod != 0.0 & ((bb < 0.0) != (mod < 0.0))) ? div - 1.0 : div;
    double fl = floor(div);
    fl = (div - fl > 0.5) ? fl + 1.0 : fl;
    fl = div != 0.0 ? fl : copysign(0.0, a / bb);
    return b == 0.0 ? a / b : fl;
}
NV_FN double nv_remainder_f64(double a, double b)
{
    double bb = b == 0.0 ? 1.0 : b;
    double mod = fmod(a, bb);
    double adj = (mod != 0.0 & ((bb < 0.0) != (mod < 0.0))) ? mod + bb : mod;
    adj = mod != 0.0 ? adj : copysign(0.0, bb);
    return b == 0.0 ? fmod(a, b) : adj;
}
NV_CMP(f64, double)

NV_FN int32_t nv_f64_to_i32(double x)
{
    int in = x > -2147483649.0 & x < 2147483648.0;
    int32_t r = (int32_t)(in ? x : 0.0);
    return in ? r : (-2147483647 - 1);
}
NV_FN int64_t nv_f64_to_i64(double x)
{
    int in = x > -0x1p63 & x < 0x1p63;
    int64_t r = (int64_t)(in ? x : 0.0);
    return in ? r : (-9223372036854775807ll - 1);
}
NV_FN uint32_t nv_f64_to_u32(double x)
{
    int hi = x >= 0x1p31;
    return (uint32_t)nv_f64_to_i32(hi ? x - 0x1p31 : x) ^ (hi ? 0x80000000u : 0u);
}
NV_FN uint64_t nv_f64_to_u64(double x)
{
    int hi = x >= 0x1p63;
    return (uint64_t)nv_f64_to_i64(hi ? x - 0x1p63 : x) ^ (hi ? 0x8000000000000000ull : 0ull);
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
#endif /* NV_NO_F64 */
