/* nv_norm_avx512.c -- nv_norm.c for processors with AVX-512 (512-bit vectors; 1.5-1.9x on
 * layer norm's rows here), each function suffixed _avx512. nv_norm_avx512() says whether this
 * build has them and the processor runs them; where the compiler cannot target AVX-512 here
 * the suffixed functions are a second baseline build, never chosen. */
#include "nv_rows.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#pragma GCC target("avx512f,avx512vl,prefer-vector-width=512")
#define NV_AVX512 1
#else
#define NV_AVX512 0
#endif

#define NV_ISA(name) name##_avx512
#include "nv_norm.c"

int nv_norm_avx512(void)
{
#if NV_AVX512
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}
