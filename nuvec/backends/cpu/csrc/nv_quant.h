/* Quantized products and dequantization on packed weights (nv_quant.c). */
#ifndef NV_QUANT_H
#define NV_QUANT_H
#include <stdint.h>

#define NV_QUANT_DECL(T, SUFFIX)                                                              \
int nv_qmm_t_##SUFFIX(const T *x, const uint8_t *w, const T *scales, const T *biases,         \
                      const float *lut, int64_t M, int64_t N, int64_t K, int bits, int gs,    \
                      int64_t n0, int64_t n1, T *out);                                        \
int nv_qmm_n_##SUFFIX(const T *x, const uint8_t *w, const T *scales, const T *biases,         \
                      const float *lut, int64_t M, int64_t N, int64_t K, int bits, int gs,    \
                      int64_t g0, int64_t g1, T *out);                                        \
void nv_dequantize_##SUFFIX(const uint8_t *w, const T *scales, const T *biases,               \
                            const float *lut, int64_t row_len, int bits, int gs, int64_t r0,  \
                            int64_t r1, T *out);

NV_QUANT_DECL(float, f32)
NV_QUANT_DECL(double, f64)
#endif
