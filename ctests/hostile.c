/* hostile.c — bad input for every name exported by hylapack.h (issue #23).
 *
 * For each C and Fortran entry point:
 *   1. every argument illegal in turn (LAPACK numbering; NULL where the header says NULL is
 *      reported): INFO = -i and exactly one xerbla_ call with the routine's upper-case name
 *      and i; where a LAPACK routine of the same contract exists, it gets the same illegal
 *      arguments and must give the same INFO (pairs of illegal arguments check the order);
 *   2. zero sizes: LAPACK's quick return; arrays of zero length come from malloc(0), so ASan
 *      reports any write into them;
 *   3. INT_MAX sizes and leading dimensions with small arrays;
 *   4. NaN, +-Inf, -0, subnormals and 1e+-308 in every floating input, one at a time (N = 5),
 *      INFO compared with LAPACK (or the header's documented behaviour);
 *   5. a seeded fuzzer of random legal and illegal argument combinations.
 * Every call runs under an alarm() watchdog. Built with ASan and UBSan (hostile.cmake).
 *
 * Seed: HYLAPACK_TEST_SEED, else the clock; printed. Last line: "hostile: N passed, N failed". */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hylapack.h"

/* ---- the system LAPACK / BLAS (Fortran ABI, hidden CHARACTER lengths last) ---- */
extern void dgtsv_(const int *, const int *, double *, double *, double *, double *,
                   const int *, int *);
extern void sgtsv_(const int *, const int *, float *, float *, float *, float *, const int *,
                   int *);
extern void dstebz_(const char *, const char *, const int *, const double *, const double *,
                    const int *, const int *, const double *, const double *, const double *,
                    int *, int *, double *, int *, int *, double *, int *, int *, size_t,
                    size_t);
extern void sstebz_(const char *, const char *, const int *, const float *, const float *,
                    const int *, const int *, const float *, const float *, const float *,
                    int *, int *, float *, int *, int *, float *, int *, int *, size_t, size_t);
extern void dsyev_(const char *, const char *, const int *, double *, const int *, double *,
                   double *, const int *, int *, size_t, size_t);
extern void dsyevx_(const char *, const char *, const char *, const int *, double *,
                    const int *, const double *, const double *, const int *, const int *,
                    const double *, int *, double *, double *, const int *, double *,
                    const int *, int *, int *, int *, size_t, size_t, size_t);
extern void dsytrd_sy2sb_(const char *, const int *, const int *, double *, const int *,
                          double *, const int *, double *, double *, const int *, int *,
                          size_t);
extern void ssytrd_sy2sb_(const char *, const int *, const int *, float *, const int *,
                          float *, const int *, float *, float *, const int *, int *, size_t);
extern void dgemm_(const char *, const char *, const int *, const int *, const int *,
                   const double *, const double *, const int *, const double *, const int *,
                   const double *, double *, const int *, size_t, size_t);
extern void dgesv_(const int *, const int *, double *, const int *, int *, double *,
                   const int *, int *);

/* ---- our xerbla_: records every call (hylapack's and LAPACK's) ---- */
static char xname[64];
static int xarg, xcalls;

void xerbla_(const char *srname, const int *info, size_t len);
void xerbla_(const char *srname, const int *info, size_t len)
{
    size_t k = 0;
    while (k < len && k < sizeof xname - 1 && srname[k] != '\0' && srname[k] != ' ') {
        xname[k] = srname[k];
        k++;
    }
    xname[k] = '\0';
    xarg = *info;
    xcalls++;
}

static void xreset(void)
{
    xname[0] = '\0';
    xarg = 0;
    xcalls = 0;
}

/* ---- bookkeeping ---- */
static long passed, failed;
static char ctx[256]; /* the case being run, for messages and the watchdog */

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
    if (ok) {
        passed++;
        return;
    }
    failed++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stdout, "FAIL [%s] ", ctx);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
}

static void on_alarm(int sig)
{
    static const char msg[] = "FAIL hang (watchdog) in case: ";
    (void)sig;
    if (write(1, msg, sizeof msg - 1) < 0 || write(1, ctx, strlen(ctx)) < 0 ||
        write(1, "\n", 1) < 0) {
        _exit(3);
    }
    _exit(2);
}

/* Seconds a case may take. With a GPU, a family's first call compiles its kernels (NVRTC,
 * tens of seconds on a host without the kernel cache), so the watchdog waits longer there. */
static unsigned watchdog_s = 10;

/* HOSTILE_VERBOSE=1 prints each case before it runs (to find the one that crashed). */
static int verbose;
#define WATCH(...)                                                                         \
    do {                                                                                   \
        snprintf(ctx, sizeof ctx, __VA_ARGS__);                                            \
        if (verbose) {                                                                     \
            fprintf(stderr, "case: %s\n", ctx);                                            \
        }                                                                                  \
        alarm(watchdog_s);                                                                 \
    } while (0)

/* The outcome of one call. */
typedef struct {
    int info, xcalls, xarg;
    char xname[64];
} Res;

static Res res_of(int info)
{
    Res r;
    r.info = info;
    r.xcalls = xcalls;
    r.xarg = xarg;
    memcpy(r.xname, xname, sizeof r.xname);
    return r;
}

/* INFO = -i and exactly one xerbla_(name, i). */
static void expect_illegal(Res r, const char *name, int i)
{
    check(r.info == -i, "INFO = %d, expected %d", r.info, -i);
    check(r.xcalls == 1 && r.xarg == i && strcmp(r.xname, name) == 0,
          "xerbla_ called %d time(s), last (%s, %d); expected once (%s, %d)", r.xcalls,
          r.xname, r.xarg, name, i);
}

/* A legal call: INFO >= 0 (or one of the allowed), no xerbla_ call. */
static void expect_legal(Res r)
{
    check(r.info >= 0, "INFO = %d for a legal call", r.info);
    check(r.xcalls == 0, "xerbla_ called (%s, %d) for a legal call", r.xname, r.xarg);
}

/* The same INFO as LAPACK's routine of the same contract; `map` turns LAPACK's argument
 * number into hylapack's (for products and dgesv), identity when NULL. */
static void expect_as_ref(Res h, Res ref, const char *name, const int *map)
{
    if (ref.info < 0) {
        int i = map ? map[-ref.info] : -ref.info;
        check(ref.xcalls == 1, "LAPACK's routine called xerbla_ %d times", ref.xcalls);
        /* documented: DSYEVX passes DSTEBZ's -i (and its xerbla_ name) through */
        expect_illegal(h, strcmp(name, "DSYEVX_OOC") == 0 && strcmp(ref.xname, "DSTEBZ") == 0
                               ? "DSTEBZ"
                               : name,
                       i);
    } else {
        check(h.info == ref.info, "INFO = %d, LAPACK gives %d", h.info, ref.info);
        check(h.xcalls == 0, "xerbla_ called (%s, %d), LAPACK did not", h.xname, h.xarg);
    }
}

/* ---- arrays: exactly the entries LAPACK may touch, so ASan sees any overrun ---- */
static double *dnew(long len)
{
    double *p = malloc((size_t)(len > 0 ? len : 0) * sizeof *p);
    if (!p && len > 0) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static double *ddup(const double *p, long len)
{
    if (!p) {
        return NULL;
    }
    double *q = dnew(len);
    if (len > 0) {
        memcpy(q, p, (size_t)len * sizeof *q);
    }
    return q;
}

static float *fdup(const double *p, long len)
{
    if (!p) {
        return NULL;
    }
    float *q = malloc((size_t)(len > 0 ? len : 0) * sizeof *q);
    for (long i = 0; i < len; i++) {
        q[i] = (float)p[i];
    }
    return q;
}

static void fback(double *p, float *q, long len)
{
    if (p && q) {
        for (long i = 0; i < len; i++) {
            p[i] = q[i];
        }
    }
    free(q);
}

/* xorshift64*: the same sequence for a given seed everywhere. */
static unsigned long long rng = 88172645463325252ULL;
static unsigned long long rnext(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ULL;
}
static double runif(void) { return (double)(rnext() >> 11) * 0x1.0p-53 * 2.0 - 1.0; }
static int rint_below(int k) { return (int)(rnext() % (unsigned)k); }

static void dfill(double *p, long len)
{
    for (long i = 0; i < len; i++) {
        p[i] = runif();
    }
}

/* Same value or both NaN. */
static int same_val(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static long lmax(long a, long b) { return a > b ? a : b; }

/* Special values for step 4. */
static const double specials[] = {NAN, INFINITY, -INFINITY, -0.0, 0x1p-1070,
                                  1e-308, 1e308, -1e308, 1e-40};
static const char *special_names[] = {"NaN", "+Inf", "-Inf", "-0", "subnormal",
                                      "1e-308", "1e308", "-1e308", "1e-40"};
#define NSPECIAL ((int)(sizeof specials / sizeof specials[0]))

static int gpu_present;

/* ======================= tridiagonal solves: xGTSV_SPIKE[_], _DEVICE ======================= */
typedef struct {
    int n, nrhs, ldb;
    double *dl, *d, *du, *b;
    long ldl, ld, lb;
} Gt;

#define SMALL 4 /* the array length given where a check must reject the sizes first */
#define HUGE_LEN 1000000L

static Gt gt_make(int n, int nrhs, int ldb)
{
    Gt g;
    g.n = n;
    g.nrhs = nrhs;
    g.ldb = ldb;
    g.ld = n > HUGE_LEN ? SMALL : lmax(0, n);
    g.ldl = n > HUGE_LEN ? SMALL : lmax(0, (long)n - 1);
    if (n <= 0 || nrhs <= 0) {
        g.lb = 0;
    } else {
        long need = (long)ldb * (nrhs - 1) + n;
        g.lb = (ldb < n || need > HUGE_LEN || need < 0) ? SMALL : need;
    }
    g.dl = dnew(g.ldl);
    g.d = dnew(g.ld);
    g.du = dnew(g.ldl);
    g.b = dnew(g.lb);
    dfill(g.dl, g.ldl);
    dfill(g.du, g.ldl);
    dfill(g.b, g.lb);
    for (long i = 0; i < g.ld; i++) {
        g.d[i] = 4.0 + runif();
    }
    return g;
}

static Gt gt_clone(const Gt *g)
{
    Gt c = *g;
    c.dl = ddup(g->dl, g->ldl);
    c.d = ddup(g->d, g->ld);
    c.du = ddup(g->du, g->ldl);
    c.b = ddup(g->b, g->lb);
    return c;
}

static void gt_free(Gt *g)
{
    free(g->dl);
    free(g->d);
    free(g->du);
    free(g->b);
}

static const char *gt_names[] = {"DGTSV_SPIKE", "SGTSV_SPIKE", "DGTSV_SPIKE",
                                 "SGTSV_SPIKE", "DGTSV_SPIKE_DEVICE", "SGTSV_SPIKE_DEVICE"};
static const char *gt_fn[] = {"dgtsv_spike", "sgtsv_spike", "dgtsv_spike_",
                              "sgtsv_spike_", "dgtsv_spike_device", "sgtsv_spike_device"};

/* Variants: 0 dgtsv_spike, 1 sgtsv_spike, 2 dgtsv_spike_, 3 sgtsv_spike_,
 * 4 dgtsv_spike_device, 5 sgtsv_spike_device. `misalign` (3..6): that array is passed one
 * byte off (device names only). */
static Res gt_call(int v, Gt *g, int misalign)
{
    int info = 12345;
    xreset();
    if (v % 2 == 0) {
        double *p[4] = {g->dl, g->d, g->du, g->b};
        if (misalign >= 3 && p[misalign - 3]) {
            p[misalign - 3] = (double *)(void *)((char *)p[misalign - 3] + 1);
        }
        if (v == 0) {
            info = dgtsv_spike(g->n, g->nrhs, p[0], p[1], p[2], p[3], g->ldb);
        } else if (v == 2) {
            dgtsv_spike_(&g->n, &g->nrhs, p[0], p[1], p[2], p[3], &g->ldb, &info);
        } else {
            info = dgtsv_spike_device(g->n, g->nrhs, p[0], p[1], p[2], p[3], g->ldb, NULL);
        }
        return res_of(info);
    }
    float *dl = fdup(g->dl, g->ldl), *d = fdup(g->d, g->ld), *du = fdup(g->du, g->ldl),
          *b = fdup(g->b, g->lb);
    float *p[4] = {dl, d, du, b};
    if (misalign >= 3 && p[misalign - 3]) {
        p[misalign - 3] = (float *)(void *)((char *)p[misalign - 3] + 1);
    }
    xreset();
    if (v == 1) {
        info = sgtsv_spike(g->n, g->nrhs, p[0], p[1], p[2], p[3], g->ldb);
    } else if (v == 3) {
        sgtsv_spike_(&g->n, &g->nrhs, p[0], p[1], p[2], p[3], &g->ldb, &info);
    } else {
        info = sgtsv_spike_device(g->n, g->nrhs, p[0], p[1], p[2], p[3], g->ldb, NULL);
    }
    Res r = res_of(info);
    fback(g->dl, dl, g->ldl);
    fback(g->d, d, g->ld);
    fback(g->du, du, g->ldl);
    fback(g->b, b, g->lb);
    return r;
}

static Res gt_ref(int sp, Gt *g)
{
    int info = 12345;
    /* LAPACK's xGTSV back-substitutes into B(1:N, 1) even for NRHS = 0 (its loop over the
     * columns tests J < NRHS only after the first column), so it gets a scratch B then: the
     * zero-length B stays hylapack's to keep untouched. */
    double *b = g->b, *scratch = NULL;
    long blen = g->lb;
    if (g->nrhs == 0 && g->n > 0) {
        blen = g->n;
        scratch = dnew(blen);
        memset(scratch, 0, (size_t)blen * sizeof *scratch);
        b = scratch;
    }
    Res r;
    xreset();
    if (!sp) {
        dgtsv_(&g->n, &g->nrhs, g->dl, g->d, g->du, b, &g->ldb, &info);
        r = res_of(info);
    } else {
        float *dl = fdup(g->dl, g->ldl), *d = fdup(g->d, g->ld), *du = fdup(g->du, g->ldl),
              *fb = fdup(b, blen);
        xreset();
        sgtsv_(&g->n, &g->nrhs, dl, d, du, fb, &g->ldb, &info);
        r = res_of(info);
        fback(g->dl, dl, g->ldl);
        fback(g->d, d, g->ld);
        fback(g->du, du, g->ldl);
        fback(b, fb, blen);
    }
    free(scratch);
    return r;
}

/* Runs variant v on a copy of g and, for host names, LAPACK on another copy; compares INFO
 * (and B where hylapack documents it: INFO > 0 leaves B as DGTSV leaves it). `null_arg`:
 * an array set to NULL (3..6), which LAPACK cannot take: then -null_arg is expected. */
static void gt_case(int v, const Gt *g, int null_arg, int misalign, int expect_i)
{
    Gt h = gt_clone(g);
    double **arr[4] = {&h.dl, &h.d, &h.du, &h.b};
    if (null_arg) {
        free(*arr[null_arg - 3]);
        *arr[null_arg - 3] = NULL;
    }
    Res r = gt_call(v, &h, misalign);
    if (expect_i) {
        expect_illegal(r, gt_names[v], expect_i);
    } else if (v >= 4) {
        /* host pointers: the argument checks pass, then no GPU (or not device memory) */
        if (!gpu_present) {
            int want = g->n == 0 ? 0 : HYLAPACK_INFO_NO_GPU;
            check(r.info == want, "INFO = %d, expected %d (no GPU)", r.info, want);
            check(r.xcalls == 0, "xerbla_ called (%s, %d)", r.xname, r.xarg);
            for (long i = 0; i < g->lb; i++) {
                if (!same_val(h.b[i], v % 2 ? (double)(float)g->b[i] : g->b[i])) {
                    check(0, "B(%ld) changed although INFO = %d", i + 1, r.info);
                    break;
                }
            }
        } else {
            check(r.info == 0 || (r.info <= -3 && r.info >= -6),
                  "INFO = %d for host pointers on a GPU host", r.info);
        }
    } else {
        Gt l = gt_clone(g);
        Res ref = gt_ref(v % 2, &l);
        expect_as_ref(r, ref, gt_names[v], NULL);
        if (ref.info > 0 && r.info == ref.info) {
            for (long i = 0; i < g->lb; i++) {
                if (!same_val(h.b[i], l.b[i])) {
                    check(0, "INFO = %d: B(%ld) = %g, DGTSV leaves %g", r.info, i + 1, h.b[i],
                          l.b[i]);
                    break;
                }
            }
        }
        gt_free(&l);
    }
    gt_free(&h);
}

static void gt_illegal_vs_ref(int v, int n, int nrhs, int ldb, const char *what)
{
    WATCH("%s %s (n=%d nrhs=%d ldb=%d)", gt_fn[v], what, n, nrhs, ldb);
    Gt g = gt_make(n, nrhs, ldb);
    Res r = gt_call(v, &g, 0);
    if (v < 4) {
        Gt l = gt_make(n, nrhs, ldb);
        Res ref = gt_ref(v % 2, &l);
        check(ref.info < 0, "LAPACK accepted the case (INFO = %d)", ref.info);
        expect_as_ref(r, ref, gt_names[v], NULL);
        gt_free(&l);
    } else {
        int i = n < 0 ? 1 : nrhs < 0 ? 2 : 7;
        expect_illegal(r, gt_names[v], i);
    }
    gt_free(&g);
}

static void gtsv_all(void)
{
    for (int v = 0; v < 6; v++) {
        /* 1. illegal arguments, one at a time and in pairs (LAPACK's order) */
        gt_illegal_vs_ref(v, -1, 1, 1, "N<0");
        gt_illegal_vs_ref(v, INT_MIN, 1, 1, "N=INT_MIN");
        gt_illegal_vs_ref(v, 5, -1, 5, "NRHS<0");
        gt_illegal_vs_ref(v, 5, INT_MIN, 5, "NRHS=INT_MIN");
        gt_illegal_vs_ref(v, 5, 2, 4, "LDB<N");
        gt_illegal_vs_ref(v, 0, 1, 0, "LDB=0,N=0");
        gt_illegal_vs_ref(v, -1, -1, 0, "N,NRHS,LDB all illegal");
        gt_illegal_vs_ref(v, 5, -1, 0, "NRHS,LDB illegal");
        for (int a = 3; a <= 6; a++) {
            WATCH("%s array %d NULL", gt_fn[v], a);
            Gt g = gt_make(5, 2, 5);
            gt_case(v, &g, a, 0, a);
            gt_free(&g);
            if (v >= 4) {
                WATCH("%s array %d misaligned", gt_fn[v], a);
                g = gt_make(5, 2, 5);
                gt_case(v, &g, 0, a, a);
                gt_free(&g);
            }
        }
        /* NULL arrays that are not referenced (N = 1: no DL/DU; NRHS = 0: no B) */
        WATCH("%s n=1 DL,DU NULL", gt_fn[v]);
        Gt g = gt_make(1, 1, 1);
        free(g.dl);
        free(g.du);
        g.dl = g.du = NULL;
        g.ldl = 0;
        gt_case(v, &g, 0, 0, 0);
        gt_free(&g);

        /* 2. zero sizes: zero-length arrays (malloc(0)) and NULL ones */
        WATCH("%s N=0", gt_fn[v]);
        g = gt_make(0, 3, 1);
        gt_case(v, &g, 0, 0, 0);
        gt_free(&g);
        WATCH("%s N=0, all NULL", gt_fn[v]);
        g = gt_make(0, 3, 1);
        gt_free(&g);
        g.dl = g.d = g.du = g.b = NULL;
        gt_case(v, &g, 0, 0, 0);
        WATCH("%s NRHS=0", gt_fn[v]);
        g = gt_make(5, 0, 5);
        gt_case(v, &g, 0, 0, 0);
        gt_free(&g);
        WATCH("%s NRHS=0 singular", gt_fn[v]);
        g = gt_make(5, 0, 5);
        for (int i = 0; i < 5; i++) {
            g.d[i] = 0.0;
        }
        g.dl[1] = g.du[1] = 0.0;
        gt_case(v, &g, 0, 0, 0);
        gt_free(&g);

        /* 3. INT_MAX sizes */
        gt_illegal_vs_ref(v, INT_MAX, 1, 5, "N=INT_MAX, LDB=5");
        gt_illegal_vs_ref(v, INT_MAX, INT_MAX, 5, "N=NRHS=INT_MAX, LDB=5");
        WATCH("%s LDB=INT_MAX NRHS=1", gt_fn[v]);
        g = gt_make(4, 1, INT_MAX);
        gt_case(v, &g, 0, 0, 0);
        gt_free(&g);
        WATCH("%s N=0 NRHS=INT_MAX", gt_fn[v]);
        g = gt_make(0, INT_MAX, 1);
        gt_case(v, &g, 0, 0, 0);
        gt_free(&g);

        /* 4. special values, each entry of each array in turn */
        if (v >= 4) {
            continue;
        }
        for (int s = 0; s < NSPECIAL; s++) {
            for (int a = 0; a < 4; a++) {
                long len = a == 1 ? 5 : a == 3 ? 10 : 4;
                for (long i = 0; i < len; i++) {
                    WATCH("%s %s in array %d entry %ld", gt_fn[v], special_names[s], a + 3,
                          i + 1);
                    g = gt_make(5, 2, 5);
                    double *arr[4] = {g.dl, g.d, g.du, g.b};
                    arr[a][i] = specials[s];
                    gt_case(v, &g, 0, 0, 0);
                    gt_free(&g);
                }
            }
        }
        /* a singular matrix (INFO > 0 with DGTSV's meaning) */
        WATCH("%s singular", gt_fn[v]);
        g = gt_make(5, 2, 5);
        g.d[2] = g.dl[1] = g.du[2] = g.dl[2] = 0.0;
        g.d[0] = g.du[0] = 0.0;
        gt_case(v, &g, 0, 0, 0);
        gt_free(&g);
    }
}

/* ============================ xGTSV_SPIKE_STRIDED_BATCH ============================ */
typedef struct {
    int n, nrhs, sa, ldb, sb, count;
    double *dl, *d, *du, *b;
    int *info;
    long la, lb, li;
} Bt;

static Bt bt_make(int n, int nrhs, int sa, int ldb, int sb, int count)
{
    Bt t;
    t.n = n;
    t.nrhs = nrhs;
    t.sa = sa;
    t.ldb = ldb;
    t.sb = sb;
    t.count = count;
    long c = count > 0 && count < 1000 ? count : 0;
    long na = (n > 0 && c > 0) ? (c - 1) * (long)sa + n : 0;
    long nb = (n > 0 && nrhs > 0 && c > 0) ? (c - 1) * (long)sb + (long)ldb * (nrhs - 1) + n : 0;
    t.la = (na < 0 || na > HUGE_LEN || sa < n) ? SMALL : na;
    t.lb = (nb < 0 || nb > HUGE_LEN || ldb < n) ? SMALL : nb;
    t.li = count > 0 && count < 1000 ? count : SMALL;
    t.dl = dnew(t.la);
    t.d = dnew(t.la);
    t.du = dnew(t.la);
    t.b = dnew(t.lb);
    t.info = malloc((size_t)t.li * sizeof(int));
    dfill(t.dl, t.la);
    dfill(t.du, t.la);
    dfill(t.b, t.lb);
    for (long i = 0; i < t.la; i++) {
        t.d[i] = 4.0 + runif();
    }
    for (long i = 0; i < t.li; i++) {
        t.info[i] = -77;
    }
    return t;
}

static void bt_free(Bt *t)
{
    free(t->dl);
    free(t->d);
    free(t->du);
    free(t->b);
    free(t->info);
}

/* Variants: 0 dgtsv_spike_strided_batch, 1 sgtsv_spike_strided_batch, 2 and 3 their _device
 * forms (given host memory). `misalign` (3..6): that array is passed one byte off. */
static Res bt_call_v(int v, Bt *t, int misalign)
{
    int info;
    void *stream = NULL;
    xreset();
    if (v % 2 == 0) {
        double *p[4] = {t->dl, t->d, t->du, t->b};
        if (misalign >= 3 && p[misalign - 3]) {
            p[misalign - 3] = (double *)(void *)((char *)p[misalign - 3] + 1);
        }
        if (v == 0) {
            info = dgtsv_spike_strided_batch(t->n, t->nrhs, p[0], p[1], p[2], t->sa, p[3],
                                             t->ldb, t->sb, t->count, t->info);
        } else {
            info = dgtsv_spike_strided_batch_device(t->n, t->nrhs, p[0], p[1], p[2], t->sa,
                                                    p[3], t->ldb, t->sb, t->count, t->info,
                                                    stream);
        }
        return res_of(info);
    }
    float *dl = fdup(t->dl, t->la), *d = fdup(t->d, t->la), *du = fdup(t->du, t->la),
          *b = fdup(t->b, t->lb);
    float *p[4] = {dl, d, du, b};
    if (misalign >= 3 && p[misalign - 3]) {
        p[misalign - 3] = (float *)(void *)((char *)p[misalign - 3] + 1);
    }
    xreset();
    if (v == 1) {
        info = sgtsv_spike_strided_batch(t->n, t->nrhs, p[0], p[1], p[2], t->sa, p[3], t->ldb,
                                         t->sb, t->count, t->info);
    } else {
        info = sgtsv_spike_strided_batch_device(t->n, t->nrhs, p[0], p[1], p[2], t->sa, p[3],
                                                t->ldb, t->sb, t->count, t->info, stream);
    }
    Res r = res_of(info);
    fback(t->dl, dl, t->la);
    fback(t->d, d, t->la);
    fback(t->du, du, t->la);
    fback(t->b, b, t->lb);
    return r;
}

static Res bt_call(int sp, Bt *t) { return bt_call_v(sp, t, 0); }

static const char *bt_names[] = {"DGTSV_SPIKE_STRIDED_BATCH", "SGTSV_SPIKE_STRIDED_BATCH",
                                 "DGTSV_SPIKE_STRIDED_BATCH_DEVICE",
                                 "SGTSV_SPIKE_STRIDED_BATCH_DEVICE"};

static void bt_illegal_v(int v, Bt *t, int misalign, int i, const char *what)
{
    WATCH("%s %s", bt_names[v], what);
    Res r = bt_call_v(v, t, misalign);
    expect_illegal(r, bt_names[v], i);
    bt_free(t);
}

static void bt_illegal(int v, Bt *t, int i, const char *what) { bt_illegal_v(v, t, 0, i, what); }

/* A legal call of a _device form on host memory: without a GPU, HYLAPACK_INFO_NO_GPU with B
 * untouched (0 when nothing is to be solved); with one, B refused as not device memory (or
 * solved, where the GPU can address host memory). */
static void bt_device_on_host(int v, Bt *t)
{
    double *b0 = ddup(t->b, t->lb);
    Res r = bt_call_v(v, t, 0);
    int nothing = t->n == 0 || t->count == 0;
    if (nothing || !gpu_present) {
        int want = nothing ? 0 : HYLAPACK_INFO_NO_GPU;
        check(r.info == want, "INFO = %d, expected %d (no GPU)", r.info, want);
        check(r.xcalls == 0, "xerbla_ called (%s, %d)", r.xname, r.xarg);
        for (long i = 0; i < t->lb; i++) {
            if (!same_val(t->b[i], v % 2 ? (double)(float)b0[i] : b0[i])) {
                check(0, "B(%ld) changed although INFO = %d", i + 1, r.info);
                break;
            }
        }
    } else {
        check(r.info >= 0 || (r.info <= -3 && r.info >= -7),
              "INFO = %d for host pointers on a GPU host", r.info);
    }
    free(b0);
}

/* Each system against DGTSV (SGTSV) on its own: info[k], and the count returned. */
static void bt_vs_ref(int sp, Bt *t)
{
    Bt h = *t;
    h.dl = ddup(t->dl, t->la);
    h.d = ddup(t->d, t->la);
    h.du = ddup(t->du, t->la);
    h.b = ddup(t->b, t->lb);
    h.info = malloc((size_t)t->li * sizeof(int));
    memcpy(h.info, t->info, (size_t)t->li * sizeof(int));
    Res r = bt_call(sp, &h);
    int singular = 0;
    for (int k = 0; k < t->count; k++) {
        Gt g;
        g.n = t->n;
        g.nrhs = t->nrhs;
        g.ldb = t->ldb;
        g.ldl = lmax(0, t->n - 1);
        g.ld = t->n;
        g.lb = t->n > 0 && t->nrhs > 0 ? (long)t->ldb * (t->nrhs - 1) + t->n : 0;
        g.dl = ddup(t->dl + (long)k * t->sa, g.ldl);
        g.d = ddup(t->d + (long)k * t->sa, g.ld);
        g.du = ddup(t->du + (long)k * t->sa, g.ldl);
        g.b = ddup(t->b + (long)k * t->sb, g.lb);
        Res ref = gt_ref(sp, &g);
        check(h.info[k] == ref.info, "info[%d] = %d, DGTSV gives %d", k, h.info[k], ref.info);
        singular += ref.info > 0;
        gt_free(&g);
    }
    check(r.info == singular, "returned %d, expected %d singular systems", r.info, singular);
    check(r.xcalls == 0, "xerbla_ called (%s, %d)", r.xname, r.xarg);
    bt_free(&h);
}

static void batch_all(void)
{
    for (int v = 0; v < 4; v++) {
        const int sp = v % 2, device = v >= 2;
        const char *name = bt_names[v];
        Bt t;
        /* 1. illegal arguments in the header's numbering */
        t = bt_make(-1, 1, 5, 5, 5, 2); bt_illegal(v, &t, 1, "N<0");
        t = bt_make(5, -1, 5, 5, 5, 2); bt_illegal(v, &t, 2, "NRHS<0");
        t = bt_make(5, 1, 5, 5, 5, 2); free(t.dl); t.dl = NULL; bt_illegal(v, &t, 3, "DL NULL");
        t = bt_make(5, 1, 5, 5, 5, 2); free(t.d); t.d = NULL; bt_illegal(v, &t, 4, "D NULL");
        t = bt_make(5, 1, 5, 5, 5, 2); free(t.du); t.du = NULL; bt_illegal(v, &t, 5, "DU NULL");
        t = bt_make(5, 1, 4, 5, 5, 2); bt_illegal(v, &t, 6, "STRIDE_A<N");
        t = bt_make(5, 1, 5, 5, 5, 2); free(t.b); t.b = NULL; bt_illegal(v, &t, 7, "B NULL");
        t = bt_make(5, 1, 5, 4, 5, 2); bt_illegal(v, &t, 8, "LDB<N");
        t = bt_make(5, 2, 5, 5, 9, 2); bt_illegal(v, &t, 9, "STRIDE_B<LDB*NRHS");
        t = bt_make(5, 1, 5, 5, 5, -1); bt_illegal(v, &t, 10, "COUNT<0");
        t = bt_make(5, 1, 5, 5, 5, 2); free(t.info); t.info = NULL; bt_illegal(v, &t, 11, "INFO NULL");
        t = bt_make(-1, -1, -1, 0, -1, -1); bt_illegal(v, &t, 1, "all illegal");
        if (device) {
            /* an element address one byte off, refused before the GPU is touched */
            const int arg[4] = {3, 4, 5, 7};
            const char *what[4] = {"DL misaligned", "D misaligned", "DU misaligned",
                                   "B misaligned"};
            for (int a = 0; a < 4; a++) {
                t = bt_make(5, 1, 5, 5, 5, 2);
                bt_illegal_v(v, &t, a + 3, arg[a], what[a]);
            }
            t = bt_make(5, 1, 4, 5, 5, 2);
            bt_illegal_v(v, &t, 3, 3, "DL misaligned before STRIDE_A<N");
        }
        /* 2. zero sizes */
        WATCH("%s COUNT=0 INFO NULL", name);
        t = bt_make(5, 1, 5, 5, 5, 0);
        free(t.info);
        t.info = NULL;
        Res r = bt_call_v(v, &t, 0);
        check(r.info == 0 && r.xcalls == 0, "INFO = %d, xerbla_ calls %d", r.info, r.xcalls);
        bt_free(&t);
        WATCH("%s N=0", name);
        t = bt_make(0, 1, 0, 1, 1, 3);
        device ? bt_device_on_host(v, &t) : bt_vs_ref(sp, &t);
        bt_free(&t);
        WATCH("%s NRHS=0", name);
        t = bt_make(5, 0, 5, 5, 0, 3);
        device ? bt_device_on_host(v, &t) : bt_vs_ref(sp, &t);
        bt_free(&t);
        /* 3. INT_MAX: products that overflow 32 bits must not pass the checks */
        t = bt_make(INT_MAX, 1, 5, 5, 5, 2); bt_illegal(v, &t, 6, "N=INT_MAX STRIDE_A=5");
        t = bt_make(5, 2, 5, INT_MAX, 4, 2); bt_illegal(v, &t, 9, "LDB=INT_MAX NRHS=2 STRIDE_B=4");
        t = bt_make(5, 2, 5, INT_MAX / 2 + 1, INT_MAX, 2);
        bt_illegal(v, &t, 9, "LDB*NRHS=INT_MAX+1 > STRIDE_B=INT_MAX");
        t = bt_make(5, 3, 5, INT_MAX / 2, INT_MAX, 1);
        bt_illegal(v, &t, 9, "LDB*NRHS wraps 32 bits, STRIDE_B=INT_MAX");
        t = bt_make(5, 1, 5, 5, 5, INT_MAX); free(t.info); t.info = NULL;
        bt_illegal(v, &t, 11, "COUNT=INT_MAX INFO NULL");
        WATCH("%s STRIDE_A=STRIDE_B=INT_MAX COUNT=1", name);
        t = bt_make(5, 1, INT_MAX, 5, INT_MAX, 1);
        device ? bt_device_on_host(v, &t) : bt_vs_ref(sp, &t);
        bt_free(&t);
        if (device) {
            WATCH("%s 2 systems of order 5 on host memory", name);
            t = bt_make(5, 2, 5, 5, 10, 2);
            bt_device_on_host(v, &t);
            bt_free(&t);
            continue;
        }
        /* 4. special values in each array entry, 2 systems of order 5 with 2 RHS */
        for (int s = 0; s < NSPECIAL; s++) {
            for (int a = 0; a < 4; a++) {
                long len = a == 3 ? 20 : 10;
                for (long i = 0; i < len; i++) {
                    if (a != 3 && i % 5 == 4 && a != 1) {
                        continue; /* DL/DU entry n of a system: padding, not used */
                    }
                    WATCH("%s %s in array %d entry %ld", name, special_names[s], a + 3, i + 1);
                    t = bt_make(5, 2, 5, 5, 10, 2);
                    double *arr[4] = {t.dl, t.d, t.du, t.b};
                    arr[a][i] = specials[s];
                    bt_vs_ref(sp, &t);
                    bt_free(&t);
                }
            }
        }
    }
}

/* ================================ xSTEBZ_GPU[_] ================================ */
typedef struct {
    char range, order;
    int n, il, iu;
    double vl, vu, abstol;
    double *d, *e;
    long ld, le;
    int null_arg; /* 9..15: that array NULL */
    int m, nsplit;
} St;

static St st_make(char range, char order, int n, double vl, double vu, int il, int iu)
{
    St t;
    t.range = range;
    t.order = order;
    t.n = n;
    t.vl = vl;
    t.vu = vu;
    t.il = il;
    t.iu = iu;
    t.abstol = 0.0;
    t.ld = n > HUGE_LEN ? SMALL : lmax(0, n);
    t.le = n > HUGE_LEN ? SMALL : lmax(0, (long)n - 1);
    t.d = dnew(t.ld);
    t.e = dnew(t.le);
    dfill(t.d, t.ld);
    dfill(t.e, t.le);
    t.null_arg = 0;
    t.m = t.nsplit = -77;
    return t;
}

static void st_free(St *t)
{
    free(t->d);
    free(t->e);
}

static const char *st_names[] = {"DSTEBZ_GPU", "SSTEBZ_GPU", "DSTEBZ_GPU", "SSTEBZ_GPU"};
static const char *st_fn[] = {"dstebz_gpu", "sstebz_gpu", "dstebz_gpu_", "sstebz_gpu_"};

/* v: 0 dstebz_gpu, 1 sstebz_gpu, 2 dstebz_gpu_, 3 sstebz_gpu_, 4 dstebz_, 5 sstebz_. */
static Res st_call(int v, St *t)
{
    long n = t->ld;
    int info = 12345;
    double *w = dnew(n);
    int *ib = malloc((size_t)n * sizeof(int)), *is = malloc((size_t)n * sizeof(int));
    double *work = dnew(4 * n);
    int *iwork = malloc((size_t)(3 * n) * sizeof(int));
    int *pm = &t->m, *pns = &t->nsplit;
    const double *d = t->d, *e = t->e;
    double *pw = w;
    int *pib = ib, *pis = is;
    switch (t->null_arg) {
    case 9: d = NULL; break;
    case 10: e = NULL; break;
    case 11: pm = NULL; break;
    case 12: pns = NULL; break;
    case 13: pw = NULL; break;
    case 14: pib = NULL; break;
    case 15: pis = NULL; break;
    default: break;
    }
    float *fd = fdup(d, t->ld), *fe = fdup(e, t->le);
    float *fw = pw ? malloc((size_t)n * sizeof(float)) : NULL;
    float *fwork = malloc((size_t)(4 * n) * sizeof(float));
    float fvl = (float)t->vl, fvu = (float)t->vu, fab = (float)t->abstol;
    xreset();
    switch (v) {
    case 0:
        info = dstebz_gpu(t->range, t->order, t->n, t->vl, t->vu, t->il, t->iu, t->abstol, d, e,
                          pm, pns, pw, pib, pis);
        break;
    case 1:
        info = sstebz_gpu(t->range, t->order, t->n, fvl, fvu, t->il, t->iu, fab, fd, fe, pm, pns,
                          fw, pib, pis);
        break;
    case 2:
        dstebz_gpu_(&t->range, &t->order, &t->n, &t->vl, &t->vu, &t->il, &t->iu, &t->abstol, d,
                    e, pm, pns, pw, pib, pis, work, iwork, &info, 1, 1);
        break;
    case 3:
        sstebz_gpu_(&t->range, &t->order, &t->n, &fvl, &fvu, &t->il, &t->iu, &fab, fd, fe, pm,
                    pns, fw, pib, pis, fwork, iwork, &info, 1, 1);
        break;
    case 4:
        dstebz_(&t->range, &t->order, &t->n, &t->vl, &t->vu, &t->il, &t->iu, &t->abstol, d, e,
                pm, pns, pw, pib, pis, work, iwork, &info, 1, 1);
        break;
    default:
        sstebz_(&t->range, &t->order, &t->n, &fvl, &fvu, &t->il, &t->iu, &fab, fd, fe, pm, pns,
                fw, pib, pis, fwork, iwork, &info, 1, 1);
        break;
    }
    Res r = res_of(info);
    free(fd);
    free(fe);
    free(fw);
    free(fwork);
    free(w);
    free(ib);
    free(is);
    free(work);
    free(iwork);
    return r;
}

/* hylapack variant v against LAPACK on the same data (no NULL arrays). */
static void st_vs_ref(int v, St *t)
{
    St l = *t;
    Res r = st_call(v, t);
    Res ref = st_call(4 + v % 2, &l);
    /* A deliberate difference, documented in hylapack.h and src/stebz/mod.rs: where a NaN reaches LAPACK's MAX/MIN (a NaN in D or E with N >= 2, a
     * NaN VL or VU with RANGE = 'V'), LAPACK's answer is its compiler's; hylapack returns
     * M = 0 and INFO = 4 for RANGE = 'I' (a proper subset), else 1, NSPLIT as LAPACK's. */
    int nan_in = 0;
    for (long i = 0; t->n >= 2 && i < t->ld; i++) {
        nan_in |= isnan(t->d[i]);
    }
    for (long i = 0; t->n >= 2 && i < t->le; i++) {
        nan_in |= isnan(t->e[i]);
    }
    nan_in |= (t->range == 'V' || t->range == 'v') && (isnan(t->vl) || isnan(t->vu));
    if (nan_in && ref.info >= 0 && t->n <= HUGE_LEN) {
        int all_i = (t->range == 'I' || t->range == 'i') && !(t->il == 1 && t->iu == t->n);
        expect_legal(r);
        check(r.info == (all_i ? 4 : 1), "NaN input: INFO = %d, documented %d", r.info,
              all_i ? 4 : 1);
        check(t->m == 0, "NaN input: M = %d, documented 0", t->m);
        check(t->nsplit == l.nsplit, "NSPLIT = %d, LAPACK gives %d", t->nsplit, l.nsplit);
        return;
    }
    /* Documented in hylapack.h: RANGE = 'I' with IL > 1 on entries so close to the overflow
     * threshold that LAPACK's widened Gerschgorin interval overflows gives M = 0 and INFO = 1,
     * where LAPACK returns INFO = 1 with NaN eigenvalues. */
    double huge = (v % 2 ? FLT_MAX : DBL_MAX) / 2.1;
    int huge_in = 0;
    for (long i = 0; t->n >= 2 && i < t->ld; i++) {
        huge_in |= isfinite(t->d[i]) && fabs(t->d[i]) >= huge;
    }
    for (long i = 0; t->n >= 2 && i < t->le; i++) {
        huge_in |= isfinite(t->e[i]) && fabs(t->e[i]) >= huge;
    }
    if (huge_in && (t->range == 'I' || t->range == 'i') && t->il > 1 && ref.info == 1) {
        expect_legal(r);
        check(r.info == 1, "near overflow: INFO = %d, documented 1", r.info);
        check(t->m == 0, "near overflow: M = %d, documented 0", t->m);
        return;
    }
    expect_as_ref(r, ref, st_names[v], NULL);
    if (r.info >= 0 && ref.info >= 0) {
        check(t->m == l.m, "M = %d, LAPACK gives %d", t->m, l.m);
        check(t->nsplit == l.nsplit, "NSPLIT = %d, LAPACK gives %d", t->nsplit, l.nsplit);
    }
}

static void st_one(int v, char range, char order, int n, double vl, double vu, int il, int iu,
                   const char *what)
{
    WATCH("%s %s (range %c order %c n=%d vl=%g vu=%g il=%d iu=%d)", st_fn[v], what, range,
          order, n, vl, vu, il, iu);
    St t = st_make(range, order, n, vl, vu, il, iu);
    st_vs_ref(v, &t);
    st_free(&t);
}

static void stebz_all(void)
{
    for (int v = 0; v < 4; v++) {
        /* 1. illegal arguments (LAPACK's checks, against DSTEBZ) and NULL arrays */
        st_one(v, 'X', 'E', 5, 0, 0, 1, 5, "RANGE illegal");
        st_one(v, '\0', 'E', 5, 0, 0, 1, 5, "RANGE NUL");
        st_one(v, 'A', 'X', 5, 0, 0, 1, 5, "ORDER illegal");
        st_one(v, 'A', 'E', -1, 0, 0, 1, 5, "N<0");
        st_one(v, 'V', 'E', 5, 1, 1, 1, 5, "VL=VU");
        st_one(v, 'V', 'E', 5, 1, 0, 1, 5, "VL>VU");
        st_one(v, 'I', 'E', 5, 0, 0, 0, 5, "IL=0");
        st_one(v, 'I', 'E', 5, 0, 0, 6, 6, "IL>N");
        st_one(v, 'I', 'B', 5, 0, 0, 3, 2, "IU<IL");
        st_one(v, 'I', 'E', 5, 0, 0, 1, 6, "IU>N");
        st_one(v, 'X', 'X', -1, 0, 0, 0, 0, "RANGE ORDER N illegal");
        st_one(v, 'I', 'E', -1, 0, 0, 0, 9, "N IL IU illegal");
        st_one(v, 'V', 'E', 5, 2, 1, 0, 9, "VL>VU, IL IU unused");
        st_one(v, 'a', 'e', 5, 0, 0, 1, 5, "lower-case RANGE ORDER");
        for (int a = 9; a <= 15; a++) {
            WATCH("%s array %d NULL", st_fn[v], a);
            St t = st_make('A', 'E', 5, 0, 0, 1, 5);
            t.null_arg = a;
            expect_illegal(st_call(v, &t), st_names[v], a);
            st_free(&t);
        }
        /* 2. zero sizes */
        st_one(v, 'A', 'E', 0, 0, 0, 1, 0, "N=0");
        st_one(v, 'V', 'B', 0, -1, 1, 1, 0, "N=0");
        st_one(v, 'I', 'E', 0, 0, 0, 1, 0, "N=0");
        st_one(v, 'A', 'B', 1, 0, 0, 1, 1, "N=1");
        /* 3. INT_MAX with small arrays: a check must reject first */
        st_one(v, 'V', 'E', INT_MAX, 1, 1, 1, 1, "N=INT_MAX");
        st_one(v, 'A', 'X', INT_MAX, 0, 0, 1, 1, "N=INT_MAX");
        st_one(v, 'I', 'E', INT_MAX, 0, 0, 0, 1, "N=INT_MAX");
        st_one(v, 'I', 'E', 5, 0, 0, INT_MAX, INT_MAX, "IL=INT_MAX");
        st_one(v, 'I', 'E', 5, 0, 0, 1, INT_MAX, "IU=INT_MAX");
        st_one(v, 'I', 'E', 5, 0, 0, INT_MIN, 2, "IL=INT_MIN");
        /* 4. special values in D, E, VL, VU, ABSTOL (N = 5) */
        const char ranges[] = {'A', 'V', 'I'};
        for (int s = 0; s < NSPECIAL; s++) {
            for (int r = 0; r < 3; r++) {
                for (int pos = 0; pos < 12; pos++) {
                    if (pos >= 9 && pos <= 10 && ranges[r] != 'V') {
                        continue;
                    }
                    WATCH("%s %s in %s range %c", st_fn[v], special_names[s],
                          pos < 5 ? "D" : pos < 9 ? "E" : pos == 9 ? "VL" : pos == 10 ? "VU"
                                                                               : "ABSTOL",
                          ranges[r]);
                    St t = st_make(ranges[r], r == 1 ? 'B' : 'E', 5, -1.0, 1.0, 2, 4);
                    if (pos < 5) {
                        t.d[pos] = specials[s];
                    } else if (pos < 9) {
                        t.e[pos - 5] = specials[s];
                    } else if (pos == 9) {
                        t.vl = specials[s];
                    } else if (pos == 10) {
                        t.vu = specials[s];
                    } else {
                        t.abstol = specials[s];
                    }
                    st_vs_ref(v, &t);
                    st_free(&t);
                }
            }
        }
    }
}

/* ============================ DSYEV_OOC[_], DSYEVX_OOC[_] ============================ */
typedef struct {
    char jobz, range, uplo;
    int n, lda, il, iu, ldz, lwork;
    double vl, vu, abstol;
    double *a;
    long la;
    int null_arg; /* C numbering of DSYEVX / DSYEV: the array that is NULL */
    int m;
    double *w; /* n entries, kept */
    double work1;
} Sy;

static Sy sy_make(char jobz, char range, char uplo, int n, int lda)
{
    Sy s;
    memset(&s, 0, sizeof s);
    s.jobz = jobz;
    s.range = range;
    s.uplo = uplo;
    s.n = n;
    s.lda = lda;
    s.vl = -1.0;
    s.vu = 1.0;
    s.il = 1;
    s.iu = n;
    s.ldz = 1;
    s.lwork = n > 0 && n < 1000 ? 8 * n : 1;
    long need = n > 0 ? (long)lda * (n - 1) + n : 0;
    s.la = (n > HUGE_LEN || lda < n || need > HUGE_LEN || need < 0) ? SMALL : need;
    s.a = dnew(s.la);
    dfill(s.a, s.la);
    s.w = dnew(n > 0 && n <= HUGE_LEN ? n : SMALL);
    s.m = -77;
    return s;
}

static Sy sy_clone(const Sy *s)
{
    Sy c = *s;
    c.a = ddup(s->a, s->la);
    c.w = ddup(s->w, s->n > 0 && s->n <= HUGE_LEN ? s->n : SMALL);
    return c;
}

static void sy_free(Sy *s)
{
    free(s->a);
    free(s->w);
}

/* v: 0 dsyev_ooc, 1 dsyev_ooc_, 2 dsyev_ (LAPACK), 3 dsyevx_ooc, 4 dsyevx_ooc_, 5 dsyevx_. */
static Res sy_call(int v, Sy *s)
{
    int info = 12345;
    long n = s->n > 0 && s->n <= HUGE_LEN ? s->n : SMALL;
    long lw = s->lwork < 1 || s->lwork > HUGE_LEN ? 1 : s->lwork;
    double *work = dnew(lw);
    int *iwork = malloc((size_t)(5 * n) * sizeof(int)), *ifail = malloc((size_t)n * sizeof(int));
    double *a = s->a, *w = s->w;
    int *pm = &s->m;
    int syevx = v >= 3;
    if (s->null_arg == (syevx ? 5 : 4)) {
        a = NULL;
    }
    if (s->null_arg == (syevx ? 13 : 6)) {
        w = NULL;
    }
    if (syevx && s->null_arg == 12) {
        pm = NULL;
    }
    int wantz = s->jobz == 'V' || s->jobz == 'v';
    long lz = wantz && s->ldz > 0 && s->ldz <= HUGE_LEN ? (long)s->ldz * n : 1;
    double *z = dnew(lz);
    xreset();
    switch (v) {
    case 0: info = dsyev_ooc(s->jobz, s->uplo, s->n, a, s->lda, w); break;
    case 1:
        dsyev_ooc_(&s->jobz, &s->uplo, &s->n, a, &s->lda, w, work, &s->lwork, &info, 1, 1);
        break;
    case 2: dsyev_(&s->jobz, &s->uplo, &s->n, a, &s->lda, w, work, &s->lwork, &info, 1, 1); break;
    case 3:
        info = dsyevx_ooc(s->jobz, s->range, s->uplo, s->n, a, s->lda, s->vl, s->vu, s->il, s->iu,
                          s->abstol, pm, w, wantz ? z : NULL, s->ldz, wantz ? ifail : NULL);
        break;
    case 4:
        dsyevx_ooc_(&s->jobz, &s->range, &s->uplo, &s->n, a, &s->lda, &s->vl, &s->vu, &s->il,
                    &s->iu, &s->abstol, pm, w, z, &s->ldz, work, &s->lwork, iwork, ifail, &info,
                    1, 1, 1);
        break;
    default:
        dsyevx_(&s->jobz, &s->range, &s->uplo, &s->n, a, &s->lda, &s->vl, &s->vu, &s->il, &s->iu,
                &s->abstol, pm, w, z, &s->ldz, work, &s->lwork, iwork, ifail, &info, 1, 1, 1);
        break;
    }
    Res r = res_of(info);
    s->work1 = work[0];
    free(work);
    free(z);
    free(iwork);
    free(ifail);
    return r;
}

static const char *sy_fn[] = {"dsyev_ooc", "dsyev_ooc_", "dsyev_",
                              "dsyevx_ooc", "dsyevx_ooc_", "dsyevx_"};

/* The largest |a(i, j)| of the stored n x n matrix (0 when it is not all there). */
static double sy_norm(const Sy *s)
{
    double m = 0.0;
    if (!s->a || s->n <= 0 || s->lda < s->n || s->la < (long)s->lda * (s->n - 1) + s->n) {
        return 0.0;
    }
    for (long j = 0; j < s->n; j++) {
        for (long i = 0; i < s->n; i++) {
            double x = fabs(s->a[i + j * s->lda]);
            m = isfinite(x) && x > m ? x : m;
        }
    }
    return m;
}

/* Whether an eigenvalue of A (LAPACK's DSYEV, on a copy) lies within `tol` of VL or VU: then
 * which side of the bound it is on depends on rounding below the reduction's backward error,
 * and an M different from LAPACK's is no error. */
static int sy_count_ambiguous(const Sy *s, double tol)
{
    Sy c = sy_clone(s);
    c.jobz = 'N';
    c.lwork = c.n > 0 && c.n < 1000 ? 8 * c.n : 1;
    c.null_arg = 0;
    Res r = sy_call(2, &c);
    int near = r.info != 0;
    for (int i = 0; i < c.n && !near; i++) {
        near = fabs(c.w[i] - s->vl) <= tol || fabs(c.w[i] - s->vu) <= tol;
    }
    sy_free(&c);
    return near;
}

/* hylapack (v = 0, 1, 3, 4) against LAPACK on copies: INFO, M, W (LAPACK's W exactly when A
 * has a NaN or Inf, as documented; else to a tolerance relative to the larger of |A| and the
 * compared eigenvalues: a backward stable answer is that close whatever path computed it, so
 * for A with entries near overflow the small eigenvalues are only known to within it),
 * WORK(1) for queries. */
static void sy_vs_ref(int v, const Sy *s, int nonfinite)
{
    Sy h = sy_clone(s), l = sy_clone(s);
    int ref_v = v < 3 ? 2 : 5;
    const char *name = v < 3 ? "DSYEV_OOC" : "DSYEVX_OOC";
    Res r = sy_call(v, &h);
    Res ref = sy_call(ref_v, &l);
    expect_as_ref(r, ref, name, NULL);
    if (r.info >= 0 && ref.info >= 0) {
        double anorm = sy_norm(s);
        if (v >= 3 && h.m != l.m) {
            int ambiguous = !nonfinite && (s->range == 'V' || s->range == 'v') &&
                            s->lwork != -1 &&
                            sy_count_ambiguous(s, 1e-12 * anorm);
            check(ambiguous, "M = %d, LAPACK gives %d", h.m, l.m);
        }
        if ((v == 1 || v == 4) && s->lwork == -1) {
            check(h.work1 >= l.work1 || (v == 1 && h.work1 == l.work1),
                  "WORK(1) = %g after a query, LAPACK gives %g", h.work1, l.work1);
        }
        int nw = v >= 3 ? (h.m == l.m ? h.m : 0) : s->n;
        double scale = anorm;
        for (int i = 0; i < nw && s->lwork != -1; i++) {
            if (isfinite(l.w[i]) && fabs(l.w[i]) > scale) {
                scale = fabs(l.w[i]);
            }
        }
        for (int i = 0; i < nw && s->lwork != -1 && r.info == 0; i++) {
            int ok = nonfinite ? same_val(h.w[i], l.w[i])
                               : (same_val(h.w[i], l.w[i]) ||
                                  fabs(h.w[i] - l.w[i]) <= 1e-12 * scale + 1e-300);
            if (!ok) {
                check(0, "W(%d) = %.17g, LAPACK gives %.17g", i + 1, h.w[i], l.w[i]);
                break;
            }
        }
    }
    sy_free(&h);
    sy_free(&l);
}

static void sy_one(int v, Sy *s, const char *what)
{
    WATCH("%s %s (jobz %c range %c uplo %c n=%d lda=%d il=%d iu=%d ldz=%d lwork=%d)", sy_fn[v],
          what, s->jobz, s->range, s->uplo, s->n, s->lda, s->il, s->iu, s->ldz, s->lwork);
    sy_vs_ref(v, s, 0);
    sy_free(s);
}

static void sy_illegal(int v, Sy *s, int i, const char *what)
{
    WATCH("%s %s", sy_fn[v], what);
    expect_illegal(sy_call(v, s), v < 3 ? "DSYEV_OOC" : "DSYEVX_OOC", i);
    sy_free(s);
}

/* Special values in each entry of the UPLO triangle of a 5x5 A. */
static void sy_specials(int v, char range, double vl, double vu)
{
    for (int s = 0; s < NSPECIAL; s++) {
        for (int u = 0; u < 2; u++) {
            for (int j = 0; j < 5; j++) {
                for (int i = u ? j : 0; i < (u ? 5 : j + 1); i++) {
                    WATCH("%s %s in A(%d,%d) uplo %c range %c", sy_fn[v], special_names[s],
                          i + 1, j + 1, u ? 'L' : 'U', range);
                    Sy t = sy_make('N', range, u ? 'L' : 'U', 5, 5);
                    t.vl = vl;
                    t.vu = vu;
                    t.il = 2;
                    t.iu = 4;
                    t.a[i + 5 * j] = specials[s];
                    sy_vs_ref(v, &t, !isfinite(specials[s]));
                    sy_free(&t);
                }
            }
        }
    }
}

static void syev_all(void)
{
    for (int v = 0; v < 2; v++) {
        Sy s;
        s = sy_make('X', 'A', 'U', 5, 5); sy_one(v, &s, "JOBZ illegal");
        s = sy_make('V', 'A', 'U', 5, 5); sy_one(v, &s, "JOBZ=V");
        s = sy_make('N', 'A', 'X', 5, 5); sy_one(v, &s, "UPLO illegal");
        s = sy_make('N', 'A', 'U', -1, 1); sy_one(v, &s, "N<0");
        s = sy_make('N', 'A', 'U', 5, 4); sy_one(v, &s, "LDA<N");
        s = sy_make('N', 'A', 'L', 0, 0); sy_one(v, &s, "LDA=0 N=0");
        s = sy_make('X', 'A', 'X', -1, 0); sy_one(v, &s, "all illegal");
        s = sy_make('N', 'A', 'U', 5, 5); s.null_arg = 4; sy_illegal(v, &s, 4, "A NULL");
        s = sy_make('N', 'A', 'U', 5, 5); s.null_arg = 6; sy_illegal(v, &s, 6, "W NULL");
        if (v == 1) {
            s = sy_make('N', 'A', 'U', 5, 5); s.lwork = 13; sy_one(v, &s, "LWORK<3N-1");
            s = sy_make('N', 'A', 'U', 5, 5); s.lwork = 0; sy_one(v, &s, "LWORK=0");
            s = sy_make('N', 'A', 'U', 5, 5); s.lwork = -1; sy_one(v, &s, "LWORK=-1 query");
            s = sy_make('N', 'A', 'U', 0, 1); s.lwork = -1; sy_one(v, &s, "N=0 query");
            s = sy_make('N', 'A', 'U', 5, 5); s.lwork = -2; sy_one(v, &s, "LWORK=-2");
        }
        /* zero sizes */
        s = sy_make('N', 'A', 'U', 0, 1); s.lwork = 1; sy_one(v, &s, "N=0");
        s = sy_make('N', 'A', 'L', 1, 1); s.lwork = 2; sy_one(v, &s, "N=1");
        /* INT_MAX */
        s = sy_make('N', 'A', 'U', INT_MAX, 4); sy_one(v, &s, "N=INT_MAX LDA=4");
        s = sy_make('N', 'A', 'U', 1, INT_MAX); s.lwork = 2; sy_one(v, &s, "N=1 LDA=INT_MAX");
        if (v == 1) {
            WATCH("dsyev_ooc_ LWORK=INT_MAX with a 1-entry WORK (WORK(1) only is used)");
            s = sy_make('N', 'A', 'U', 5, 5);
            s.lwork = INT_MAX;
            expect_legal(sy_call(v, &s));
            sy_free(&s);
        }
        sy_specials(v, 'A', 0, 0);
    }
}

static void syevx_all(void)
{
    for (int v = 3; v < 5; v++) {
        Sy s;
        s = sy_make('X', 'A', 'U', 5, 5); sy_one(v, &s, "JOBZ illegal");
        s = sy_make('V', 'A', 'U', 5, 5); s.ldz = 5; sy_one(v, &s, "JOBZ=V");
        s = sy_make('V', 'A', 'U', 5, 5); s.ldz = 4; sy_one(v, &s, "JOBZ=V LDZ<N");
        s = sy_make('N', 'X', 'U', 5, 5); sy_one(v, &s, "RANGE illegal");
        s = sy_make('N', 'A', 'X', 5, 5); sy_one(v, &s, "UPLO illegal");
        s = sy_make('N', 'A', 'U', -1, 1); sy_one(v, &s, "N<0");
        s = sy_make('N', 'A', 'U', 5, 4); sy_one(v, &s, "LDA<N");
        s = sy_make('N', 'V', 'U', 5, 5); s.vl = 1; s.vu = 1; sy_one(v, &s, "VL=VU");
        s = sy_make('N', 'V', 'U', 5, 5); s.vl = 1; s.vu = -1; sy_one(v, &s, "VL>VU");
        s = sy_make('N', 'I', 'U', 5, 5); s.il = 0; sy_one(v, &s, "IL=0");
        s = sy_make('N', 'I', 'U', 5, 5); s.il = 6; s.iu = 6; sy_one(v, &s, "IL>N");
        s = sy_make('N', 'I', 'U', 5, 5); s.il = 3; s.iu = 2; sy_one(v, &s, "IU<IL");
        s = sy_make('N', 'I', 'U', 5, 5); s.iu = 6; sy_one(v, &s, "IU>N");
        s = sy_make('N', 'A', 'U', 5, 5); s.ldz = 0; sy_one(v, &s, "LDZ=0");
        s = sy_make('X', 'X', 'X', -1, 0); sy_one(v, &s, "all illegal");
        s = sy_make('N', 'I', 'U', 5, 4); s.il = 0; s.ldz = 0; sy_one(v, &s, "LDA IL LDZ illegal");
        s = sy_make('N', 'A', 'U', 5, 5); s.null_arg = 5; sy_illegal(v, &s, 5, "A NULL");
        s = sy_make('N', 'A', 'U', 5, 5); s.null_arg = 12; sy_illegal(v, &s, 12, "M NULL");
        s = sy_make('N', 'A', 'U', 5, 5); s.null_arg = 13; sy_illegal(v, &s, 13, "W NULL");
        if (v == 4) {
            s = sy_make('N', 'A', 'U', 5, 5); s.lwork = 39; sy_one(v, &s, "LWORK<8N");
            s = sy_make('N', 'A', 'U', 5, 5); s.lwork = -1; sy_one(v, &s, "LWORK=-1 query");
        }
        s = sy_make('N', 'A', 'U', 0, 1); sy_one(v, &s, "N=0");
        s = sy_make('N', 'V', 'U', 0, 1); s.vl = 1; s.vu = 1; sy_one(v, &s, "N=0 VL=VU");
        s = sy_make('N', 'I', 'U', 0, 1); s.il = 1; s.iu = 0; sy_one(v, &s, "N=0 range I");
        s = sy_make('N', 'I', 'U', 1, 1); s.il = 1; s.iu = 1; sy_one(v, &s, "N=1 range I");
        s = sy_make('N', 'A', 'U', INT_MAX, 4); sy_one(v, &s, "N=INT_MAX LDA=4");
        s = sy_make('N', 'A', 'U', 1, INT_MAX); sy_one(v, &s, "N=1 LDA=INT_MAX");
        s = sy_make('N', 'A', 'U', 5, 5); s.ldz = INT_MAX; sy_one(v, &s, "LDZ=INT_MAX");
        s = sy_make('N', 'I', 'U', 5, 5); s.il = INT_MAX; s.iu = INT_MAX; sy_one(v, &s, "IL=INT_MAX");
        if (v == 4) {
            WATCH("dsyevx_ooc_ LWORK=INT_MAX with a 1-entry WORK");
            s = sy_make('N', 'A', 'U', 5, 5);
            s.lwork = INT_MAX;
            expect_legal(sy_call(v, &s));
            sy_free(&s);
        }
        sy_specials(v, 'A', 0, 0);
        sy_specials(v, 'V', -0.5, 0.5);
        sy_specials(v, 'I', 0, 0);
        for (int sv = 0; sv < NSPECIAL; sv++) {
            for (int which = 0; which < 3; which++) {
                WATCH("%s %s in %s", sy_fn[v], special_names[sv],
                      which == 0 ? "VL" : which == 1 ? "VU" : "ABSTOL");
                Sy t = sy_make('N', which == 2 ? 'A' : 'V', 'L', 5, 5);
                if (which == 0) {
                    t.vl = specials[sv];
                } else if (which == 1) {
                    t.vu = specials[sv];
                } else {
                    t.abstol = specials[sv];
                }
                sy_vs_ref(v, &t, 0);
                sy_free(&t);
            }
        }
    }
}

/* ================================ xSYRDB_OOC[_] ================================ */
typedef struct {
    char uplo;
    int n, kd, lda, ldab, lwork;
    double *a;
    long la, lab, ltau;
    int null_arg;
    double work1;
} Sb;

static long sb_lwork(int n, int kd)
{
    return n <= kd + 1 ? 1 : (long)n * kd + (long)n * (kd > 32 ? kd : 32) + 2L * kd * kd;
}

static Sb sb_make(char uplo, int n, int kd, int lda, int ldab)
{
    Sb s;
    memset(&s, 0, sizeof s);
    s.uplo = uplo;
    s.n = n;
    s.kd = kd;
    s.lda = lda;
    s.ldab = ldab;
    long need = n > 0 ? (long)lda * (n - 1) + n : 0;
    s.la = (n > HUGE_LEN || lda < n || need > HUGE_LEN || need < 0) ? SMALL : need;
    long nab = n > 0 ? (long)ldab * (n - 1) + kd + 1 : 0;
    s.lab = (n > HUGE_LEN || kd < 0 || ldab <= kd || nab > HUGE_LEN || nab < 0) ? SMALL : nab;
    long nt = (long)n - kd;
    s.ltau = (n > HUGE_LEN || kd < 0 || nt > HUGE_LEN) ? SMALL : lmax(0, nt);
    s.lwork = kd >= 0 && kd < 1000 && n >= 0 && n < 1000 ? (int)sb_lwork(n, kd) : 1;
    s.a = dnew(s.la);
    dfill(s.a, s.la);
    return s;
}

/* v: 0 dsyrdb_ooc, 1 ssyrdb_ooc, 2 dsyrdb_ooc_, 3 ssyrdb_ooc_, 4 dsytrd_sy2sb_,
 * 5 ssytrd_sy2sb_. A is copied, so the caller's stays as made. */
static Res sb_call(int v, Sb *s)
{
    int info = 12345, sp = v % 2;
    long lw = s->lwork < 1 || s->lwork > HUGE_LEN || v < 4 ? 1 : s->lwork;
    double *a = s->null_arg == 4 ? NULL : ddup(s->a, s->la);
    double *ab = s->null_arg == 6 ? NULL : dnew(s->lab);
    double *tau = s->null_arg == 8 ? NULL : dnew(s->ltau);
    double *work = dnew(lw);
    float *fa = fdup(a, s->la), *fab = fdup(ab, s->lab), *ftau = fdup(tau, s->ltau);
    float *fwork = fdup(work, lw);
    xreset();
    switch (v) {
    case 0: info = dsyrdb_ooc(s->uplo, s->n, s->kd, a, s->lda, ab, s->ldab, tau); break;
    case 1: info = ssyrdb_ooc(s->uplo, s->n, s->kd, fa, s->lda, fab, s->ldab, ftau); break;
    case 2:
        dsyrdb_ooc_(&s->uplo, &s->n, &s->kd, a, &s->lda, ab, &s->ldab, tau, work, &s->lwork,
                    &info, 1);
        break;
    case 3:
        ssyrdb_ooc_(&s->uplo, &s->n, &s->kd, fa, &s->lda, fab, &s->ldab, ftau, fwork, &s->lwork,
                    &info, 1);
        break;
    case 4:
        dsytrd_sy2sb_(&s->uplo, &s->n, &s->kd, a, &s->lda, ab, &s->ldab, tau, work, &s->lwork,
                      &info, 1);
        break;
    default:
        ssytrd_sy2sb_(&s->uplo, &s->n, &s->kd, fa, &s->lda, fab, &s->ldab, ftau, fwork,
                      &s->lwork, &info, 1);
        break;
    }
    Res r = res_of(info);
    s->work1 = sp ? fwork[0] : work[0];
    free(a);
    free(ab);
    free(tau);
    free(work);
    free(fa);
    free(fab);
    free(ftau);
    free(fwork);
    return r;
}

static const char *sb_fn[] = {"dsyrdb_ooc", "ssyrdb_ooc", "dsyrdb_ooc_", "ssyrdb_ooc_"};
static const char *sb_names[] = {"DSYRDB_OOC", "SSYRDB_OOC", "DSYRDB_OOC", "SSYRDB_OOC"};

static void sb_one(int v, Sb *s, const char *what)
{
    WATCH("%s %s (uplo %c n=%d kd=%d lda=%d ldab=%d lwork=%d)", sb_fn[v], what, s->uplo, s->n,
          s->kd, s->lda, s->ldab, s->lwork);
    Sb l = *s;
    Res r = sb_call(v, s);
    Res ref = sb_call(4 + v % 2, &l);
    /* Documented (Reference LAPACK >= 3.12): LWMIN = 1 when N <= KD + 1; an older system
     * LAPACK asks for more, so compare with its answer for a workspace it accepts. */
    int small = s->n >= 0 && s->kd >= 0 && (long)s->n <= (long)s->kd + 1 && s->kd < 1000;
    if (ref.info == -10 && (v < 2 || (small && s->lwork >= 1))) {
        l.lwork = (int)sb_lwork(lmax(s->n, 0) > 0 ? s->n : 0, s->kd) + 4096;
        ref = sb_call(4 + v % 2, &l);
    }
    if (v >= 2 && small && s->lwork == -1) {
        l.work1 = 1.0;
    }
    expect_as_ref(r, ref, sb_names[v], NULL);
    if (v >= 2 && s->lwork == -1 && r.info == 0) {
        check(s->work1 == l.work1, "WORK(1) = %g after a query, LAPACK gives %g", s->work1,
              l.work1);
    }
    free(s->a);
}

/* KD = 0 with N >= 2 is legal in LAPACK (KD >= 0), but xSYTRD_SY2SB's loop `DO I = 1, N-KD, KD`
 * has a zero step: the system LAPACK dies with SIGFPE. hylapack documents it as illegal (INFO =
 * -3 through xerbla_). The call runs in a child process, so a crash fails only this check. */
static void sb_kd0_child(int v)
{
    WATCH("%s KD=0 N=5 (in a child process)", sb_fn[v]);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(watchdog_s);
        Sb s = sb_make('U', 5, 0, 5, 1);
        Res r = sb_call(v, &s);
        _exit(r.info == -3 && r.xcalls == 1 ? 0 : 3);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        check(0, "fork/waitpid failed");
        return;
    }
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the call did not return the documented INFO = -3 (%s %d)",
          WIFSIGNALED(status) ? "killed by signal" : "exit status",
          WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

static void syrdb_all(void)
{
    for (int v = 0; v < 4; v++) {
        Sb s;
        sb_kd0_child(v);
        s = sb_make('X', 6, 2, 6, 3); sb_one(v, &s, "UPLO illegal");
        s = sb_make('U', -1, 2, 1, 3); sb_one(v, &s, "N<0");
        s = sb_make('U', 6, -1, 6, 3); sb_one(v, &s, "KD<0");
        s = sb_make('L', 6, 2, 5, 3); sb_one(v, &s, "LDA<N");
        s = sb_make('L', 6, 2, 6, 2); sb_one(v, &s, "LDAB<KD+1");
        s = sb_make('X', -1, -1, 0, 0); sb_one(v, &s, "all illegal");
        s = sb_make('U', 6, -1, 5, 0); sb_one(v, &s, "KD LDA LDAB illegal");
        const int nulls[] = {4, 6, 8};
        for (int k = 0; k < 3; k++) {
            WATCH("%s array %d NULL", sb_fn[v], nulls[k]);
            s = sb_make('U', 6, 2, 6, 3);
            s.null_arg = nulls[k];
            expect_illegal(sb_call(v, &s), sb_names[v], nulls[k]);
            free(s.a);
        }
        if (v >= 2) {
            s = sb_make('U', 6, 2, 6, 3); s.lwork = 5; sb_one(v, &s, "LWORK too small");
            s = sb_make('U', 6, 2, 6, 3); s.lwork = -1; sb_one(v, &s, "LWORK=-1 query");
            s = sb_make('U', 3, 2, 3, 3); s.lwork = -1; sb_one(v, &s, "N<=KD+1 query");
        }
        s = sb_make('U', 0, 2, 1, 3); sb_one(v, &s, "N=0");
        s = sb_make('L', 0, 0, 1, 1); sb_one(v, &s, "N=0 KD=0");
        s = sb_make('U', 1, 0, 1, 1); sb_one(v, &s, "N=1 KD=0");
        s = sb_make('L', 4, 3, 4, 4); sb_one(v, &s, "KD=N-1");
        s = sb_make('L', 4, 6, 4, 7); sb_one(v, &s, "KD>N");
        s = sb_make('U', INT_MAX, 2, 4, 3); sb_one(v, &s, "N=INT_MAX LDA=4");
        s = sb_make('U', 1, 0, INT_MAX, 1); sb_one(v, &s, "N=1 LDA=INT_MAX");
        s = sb_make('U', 4, INT_MAX, 4, 4); sb_one(v, &s, "KD=INT_MAX LDAB=4");
        s = sb_make('U', 4, INT_MAX - 1, 4, 4); sb_one(v, &s, "KD=INT_MAX-1 LDAB=4");
        if (v >= 2) {
            WATCH("%s LWORK=INT_MAX with a 1-entry WORK", sb_fn[v]);
            s = sb_make('U', 6, 2, 6, 3);
            s.lwork = INT_MAX;
            expect_legal(sb_call(v, &s));
            free(s.a);
        }
        for (int sv = 0; sv < NSPECIAL; sv++) {
            for (int u = 0; u < 2; u++) {
                for (int j = 0; j < 6; j++) {
                    for (int i = u ? j : 0; i < (u ? 6 : j + 1); i++) {
                        WATCH("%s %s in A(%d,%d) uplo %c", sb_fn[v], special_names[sv], i + 1,
                              j + 1, u ? 'L' : 'U');
                        s = sb_make(u ? 'L' : 'U', 6, 2, 6, 3);
                        s.a[i + 6 * j] = specials[sv];
                        Sb l = s;
                        Res r = sb_call(v, &s);
                        Res ref = sb_call(4 + v % 2, &l);
                        expect_as_ref(r, ref, sb_names[v], NULL);
                        free(s.a);
                    }
                }
            }
        }
    }
}

/* ============================ DGEMM_ROUNDED[_], DIGEMM[_] ============================ */
typedef struct {
    char rnd, ta, tb;
    int m, n, k, lda, ldb, ldc;
    double alpha, beta;
    double *a, *b, *c, *a2, *b2, *c2; /* a2, b2, c2: the upper bounds of DIGEMM */
    long la, lb, lc;
    int null_arg, overlap;
} Gm;

static int is_trans(char t) { return t == 'T' || t == 't' || t == 'C' || t == 'c'; }

static long mat_len(int rows, int cols, int ld)
{
    if (rows <= 0 || cols <= 0) {
        return 0;
    }
    long need = (long)ld * (cols - 1) + rows;
    return (ld < rows || rows > HUGE_LEN || cols > HUGE_LEN || need > HUGE_LEN) ? SMALL : need;
}

static Gm gm_make(char ta, char tb, int m, int n, int k, int lda, int ldb, int ldc)
{
    Gm g;
    memset(&g, 0, sizeof g);
    g.rnd = 'U';
    g.ta = ta;
    g.tb = tb;
    g.m = m;
    g.n = n;
    g.k = k;
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = ldc;
    g.alpha = 1.5;
    g.beta = 0.5;
    g.la = is_trans(ta) ? mat_len(k, m, lda) : mat_len(m, k, lda);
    g.lb = is_trans(tb) ? mat_len(n, k, ldb) : mat_len(k, n, ldb);
    g.lc = mat_len(m, n, ldc);
    g.a = dnew(g.la);
    g.b = dnew(g.lb);
    g.c = dnew(g.lc);
    dfill(g.a, g.la);
    dfill(g.b, g.lb);
    dfill(g.c, g.lc);
    g.a2 = ddup(g.a, g.la);
    g.b2 = ddup(g.b, g.lb);
    g.c2 = ddup(g.c, g.lc);
    for (long i = 0; i < g.la; i++) {
        g.a2[i] += 0.25;
    }
    for (long i = 0; i < g.lb; i++) {
        g.b2[i] += 0.25;
    }
    return g;
}

static Gm gm_clone(const Gm *g)
{
    Gm c = *g;
    c.a = ddup(g->a, g->la);
    c.b = ddup(g->b, g->lb);
    c.c = ddup(g->c, g->lc);
    c.a2 = ddup(g->a2, g->la);
    c.b2 = ddup(g->b2, g->lb);
    c.c2 = ddup(g->c2, g->lc);
    return c;
}

static void gm_free(Gm *g)
{
    free(g->a);
    free(g->b);
    free(g->c);
    free(g->a2);
    free(g->b2);
    free(g->c2);
}

/* v: 0 dgemm_rounded, 1 dgemm_rounded_, 2 digemm, 3 digemm_, 4 dgemm_ (on a, b, c). */
static Res gm_call(int v, Gm *g)
{
    int info = 0;
    double *a = g->a, *b = g->b, *c = g->c, *a2 = g->a2, *b2 = g->b2, *c2 = g->c2;
    if (v < 2) {
        if (g->null_arg == 8) a = NULL;
        if (g->null_arg == 10) b = NULL;
        if (g->null_arg == 13) c = NULL;
        if (g->overlap) c = a;
    } else if (v < 4) {
        if (g->null_arg == 6) a = NULL;
        if (g->null_arg == 7) a2 = NULL;
        if (g->null_arg == 9) b = NULL;
        if (g->null_arg == 10) b2 = NULL;
        if (g->null_arg == 12) c = NULL;
        if (g->null_arg == 13) c2 = NULL;
        if (g->overlap == 1) c = a;
        if (g->overlap == 2) c2 = c;
    }
    xreset();
    switch (v) {
    case 0:
        info = dgemm_rounded(g->rnd, g->ta, g->tb, g->m, g->n, g->k, g->alpha, a, g->lda, b,
                             g->ldb, g->beta, c, g->ldc);
        break;
    case 1:
        dgemm_rounded_(&g->rnd, &g->ta, &g->tb, &g->m, &g->n, &g->k, &g->alpha, a, &g->lda, b,
                       &g->ldb, &g->beta, c, &g->ldc, 1, 1, 1);
        info = xcalls ? -xarg : 0;
        break;
    case 2:
        info = digemm(g->ta, g->tb, g->m, g->n, g->k, a, a2, g->lda, b, b2, g->ldb, c, c2,
                      g->ldc);
        break;
    case 3:
        digemm_(&g->ta, &g->tb, &g->m, &g->n, &g->k, a, a2, &g->lda, b, b2, &g->ldb, c, c2,
                &g->ldc, 1, 1);
        info = xcalls ? -xarg : 0;
        break;
    default:
        dgemm_(&g->ta, &g->tb, &g->m, &g->n, &g->k, &g->alpha, a, &g->lda, b, &g->ldb, &g->beta,
               c, &g->ldc, 1, 1);
        info = xcalls ? -xarg : 0;
        break;
    }
    return res_of(info);
}

static const char *gm_fn[] = {"dgemm_rounded", "dgemm_rounded_", "digemm", "digemm_"};
static const char *gm_names[] = {"DGEMM_ROUNDED", "DGEMM_ROUNDED", "DIGEMM", "DIGEMM"};
/* DGEMM's argument number -> hylapack's */
static const int map_rounded[] = {0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
static const int map_digemm[] = {0, 1, 2, 3, 4, 5, 0, 0, 8, 0, 11, 0, 0, 14};

/* Against DGEMM: INFO; for legal calls, the bounds. */
static void gm_vs_ref(int v, const Gm *g)
{
    Gm h = gm_clone(g), l = gm_clone(g);
    Res r = gm_call(v, &h);
    Res ref = gm_call(4, &l);
    expect_as_ref(r, ref, gm_names[v], v < 2 ? map_rounded : map_digemm);
    if (r.info == 0 && v >= 2) {
        for (long i = 0; i < g->lc; i++) {
            if (!(h.c[i] <= h.c2[i])) {
                check(0, "[C](%ld) = [%g, %g] is not an interval", i + 1, h.c[i], h.c2[i]);
                break;
            }
        }
    }
    gm_free(&h);
    gm_free(&l);
}

static void gm_one(int v, Gm *g, const char *what)
{
    WATCH("%s %s (rnd %c ta %c tb %c m=%d n=%d k=%d lda=%d ldb=%d ldc=%d)", gm_fn[v], what,
          g->rnd, g->ta, g->tb, g->m, g->n, g->k, g->lda, g->ldb, g->ldc);
    gm_vs_ref(v, g);
    gm_free(g);
}

static void gm_illegal(int v, Gm *g, int i, const char *what)
{
    WATCH("%s %s", gm_fn[v], what);
    expect_illegal(gm_call(v, g), gm_names[v], i);
    gm_free(g);
}

/* Zero sizes: the quick return writes nothing (C of length 0 comes from malloc(0)); K = 0 or
 * alpha = 0 with beta = 1 leaves C as it is. */
static void gm_zero(int v)
{
    const int dims[][3] = {{0, 5, 5}, {5, 0, 5}, {0, 0, 0}, {5, 5, 0}};
    for (int c = 0; c < 4; c++) {
        WATCH("%s M=%d N=%d K=%d beta=1", gm_fn[v], dims[c][0], dims[c][1], dims[c][2]);
        Gm g = gm_make('N', 'N', dims[c][0], dims[c][1], dims[c][2], 5, 5, 5);
        g.beta = 1.0;
        Gm h = gm_clone(&g);
        Res r = gm_call(v, &h);
        check(r.info == 0 && r.xcalls == 0, "INFO = %d, xerbla_ calls %d", r.info, r.xcalls);
        if (v >= 2 && dims[c][2] == 0) {
            /* documented for DIGEMM: K = 0 gives [C] = [0, 0] */
            for (long i = 0; i < g.lc; i++) {
                if (h.c[i] != 0.0 || h.c2[i] != 0.0) {
                    check(0, "K = 0: [C](%ld) = [%g, %g], documented [0, 0]", i + 1, h.c[i],
                          h.c2[i]);
                    break;
                }
            }
        } else {
            check(h.lc == 0 || memcmp(h.c, g.c, (size_t)g.lc * sizeof(double)) == 0,
                  "C changed by a quick return");
        }
        gm_free(&h);
        gm_free(&g);
    }
    if (v < 2) {
        WATCH("%s alpha=0 beta=0 C=NaN", gm_fn[v]);
        Gm g = gm_make('N', 'N', 5, 5, 5, 5, 5, 5);
        g.alpha = 0.0;
        g.beta = 0.0;
        for (long i = 0; i < g.lc; i++) {
            g.c[i] = NAN;
        }
        g.a[3] = NAN;
        Res r = gm_call(v, &g);
        check(r.info == 0, "INFO = %d", r.info);
        for (long i = 0; i < g.lc; i++) {
            if (g.c[i] != 0.0) {
                check(0, "C(%ld) = %g, documented: beta = 0 sets C to zero", i + 1, g.c[i]);
                break;
            }
        }
        gm_free(&g);
    }
}

static void gm_specials(int v)
{
    /* values into alpha, beta (dgemm_rounded) and each entry of A, B, C; both roundings */
    for (int s = 0; s < NSPECIAL; s++) {
        for (int where = 0; where < 5; where++) {
            if (v >= 2 && where < 2) {
                continue;
            }
            long len = where < 2 ? 1 : 25;
            for (long i = 0; i < len; i++) {
                WATCH("%s %s in %s(%ld)", gm_fn[v], special_names[s],
                      (const char *[]){"alpha", "beta", "A", "B", "C"}[where], i + 1);
                Gm g = gm_make('N', i % 2 ? 'T' : 'N', 5, 5, 5, 5, 5, 5);
                double *p = where == 0   ? &g.alpha
                            : where == 1 ? &g.beta
                            : where == 2 ? &g.a[i]
                            : where == 3 ? &g.b[i]
                                         : &g.c[i];
                double orig = *p;
                *p = specials[s];
                if (v < 2) {
                    Gm up = gm_clone(&g), dn = gm_clone(&g), rn = gm_clone(&g);
                    dn.rnd = 'D';
                    Res ru = gm_call(v, &up), rd = gm_call(v, &dn);
                    gm_call(4, &rn);
                    expect_legal(ru);
                    check(ru.info == 0 && rd.info == 0, "INFO = %d, %d", ru.info, rd.info);
                    for (long j = 0; j < g.lc; j++) {
                        int bad = (!isnan(up.c[j]) && !isnan(dn.c[j]) && !(dn.c[j] <= up.c[j])) ||
                                  (isnan(specials[s]) && isnan(rn.c[j]) != isnan(up.c[j]));
                        if (bad) {
                            check(0, "C(%ld): rounded down %g, up %g, DGEMM %g", j + 1, dn.c[j],
                                  up.c[j], rn.c[j]);
                            break;
                        }
                    }
                    gm_free(&up);
                    gm_free(&dn);
                    gm_free(&rn);
                } else {
                    /* DIGEMM: the value as a lower bound, then as an upper bound */
                    for (int side = 0; side < 2; side++) {
                        Gm h = gm_clone(&g);
                        double *lo = where == 2 ? h.a : where == 3 ? h.b : h.c;
                        double *hi = where == 2 ? h.a2 : where == 3 ? h.b2 : h.c2;
                        (side ? hi : lo)[i] = specials[s];
                        if (where == 4) {
                            hi[i] = lo[i] = specials[s]; /* outputs: garbage on entry */
                        } else if (side == 0) {
                            hi[i] = where == 2 ? g.a2[i] : g.b2[i];
                            lo[i] = specials[s];
                        } else {
                            lo[i] = orig; /* the lower bound as made, finite */
                        }
                        int interval = where == 4 || (!isnan(lo[i]) && !isnan(hi[i]) &&
                                                      lo[i] <= hi[i]);
                        WATCH("%s %s in %s(%ld) as the %s bound", gm_fn[v], special_names[s],
                              (const char *[]){"alpha", "beta", "A", "B", "C"}[where], i + 1,
                              side ? "upper" : "lower");
                        Res r = gm_call(v, &h);
                        if (interval) {
                            expect_legal(r);
                            for (long j = 0; j < g.lc; j++) {
                                if (!(h.c[j] <= h.c2[j])) {
                                    check(0, "[C](%ld) = [%g, %g] is not an interval", j + 1,
                                          h.c[j], h.c2[j]);
                                    break;
                                }
                            }
                        } else {
                            expect_illegal(r, "DIGEMM", where == 2 ? 7 : 10);
                        }
                        gm_free(&h);
                    }
                }
                gm_free(&g);
            }
        }
    }
}

static void gemm_all(void)
{
    for (int v = 0; v < 4; v++) {
        int di = v >= 2; /* DIGEMM numbering: no RND and no ALPHA */
        Gm g;
        if (!di) {
            g = gm_make('N', 'N', 5, 5, 5, 5, 5, 5); g.rnd = 'N'; gm_illegal(v, &g, 1, "RND=N");
            g = gm_make('N', 'N', 5, 5, 5, 5, 5, 5); g.rnd = '\0'; gm_illegal(v, &g, 1, "RND=NUL");
            g = gm_make('N', 'N', 5, 5, 5, 5, 5, 5); g.rnd = 'd'; gm_one(v, &g, "rnd d");
        }
        g = gm_make('X', 'N', 5, 5, 5, 5, 5, 5); gm_one(v, &g, "TRANSA illegal");
        g = gm_make('N', 'X', 5, 5, 5, 5, 5, 5); gm_one(v, &g, "TRANSB illegal");
        g = gm_make('N', 'N', -1, 5, 5, 1, 5, 1); gm_one(v, &g, "M<0");
        g = gm_make('N', 'N', 5, -1, 5, 5, 5, 5); gm_one(v, &g, "N<0");
        g = gm_make('N', 'N', 5, 5, -1, 5, 1, 5); gm_one(v, &g, "K<0");
        g = gm_make('N', 'N', 5, 5, 5, 4, 5, 5); gm_one(v, &g, "LDA<M");
        g = gm_make('T', 'N', 5, 5, 6, 5, 6, 5); gm_one(v, &g, "LDA<K (T)");
        g = gm_make('N', 'N', 5, 5, 5, 5, 4, 5); gm_one(v, &g, "LDB<K");
        g = gm_make('N', 'c', 5, 6, 5, 5, 5, 5); gm_one(v, &g, "LDB<N (C)");
        g = gm_make('N', 'N', 5, 5, 5, 5, 5, 4); gm_one(v, &g, "LDC<M");
        g = gm_make('X', 'X', -1, -1, -1, 0, 0, 0); gm_one(v, &g, "all illegal");
        g = gm_make('N', 'N', 5, -1, 5, 4, 4, 4); gm_one(v, &g, "N LDA LDB LDC illegal");
        g = gm_make('t', 'n', 5, 5, 5, 5, 5, 5); gm_one(v, &g, "lower-case");
        if (!di) {
            g = gm_make('N', 'N', 5, 5, 5, 5, 5, 5); g.null_arg = 8; gm_illegal(v, &g, 8, "A NULL");
            g = gm_make('N', 'N', 5, 5, 5, 5, 5, 5); g.null_arg = 10; gm_illegal(v, &g, 10, "B NULL");
            g = gm_make('N', 'N', 5, 5, 5, 5, 5, 5); g.null_arg = 13; gm_illegal(v, &g, 13, "C NULL");
            g = gm_make('N', 'N', 5, 5, 5, 5, 5, 5); g.overlap = 1; gm_illegal(v, &g, 13, "C = A");
        } else {
            const int nulls[] = {6, 7, 9, 10, 12, 13};
            for (int q = 0; q < 6; q++) {
                g = gm_make('N', 'N', 5, 5, 5, 5, 5, 5);
                g.null_arg = nulls[q];
                gm_illegal(v, &g, nulls[q], "array NULL");
            }
            g = gm_make('N', 'N', 5, 5, 5, 5, 5, 5); g.overlap = 1; gm_illegal(v, &g, 12, "C_inf = A_inf");
            g = gm_make('N', 'N', 5, 5, 5, 5, 5, 5); g.overlap = 2; gm_illegal(v, &g, 13, "C_sup = C_inf");
            g = gm_make('N', 'N', 5, 5, 5, 5, 5, 5); g.a[7] = g.a2[7] + 1; gm_illegal(v, &g, 7, "A_inf > A_sup");
            g = gm_make('N', 'N', 5, 5, 5, 5, 5, 5); g.b2[7] = NAN; gm_illegal(v, &g, 10, "B_sup NaN");
        }
        gm_zero(v);
        /* INT_MAX */
        g = gm_make('N', 'N', INT_MAX, 5, 5, 4, 5, 4); gm_one(v, &g, "M=INT_MAX LDA=4");
        g = gm_make('T', 'N', 5, 5, INT_MAX, 4, 4, 5); gm_one(v, &g, "K=INT_MAX (T) LDA=4");
        g = gm_make('N', 'T', 5, INT_MAX, 5, 5, 4, 5); gm_one(v, &g, "N=INT_MAX (T) LDB=4");
        g = gm_make('N', 'N', 5, 5, INT_MAX, 5, 4, 5); gm_one(v, &g, "K=INT_MAX LDB=4");
        g = gm_make('N', 'N', 3, 1, 1, INT_MAX, INT_MAX, INT_MAX); gm_one(v, &g, "LDA=LDB=LDC=INT_MAX");
        g = gm_make('T', 'N', 1, 1, 3, INT_MAX, INT_MAX, 1); gm_one(v, &g, "LDA=LDB=INT_MAX (T,N)");
        g = gm_make('T', 'T', 1, 2, 1, INT_MAX, INT_MAX, 1); gm_one(v, &g, "LDA=LDB=INT_MAX (T,T)");
        gm_specials(v);
    }
}

/* ================================ DGESV_VERIFIED[_] ================================ */
typedef struct {
    int n, nrhs, lda, ldb, ldx;
    double *a, *b;
    long la, lb, lx;
    int null_arg, overlap;
} Gv;

static Gv gv_make(int n, int nrhs, int lda, int ldb, int ldx)
{
    Gv g;
    memset(&g, 0, sizeof g);
    g.n = n;
    g.nrhs = nrhs;
    g.lda = lda;
    g.ldb = ldb;
    g.ldx = ldx;
    g.la = mat_len(n, n, lda);
    g.lb = mat_len(n, nrhs, ldb);
    g.lx = mat_len(n, nrhs, ldx);
    g.a = dnew(g.la);
    g.b = dnew(g.lb);
    dfill(g.a, g.la);
    dfill(g.b, g.lb);
    for (int i = 0; i < n && g.la > SMALL; i++) {
        g.a[i + (long)lda * i] += 4.0;
    }
    return g;
}

/* v: 0 dgesv_verified, 1 dgesv_verified_, 2 dgesv_ (on copies). x_inf, x_sup: out. */
static Res gv_call(int v, Gv *g, double **xi, double **xs)
{
    int info = 12345;
    double *a = g->null_arg == 3 ? NULL : ddup(g->a, g->la);
    double *b = g->null_arg == 5 ? NULL : ddup(g->b, g->lb);
    double *x1 = g->null_arg == 7 ? NULL : dnew(g->lx);
    double *x2 = g->null_arg == 8 ? NULL : dnew(g->lx);
    double *p1 = g->overlap == 1 ? b : x1, *p2 = g->overlap == 2 ? x1 : x2;
    int *ipiv = malloc((size_t)(g->n > 0 && g->n <= HUGE_LEN ? g->n : SMALL) * sizeof(int));
    xreset();
    if (v == 0) {
        info = dgesv_verified(g->n, g->nrhs, a, g->lda, b, g->ldb, p1, p2, g->ldx);
    } else if (v == 1) {
        dgesv_verified_(&g->n, &g->nrhs, a, &g->lda, b, &g->ldb, p1, p2, &g->ldx, &info);
    } else {
        dgesv_(&g->n, &g->nrhs, a, &g->lda, ipiv, b, &g->ldb, &info);
    }
    Res r = res_of(info);
    free(a);
    free(b);
    free(ipiv);
    if (xi && xs) {
        *xi = x1;
        *xs = x2;
    } else {
        free(x1);
        free(x2);
    }
    return r;
}

static const char *gv_fn[] = {"dgesv_verified", "dgesv_verified_"};
static const int map_gesv[] = {0, 1, 2, 0, 4, 0, 0, 6, 0};

static void gv_one(int v, Gv *g, const char *what)
{
    WATCH("%s %s (n=%d nrhs=%d lda=%d ldb=%d ldx=%d)", gv_fn[v], what, g->n, g->nrhs, g->lda,
          g->ldb, g->ldx);
    double *xi, *xs;
    Res r = gv_call(v, g, &xi, &xs);
    Res ref = gv_call(2, g, NULL, NULL);
    if (ref.info < 0) {
        expect_as_ref(r, ref, "DGESV_VERIFIED", map_gesv);
    } else {
        expect_legal(r);
        check(r.info == 0 || r.info == g->n + 1 || r.info == ref.info,
              "INFO = %d, DGESV gives %d (expected 0, N+1 or DGESV's)", r.info, ref.info);
        for (long i = 0; r.info >= 0 && i < g->lx; i++) {
            if (!(xi[i] <= xs[i])) {
                check(0, "X(%ld) = [%g, %g] is not an interval", i + 1, xi[i], xs[i]);
                break;
            }
        }
    }
    free(xi);
    free(xs);
    free(g->a);
    free(g->b);
}

static void gesvv_all(void)
{
    for (int v = 0; v < 2; v++) {
        Gv g;
        g = gv_make(-1, 1, 1, 1, 1); gv_one(v, &g, "N<0");
        g = gv_make(5, -1, 5, 5, 5); gv_one(v, &g, "NRHS<0");
        g = gv_make(5, 1, 4, 5, 5); gv_one(v, &g, "LDA<N");
        g = gv_make(5, 1, 5, 4, 5); gv_one(v, &g, "LDB<N");
        g = gv_make(-1, -1, 0, 0, 0); gv_one(v, &g, "all illegal");
        g = gv_make(5, 1, 4, 4, 4); gv_one(v, &g, "LDA LDB LDX illegal");
        const int nulls[] = {3, 5, 7, 8};
        for (int q = 0; q < 4; q++) {
            WATCH("%s array %d NULL", gv_fn[v], nulls[q]);
            g = gv_make(5, 2, 5, 5, 5);
            g.null_arg = nulls[q];
            expect_illegal(gv_call(v, &g, NULL, NULL), "DGESV_VERIFIED", nulls[q]);
            free(g.a);
            free(g.b);
        }
        WATCH("%s X_inf = B", gv_fn[v]);
        g = gv_make(5, 2, 5, 5, 5); g.overlap = 1;
        expect_illegal(gv_call(v, &g, NULL, NULL), "DGESV_VERIFIED", 7);
        free(g.a); free(g.b);
        WATCH("%s X_sup = X_inf", gv_fn[v]);
        g = gv_make(5, 2, 5, 5, 5); g.overlap = 2;
        expect_illegal(gv_call(v, &g, NULL, NULL), "DGESV_VERIFIED", 8);
        free(g.a); free(g.b);
        WATCH("%s LDX<N", gv_fn[v]);
        g = gv_make(5, 2, 5, 5, 4);
        expect_illegal(gv_call(v, &g, NULL, NULL), "DGESV_VERIFIED", 9);
        free(g.a); free(g.b);
        g = gv_make(0, 2, 1, 1, 1); gv_one(v, &g, "N=0");
        g = gv_make(5, 0, 5, 5, 5); gv_one(v, &g, "NRHS=0");
        g = gv_make(1, 1, 1, 1, 1); g.a[0] = 0.0; gv_one(v, &g, "N=1 singular");
        g = gv_make(INT_MAX, 1, 4, 4, 4); gv_one(v, &g, "N=INT_MAX LDA=4");
        g = gv_make(1, 1, INT_MAX, INT_MAX, INT_MAX); gv_one(v, &g, "LDA=LDB=LDX=INT_MAX");
        g = gv_make(5, INT_MAX, 5, 4, 5); gv_one(v, &g, "NRHS=INT_MAX LDB=4");
        for (int s = 0; s < NSPECIAL; s++) {
            for (int where = 0; where < 2; where++) {
                for (long i = 0; i < (where ? 10 : 25); i++) {
                    WATCH("%s %s in %s(%ld)", gv_fn[v], special_names[s], where ? "B" : "A",
                          i + 1);
                    g = gv_make(5, 2, 5, 5, 5);
                    (where ? g.b : g.a)[i] = specials[s];
                    if (where == 0 && !isfinite(specials[s])) {
                        /* documented: INFO = N+1, every column [-Inf, +Inf] */
                        double *xi, *xs;
                        Res r = gv_call(v, &g, &xi, &xs);
                        expect_legal(r);
                        check(r.info == 6, "INFO = %d, documented N+1 = 6 for A with %s",
                              r.info, special_names[s]);
                        for (long j = 0; j < g.lx; j++) {
                            if (!(xi[j] == -INFINITY && xs[j] == INFINITY)) {
                                check(0, "X(%ld) = [%g, %g], documented [-Inf, +Inf]", j + 1,
                                      xi[j], xs[j]);
                                break;
                            }
                        }
                        free(xi);
                        free(xs);
                        free(g.a);
                        free(g.b);
                    } else {
                        gv_one(v, &g, "special");
                    }
                }
            }
        }
    }
}

/* ==================================== the fuzzer ==================================== */
static int fz_dim(void)
{
    static const int pool[] = {-1, 0, 1, 2, 3, 5, 5, 7, INT_MIN};
    return pool[rint_below((int)(sizeof pool / sizeof pool[0]))];
}

/* A leading dimension for `rows` x `cols`: often legal, sometimes too small or absurd; never
 * a legal one that would need a huge array. */
static int fz_ld(int rows, int cols)
{
    int r = rows > 0 ? rows : 1;
    switch (rint_below(8)) {
    case 0: return r - 1;
    case 1: return 0;
    case 2: return -1;
    case 3: return cols <= 1 ? INT_MAX : r + 2;
    case 4: return r + 2;
    default: return r;
    }
}

static char fz_char(const char *legal)
{
    static const char bad[] = {'X', '\0', ' ', '?', 'u'};
    if (rint_below(6) == 0) {
        return bad[rint_below(5)];
    }
    char c = legal[rint_below((int)strlen(legal))];
    return rint_below(4) == 0 ? (char)(c - 'A' + 'a') : c;
}

static double fz_val(void)
{
    return rint_below(8) == 0 ? specials[rint_below(NSPECIAL)] : 2.0 * runif();
}

static void fz_poke(double *p, long len)
{
    if (p && len > 0 && rint_below(4) == 0) {
        p[rint_below((int)len)] = specials[rint_below(NSPECIAL)];
    }
}

/* "no crash, no hang, INFO is 0, a documented INFO > 0 (at most maxpos), or -i with one
 * matching xerbla_ call" (also: -1001 where `no_gpu` allows it). */
static void fz_check(Res r, const char *name, const char *alt, int maxpos, int no_gpu)
{
    if (r.info == 0 || (r.info > 0 && r.info <= maxpos) ||
        (no_gpu && r.info == HYLAPACK_INFO_NO_GPU)) {
        check(r.xcalls == 0, "INFO = %d but xerbla_ called (%s, %d)", r.info, r.xname, r.xarg);
        return;
    }
    check(r.info < 0 && r.info > -100, "INFO = %d is not documented", r.info);
    check(r.xcalls == 1 && r.xarg == -r.info &&
              (strcmp(r.xname, name) == 0 || (alt && strcmp(r.xname, alt) == 0)),
          "INFO = %d with xerbla_ called %d time(s), last (%s, %d)", r.info, r.xcalls, r.xname,
          r.xarg);
}

static void fuzz_one(long c)
{
    int fam = rint_below(8);
    switch (fam) {
    case 0: {
        int v = rint_below(6), n = fz_dim(), nrhs = fz_dim();
        Gt g = gt_make(n, nrhs, fz_ld(n, nrhs));
        WATCH("fuzz %ld: %s n=%d nrhs=%d ldb=%d", c, gt_fn[v], n, nrhs, g.ldb);
        fz_poke(g.d, g.ld);
        fz_poke(g.dl, g.ldl);
        fz_poke(g.b, g.lb);
        if (rint_below(15) == 0) {
            free(g.d);
            g.d = NULL;
        }
        Res r = gt_call(v, &g, 0);
        fz_check(r, gt_names[v], NULL, n, v >= 4);
        gt_free(&g);
        break;
    }
    case 1: {
        int sp = rint_below(2), n = fz_dim(), nrhs = fz_dim(), count = fz_dim();
        int ldb = fz_ld(n, nrhs), sa = rint_below(4) ? (n > 0 ? n : 0) + rint_below(3) : fz_dim();
        int sb = rint_below(4) ? (ldb > 0 && nrhs > 0 ? ldb * (nrhs < 8 ? nrhs : 1) : 0) : fz_dim();
        if (ldb == INT_MAX) {
            ldb = n > 0 ? n : 1;
            sb = ldb * (nrhs > 0 && nrhs < 8 ? nrhs : 1);
        }
        Bt t = bt_make(n, nrhs, sa, ldb, sb, count);
        WATCH("fuzz %ld: %s n=%d nrhs=%d sa=%d ldb=%d sb=%d count=%d", c, bt_names[sp], n, nrhs,
              sa, ldb, sb, count);
        fz_poke(t.d, t.la);
        fz_poke(t.b, t.lb);
        Res r = bt_call(sp, &t);
        fz_check(r, bt_names[sp], NULL, count, 0);
        bt_free(&t);
        break;
    }
    case 2: {
        int v = rint_below(4), n = fz_dim();
        St t = st_make(fz_char("AVI"), fz_char("BE"), n, fz_val(), fz_val(), fz_dim(), fz_dim());
        if (t.vl > t.vu && rint_below(2)) {
            double x = t.vl;
            t.vl = t.vu;
            t.vu = x;
        }
        t.abstol = rint_below(3) ? 0.0 : fz_val();
        t.null_arg = rint_below(12) == 0 ? 9 + rint_below(7) : 0;
        fz_poke(t.d, t.ld);
        fz_poke(t.e, t.le);
        WATCH("fuzz %ld: %s range %c order %c n=%d vl=%g vu=%g il=%d iu=%d null=%d", c, st_fn[v],
              t.range, t.order, n, t.vl, t.vu, t.il, t.iu, t.null_arg);
        fz_check(st_call(v, &t), st_names[v], NULL, 4, 0);
        st_free(&t);
        break;
    }
    case 3:
    case 4: {
        int v = fam == 3 ? rint_below(2) : 3 + rint_below(2), n = fz_dim();
        Sy s = sy_make(fz_char("NNNV"), fz_char("AVI"), fz_char("UL"), n, fz_ld(n, n));
        s.vl = fz_val();
        s.vu = fz_val();
        s.il = fz_dim();
        s.iu = fz_dim();
        s.abstol = rint_below(3) ? 0.0 : fz_val();
        s.ldz = rint_below(5) ? 1 : fz_ld(n, 1);
        if ((s.jobz == 'V' || s.jobz == 'v') && s.ldz > HUGE_LEN) {
            /* With vectors a legal LDZ is a promise of LDZ x N entries of Z, which no array
               here can keep at INT_MAX: LAPACK itself would write past it. */
            s.ldz = n > 0 && n <= HUGE_LEN ? n : 1;
        }
        if (rint_below(5) == 0) {
            s.lwork = rint_below(2) ? -1 : fz_dim();
        }
        s.null_arg = rint_below(12) == 0 ? (v < 3 ? 4 + 2 * rint_below(2) : 12 + rint_below(2))
                                         : 0;
        fz_poke(s.a, s.la);
        WATCH("fuzz %ld: %s jobz %c range %c uplo %c n=%d lda=%d il=%d iu=%d ldz=%d lwork=%d",
              c, sy_fn[v], s.jobz, s.range, s.uplo, n, s.lda, s.il, s.iu, s.ldz, s.lwork);
        Res r = sy_call(v, &s);
        fz_check(r, v < 3 ? "DSYEV_OOC" : "DSYEVX_OOC", v < 3 ? NULL : "DSTEBZ",
                 n > 0 ? n + 4 : 4, 0);
        sy_free(&s);
        break;
    }
    case 5: {
        int v = rint_below(4), n = fz_dim(), kd = rint_below(3) ? 1 + rint_below(5) : fz_dim();
        if (kd == 0 && n > 1) {
            kd = 1; /* KD = 0, N > 1 kills the process: checked once in sb_kd0_child */
        }
        int ldab = rint_below(4) ? (kd >= 0 && kd < 100 ? kd + 1 + rint_below(2) : 1) : fz_dim();
        Sb s = sb_make(fz_char("UL"), n, kd, fz_ld(n, n), ldab);
        if (v >= 2 && rint_below(4) == 0) {
            s.lwork = rint_below(2) ? -1 : fz_dim();
        }
        s.null_arg = rint_below(12) == 0 ? 4 + 2 * rint_below(3) : 0;
        fz_poke(s.a, s.la);
        WATCH("fuzz %ld: %s uplo %c n=%d kd=%d lda=%d ldab=%d lwork=%d null=%d", c, sb_fn[v],
              s.uplo, n, kd, s.lda, s.ldab, s.lwork, s.null_arg);
        fz_check(sb_call(v, &s), sb_names[v], NULL, 0, 0);
        free(s.a);
        break;
    }
    case 6: {
        int v = rint_below(4), m = fz_dim(), n = fz_dim(), k = fz_dim();
        char ta = fz_char("NTC"), tb = fz_char("NTC");
        int lda = is_trans(ta) ? fz_ld(k, m) : fz_ld(m, k);
        int ldb = is_trans(tb) ? fz_ld(n, k) : fz_ld(k, n);
        Gm g = gm_make(ta, tb, m, n, k, lda, ldb, fz_ld(m, n));
        g.rnd = fz_char("UD");
        g.alpha = rint_below(5) ? fz_val() : 0.0;
        g.beta = rint_below(4) ? fz_val() : rint_below(2) ? 0.0 : 1.0;
        if (rint_below(12) == 0) {
            g.null_arg = v < 2 ? 8 + rint_below(6) : 6 + rint_below(8);
        }
        if (v >= 2 && rint_below(6) == 0 && g.la > 0) {
            g.a[rint_below((int)g.la)] = rint_below(2) ? NAN : 1e9; /* not an interval */
        }
        fz_poke(g.a, g.la);
        fz_poke(g.b, g.lb);
        fz_poke(g.c, g.lc);
        WATCH("fuzz %ld: %s rnd %c ta %c tb %c m=%d n=%d k=%d lda=%d ldb=%d ldc=%d null=%d", c,
              gm_fn[v], g.rnd, ta, tb, m, n, k, lda, ldb, g.ldc, g.null_arg);
        fz_check(gm_call(v, &g), gm_names[v], NULL, 0, 0);
        gm_free(&g);
        break;
    }
    default: {
        int v = rint_below(2), n = fz_dim(), nrhs = fz_dim();
        Gv g = gv_make(n, nrhs, fz_ld(n, n), fz_ld(n, nrhs), fz_ld(n, nrhs));
        g.null_arg = rint_below(12) == 0 ? (int[]){3, 5, 7, 8}[rint_below(4)] : 0;
        fz_poke(g.a, g.la);
        fz_poke(g.b, g.lb);
        WATCH("fuzz %ld: %s n=%d nrhs=%d lda=%d ldb=%d ldx=%d null=%d", c, gv_fn[v], n, nrhs,
              g.lda, g.ldb, g.ldx, g.null_arg);
        fz_check(gv_call(v, &g, NULL, NULL), "DGESV_VERIFIED", NULL, n > 0 ? n + 1 : 0, 0);
        free(g.a);
        free(g.b);
        break;
    }
    }
}

static void fuzz_all(long cases)
{
    printf("hostile: fuzzing %ld cases\n", cases);
    for (long c = 0; c < cases; c++) {
        fuzz_one(c);
    }
}


int main(void)
{
    const char *s = getenv("HYLAPACK_TEST_SEED");
    unsigned long long seed = s ? strtoull(s, NULL, 10) : (unsigned long long)time(NULL);
    printf("hostile: seed %llu (HYLAPACK_TEST_SEED=%llu repeats this run)\n", seed, seed);
    rng = seed * 2654435761ULL + 1;
    signal(SIGALRM, on_alarm);
    verbose = getenv("HOSTILE_VERBOSE") != NULL;

    WATCH("hylapack_version");
    const char *v = hylapack_version();
    check(v != NULL && strlen(v) > 0 && strlen(v) < 64, "hylapack_version() = %s",
          v ? v : "NULL");
    WATCH("hylapack_gpu_available");
    int g = hylapack_gpu_available();
    check(g == 0 || g == 1, "hylapack_gpu_available() = %d", g);
    check(hylapack_gpu_available() == g, "hylapack_gpu_available() changed");
    gpu_present = g;
    watchdog_s = g ? 120 : 10;

    gtsv_all();
    batch_all();
    stebz_all();
    syev_all();
    syevx_all();
    syrdb_all();
    gemm_all();
    gesvv_all();
    fuzz_all(2000);

    alarm(0);
    printf("hostile: %ld passed, %ld failed\n", passed, failed);
    return failed != 0;
}
