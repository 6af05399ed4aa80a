/* nv_eltwise.c -- see nv_eltwise.h */
#define _GNU_SOURCE
#include "nv_eltwise.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#define NV_BLOCK 512           /* elements per block when broadcast inputs are expanded */

/* ---- layout -------------------------------------------------------------------------------- */

int64_t nv_launch_coalesce(nv_launch_t *L)
{
    int64_t size = 1;
    for (int d = 0; d < L->ndim; d++)
        size *= L->shape[d];
    if (size == 0)
        return 0;
    /* drop axes of length 1 */
    int nd = 0;
    for (int d = 0; d < L->ndim; d++) {
        if (L->shape[d] == 1)
            continue;
        L->shape[nd] = L->shape[d];
        for (int a = 0; a < L->nargs; a++)
            L->strides[a][nd] = L->strides[a][d];
        nd++;
    }
    if (nd == 0) {             /* one element: a run of length 1 */
        L->shape[0] = 1;
        for (int a = 0; a < L->nargs; a++)
            L->strides[a][0] = L->itemsize[a];
        L->ndim = 1;
        return 1;
    }
    /* merge axis d into the (already merged) axis after it when all arrays allow it */
    int out = nd - 1;          /* index of the current innermost merged axis */
    int64_t shp[NV_MAX_DIMS];
    int64_t str[NV_MAX_ARGS][NV_MAX_DIMS];
    shp[out] = L->shape[nd - 1];
    for (int a = 0; a < L->nargs; a++)
        str[a][out] = L->strides[a][nd - 1];
    for (int d = nd - 2; d >= 0; d--) {
        int ok = 1;
        for (int a = 0; a < L->nargs && ok; a++)
            ok = L->strides[a][d] == str[a][out] * shp[out];
        if (ok) {
            shp[out] *= L->shape[d];
        } else {
            out--;
            shp[out] = L->shape[d];
            for (int a = 0; a < L->nargs; a++)
                str[a][out] = L->strides[a][d];
        }
    }
    L->ndim = nd - out;
    for (int d = 0; d < L->ndim; d++) {
        L->shape[d] = shp[out + d];
        for (int a = 0; a < L->nargs; a++)
            L->strides[a][d] = str[a][out + d];
    }
    return size;
}

/* ---- one thread's share: elements [start, end) in C order ---------------------------------- */

static void fill_block(char *dst, const char *src, int64_t itemsize, int64_t n)
{
    switch (itemsize) {
    case 1: { uint8_t v = *(const uint8_t *)src; for (int64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = v; break; }
    case 2: { uint16_t v; memcpy(&v, src, 2); for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = v; break; }
    case 4: { uint32_t v; memcpy(&v, src, 4); for (int64_t i = 0; i < n; i++) ((uint32_t *)dst)[i] = v; break; }
    default: { uint64_t v; memcpy(&v, src, 8); for (int64_t i = 0; i < n; i++) ((uint64_t *)dst)[i] = v; break; }
    }
}

typedef struct {
    char block[NV_MAX_ARGS][NV_BLOCK * 8] __attribute__((aligned(64)));
    const char *filled[NV_MAX_ARGS];        /* which source each block holds */
    int64_t count[NV_MAX_ARGS];             /* and in how many leading elements */
} nv_scratch_t;

/* one run of n elements along the innermost axis, starting at pointers p */
static void run_inner(const nv_launch_t *L, char **p, int64_t n, nv_scratch_t **scratch,
                      nv_scratch_t *mem)
{
    const int last = L->ndim - 1;
    int contig = 1;
    uint32_t bcast = 0;          /* bit a: input a has step 0 */
    for (int a = 0; a < L->nargs; a++) {
        int64_t st = L->strides[a][last];
        if (st == L->itemsize[a])
            continue;
        if (st == 0 && a < L->nin && n > 1) {
            bcast |= (uint32_t)1 << a;
            continue;
        }
        contig = 0;
    }
    if (contig && !bcast) {
        L->fn(n, p, 0);
        return;
    }
    /* the kernel's loop that keeps the broadcast value in a register, where it has one */
    if (contig && L->bfn && L->bfn(n, p, bcast))
        return;
    if (!contig || n < 64) {     /* general steps (short runs are not worth a block) */
        int64_t steps[NV_MAX_ARGS];
        for (int a = 0; a < L->nargs; a++)
            steps[a] = L->strides[a][last];
        L->fn(n, p, steps);
        return;
    }
    /* contiguous apart from broadcast inputs: expand those into blocks */
    if (!*scratch) {
        *scratch = mem;
        for (int a = 0; a < NV_MAX_ARGS; a++) {
            mem->filled[a] = 0;
            mem->count[a] = 0;
        }
    }
    nv_scratch_t *S = *scratch;
    char *q[NV_MAX_ARGS];
    /* fill only what this run reads: a value broadcast along short rows changes every row */
    const int64_t need = n < NV_BLOCK ? n : NV_BLOCK;
    for (int a = 0; a < L->nargs; a++) {
        q[a] = p[a];
        if (a < L->nin && L->strides[a][last] == 0) {
            if (S->filled[a] != p[a] || S->count[a] < need) {
                fill_block(S->block[a], p[a], L->itemsize[a], need);
                S->filled[a] = p[a];
                S->count[a] = need;
            }
            q[a] = S->block[a];
        }
    }
    for (int64_t done = 0; done < n; done += NV_BLOCK) {
        int64_t m = n - done < NV_BLOCK ? n - done : NV_BLOCK;
        L->fn(m, q, 0);
        for (int a = 0; a < L->nargs; a++)
            if (L->strides[a][last] != 0)
                q[a] += m * L->itemsize[a];
    }
}

static void run_range(const nv_launch_t *L, int64_t start, int64_t end)
{
    nv_scratch_t *scratch = 0;
    nv_scratch_t mem;            /* on this thread's stack; only touched when needed */
    const int nd = L->ndim, last = nd - 1;
    int64_t idx[NV_MAX_DIMS];
    char *p[NV_MAX_ARGS];
    int64_t rem = start;
    for (int d = last; d >= 0; d--) {
        idx[d] = rem % L->shape[d];
        rem /= L->shape[d];
    }
    for (int a = 0; a < L->nargs; a++) {
        p[a] = L->ptr[a];
        for (int d = 0; d < nd; d++)
            p[a] += idx[d] * L->strides[a][d];
    }
    int64_t pos = start;
    while (pos < end) {
        int64_t n = L->shape[last] - idx[last];
        if (n > end - pos)
            n = end - pos;
        run_inner(L, p, n, &scratch, &mem);
        pos += n;
        if (pos >= end)
            break;
        /* advance the multi-index by n along the innermost axis, carrying outward */
        idx[last] += n;
        for (int a = 0; a < L->nargs; a++)
            p[a] += n * L->strides[a][last];
        for (int d = last; d > 0 && idx[d] == L->shape[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
            for (int a = 0; a < L->nargs; a++)
                p[a] += L->strides[a][d - 1] - L->shape[d] * L->strides[a][d];
        }
    }
}

/* A job with flush_denormals runs with MXCSR's flush-to-zero (results) and denormals-are-zero
 * (inputs) bits set on each thread that works on it, restored after. */
static void run_flushed(nv_range_fn fn, void *ctx, int64_t start, int64_t end, int flush)
{
#if defined(__SSE__)
    if (flush) {
        unsigned int saved = _mm_getcsr();
        _mm_setcsr(saved | 0x8040);       /* FTZ (bit 15) | DAZ (bit 6) */
        fn(ctx, start, end);
        _mm_setcsr(saved);
        return;
    }
#endif
    fn(ctx, start, end);
}

int nv_flush_supported(void)
{
#if defined(__SSE__)
    return 1;
#else
    return 0;
#endif
}

/* ---- cores that other processes keep busy ----------------------------------------------------
 * A launch split over more threads than there are free cores waits at its end for a thread
 * that the scheduler has parked behind another process (for a time slice: milliseconds), and a
 * spinning OpenMP worker takes its core from the thread that is working. So the launchers ask
 * how many cores are free: over the last window (at least NV_LOAD_WINDOW seconds), the busy
 * time of the CPUs in this process's affinity mask (/proc/stat: everything but idle and
 * iowait, steal included) less this process's own CPU time (getrusage) is what others used. */

#define NV_LOAD_WINDOW 0.1

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static double load_t = -1.0;        /* when the window began (monotonic seconds) */
static double load_busy = 0.0;      /* busy CPU seconds of the allowed CPUs then */
static double load_own = 0.0;       /* this process's CPU seconds then */
static double load_free = 1e9;      /* free cores over the last complete window */

static double monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* busy seconds of the CPUs in `set` since boot and how many of them /proc/stat listed; -1 if
 * it cannot be read */
static double busy_seconds(const cpu_set_t *set, int *ncpus)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1.0;
    static long hz = 0;
    if (hz <= 0)
        hz = sysconf(_SC_CLK_TCK);
    char line[512];
    unsigned long long total = 0;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "cpu", 3) != 0)
            break;                          /* the per-CPU lines come first */
        int cpu;
        unsigned long long v[8] = {0};
        if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) < 5)
            continue;                       /* the aggregate "cpu " line */
        if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, set))
            continue;
        /* user nice system idle iowait irq softirq steal */
        total += v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        n++;
    }
    fclose(f);
    *ncpus = n;
    return (n > 0 && hz > 0) ? (double)total / (double)hz : -1.0;
}

static double rusage_seconds(int who)
{
    struct rusage ru;
    if (getrusage(who, &ru) != 0)
        return 0.0;
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* this process's CPU seconds, and those of its children that have ended (the C compiler
 * building kernels): their load is over when they end, so it must not hold the next window's
 * thread count down */
static double own_seconds(void)
{
    return rusage_seconds(RUSAGE_SELF) + rusage_seconds(RUSAGE_CHILDREN);
}

int nv_free_threads(int want)
{
    if (want <= 1)
        return 1;
    double now = monotonic_s();
    if (now - load_t >= NV_LOAD_WINDOW && pthread_mutex_trylock(&load_mu) == 0) {
        if (now - load_t >= NV_LOAD_WINDOW) {
            cpu_set_t set;
            int ncpus = 0;
            double busy = -1.0;
            if (sched_getaffinity(0, sizeof set, &set) == 0)
                busy = busy_seconds(&set, &ncpus);
            double own = own_seconds();
            if (busy < 0.0) {
                load_free = 1e9;            /* no /proc/stat: assume the cores are ours */
            } else if (load_t >= 0.0) {
                double others = ((busy - load_busy) - (own - load_own)) / (now - load_t);
                load_free = ncpus - (others > 0.0 ? others : 0.0);
            }
            load_t = now;
            load_busy = busy;
            load_own = own;
        }
        pthread_mutex_unlock(&load_mu);
    }
    double free = load_free;             /* a stale read from another thread is harmless */
    int n = free >= want ? want : (int)(free + 0.5);
    return n < 1 ? 1 : n;
}

/* ---- a small pool of worker threads --------------------------------------------------------- */

/* A launch is cut into chunks of at least `grain` elements, a few per thread, that the threads
 * claim in turn from a shared counter: a thread that the scheduler slows (another process on
 * its core) takes fewer of them, instead of one fixed share that all the others wait for.
 * Where an element runs never changes what it computes, so the results do not depend on it. */
#define NV_CHUNKS_PER_THREAD 4

typedef struct {
    nv_range_fn fn;
    void *ctx;
    int64_t size;
    int64_t chunk;               /* elements per chunk (the last one may be shorter) */
    int64_t nchunks;
    int64_t *next;               /* the next chunk to claim (on the launching thread's stack) */
    int nparts;                  /* threads taking part */
    int flush;
} nv_job_t;

static pthread_mutex_t pool_busy = PTHREAD_MUTEX_INITIALIZER;   /* one parallel launch at a time */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static int pool_started = 0;           /* number of workers running */
static int pool_epoch = 0;             /* bumped for each job */
static int pool_pending = 0;           /* workers still on the current job */
static nv_job_t pool_job;
static int pool_atfork_set = 0;

/* claims and runs chunks until none is left */
static void job_work(const nv_job_t *J)
{
    for (;;) {
        int64_t i = __atomic_fetch_add(J->next, 1, __ATOMIC_RELAXED);
        if (i >= J->nchunks)
            return;
        int64_t start = i * J->chunk;
        int64_t end = start + J->chunk < J->size ? start + J->chunk : J->size;
        run_flushed(J->fn, J->ctx, start, end, J->flush);
    }
}

static void *worker_main(void *arg)
{
    int id = (int)(intptr_t)arg;        /* 1 .. pool_started */
    int seen = 0;
    pthread_mutex_lock(&pool_mu);
    for (;;) {
        while (pool_epoch == seen)
            pthread_cond_wait(&pool_wake, &pool_mu);
        seen = pool_epoch;
        nv_job_t job = pool_job;
        pthread_mutex_unlock(&pool_mu);
        if (id < job.nparts)
            job_work(&job);
        pthread_mutex_lock(&pool_mu);
        if (id < job.nparts && --pool_pending == 0)
            pthread_cond_signal(&pool_done);
    }
    return 0;
}

/* in a forked child the workers do not exist: start afresh */
static void pool_after_fork_child(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    pool_busy = m;
    pool_mu = m;
    pool_wake = c;
    pool_done = c;
    pool_started = 0;
    pool_epoch = 0;
    pool_pending = 0;
    load_mu = m;
}

static int pool_ensure(int nworkers)
{
    if (!pool_atfork_set) {
        pthread_atfork(0, 0, pool_after_fork_child);
        pool_atfork_set = 1;
    }
    while (pool_started < nworkers) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 4 << 20);
        int rc = pthread_create(&t, &attr, worker_main, (void *)(intptr_t)(pool_started + 1));
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        pool_started++;
    }
    return pool_started;
}

/* ---- or the threads of an OpenMP runtime ------------------------------------------------------
 * Where the BLAS library runs on GNU OpenMP, launches run on the same team (GOMP_parallel, the
 * entry point of `#pragma omp parallel`): a matmul and the element-wise kernels around it then
 * share one set of threads, already awake, instead of two pools taking turns on the cores. */

typedef void (*nv_omp_parallel_t)(void (*fn)(void *), void *data, unsigned nthreads,
                                  unsigned flags);
static nv_omp_parallel_t omp_parallel = 0;

/* the thread number and team size are not needed (chunks are claimed, not assigned), but all
 * three entry points are asked for so that a runtime lacking one is not used */
void nv_use_openmp(void *parallel, void *thread_num, void *num_threads)
{
    omp_parallel = (parallel && thread_num && num_threads) ? (nv_omp_parallel_t)parallel : 0;
}

static void omp_body(void *arg)
{
    job_work((const nv_job_t *)arg);       /* a smaller team than asked for takes more chunks */
}

void nv_parallel_for(nv_range_fn fn, void *ctx, int64_t size, int nthreads, int64_t grain,
                     int flush_denormals)
{
    if (size <= 0)
        return;
    int64_t g = grain > 0 ? grain : 1;
    int parts = nthreads;
    if (parts > size / g)
        parts = (int)(size / g);
    /* another job is using the pool (a second Python thread): run this one serially */
    if (parts < 2 || pthread_mutex_trylock(&pool_busy) != 0) {
        run_flushed(fn, ctx, 0, size, flush_denormals);
        return;
    }
    int64_t nchunks = (int64_t)parts * NV_CHUNKS_PER_THREAD;
    if (nchunks > size / g)
        nchunks = size / g;
    int64_t chunk = (size + nchunks - 1) / nchunks;
    nchunks = (size + chunk - 1) / chunk;
    int64_t next = 0;
    nv_job_t job = {fn, ctx, size, chunk, nchunks, &next, parts, flush_denormals};
    if (omp_parallel) {
        omp_parallel(omp_body, &job, (unsigned)parts, 0);
        pthread_mutex_unlock(&pool_busy);
        return;
    }
    pthread_mutex_lock(&pool_mu);
    int workers = pool_ensure(parts - 1);
    if (parts > workers + 1)
        parts = workers + 1;
    job.nparts = parts;
    pool_job = job;
    pool_pending = parts - 1;
    pool_epoch++;
    pthread_cond_broadcast(&pool_wake);
    pthread_mutex_unlock(&pool_mu);
    job_work(&job);
    pthread_mutex_lock(&pool_mu);
    while (pool_pending > 0)
        pthread_cond_wait(&pool_done, &pool_mu);
    pthread_mutex_unlock(&pool_mu);
    pthread_mutex_unlock(&pool_busy);
}

static void launch_range(void *L, int64_t start, int64_t end)
{
    run_range((const nv_launch_t *)L, start, end);
}

void nv_launch_run(nv_launch_t *L, int nthreads, int64_t grain)
{
    int64_t size = 1;
    for (int d = 0; d < L->ndim; d++)
        size *= L->shape[d];
    nv_parallel_for(launch_range, L, size, nthreads, grain, L->flush_denormals);
}
