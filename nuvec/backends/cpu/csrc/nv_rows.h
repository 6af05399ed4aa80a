/* nv_rows.h -- reductions along the innermost axis of C-contiguous arrays (see nv_rows.c). */
#ifndef NV_ROWS_H
#define NV_ROWS_H

#include <stdint.h>

#include "nv_eltwise.h"

/* out[r] = max (want_max) or min of x[r * n : (r + 1) * n], for n >= 1, with NumPy's bits */
void nv_rows_extreme_f32(const float *x, int64_t rows, int64_t n, int want_max, float *out);
void nv_rows_extreme_f64(const double *x, int64_t rows, int64_t n, int want_max, double *out);

/* out[r] = the sum of x[r * n : (r + 1) * n] with NumPy's pairwise summation bits */
void nv_rows_sum_f32(const float *x, int64_t rows, int64_t n, float *out);
void nv_rows_sum_f64(const double *x, int64_t rows, int64_t n, double *out);

/* out[c] = the sum of x[:, c] over rows (x: rows x cols, cols >= 2), for c in [c0, c1),
 * with np.add.reduce(x, axis=0)'s bits */
void nv_cols_sum_f32(const float *x, int64_t rows, int64_t cols, int64_t c0, int64_t c1,
                     float *out);
void nv_cols_sum_f64(const double *x, int64_t rows, int64_t cols, int64_t c0, int64_t c1,
                     double *out);

/* rows [r0, r1) of x (rows of n >= 1): out = softmax; shifted_exp computes exp(a - b) and
 * divide a / b (nuvec's element-wise kernels, float32 inputs a, b and output) */
void nv_softmax_rows_f32(const float *x, int64_t n, int64_t r0, int64_t r1,
                         nv_kernel_fn shifted_exp, nv_kernel_fn divide, float *out);

/* rows [r0, r1) of x: out = softmax(x * scale + mask) (products and sums rounded one by one,
 * then as nv_softmax_rows_f32); mask (NULL: none) has rows of n contiguous elements, the one
 * for row r at the offset of r's index over the leading shape lead[0:nlead] with the mask's
 * element steps mask_step (0 where it is broadcast). out may be x. */
void nv_scaled_softmax_rows_f32(const float *x, const float *mask, int nlead, const int64_t *lead,
                                const int64_t *mask_step, int64_t n, float scale, int64_t r0,
                                int64_t r1, nv_kernel_fn shifted_exp, nv_kernel_fn divide,
                                float *out);

/* rows [r0, r1): shifts[r] = the row's max (0 where it is not finite), sums[r] = the sum of
 * exp(x - shifts[r]); logsumexp = log(sums) + shifts. Returns -1 if out of memory. */
int nv_logsumexp_rows_f32(const float *x, int64_t n, int64_t r0, int64_t r1,
                          nv_kernel_fn shifted_exp, float *sums, float *shifts);

/* ---- nv_norm.c (and its AVX-512 build, the same names suffixed _avx512) ---- */

/* whether the _avx512 functions exist in this build and this processor runs them */
int nv_norm_avx512(void);

/* rows [r0, r1) (rows of n >= 1): out = (g * y - y * sum(g * y)) * scale (the softmax's
 * vjp), with the bits of that composite form; out may not overlap y or g */
void nv_softmax_product_rows_f32(const float *y, const float *g, int64_t n, float scale,
                                 int64_t r0, int64_t r1, float *out);
void nv_softmax_product_rows_f64(const double *y, const double *g, int64_t n, double scale,
                                 int64_t r0, int64_t r1, double *out);

/* rows [r0, r1) of x (rows of n >= 1): out = layer norm with weight w and bias b (either may
 * be NULL), with the bits of nv.fast.layer_norm's composite form. -1 if out of memory. */
int nv_layer_norm_rows_f32(const float *x, const float *w, const float *b, int64_t n, float eps,
                           int64_t r0, int64_t r1, float *out);
int nv_layer_norm_rows_f64(const double *x, const double *w, const double *b, int64_t n,
                           double eps, int64_t r0, int64_t r1, double *out);

/* blocks [k0, k1) of `block` rows (of `rows`): dx, and per block k the sums over its rows of
 * g * xhat (dw_part[k * n:], if not NULL) and of g (db_part[k * n:], if not NULL). */
int nv_layer_norm_vjp_f32(const float *x, const float *w, const float *g, int64_t n, float eps,
                          int64_t rows, int64_t block, int64_t k0, int64_t k1, float *dx,
                          float *dw_part, float *db_part);
int nv_layer_norm_vjp_f64(const double *x, const double *w, const double *g, int64_t n,
                          double eps, int64_t rows, int64_t block, int64_t k0, int64_t k1,
                          double *dx, double *dw_part, double *db_part);

/* the same, built for AVX-512 (call only where nv_norm_avx512() says so) */
void nv_softmax_product_rows_f32_avx512(const float *y, const float *g, int64_t n,
                                        float scale, int64_t r0, int64_t r1, float *out);
void nv_softmax_product_rows_f64_avx512(const double *y, const double *g, int64_t n,
                                        double scale, int64_t r0, int64_t r1, double *out);
int nv_layer_norm_rows_f32_avx512(const float *x, const float *w, const float *b, int64_t n,
                                  float eps, int64_t r0, int64_t r1, float *out);
int nv_layer_norm_rows_f64_avx512(const double *x, const double *w, const double *b,
                                  int64_t n, double eps, int64_t r0, int64_t r1, double *out);
int nv_layer_norm_vjp_f32_avx512(const float *x, const float *w, const float *g, int64_t n,
                                 float eps, int64_t rows, int64_t block, int64_t k0,
                                 int64_t k1, float *dx, float *dw_part, float *db_part);
int nv_layer_norm_vjp_f64_avx512(const double *x, const double *w, const double *g, int64_t n,
                                 double eps, int64_t rows, int64_t block, int64_t k0,
                                 int64_t k1, double *dx, double *dw_part, double *db_part);

#endif
