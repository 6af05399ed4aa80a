/* Quantized matrix products (nv.quantized_matmul on the CPU): the weight stays packed and each
 * row (or row segment) is decoded into a small float buffer right before the dot products that
 * read it, so the whole weight is never expanded.
 *
 * Packing (MLX's): each row of the weight is a little-endian bit stream of `bits`-bit codes,
 * code j at bit j * bits; a group of `gs` consecutive codes shares one scale and one bias, and a
 * code q decodes to scale * v + bias with v = q (affine) or v = lut[q] (the float modes, bias 0).
 * Affine 4- and 8-bit products (x @ W.T) take each group as scale * sum(x q) + bias * sum(x)
 * straight from the packed bytes; the other cases decode each value (scale * v, then + bias,
 * each rounded to the compute type, as a dequantize does) into a buffer first. Sums run in
 * the compute type in eight lanes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nv_quant.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define NV_QUANT_AVX2 1
#else
#define NV_QUANT_AVX2 0
#endif

/* codes [start, start + n) of a packed row into v (as floats, before scaling) */
static void codes(const uint8_t *row, int64_t start, int64_t n, int bits, const float *lut,
                  float *v) {
    const int mask = (1 << bits) - 1;
    if (bits == 4 && (start & 1) == 0) {
        const uint8_t *p = row + start / 2;
        for (int64_t j = 0; j < n; j += 2) {
            uint8_t b = p[j / 2];
            v[j] = (float)(b & 15);
            v[j + 1] = (float)(b >> 4);
        }
    } else if (bits == 8) {
        const uint8_t *p = row + start;
        for (int64_t j = 0; j < n; j++) v[j] = (float)p[j];
    } else {
        for (int64_t j = 0; j < n; j++) {
            int64_t bit = (start + j) * bits;
            int64_t byte = bit >> 3;
            int shift = (int)(bit & 7);
            unsigned w = row[byte];
            if (shift + bits > 8) w |= (unsigned)row[byte + 1] << 8;
            v[j] = (float)((w >> shift) & mask);
        }
    }
    if (lut) {
        for (int64_t j = 0; j < n; j++) v[j] = lut[(int)v[j]];
    }
}

#if NV_QUANT_AVX2
/* dot4 / dot8 of float data with 256-bit vectors: the same eight lanes and the same operations
 * in the same order as the portable loops (no FMA), so the same bits */
__attribute__((target("avx2"))) static float dot4_f32_avx2(const uint8_t *p, const float *xe,
                                                            const float *xo, int64_t nb) {
    __m256 acc = _mm256_setzero_ps();
    const __m256i low = _mm256_set1_epi32(15);
    int64_t i = 0;
    for (; i + 8 <= nb; i += 8) {
        __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + i)));
        __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(v, low));
        __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
        __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(xe + i), lo),
                                 _mm256_mul_ps(_mm256_loadu_ps(xo + i), hi));
        acc = _mm256_add_ps(acc, t);
    }
    float a[8];
    _mm256_storeu_ps(a, acc);
    float s = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
    for (; i < nb; i++) s += xe[i] * (float)(p[i] & 15) + xo[i] * (float)(p[i] >> 4);
    return s;
}

__attribute__((target("avx2"))) static float dot8_f32_avx2(const uint8_t *p, const float *x,
                                                            int64_t n) {
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + i))));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(x + i), q));
    }
    float a[8];
    _mm256_storeu_ps(a, acc);
    float s = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
    for (; i < n; i++) s += x[i] * (float)p[i];
    return s;
}
#endif

/* the float dot products the processor runs fastest (same bits either way) */
static void pick_f32(float (**d4)(const uint8_t *, const float *, const float *, int64_t),
                     float (**d8)(const uint8_t *, const float *, int64_t)) {
#if NV_QUANT_AVX2
    static int avx2 = -1;
    if (avx2 < 0) {
        __builtin_cpu_init();
        avx2 = __builtin_cpu_supports("avx2");
    }
    if (avx2) {
        *d4 = dot4_f32_avx2;
        *d8 = dot8_f32_avx2;
    }
#else
    (void)d4;
    (void)d8;
#endif
}

static void pick_f64(double (**d4)(const uint8_t *, const double *, const double *, int64_t),
                     double (**d8)(const uint8_t *, const double *, int64_t)) {
    (void)d4;
    (void)d8;
}

#define NV_QMM(T, SUFFIX)                                                                     \
/* a group's codes as T: scale * v + bias, each operation rounded to T */                     \
static void decode_##SUFFIX(const uint8_t *row, int64_t start, int64_t n, int bits,           \
                            const float *lut, T scale, T bias, float *tmp, T *out) {          \
    codes(row, start, n, bits, lut, tmp);                                                     \
    for (int64_t j = 0; j < n; j++) {                                                         \
        T s = scale * (T)tmp[j];                                                              \
        out[j] = s + bias;                                                                    \
    }                                                                                         \
}                                                                                             \
                                                                                              \
static T dot_##SUFFIX(const T *a, const T *b, int64_t n) {                                    \
    T acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                      \
    int64_t i = 0;                                                                            \
    for (; i + 8 <= n; i += 8)                                                                \
        for (int l = 0; l < 8; l++) acc[l] += a[i + l] * b[i + l];                            \
    T s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));  \
    for (; i < n; i++) s += a[i] * b[i];                                                      \
    return s;                                                                                 \
}                                                                                             \
                                                                                              \
/* sum_i x[i] * code_i over one group's packed bytes: 4-bit codes with x split into its   \
 * even (low nibble) and odd (high nibble) entries, 8-bit codes with x as it is */           \
static T dot4_##SUFFIX(const uint8_t *p, const T *xe, const T *xo, int64_t nb) {             \
    T acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                      \
    int64_t i = 0;                                                                            \
    for (; i + 8 <= nb; i += 8)                                                               \
        for (int l = 0; l < 8; l++)                                                           \
            acc[l] += xe[i + l] * (T)(p[i + l] & 15) + xo[i + l] * (T)(p[i + l] >> 4);        \
    T s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));  \
    for (; i < nb; i++) s += xe[i] * (T)(p[i] & 15) + xo[i] * (T)(p[i] >> 4);                 \
    return s;                                                                                 \
}                                                                                             \
                                                                                              \
static T dot8_##SUFFIX(const uint8_t *p, const T *x, int64_t n) {                             \
    T acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                      \
    int64_t i = 0;                                                                            \
    for (; i + 8 <= n; i += 8)                                                                \
        for (int l = 0; l < 8; l++) acc[l] += x[i + l] * (T)p[i + l];                         \
    T s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));  \
    for (; i < n; i++) s += x[i] * (T)p[i];                                                   \
    return s;                                                                                 \
}                                                                                             \
                                                                                              \
int nv_qmm_t_##SUFFIX(const T *x, const uint8_t *w, const T *scales, const T *biases,         \
                      const float *lut, int64_t M, int64_t N, int64_t K, int bits, int gs,    \
                      int64_t n0, int64_t n1, T *out) {                                       \
    /* out[m, n] = x[m, :] . W[n, :] for n in [n0, n1). Affine: per group                    \
     * scale * sum(x q) + bias * sum(x), the codes read packed; the float modes: W's row      \
     * decoded into a buffer first */                                                         \
    int64_t row_bytes = K * bits / 8, groups = K / gs;                                        \
    int fast = lut == NULL && (bits == 4 || bits == 8);                                       \
    T *buf = (T *)malloc(sizeof(T) * (size_t)(fast ? M * (K + groups) : K));                  \
    float *tmp = (float *)malloc(sizeof(float) * (size_t)gs);                                 \
    if (!buf || !tmp) { free(buf); free(tmp); return -1; }                                    \
    if (fast) {                                                                               \
        /* per x row: its entries (split even / odd for 4 bits) and its group sums */         \
        for (int64_t m = 0; m < M; m++) {                                                     \
            const T *xm = x + m * K;                                                          \
            T *xs = buf + m * (K + groups), *sums = xs + K;                                   \
            if (bits == 4) {                                                                  \
                for (int64_t g = 0; g < groups; g++)                                          \
                    for (int64_t i = 0; i < gs / 2; i++) {                                    \
                        xs[g * gs + i] = xm[g * gs + 2 * i];                                  \
                        xs[g * gs + gs / 2 + i] = xm[g * gs + 2 * i + 1];                     \
                    }                                                                         \
            } else {                                                                          \
                memcpy(xs, xm, sizeof(T) * (size_t)K);                                        \
            }                                                                                 \
            for (int64_t g = 0; g < groups; g++) {                                            \
                T t = 0;                                                                      \
                for (int64_t i = 0; i < gs; i++) t += xm[g * gs + i];                         \
                sums[g] = t;                                                                  \
            }                                                                                 \
        }                                                                                     \
        int64_t gbytes = gs * bits / 8;                                                       \
        T (*d4)(const uint8_t *, const T *, const T *, int64_t) = dot4_##SUFFIX;              \
        T (*d8)(const uint8_t *, const T *, int64_t) = dot8_##SUFFIX;                         \
        pick_##SUFFIX(&d4, &d8);                                                              \
        for (int64_t n = n0; n < n1; n++) {                                                   \
            const uint8_t *row = w + n * row_bytes;                                           \
            const T *sc = scales + n * groups, *bi = biases + n * groups;                     \
            for (int64_t m = 0; m < M; m++) {                                                 \
                const T *xs = buf + m * (K + groups), *sums = xs + K;                         \
                T acc = 0;                                                                    \
                for (int64_t g = 0; g < groups; g++) {                                        \
                    const T *xg = xs + g * gs;                                                \
                    T d = bits == 4 ? d4(row + g * gbytes, xg, xg + gs / 2, gs / 2)           \
                                    : d8(row + g * gbytes, xg, gs);                           \
                    acc += sc[g] * d + bi[g] * sums[g];                                       \
                }                                                                             \
                out[m * N + n] = acc;                                                         \
            }                                                                                 \
        }                                                                                     \
    } else {                                                                                  \
        for (int64_t n = n0; n < n1; n++) {                                                   \
            const uint8_t *row = w + n * row_bytes;                                           \
            for (int64_t g = 0; g < groups; g++)                                              \
                decode_##SUFFIX(row, g * gs, gs, bits, lut, scales[n * groups + g],           \
                                biases ? biases[n * groups + g] : (T)0, tmp, buf + g * gs);   \
            for (int64_t m = 0; m < M; m++) out[m * N + n] = dot_##SUFFIX(x + m * K, buf, K); \
        }                                                                                     \
    }                                                                                         \
    free(buf); free(tmp);                                                                     \
    return 0;                                                                                 \
}                                                                                             \
                                                                                              \
int nv_qmm_n_##SUFFIX(const T *x, const uint8_t *w, const T *scales, const T *biases,         \
                      const float *lut, int64_t M, int64_t N, int64_t K, int bits, int gs,    \
                      int64_t g0, int64_t g1, T *out) {                                       \
    /* out[m, c] = sum_k x[m, k] W[k, c] for the columns of groups [g0, g1): each row k of W  \
     * decoded on those columns, then added to every out row in order of k */                \
    int64_t row_bytes = N * bits / 8, groups = N / gs, c0 = g0 * gs, width = (g1 - g0) * gs;  \
    T *buf = (T *)malloc(sizeof(T) * (size_t)width);                                          \
    float *tmp = (float *)malloc(sizeof(float) * (size_t)gs);                                 \
    if (!buf || !tmp) { free(buf); free(tmp); return -1; }                                    \
    for (int64_t m = 0; m < M; m++)                                                           \
        for (int64_t c = 0; c < width; c++) out[m * N + c0 + c] = 0;                          \
    for (int64_t k = 0; k < K; k++) {                                                         \
        const uint8_t *row = w + k * row_bytes;                                               \
        for (int64_t g = g0; g < g1; g++)                                                     \
            decode_##SUFFIX(row, g * gs, gs, bits, lut, scales[k * groups + g],               \
                            biases ? biases[k * groups + g] : (T)0, tmp, buf + (g - g0) * gs);\
        for (int64_t m = 0; m < M; m++) {                                                     \
            T xi = x[m * K + k], *o = out + m * N + c0;                                       \
            for (int64_t c = 0; c < width; c++) o[c] += xi * buf[c];                          \
        }                                                                                     \
    }                                                                                         \
    free(buf); free(tmp);                                                                     \
    return 0;                                                                                 \
}                                                                                             \
                                                                                              \
void nv_dequantize_##SUFFIX(const uint8_t *w, const T *scales, const T *biases,               \
                            const float *lut, int64_t row_len, int bits, int gs, int64_t r0,  \
                            int64_t r1, T *out) {                                             \
    /* rows [r0, r1) of the packed matrix, each row_len codes, decoded to out */              \
    int64_t row_bytes = row_len * bits / 8, groups = row_len / gs;                            \
    float tmp[256];                                                                           \
    for (int64_t r = r0; r < r1; r++)                                                         \
        for (int64_t g = 0; g < groups; g++)                                                  \
            decode_##SUFFIX(w + r * row_bytes, g * gs, gs, bits, lut, scales[r * groups + g], \
                            biases ? biases[r * groups + g] : (T)0, tmp,                      \
                            out + r * row_len + g * gs);                                      \
}

NV_QMM(float, f32)
NV_QMM(double, f64)
