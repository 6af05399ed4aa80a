/* nv_rows.c -- max / min and sums along the innermost axis of a C-contiguous float32 / float64
 * array, sums over its leading axes, and float32 softmax and logsumexp rows.
 *
 * NumPy's maximum.reduce over short rows pays a ufunc inner-loop call per row and a scalar
 * NaN-checking loop: 0.87 ms for (8192, 64) float32, the rows of an attention softmax. Here
 * a row takes vector max/min over SSE2 lanes with a NaN flag beside them. The result is the
 * value of NumPy's scalar rule (``m = (m >= x || m != m) ? m : x`` for max), bits included: a
 * row holding a NaN returns its first NaN, and a row whose extreme is zero (+0 and -0 compare
 * equal) returns the first zero met, both found by a sequential scan of that row only.
 * (NumPy's own SIMD loops may return another NaN payload or zero sign.)
 */
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <math.h>
#include <stdlib.h>

#include "nv_rows.h"


#define SEQUENTIAL(T, name)                                                      \
    static T name(const T *x, int64_t n, int want_max) {                         \
        T m = x[0];                                                              \
        for (int64_t i = 1; i < n; i++) {                                        \
            T v = x[i];                                                          \
            int keep = want_max ? (m >= v) : (m <= v);                          \
            if (!(keep || m != m)) m = v;                                        \
        }                                                                        \
        return m;                                                                \
    }
SEQUENTIAL(float, seq_f32)
SEQUENTIAL(double, seq_f64)

/* SSE2: two vectors of W lanes (V, intrinsics suffix sfx) over the row's first multiple of
 * 2W elements, leaving i, m and nan for the scalar tail */
#if defined(__SSE2__)
#define VECTOR_PART(T, V, W, sfx)                                                       \
    if (n >= 2 * W) {                                                                   \
        V a = _mm_loadu_##sfx(x), b = _mm_loadu_##sfx(x + W);                           \
        V bad = _mm_or_##sfx(_mm_cmpunord_##sfx(a, a), _mm_cmpunord_##sfx(b, b));       \
        for (i = 2 * W; i + 2 * W <= n; i += 2 * W) {                                   \
            V u = _mm_loadu_##sfx(x + i), v = _mm_loadu_##sfx(x + i + W);               \
            bad = _mm_or_##sfx(bad, _mm_or_##sfx(_mm_cmpunord_##sfx(u, u),             \
                                                 _mm_cmpunord_##sfx(v, v)));            \
            a = want_max ? _mm_max_##sfx(a, u) : _mm_min_##sfx(a, u);                   \
            b = want_max ? _mm_max_##sfx(b, v) : _mm_min_##sfx(b, v);                   \
        }                                                                               \
        a = want_max ? _mm_max_##sfx(a, b) : _mm_min_##sfx(a, b);                       \
        T lanes[W];                                                                     \
        _mm_storeu_##sfx(lanes, a);                                                     \
        nan = _mm_movemask_##sfx(bad) != 0;                                             \
        m = lanes[0];                                                                   \
        for (int k = 1; k < W; k++)                                                     \
            m = want_max ? (lanes[k] > m ? lanes[k] : m) : (lanes[k] < m ? lanes[k] : m); \
    }
#else
#define VECTOR_PART(T, V, W, sfx)
#endif

/* the extreme of one row: lanes (the sign of a zero and the NaN payload aside), then the
 * sequential rule where those two matter */
#define ROW(T, V, W, sfx, name, seq)                                                   \
    static T name(const T *x, int64_t n, int want_max) {                                \
        int64_t i = 1;                                                                  \
        T m = x[0];                                                                     \
        int nan = m != m;                                                               \
        VECTOR_PART(T, V, W, sfx)                                                       \
        for (; i < n; i++) {                                                            \
            T v = x[i];                                                                 \
            nan |= v != v;                                                              \
            m = want_max ? (v > m ? v : m) : (v < m ? v : m);                           \
        }                                                                               \
        if (nan || m == 0) return seq(x, n, want_max);                                  \
        return m;                                                                       \
    }
ROW(float, __m128, 4, ps, row_f32, seq_f32)
ROW(double, __m128d, 2, pd, row_f64, seq_f64)

void nv_rows_extreme_f32(const float *x, int64_t rows, int64_t n, int want_max, float *out) {
    for (int64_t r = 0; r < rows; r++) out[r] = row_f32(x + r * n, n, want_max);
}

void nv_rows_extreme_f64(const double *x, int64_t rows, int64_t n, int want_max, double *out) {
    for (int64_t r = 0; r < rows; r++) out[r] = row_f64(x + r * n, n, want_max);
}

#include "nv_pairwise.h"

void nv_rows_sum_f32(const float *x, int64_t rows, int64_t n, float *out) {
    for (int64_t r = 0; r < rows; r++) out[r] = 0.0f + pairwise_f32(x + r * n, n);
}

void nv_rows_sum_f64(const double *x, int64_t rows, int64_t n, double *out) {
    for (int64_t r = 0; r < rows; r++) out[r] = 0.0 + pairwise_f64(x + r * n, n);
}

/* ---- sums over the leading axes ------------------------------------------------------------
 * np.add.reduce over the leading axes of a C-contiguous array with at least two columns starts
 * each column at 0 and adds the rows in order (its inner loop runs along the columns; with one
 * column it is the pairwise sum above). Columns [c0, c1) accumulate in a local block, so that
 * threads summing neighbouring columns never write to one cache line. */
#define COLS_BLOCK 512
#define COLS_SUM(T, name)                                                               \
    void name(const T *x, int64_t rows, int64_t cols, int64_t c0, int64_t c1, T *out) {  \
        T acc[COLS_BLOCK];                                                              \
        for (int64_t b = c0; b < c1; b += COLS_BLOCK) {                                 \
            int64_t w = c1 - b < COLS_BLOCK ? c1 - b : COLS_BLOCK;                      \
            for (int64_t c = 0; c < w; c++) acc[c] = (T)0;                              \
            for (int64_t r = 0; r < rows; r++) {                                        \
                const T *row = x + r * cols + b;                                        \
                for (int64_t c = 0; c < w; c++) acc[c] += row[c];                       \
            }                                                                           \
            for (int64_t c = 0; c < w; c++) out[b + c] = acc[c];                        \
        }                                                                               \
    }
COLS_SUM(float, nv_cols_sum_f32)
COLS_SUM(double, nv_cols_sum_f64)

/* ---- float32 softmax and logsumexp rows ------------------------------------------------------
 * The row's max and sum are the functions above; exp(x - max) and the division are nuvec's
 * generated element-wise kernels (passed in), run on the row in blocks with the scalar operand
 * expanded: so each row gets exactly the operations of the multi-pass form (max, shifted exp,
 * sum, divide), while staying in the core's cache between them. */
#define ROW_BLOCK 512

static void fill_f32(float *buf, float v, int64_t n)
{
    for (int64_t i = 0; i < n; i++) buf[i] = v;
}

/* out[0:n] = kernel(a[0:n], scalar) in blocks */
static void with_scalar(nv_kernel_fn k, const float *a, float v, float *out, int64_t n)
{
    float buf[ROW_BLOCK];
    fill_f32(buf, v, n < ROW_BLOCK ? n : ROW_BLOCK);
    for (int64_t i = 0; i < n; i += ROW_BLOCK) {
        char *p[3] = {(char *)(a + i), (char *)buf, (char *)(out + i)};
        k(n - i < ROW_BLOCK ? n - i : ROW_BLOCK, p, 0);
    }
}

void nv_softmax_rows_f32(const float *x, int64_t n, int64_t r0, int64_t r1,
                         nv_kernel_fn shifted_exp, nv_kernel_fn divide, float *out)
{
    for (int64_t r = r0; r < r1; r++) {
        const float *row = x + r * n;
        float *o = out + r * n;
        with_scalar(shifted_exp, row, row_f32(row, n, 1), o, n);
        with_scalar(divide, o, 0.0f + pairwise_f32(o, n), o, n);
    }
}

void nv_scaled_softmax_rows_f32(const float *x, const float *mask, int nlead, const int64_t *lead,
                                const int64_t *mask_step, int64_t n, float scale, int64_t r0,
                                int64_t r1, nv_kernel_fn shifted_exp, nv_kernel_fn divide,
                                float *out)
{
    for (int64_t r = r0; r < r1; r++) {
        const float *row = x + r * n;
        float *o = out + r * n;
        if (mask) {
            int64_t rem = r, off = 0;        /* the mask's row: r's index over the lead shape */
            for (int d = nlead - 1; d >= 0; d--) {
                off += (rem % lead[d]) * mask_step[d];
                rem /= lead[d];
            }
            const float *m = mask + off;
            for (int64_t i = 0; i < n; i++) o[i] = row[i] * scale + m[i];
        } else {
            for (int64_t i = 0; i < n; i++) o[i] = row[i] * scale;
        }
        with_scalar(shifted_exp, o, row_f32(o, n, 1), o, n);
        with_scalar(divide, o, 0.0f + pairwise_f32(o, n), o, n);
    }
}

int nv_logsumexp_rows_f32(const float *x, int64_t n, int64_t r0, int64_t r1,
                          nv_kernel_fn shifted_exp, float *sums, float *shifts)
{
    float stack[ROW_BLOCK];
    float *e = n <= ROW_BLOCK ? stack : malloc((size_t)n * sizeof(float));
    if (!e)
        return -1;
    for (int64_t r = r0; r < r1; r++) {
        const float *row = x + r * n;
        float m = row_f32(row, n, 1);
        m = isfinite(m) ? m : 0.0f;              /* rows of infinities (or NaN): shift by 0 */
        with_scalar(shifted_exp, row, m, e, n);
        sums[r] = 0.0f + pairwise_f32(e, n);
        shifts[r] = m;
    }
    if (e != stack)
        free(e);
    return 0;
}
