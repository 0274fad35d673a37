/* test_c.c — hylapack's xSTEBZ_GPU, both calling conventions, from C99,
 * against the system LAPACK's xSTEBZ on random symmetric tridiagonal
 * matrices; argument errors (INFO and a user-supplied xerbla_).
 *
 * Seed: from the clock, printed; set HYLAPACK_TEST_SEED to repeat a run.
 * Exit status: 0 when every check passed. */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hylapack.h"

#ifndef HYLAPACK_EXPECTED_VERSION
#define HYLAPACK_EXPECTED_VERSION ""
#endif

/* The system LAPACK (Fortran ABI, hidden CHARACTER lengths last). */
extern void dstebz_(const char *range, const char *order, const int *n, const double *vl,
                    const double *vu, const int *il, const int *iu, const double *abstol,
                    const double *d, const double *e, int *m, int *nsplit, double *w,
                    int *iblock, int *isplit, double *work, int *iwork, int *info,
                    size_t range_len, size_t order_len);
extern void sstebz_(const char *range, const char *order, const int *n, const float *vl,
                    const float *vu, const int *il, const int *iu, const float *abstol,
                    const float *d, const float *e, int *m, int *nsplit, float *w,
                    int *iblock, int *isplit, float *work, int *iwork, int *info,
                    size_t range_len, size_t order_len);

/* ---- a user-defined xerbla_: must take precedence over the library's ---- */
static char xerbla_name[64];
static int xerbla_info;
static int xerbla_calls;

void xerbla_(const char *srname, const int *info, size_t len);
void xerbla_(const char *srname, const int *info, size_t len)
{
    size_t k = len < sizeof xerbla_name - 1 ? len : sizeof xerbla_name - 1;
    memcpy(xerbla_name, srname, k);
    xerbla_name[k] = '\0';
    xerbla_info = *info;
    xerbla_calls++;
}

static void xerbla_reset(void)
{
    xerbla_name[0] = '\0';
    xerbla_info = 0;
    xerbla_calls = 0;
}

/* ---- bookkeeping ---- */
static int failures;
static int checks;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        checks++;                                                              \
        if (!(cond)) {                                                         \
            failures++;                                                        \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);               \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)

/* xorshift64*: the same sequence on every platform for a given seed. */
static unsigned long long rng_state;
static double rng_uniform(void) /* in [-1, 1) */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ULL) >> 11) * 0x1.0p-52 - 1.0;
}

/* Matrix kinds: 0 uniform, 1 uniform with some zero off-diagonals (splits),
 * 2 graded (entries spanning 12 orders of magnitude), 3 1-2-1 Toeplitz. */
static void make_matrix(int kind, int n, double *d, double *e)
{
    int i;
    for (i = 0; i < n; i++) {
        switch (kind) {
        case 0: d[i] = rng_uniform(); if (i + 1 < n) e[i] = rng_uniform(); break;
        case 1:
            d[i] = rng_uniform();
            if (i + 1 < n) e[i] = (i % 7 == 3) ? 0.0 : rng_uniform();
            break;
        case 2:
            d[i] = rng_uniform() * pow(10.0, -12.0 * i / (n > 1 ? n - 1 : 1));
            if (i + 1 < n) e[i] = rng_uniform() * pow(10.0, -12.0 * (i + 0.5) / (n > 1 ? n - 1 : 1));
            break;
        default: d[i] = 2.0; if (i + 1 < n) e[i] = -1.0; break;
        }
    }
}

static double max_abs_t(int n, const double *d, const double *e)
{
    double t = 0.0;
    int i;
    for (i = 0; i < n; i++) {
        if (fabs(d[i]) > t) t = fabs(d[i]);
        if (i + 1 < n && fabs(e[i]) > t) t = fabs(e[i]);
    }
    return t;
}

struct result {
    int info, m, nsplit;
    double *w;
    int *iblock, *isplit;
};

static void result_alloc(struct result *r, int n)
{
    size_t k = (size_t)(n > 0 ? n : 1);
    r->w = calloc(k, sizeof *r->w);
    r->iblock = calloc(k, sizeof *r->iblock);
    r->isplit = calloc(k, sizeof *r->isplit);
    if (!r->w || !r->iblock || !r->isplit) { perror("calloc"); exit(2); }
    r->info = r->m = r->nsplit = -999;
}

static void result_free(struct result *r)
{
    free(r->w); free(r->iblock); free(r->isplit);
}

/* Compares hylapack's outputs with LAPACK's. */
static void compare(const char *what, int n, const struct result *got, const struct result *ref,
                    double tol)
{
    int i, bad = 0;
    CHECK(got->info == ref->info, "%s: INFO %d, LAPACK %d", what, got->info, ref->info);
    CHECK(got->m == ref->m, "%s: M %d, LAPACK %d", what, got->m, ref->m);
    CHECK(got->nsplit == ref->nsplit, "%s: NSPLIT %d, LAPACK %d", what, got->nsplit, ref->nsplit);
    if (got->nsplit == ref->nsplit && got->nsplit >= 0 && got->nsplit <= n) {
        for (i = 0; i < ref->nsplit; i++)
            if (got->isplit[i] != ref->isplit[i]) bad++;
        CHECK(bad == 0, "%s: %d ISPLIT entries differ", what, bad);
    }
    if (got->m == ref->m && got->m >= 0 && got->m <= n) {
        double worst = 0.0;
        int worst_i = -1;
        bad = 0;
        for (i = 0; i < ref->m; i++)
            if (got->iblock[i] != ref->iblock[i]) bad++;
        CHECK(bad == 0, "%s: %d IBLOCK entries differ", what, bad);
        for (i = 0; i < ref->m; i++) {
            double diff = fabs(got->w[i] - ref->w[i]);
            if (!(diff <= worst)) { worst = diff; worst_i = i; } /* NaN counts as worst */
        }
        CHECK(ref->m == 0 || worst <= tol, "%s: |W - W_lapack| = %g at %d > tol %g", what, worst,
              worst_i, tol);
    }
}

static int same_doubles(int n, const double *a, const double *b)
{
    return n <= 0 || memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

/* One double-precision case through the C name, the Fortran name and LAPACK. */
static void run_d(int kind, int n, char range, char order)
{
    double *d = malloc((size_t)(n + 1) * sizeof *d), *e = malloc((size_t)(n + 1) * sizeof *e);
    double *d0 = malloc((size_t)(n + 1) * sizeof *d), *e0 = malloc((size_t)(n + 1) * sizeof *e);
    double *work = malloc((size_t)(4 * n + 1) * sizeof *work);
    int *iwork = malloc((size_t)(3 * n + 1) * sizeof *iwork);
    struct result ref, c, f;
    double vl = 0.0, vu = 0.0, abstol = 0.0, tnorm, tol;
    int il = 1, iu = n;
    char what[96];

    if (!d || !e || !d0 || !e0 || !work || !iwork) { perror("malloc"); exit(2); }
    make_matrix(kind, n, d, e);
    memcpy(d0, d, (size_t)(n + 1) * sizeof *d);
    memcpy(e0, e, (size_t)(n + 1) * sizeof *e);
    tnorm = max_abs_t(n, d, e);
    tol = 4.0 * (n > 1 ? n : 1) * DBL_EPSILON * (tnorm > 0.0 ? tnorm : 1.0);
    if (range == 'I' || range == 'i') {
        il = n >= 4 ? n / 4 + 1 : 1;
        iu = n >= 4 ? (3 * n) / 4 : n;
    } else if (range == 'V' || range == 'v') {
        vl = -0.3137 * tnorm; /* away from the 1-2-1 eigenvalues */
        vu = 0.5171 * tnorm;
    }

    result_alloc(&ref, n); result_alloc(&c, n); result_alloc(&f, n);
    dstebz_(&range, &order, &n, &vl, &vu, &il, &iu, &abstol, d, e, &ref.m, &ref.nsplit, ref.w,
            ref.iblock, ref.isplit, work, iwork, &ref.info, 1, 1);
    c.info = dstebz_gpu(range, order, n, vl, vu, il, iu, abstol, d, e, &c.m, &c.nsplit, c.w,
                        c.iblock, c.isplit);
    dstebz_gpu_(&range, &order, &n, &vl, &vu, &il, &iu, &abstol, d, e, &f.m, &f.nsplit, f.w,
                f.iblock, f.isplit, work, iwork, &f.info, 1, 1);

    sprintf(what, "dstebz_gpu  kind=%d n=%d range=%c order=%c", kind, n, range, order);
    compare(what, n, &c, &ref, tol);
    sprintf(what, "dstebz_gpu_ kind=%d n=%d range=%c order=%c", kind, n, range, order);
    compare(what, n, &f, &ref, tol);
    CHECK(same_doubles(n, d, d0) && same_doubles(n - 1, e, e0),
          "kind=%d n=%d range=%c: D or E was modified", kind, n, range);

    result_free(&ref); result_free(&c); result_free(&f);
    free(d); free(e); free(d0); free(e0); free(work); free(iwork);
}

/* One single-precision case through both names and LAPACK's SSTEBZ. */
static void run_s(int kind, int n, char range, char order)
{
    float *d = malloc((size_t)(n + 1) * sizeof *d), *e = malloc((size_t)(n + 1) * sizeof *e);
    double *dd = malloc((size_t)(n + 1) * sizeof *dd), *de = malloc((size_t)(n + 1) * sizeof *de);
    float *work = malloc((size_t)(4 * n + 1) * sizeof *work);
    int *iwork = malloc((size_t)(3 * n + 1) * sizeof *iwork);
    float *wr = malloc((size_t)(n + 1) * sizeof *wr), *wc = malloc((size_t)(n + 1) * sizeof *wc);
    float *wf = malloc((size_t)(n + 1) * sizeof *wf);
    struct result ref, c, f;
    float vl = 0.0f, vu = 0.0f, abstol = 0.0f;
    double tnorm, tol;
    int il = 1, iu = n, i;
    char what[96];

    if (!d || !e || !dd || !de || !work || !iwork || !wr || !wc || !wf) { perror("malloc"); exit(2); }
    make_matrix(kind, n, dd, de);
    for (i = 0; i < n; i++) { d[i] = (float)dd[i]; e[i] = (float)de[i]; }
    tnorm = 0.0;
    for (i = 0; i < n; i++) {
        if (fabs((double)d[i]) > tnorm) tnorm = fabs((double)d[i]);
        if (i + 1 < n && fabs((double)e[i]) > tnorm) tnorm = fabs((double)e[i]);
    }
    tol = 4.0 * (n > 1 ? n : 1) * FLT_EPSILON * (tnorm > 0.0 ? tnorm : 1.0);
    if (range == 'I' || range == 'i') {
        il = n >= 4 ? n / 4 + 1 : 1;
        iu = n >= 4 ? (3 * n) / 4 : n;
    } else if (range == 'V' || range == 'v') {
        vl = (float)(-0.3137 * tnorm);
        vu = (float)(0.5171 * tnorm);
    }

    result_alloc(&ref, n); result_alloc(&c, n); result_alloc(&f, n);
    sstebz_(&range, &order, &n, &vl, &vu, &il, &iu, &abstol, d, e, &ref.m, &ref.nsplit, wr,
            ref.iblock, ref.isplit, work, iwork, &ref.info, 1, 1);
    c.info = sstebz_gpu(range, order, n, vl, vu, il, iu, abstol, d, e, &c.m, &c.nsplit, wc,
                        c.iblock, c.isplit);
    sstebz_gpu_(&range, &order, &n, &vl, &vu, &il, &iu, &abstol, d, e, &f.m, &f.nsplit, wf,
                f.iblock, f.isplit, work, iwork, &f.info, 1, 1);
    for (i = 0; i < n; i++) { ref.w[i] = wr[i]; c.w[i] = wc[i]; f.w[i] = wf[i]; }

    sprintf(what, "sstebz_gpu  kind=%d n=%d range=%c order=%c", kind, n, range, order);
    compare(what, n, &c, &ref, tol);
    sprintf(what, "sstebz_gpu_ kind=%d n=%d range=%c order=%c", kind, n, range, order);
    compare(what, n, &f, &ref, tol);

    result_free(&ref); result_free(&c); result_free(&f);
    free(d); free(e); free(dd); free(de); free(work); free(iwork); free(wr); free(wc); free(wf);
}

static void check_argument_errors(void)
{
    double d[4] = {1.0, 2.0, 3.0, 4.0}, e[3] = {0.5, 0.5, 0.5}, w[4], work[16];
    int iblock[4], isplit[4], iwork[12], m = 0, nsplit = 0, info;
    int n = -1, il = 1, iu = 1;
    double vl = 0.0, vu = 1.0, abstol = 0.0;
    const char range = 'A', order = 'E';

    /* RANGE = 'X': INFO = -1. */
    xerbla_reset();
    info = dstebz_gpu('X', 'E', 4, 0.0, 1.0, 1, 1, 0.0, d, e, &m, &nsplit, w, iblock, isplit);
    CHECK(info == -1, "dstebz_gpu(RANGE='X'): INFO = %d, expected -1", info);
    CHECK(xerbla_calls >= 1 && xerbla_info == 1,
          "dstebz_gpu(RANGE='X'): xerbla_ calls %d, info %d (expected info 1)", xerbla_calls,
          xerbla_info);

    /* ORDER = 'Q': INFO = -2. */
    info = dstebz_gpu('A', 'Q', 4, 0.0, 1.0, 1, 1, 0.0, d, e, &m, &nsplit, w, iblock, isplit);
    CHECK(info == -2, "dstebz_gpu(ORDER='Q'): INFO = %d, expected -2", info);

    /* N = -1: INFO = -3, reported through the user's xerbla_. */
    xerbla_reset();
    info = dstebz_gpu('A', 'E', -1, 0.0, 1.0, 1, 1, 0.0, d, e, &m, &nsplit, w, iblock, isplit);
    CHECK(info == -3, "dstebz_gpu(N=-1): INFO = %d, expected -3", info);
    CHECK(xerbla_calls == 1, "dstebz_gpu(N=-1): user xerbla_ called %d times, expected 1",
          xerbla_calls);
    CHECK(strncmp(xerbla_name, "DSTEBZ_GPU", 10) == 0,
          "dstebz_gpu(N=-1): xerbla_ got name '%s', expected DSTEBZ_GPU...", xerbla_name);
    CHECK(xerbla_info == 3, "dstebz_gpu(N=-1): xerbla_ got info %d, expected 3", xerbla_info);

    /* The same through the Fortran name. */
    xerbla_reset();
    info = 0;
    dstebz_gpu_(&range, &order, &n, &vl, &vu, &il, &iu, &abstol, d, e, &m, &nsplit, w, iblock,
                isplit, work, iwork, &info, 1, 1);
    CHECK(info == -3, "dstebz_gpu_(N=-1): INFO = %d, expected -3", info);
    CHECK(xerbla_calls == 1 && strncmp(xerbla_name, "DSTEBZ_GPU", 10) == 0 && xerbla_info == 3,
          "dstebz_gpu_(N=-1): xerbla_ calls %d name '%s' info %d", xerbla_calls, xerbla_name,
          xerbla_info);

    /* Single precision. */
    {
        float sd[2] = {1.0f, 2.0f}, se[1] = {0.5f}, sw[2];
        xerbla_reset();
        info = sstebz_gpu('A', 'E', -1, 0.0f, 1.0f, 1, 1, 0.0f, sd, se, &m, &nsplit, sw, iblock,
                          isplit);
        CHECK(info == -3, "sstebz_gpu(N=-1): INFO = %d, expected -3", info);
        CHECK(xerbla_calls == 1 && strncmp(xerbla_name, "SSTEBZ_GPU", 10) == 0 &&
                  xerbla_info == 3,
              "sstebz_gpu(N=-1): xerbla_ calls %d name '%s' info %d", xerbla_calls, xerbla_name,
              xerbla_info);
    }
}

int main(void)
{
    static const int sizes[] = {0, 1, 2, 3, 8, 33, 200};
    static const char ranges[] = {'A', 'I', 'V'};
    static const char orders[] = {'E', 'B'};
    const char *env = getenv("HYLAPACK_TEST_SEED");
    const char *version = hylapack_version();
    unsigned long long seed;
    size_t s, r, o;
    int kind, gpu;

    seed = env && *env ? strtoull(env, NULL, 0) : (unsigned long long)time(NULL);
    printf("test_c: seed %llu (set HYLAPACK_TEST_SEED=%llu to repeat)\n", seed, seed);
    rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;

    CHECK(version != NULL, "hylapack_version() returned NULL");
    if (version) {
        printf("test_c: hylapack_version() = \"%s\"\n", version);
        CHECK(strstr(version, HYLAPACK_EXPECTED_VERSION) != NULL,
              "hylapack_version() = '%s' does not contain the package version '%s'", version,
              HYLAPACK_EXPECTED_VERSION);
    }
    gpu = hylapack_gpu_available();
    printf("test_c: hylapack_gpu_available() = %d\n", gpu);
    CHECK(gpu == 0 || gpu == 1, "hylapack_gpu_available() = %d, expected 0 or 1", gpu);

    for (kind = 0; kind < 4; kind++)
        for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (r = 0; r < sizeof ranges; r++)
                for (o = 0; o < sizeof orders; o++) {
                    run_d(kind, sizes[s], ranges[r], orders[o]);
                    if (kind != 2) /* graded entries underflow in single precision */
                        run_s(kind, sizes[s], ranges[r], orders[o]);
                }

    /* One larger case per precision (bisection costs O(n^2) per call). */
    run_d(0, 1500, 'A', 'B');
    run_s(0, 1500, 'I', 'E');

    check_argument_errors();

    printf("test_c: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
