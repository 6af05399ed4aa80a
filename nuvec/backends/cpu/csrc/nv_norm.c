/* nv_norm.c -- the rows of the layer norm (forward and backward) and of the softmax's gradient
 * product. Built twice: as it is, and by nv_norm_avx512.c for AVX-512 processors with each
 * name suffixed _avx512 (NV_ISA); _rows.pyx picks one at import. Both perform the same
 * operations in the same order (explicit partial sums, no contraction), so their bits agree. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "nv_pairwise.h"
#include "nv_rows.h"

#ifndef NV_ISA
#define NV_ISA(name) name
#endif

#ifndef ROW_BLOCK
#define ROW_BLOCK 512
#endif

/* ---- the softmax's vjp / jvp rows: out = (g * y - y * sum(g * y)) * scale (no scaling when
 * scale is 1), each operation rounded, the sum pairwise: the bits of the composite form
 * (multiply, sum, multiply, subtract, multiply) */
#define SOFTMAX_PRODUCT(T, sfx)                                                              \
    void NV_ISA(nv_softmax_product_rows_##sfx)(const T *y, const T *g, int64_t n, T scale,         \
                                       int64_t r0, int64_t r1, T *out)                       \
    {                                                                                        \
        for (int64_t r = r0; r < r1; r++) {                                                  \
            const T *yr = y + r * n, *gr = g + r * n;                                        \
            T *o = out + r * n;                                                              \
            for (int64_t i = 0; i < n; i++) o[i] = gr[i] * yr[i];                            \
            T s = (T)0 + pairwise_##sfx(o, n);                                               \
            for (int64_t i = 0; i < n; i++) o[i] = o[i] - yr[i] * s;                         \
            if (scale != (T)1)                                                               \
                for (int64_t i = 0; i < n; i++) o[i] = o[i] * scale;                         \
        }                                                                                    \
    }
SOFTMAX_PRODUCT(float, f32)
SOFTMAX_PRODUCT(double, f64)

/* ---- layer norm rows --------------------------------------------------------------------------
 * The forward pass has the bits of nv.fast.layer_norm's composite form, operation for
 * operation: mean = sum(x) / n, xc = x - mean, var = sum(xc * xc) / n, r = 1 / sqrt(var + eps),
 * y = xc * r * w + b (sums pairwise, as above; no contraction: see setup.py). The backward
 * pass recomputes mean and r from x and takes
 *     wg = g * w,  xhat = xc * r,  dx = (wg - mean(wg) - xhat * mean(wg * xhat)) * r,
 * and sums g * xhat and g over each block of rows for dw and db (the caller adds the blocks
 * in order, so no result depends on how rows are split between threads). */

#define LAYER_NORM(T, sfx, SQRT)                                                             \
    /* r of one row; xc[0:n] = x - mean */                                                   \
    static T NV_ISA(ln_row_##sfx)(const T *x, int64_t n, T eps, T *xc, T *sq)                      \
    {                                                                                        \
        T m = ((T)0 + pairwise_##sfx(x, n)) / (T)n;                                          \
        for (int64_t i = 0; i < n; i++) {                                                    \
            xc[i] = x[i] - m;                                                                \
            sq[i] = xc[i] * xc[i];                                                           \
        }                                                                                    \
        T v = ((T)0 + pairwise_##sfx(sq, n)) / (T)n;                                         \
        return (T)1 / SQRT(v + eps);                                                         \
    }                                                                                        \
                                                                                             \
    int NV_ISA(nv_layer_norm_rows_##sfx)(const T *x, const T *w, const T *b, int64_t n, T eps,     \
                                 int64_t r0, int64_t r1, T *out)                             \
    {                                                                                        \
        T stack[2 * ROW_BLOCK];                                                              \
        T *buf = n <= ROW_BLOCK ? stack : malloc(2 * (size_t)n * sizeof(T));                 \
        if (!buf)                                                                            \
            return -1;                                                                       \
        T *xc = buf, *sq = buf + n;                                                          \
        for (int64_t r = r0; r < r1; r++) {                                                  \
            T rs = NV_ISA(ln_row_##sfx)(x + r * n, n, eps, xc, sq);                                \
            T *o = out + r * n;                                                              \
            for (int64_t i = 0; i < n; i++) {                                                \
                T y = xc[i] * rs;                                                            \
                if (w) y = y * w[i];                                                         \
                if (b) y = y + b[i];                                                         \
                o[i] = y;                                                                    \
            }                                                                                \
        }                                                                                    \
        if (buf != stack)                                                                    \
            free(buf);                                                                       \
        return 0;                                                                            \
    }                                                                                        \
                                                                                             \
    int NV_ISA(nv_layer_norm_vjp_##sfx)(const T *x, const T *w, const T *g, int64_t n, T eps,      \
                                int64_t rows, int64_t block, int64_t k0, int64_t k1, T *dx,  \
                                T *dw_part, T *db_part)                                      \
    {                                                                                        \
        T stack[4 * ROW_BLOCK];                                                              \
        T *buf = n <= ROW_BLOCK ? stack : malloc(4 * (size_t)n * sizeof(T));                 \
        if (!buf)                                                                            \
            return -1;                                                                       \
        T *xc = buf, *sq = buf + n, *wg = buf + 2 * n, *p = buf + 3 * n;                     \
        for (int64_t k = k0; k < k1; k++) {                                                  \
            T *dw = dw_part ? dw_part + k * n : 0, *db = db_part ? db_part + k * n : 0;      \
            for (int64_t i = 0; i < n; i++) {                                                \
                if (dw) dw[i] = (T)0;                                                        \
                if (db) db[i] = (T)0;                                                        \
            }                                                                                \
            int64_t end = (k + 1) * block < rows ? (k + 1) * block : rows;                   \
            for (int64_t r = k * block; r < end; r++) {                                      \
                const T *gr = g + r * n;                                                     \
                T rs = NV_ISA(ln_row_##sfx)(x + r * n, n, eps, xc, sq);                            \
                for (int64_t i = 0; i < n; i++) {                                            \
                    xc[i] = xc[i] * rs;                             /* xhat */               \
                    wg[i] = w ? gr[i] * w[i] : gr[i];                                        \
                    p[i] = wg[i] * xc[i];                                                    \
                }                                                                            \
                T a = ((T)0 + pairwise_##sfx(wg, n)) / (T)n;                                 \
                T c = ((T)0 + pairwise_##sfx(p, n)) / (T)n;                                  \
                T *d = dx + r * n;                                                           \
                for (int64_t i = 0; i < n; i++) {                                            \
                    d[i] = ((wg[i] - a) - xc[i] * c) * rs;                                   \
                    if (dw) dw[i] += gr[i] * xc[i];                                          \
                    if (db) db[i] += gr[i];                                                  \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
        if (buf != stack)                                                                    \
            free(buf);                                                                       \
        return 0;                                                                            \
    }
LAYER_NORM(float, f32, sqrtf)
LAYER_NORM(double, f64, sqrt)
