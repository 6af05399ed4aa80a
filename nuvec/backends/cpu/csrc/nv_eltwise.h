/* nv_eltwise.h -- the CPU runtime of element-wise kernels: layout, blocking, threads.
 *
 * A generated kernel (nuvec/codegen/dialects/c.py) has the signature nv_kernel_fn and
 * processes one run of n elements: contiguous when s == NULL, else with byte steps s[k].
 * This runtime walks an n-dimensional launch (arbitrary byte strides, 0 for broadcast axes)
 * as runs of its innermost axis, feeds contiguous runs to the kernel's vector loop, passes a
 * run that is contiguous but for broadcast (step 0) inputs to the kernel's loop that reads
 * them once (bfn) or else expands them into a small block buffer, and
 * splits the element range across a pool of threads. Each element is computed by the same
 * code in every case, so results never depend on the layout or on the split.
 */
#ifndef NV_ELTWISE_H
#define NV_ELTWISE_H

#include <stdint.h>

#define NV_MAX_ARGS 32
#define NV_MAX_DIMS 64

typedef void (*nv_kernel_fn)(int64_t n, char **p, const int64_t *s);

/* a kernel's NAME_bcast (c.py): a contiguous run whose inputs in mask have step 0, each read
 * once; returns 0 (having done nothing) where the kernel has no loop for that mask */
typedef int (*nv_bcast_fn)(int64_t n, char **p, uint32_t mask);

typedef struct {
    nv_kernel_fn fn;
    nv_bcast_fn bfn;                        /* or NULL: broadcast inputs go through blocks */
    int nin;                                /* inputs come first in ptr / strides */
    int nargs;                              /* inputs + outputs */
    int ndim;
    int64_t shape[NV_MAX_DIMS];
    int64_t strides[NV_MAX_ARGS][NV_MAX_DIMS];   /* bytes; 0 on broadcast axes */
    int64_t itemsize[NV_MAX_ARGS];
    char *ptr[NV_MAX_ARGS];
    int flush_denormals;                    /* x86: FTZ and DAZ on while the kernel runs */
} nv_launch_t;

/* merge axes that every array walks contiguously, drop axes of length 1; returns the size */
int64_t nv_launch_coalesce(nv_launch_t *L);

/* run the launch with up to nthreads threads (only if size >= 2 * grain); the caller may
 * release the GIL around it */
void nv_launch_run(nv_launch_t *L, int nthreads, int64_t grain);

/* fn(ctx, start, end) over [0, size) on up to nthreads threads, nuvec's or the OpenMP team's
 * (the calling thread among them), in contiguous chunks of at least grain, a few per thread,
 * that the threads claim in turn (a thread slowed by another process takes fewer); with
 * flush_denormals as in nv_launch_t. nv_launch_run is this over the launch's elements. */
typedef void (*nv_range_fn)(void *ctx, int64_t start, int64_t end);
void nv_parallel_for(nv_range_fn fn, void *ctx, int64_t size, int nthreads, int64_t grain,
                     int flush_denormals);

/* run parallel launches on an OpenMP team: the addresses of GOMP_parallel, omp_get_thread_num
 * and omp_get_num_threads (all three 0: back to nuvec's own threads) */
void nv_use_openmp(void *parallel, void *thread_num, void *num_threads);

/* whether flush_denormals takes effect on this processor (x86 SSE: MXCSR's FTZ and DAZ) */
int nv_flush_supported(void);

/* how many of `want` threads a launch should use now: the cores of this process's affinity mask
 * that other processes left free over the last tenth of a second (/proc/stat less this
 * process's own CPU time), rounded, at least 1 and at most `want` */
int nv_free_threads(int want);

#endif
