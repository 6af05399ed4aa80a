/* Quantized matrix products (nv.quantized_matmul on the CPU): the weight stays packed and each
 * row (or row segment) is decoded into a small float buffer right before the dot products that
 * read it, so the whole weight is never expanded.
 *
 * Packing (MLX's): each row of the weight is a little-endian bit stream of `bits`-bit codes,
 * code j at bit j * bits; a group of `gs` consecutive codes shares one scale and one bias, and a
 * code q decodes to scale * v + bias with v = q (affine) or v = lut[q] (the float modes, bias 0).
 * Each decoded value is rounded to the compute type (scale * v, then + bias), as a dequantize
 * does, and the products accumulate in the compute type in eight lanes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nv_quant.h"

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
int nv_qmm_t_##SUFFIX(const T *x, const uint8_t *w, const T *scales, const T *biases,         \
                      const float *lut, int64_t M, int64_t N, int64_t K, int bits, int gs,    \
                      int64_t n0, int64_t n1, T *out) {                                       \
    /* out[m, n] = x[m, :] . W[n, :] for n in [n0, n1): W's row n decoded once */             \
    int64_t row_bytes = K * bits / 8, groups = K / gs;                                        \
    T *buf = (T *)malloc(sizeof(T) * (size_t)K);                                              \
    float *tmp = (float *)malloc(sizeof(float) * (size_t)gs);                                 \
    if (!buf || !tmp) { free(buf); free(tmp); return -1; }                                    \
    for (int64_t n = n0; n < n1; n++) {                                                       \
        const uint8_t *row = w + n * row_bytes;                                               \
        for (int64_t g = 0; g < groups; g++)                                                  \
            decode_##SUFFIX(row, g * gs, gs, bits, lut, scales[n * groups + g],               \
                            biases ? biases[n * groups + g] : (T)0, tmp, buf + g * gs);       \
        for (int64_t m = 0; m < M; m++) out[m * N + n] = dot_##SUFFIX(x + m * K, buf, K);     \
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
