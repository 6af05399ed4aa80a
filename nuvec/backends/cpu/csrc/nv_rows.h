/* nv_rows.h -- reductions along the innermost axis of C-contiguous arrays (see nv_rows.c). */
#ifndef NV_ROWS_H
#define NV_ROWS_H

#include <stdint.h>

/* out[r] = max (want_max) or min of x[r * n : (r + 1) * n], for n >= 1, with NumPy's bits */
void nv_rows_extreme_f32(const float *x, int64_t rows, int64_t n, int want_max, float *out);
void nv_rows_extreme_f64(const double *x, int64_t rows, int64_t n, int want_max, double *out);

/* out[r] = the sum of x[r * n : (r + 1) * n] with NumPy's pairwise summation bits */
void nv_rows_sum_f32(const float *x, int64_t rows, int64_t n, float *out);
void nv_rows_sum_f64(const double *x, int64_t rows, int64_t n, double *out);

#endif
