/* compare_kernels.c -- the driver of compare_kernels.py: runs each kernel of two generator
 * versions ("base" and "cand", linked from their own sources) over the same inputs in every
 * layout the launcher uses, and compares the outputs byte for byte.
 *
 * compare_kernels.py appends the kernel table (KERNELS, NKERNELS) and compiles this file with
 * both kernel sources. Usage: driver N SEED EXHAUSTIVE32 [NAME_SUBSTRING]
 * Prints one line per kernel with mismatches (and the first few elements), a summary last;
 * exit status 1 if any output differs. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*kfn)(int64_t, char **, const int64_t *);
typedef int (*bfn)(int64_t, char **, uint32_t);

enum { T_B, T_U8, T_U16, T_U32, T_U64, T_I8, T_I16, T_I32, T_I64, T_F16, T_BF16, T_F32, T_F64, T_C64 };
static const int SIZE[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8};

typedef struct {
    const char *name;
    kfn base, cand;
    bfn base_bcast, cand_bcast;  /* NULL where the kernel has none */
    int nin;
    int in[3];
    int out;
} kernel;
extern const kernel KERNELS[];
extern const int NKERNELS;

/* ---- random numbers (splitmix64) ---- */
static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

/* ---- special values: edges of every format and of the conversions, their neighbours ---- */
static const uint32_t F32_SPECIAL[] = {
    0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7fa00001,
    0xffc12345, 0x00000001, 0x807fffff, 0x00800000, 0x80800000, 0x7f7fffff, 0xff7fffff,
    0x3f800000, 0xbf800000, 0x3f000000, 0xbf000000, 0x3fc00000, 0x40000000, 0x4b000000,
    0x4b800000, 0x4a800000, 0xca800000, 0x4f000000, 0xcf000000, 0x4f800000, 0x5e800000,
    0x5f000000, 0xdf000000, 0x5f800000, 0xdf800000, 0x477fe000, 0x477ff000, 0x48000000,
    0xc8000000, 0x43800000, 0x437f0000, 0x47800000, 0x3effffff, 0x40490fdb, 0x33800000};
static const uint64_t F64_SPECIAL[] = {
    0x0000000000000000ull, 0x8000000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull,
    0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff4000000000001ull, 0x7ff8000012345678ull,
    0x0000000000000001ull, 0x800fffffffffffffull, 0x0010000000000000ull, 0x7fefffffffffffffull,
    0xffefffffffffffffull, 0x3ff0000000000000ull, 0xbff0000000000000ull, 0x3fe0000000000000ull,
    0x3ff8000000000000ull, 0x4330000000000000ull, 0x4340000000000000ull, 0x41e0000000000000ull,
    0xc1e0000000000000ull, 0x41f0000000000000ull, 0x43d0000000000000ull, 0x43e0000000000000ull,
    0xc3e0000000000000ull, 0x43f0000000000000ull, 0xc3f0000000000000ull, 0x40effc0000000000ull,
    0x40effe0000000000ull, 0x4100000000000000ull, 0x47efffffe0000000ull, 0x47effffff0000000ull,
    0x36a0000000000000ull, 0x3810000000000000ull, 0x41dfffffffc00000ull, 0xc1e0000000200000ull,
    0x380fffffffffffffull, 0x3e70000000000000ull};

static uint64_t int_special(int bits, int is_signed)
{
    uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
    uint64_t top = 1ull << (bits - 1);
    switch (rnd() % 10) {
    case 0: return 0;
    case 1: return 1;
    case 2: return mask;                          /* -1 / MAX unsigned */
    case 3: return top;                           /* MIN / 2^(bits-1) */
    case 4: return top - 1;                       /* MAX */
    case 5: return top + 1;
    case 6: return 2;
    case 7: return mask - 1;
    default: {                                    /* a power of two and its neighbours */
        uint64_t p = 1ull << (rnd() % (uint64_t)bits);
        return (p + (uint64_t)rnd_in(-1, 1)) & mask;
    }
    }
    (void)is_signed;
}

/* one element of type t in regime r ("any": specials, random bits and tame values mixed;
 * "tame": moderate values; "special": edges and their neighbours) */
enum { R_ANY, R_TAME, R_SPECIAL, R_MULTIPLE, NREGIMES };

static uint32_t f32_tame(void)
{
    if (rnd() % 4 == 0) {                         /* a small integer */
        float f = (float)rnd_in(-64, 64);
        uint32_t u;
        memcpy(&u, &f, 4);
        return u;
    }
    uint32_t e = (uint32_t)rnd_in(127 - 20, 127 + 20);
    return (uint32_t)(rnd() & 0x807fffffu) | (e << 23);
}

static uint64_t f64_tame(void)
{
    if (rnd() % 4 == 0) {
        double d = (double)rnd_in(-64, 64);
        uint64_t u;
        memcpy(&u, &d, 8);
        return u;
    }
    uint64_t e = (uint64_t)rnd_in(1023 - 40, 1023 + 40);
    return (rnd() & 0x800fffffffffffffull) | (e << 52);
}

static uint32_t f32_value(int r)
{
    uint32_t n = sizeof F32_SPECIAL / sizeof F32_SPECIAL[0];
    if (r == R_SPECIAL || (r == R_ANY && rnd() % 3 == 0))
        return F32_SPECIAL[rnd() % n] + (uint32_t)rnd_in(-2, 2) * (rnd() % 2);
    if (r == R_ANY && rnd() % 2 == 0)
        return (uint32_t)rnd();
    return f32_tame();
}

static uint64_t f64_value(int r)
{
    uint64_t n = sizeof F64_SPECIAL / sizeof F64_SPECIAL[0];
    if (r == R_SPECIAL || (r == R_ANY && rnd() % 3 == 0))
        return F64_SPECIAL[rnd() % n] + (uint64_t)rnd_in(-2, 2) * (rnd() % 2);
    if (r == R_ANY && rnd() % 2 == 0) {
        uint64_t u = rnd();
        if (rnd() % 2)                           /* an integer-valued double of any size */
            u = (u & 0x800fffffffffffffull) | ((uint64_t)rnd_in(1023, 1023 + 66) << 52);
        return u;
    }
    return f64_tame();
}

static uint16_t f16_value(int t, int r)
{
    if (r == R_TAME) {                            /* exponents near 1, both formats */
        uint32_t u = f32_tame();
        return t == T_BF16 ? (uint16_t)(u >> 16)
                           : (uint16_t)(((u >> 16) & 0x8000u) | (uint32_t)rnd_in(0x2000, 0x5fff));
    }
    return (uint16_t)rnd();                       /* every pattern, NaN payloads included */
}

static uint64_t int_value(int t, int r)
{
    static const int BITS[] = {8, 8, 16, 32, 64, 8, 16, 32, 64};
    int bits = BITS[t], sgn = t >= T_I8;
    uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
    if (t == T_B)
        return rnd() % 8 == 0 ? (rnd() & 0xff) : (rnd() & 1);
    if (r == R_SPECIAL || (r == R_ANY && rnd() % 3 == 0))
        return int_special(bits, sgn);
    if (r == R_ANY && rnd() % 2 == 0)
        return rnd() & mask;
    int64_t v = rnd() % 2 ? rnd_in(sgn ? -20 : 0, 40) : rnd_in(sgn ? -1000 : 0, 1000);
    return (uint64_t)v & mask;
}

static void put(char *p, int64_t i, int t, uint64_t v)
{
    memcpy(p + i * SIZE[t], &v, (size_t)SIZE[t]);  /* little-endian low bytes */
}

static uint64_t value(int t, int r)
{
    switch (t) {
    case T_F32: return f32_value(r);
    case T_F64: return f64_value(r);
    case T_F16: case T_BF16: return f16_value(t, r);
    case T_C64: return (uint64_t)f32_value(r) | ((uint64_t)f32_value(r) << 32);
    default: return int_value(t, r);
    }
}

/* a near a multiple of b: a = k b (rounded) moved by a few ulps, k of every size up to 2^25
 * (the floor division and remainder's quotients near integers and near their bounds) */
static uint64_t near_multiple(int t, const char *b, int64_t i)
{
    int64_t k = rnd() % 2 ? rnd_in(-64, 64) : (int64_t)(rnd() % (1ull << (rnd() % 26)));
    int64_t j = rnd_in(-3, 3);
    if (t == T_F32) {
        float fb, fa;
        memcpy(&fb, b + 4 * i, 4);
        fa = (float)k * fb;
        uint32_t u;
        memcpy(&u, &fa, 4);
        return (uint32_t)(u + (uint32_t)j);
    }
    if (t == T_F64) {
        double db, da;
        memcpy(&db, b + 8 * i, 8);
        da = (double)k * db;
        uint64_t u;
        memcpy(&u, &da, 8);
        return u + (uint64_t)j;
    }
    if (t == T_F16 || t == T_BF16 || t == T_C64)
        return value(t, R_TAME);
    uint64_t vb = 0;
    memcpy(&vb, b + i * SIZE[t], (size_t)SIZE[t]);
    return vb * (uint64_t)k + (uint64_t)j;
}

/* inputs of n elements in segments of 512, each segment of one regime */
static void fill(const kernel *k, char **in, int64_t n)
{
    for (int64_t s = 0; s < n; s += 512) {
        int r = (int)(rnd() % NREGIMES);
        int64_t e = n - s < 512 ? n : s + 512;
        for (int a = k->nin - 1; a >= 0; a--)
            for (int64_t i = s; i < e; i++) {
                int t = k->in[a];
                uint64_t v = (r == R_MULTIPLE && a == 0 && k->nin >= 2 && k->in[1] == t)
                                 ? near_multiple(t, in[1], i)
                                 : value(t, r == R_MULTIPLE ? R_TAME : r);
                put(in[a], i, t, v);
            }
    }
}

static int64_t mismatches, reported;

static void report(const kernel *k, const char *mode, char *const *in, const int64_t *isteps,
                   const char *ob, const char *oc, int64_t n, int64_t ostep)
{
    int os = SIZE[k->out];
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        const char *x = ob + i * ostep, *y = oc + i * ostep;
        if (memcmp(x, y, (size_t)os) == 0)
            continue;
        if (bad++ < 3 && reported < 200) {
            reported++;
            printf("  %s %s [%" PRId64 "]:", k->name, mode, i);
            for (int a = 0; a < k->nin; a++) {
                uint64_t v = 0;
                int64_t step = isteps ? isteps[a] : SIZE[k->in[a]];
                memcpy(&v, in[a] + i * step, (size_t)SIZE[k->in[a]]);
                printf(" in%d=%" PRIx64, a, v);
            }
            uint64_t vb = 0, vc = 0;
            memcpy(&vb, x, (size_t)os);
            memcpy(&vc, y, (size_t)os);
            printf(" base=%" PRIx64 " cand=%" PRIx64 "\n", vb, vc);
        }
    }
    if (bad) {
        printf("MISMATCH %s %s: %" PRId64 " of %" PRId64 "\n", k->name, mode, bad, n);
        mismatches += bad;
    }
}

/* run both versions on arrays at the given steps (NULL: contiguous) and compare */
static void run_both(const kernel *k, const char *mode, char **in, int64_t n,
                     const int64_t *steps, char *ob, char *oc, int64_t ostep)
{
    char *p[4];
    for (int a = 0; a < k->nin; a++)
        p[a] = in[a];
    size_t obytes = (size_t)(n * ostep);
    memset(ob, 0x5a, obytes);
    memset(oc, 0x5a, obytes);
    p[k->nin] = ob;
    k->base(n, p, steps);
    p[k->nin] = oc;
    k->cand(n, p, steps);
    report(k, mode, in, steps, ob, oc, n, ostep);
}

static void check(const kernel *k, int64_t n)
{
    int os = SIZE[k->out];
    char *in[3] = {0}, *wide[3] = {0};
    for (int a = 0; a < k->nin; a++) {
        in[a] = malloc((size_t)(n * SIZE[k->in[a]]));
        wide[a] = malloc((size_t)(2 * n * SIZE[k->in[a]]));
    }
    char *ob = malloc((size_t)(2 * n * os)), *oc = malloc((size_t)(2 * n * os));
    fill(k, in, n);
    /* contiguous */
    run_both(k, "contig", in, n, NULL, ob, oc, os);
    /* strided: every array at twice its element size (blocks), and runs below 32 (direct) */
    int64_t st[4];
    for (int a = 0; a < k->nin; a++) {
        int sz = SIZE[k->in[a]];
        for (int64_t i = 0; i < n; i++)
            memcpy(wide[a] + 2 * i * sz, in[a] + i * sz, (size_t)sz);
        st[a] = 2 * sz;
    }
    st[k->nin] = 2 * os;
    run_both(k, "strided", wide, n, st, ob, oc, 2 * os);
    for (int64_t m = 1; m < 40 && m < n; m++)
        run_both(k, "short strided", wide, m, st, ob, oc, 2 * os);
    /* one input broadcast (step 0): the strided entry's fill, and the _bcast loops */
    for (int b = 0; b < k->nin && k->nin >= 2; b++) {
        for (int rep = 0; rep < 16; rep++) {
            char *bi[3], scalar[8];
            memcpy(scalar, in[b] + (int64_t)(rnd() % (uint64_t)n) * SIZE[k->in[b]],
                   (size_t)SIZE[k->in[b]]);
            for (int a = 0; a < k->nin; a++) {
                bi[a] = a == b ? scalar : in[a];
                st[a] = a == b ? 0 : SIZE[k->in[a]];
            }
            st[k->nin] = os;
            int64_t m = rep < 8 ? n : 1 + (int64_t)(rnd() % 300);
            run_both(k, "bcast strided", bi, m, st, ob, oc, os);
            if (k->base_bcast) {
                char *p[4] = {bi[0], bi[1], bi[2], 0};
                memset(ob, 0x5a, (size_t)(m * os));
                memset(oc, 0x5a, (size_t)(m * os));
                p[k->nin] = ob;
                int rb = k->base_bcast(m, p, 1u << b);
                p[k->nin] = oc;
                int rc = k->cand_bcast(m, p, 1u << b);
                if (rb != rc) {
                    printf("MISMATCH %s bcast: returns %d and %d\n", k->name, rb, rc);
                    mismatches++;
                } else if (rb) {
                    report(k, "bcast", bi, st, ob, oc, m, os);
                }
            }
        }
    }
    /* in place: the output over input 0 */
    if (k->in[0] == k->out) {
        char *p[4];
        memcpy(ob, in[0], (size_t)(n * os));
        memcpy(oc, in[0], (size_t)(n * os));
        for (int a = 1; a < k->nin; a++)
            p[a] = in[a];
        p[0] = p[k->nin] = ob;
        k->base(n, p, NULL);
        p[0] = p[k->nin] = oc;
        k->cand(n, p, NULL);
        report(k, "in place", in, NULL, ob, oc, n, os);
    }
    for (int a = 0; a < k->nin; a++) {
        free(in[a]);
        free(wide[a]);
    }
    free(ob);
    free(oc);
}

/* every input pattern of a unary kernel of 1, 2 or (exhaustive) 4 bytes, every pair of a
 * binary kernel of 1 byte */
static void check_all(const kernel *k, int exhaustive32)
{
    int isz = SIZE[k->in[0]], os = SIZE[k->out];
    if (k->nin == 1 && (isz <= 2 || (isz == 4 && exhaustive32))) {
        int64_t total = 1ll << (8 * isz), chunk = total < (1 << 22) ? total : (1 << 22);
        char *in = malloc((size_t)(chunk * isz)), *ob = malloc((size_t)(chunk * os)),
             *oc = malloc((size_t)(chunk * os));
        for (int64_t s = 0; s < total; s += chunk) {
            for (int64_t i = 0; i < chunk; i++) {
                uint64_t v = (uint64_t)(s + i);
                memcpy(in + i * isz, &v, (size_t)isz);
            }
            char *p[1] = {in};
            run_both(k, "all inputs", p, chunk, NULL, ob, oc, os);
        }
        free(in);
        free(ob);
        free(oc);
    } else if (k->nin == 2 && isz == 1 && SIZE[k->in[1]] == 1) {
        char *a = malloc(65536), *b = malloc(65536), *ob = malloc((size_t)(65536 * os)),
             *oc = malloc((size_t)(65536 * os));
        for (int i = 0; i < 65536; i++) {
            a[i] = (char)(i & 255);
            b[i] = (char)(i >> 8);
        }
        char *p[2] = {a, b};
        run_both(k, "all pairs", p, 65536, NULL, ob, oc, os);
        free(a);
        free(b);
        free(ob);
        free(oc);
    }
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 1 << 18;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 23;
    int exhaustive32 = argc > 3 ? atoi(argv[3]) : 0;
    const char *only = argc > 4 ? argv[4] : NULL;
    int checked = 0;
    for (int i = 0; i < NKERNELS; i++) {
        const kernel *k = &KERNELS[i];
        if (only && !strstr(k->name, only))
            continue;
        check(k, n);
        check_all(k, exhaustive32);
        checked++;
        fflush(stdout);
    }
    printf("checked %d kernels: %" PRId64 " mismatched elements\n", checked, mismatches);
    return mismatches != 0;
}
