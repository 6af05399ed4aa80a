/* nv_pairwise.h -- NumPy's pairwise summation as static functions, for the row kernels
 * (nv_rows.c, nv_norm.c). */
#ifndef NV_PAIRWISE_H
#define NV_PAIRWISE_H

#include <stdint.h>

/* ---- sums: NumPy's pairwise summation, bit for bit ------------------------------------------
 * np.add.reduce over a contiguous innermost axis starts each row at 0 and adds the row's
 * pairwise sum: below 8 items one after another; up to 128 in eight interleaved partial sums
 * combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), the tail then added in order; above 128
 * the two halves (the first a multiple of 8) summed alike and added. NumPy pays a ufunc
 * inner-loop call per row (2048 rows of 128: 85 us); here the rows run in one loop. */
#define PAIRWISE(T, name)                                                               \
    static inline T name(const T *a, int64_t n) {                                              \
        if (n < 8) {                                                                    \
            T res = (T)0;                                                               \
            for (int64_t i = 0; i < n; i++) res += a[i];                                \
            return res;                                                                 \
        }                                                                               \
        if (n <= 128) {                                                                 \
            T r[8];                                                                     \
            int64_t i;                                                                  \
            for (int j = 0; j < 8; j++) r[j] = a[j];                                    \
            for (i = 8; i < n - (n % 8); i += 8)                                        \
                for (int j = 0; j < 8; j++) r[j] += a[i + j];                           \
            T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));  \
            for (; i < n; i++) res += a[i];                                             \
            return res;                                                                 \
        }                                                                               \
        int64_t n2 = n / 2;                                                             \
        n2 -= n2 % 8;                                                                   \
        return name(a, n2) + name(a + n2, n - n2);                                      \
    }
PAIRWISE(float, pairwise_f32)
PAIRWISE(double, pairwise_f64)

#endif
