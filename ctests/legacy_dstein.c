/* legacy_dstein.c — a "legacy" program linked against plain LAPACK only: DSTEBZ
 * (ORDER = 'B') then DSTEIN, each answer checked by its residual and the
 * orthogonality of nearby vectors. CTest runs it as is and under
 * LD_PRELOAD=libhylapack_preload.so, whose log must show that in auto mode the
 * small calls (N < 1000, or N x M < 2^20) are forwarded to LAPACK and the large
 * one runs wherever hylapack's dispatch sends it (its GPU path on a GPU host,
 * forwarded without one).
 *
 * Matrices: tridiag(-1, 2, -1) of order 100, and a matrix of order 2000 split
 * into blocks of 20 rows (random entries), all eigenvalues and ten of them. */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

extern void dstebz_(const char *range, const char *order, const int *n, const double *vl,
                    const double *vu, const int *il, const int *iu, const double *abstol,
                    const double *d, const double *e, int *m, int *nsplit, double *w,
                    int *iblock, int *isplit, double *work, int *iwork, int *info,
                    size_t range_len, size_t order_len);
extern void dstein_(const int *n, const double *d, const double *e, const int *m,
                    const double *w, const int *iblock, const int *isplit, double *z,
                    const int *ldz, double *work, int *iwork, int *ifail, int *info);

static int failures, passes;

static void *alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) { perror("malloc"); exit(2); }
    return p;
}

/* Eigenvalues il..iu (all when il = 0) by DSTEBZ, vectors by DSTEIN, checked. */
static void check(const char *what, int n, const double *d, const double *e, int il, int iu)
{
    double *w = alloc((size_t)n * sizeof *w), *work = alloc((size_t)5 * n * sizeof *work);
    int *iblock = alloc((size_t)n * sizeof *iblock), *isplit = alloc((size_t)n * sizeof *isplit);
    int *iwork = alloc((size_t)3 * n * sizeof *iwork), *ifail = alloc((size_t)n * sizeof *ifail);
    double vl = 0.0, vu = 0.0, abstol = 0.0, tnorm = 0.0, resid = 0.0, orth = 0.0, *z;
    int m = 0, nsplit = 0, info = 0, i, j, k;
    const char *range = il > 0 ? "I" : "A";

    dstebz_(range, "B", &n, &vl, &vu, &il, &iu, &abstol, d, e, &m, &nsplit, w, iblock, isplit,
            work, iwork, &info, 1, 1);
    if (info != 0 || m < 1) {
        fprintf(stderr, "FAIL: %s: dstebz info %d m %d\n", what, info, m);
        failures++;
        return;
    }
    z = alloc((size_t)n * m * sizeof *z);
    dstein_(&n, d, e, &m, w, iblock, isplit, z, &n, work, iwork, ifail, &info);
    for (i = 0; i < n; i++) {
        double r = fabs(d[i]) + (i > 0 ? fabs(e[i - 1]) : 0.0) + (i + 1 < n ? fabs(e[i]) : 0.0);
        if (r > tnorm) tnorm = r;
    }
    for (j = 0; j < m; j++) {
        const double *x = z + (size_t)j * n;
        for (i = 0; i < n; i++) {
            double t = (d[i] - w[j]) * x[i];
            if (i > 0) t += e[i - 1] * x[i - 1];
            if (i + 1 < n) t += e[i] * x[i + 1];
            if (fabs(t) > resid) resid = fabs(t);
        }
        /* Neighbouring vectors (those of close eigenvalues) and the vector's own norm. */
        for (k = j; k < m && k <= j + 3; k++) {
            double dot = 0.0;
            for (i = 0; i < n; i++) dot += x[i] * z[(size_t)k * n + i];
            if (k == j) dot -= 1.0;
            if (fabs(dot) > orth) orth = fabs(dot);
        }
    }
    resid /= tnorm * n * DBL_EPSILON;
    orth /= n * DBL_EPSILON;
    if (info != 0 || !(resid < 50.0) || !(orth < 50.0)) {
        fprintf(stderr, "FAIL: %s: dstein info %d, residual %g, orthogonality %g (n eps)\n", what,
                info, resid, orth);
        failures++;
    } else {
        passes++;
    }
    free(w); free(work); free(iblock); free(isplit); free(iwork); free(ifail); free(z);
}

int main(void)
{
    int n = 100, i;
    double *d = alloc(2000 * sizeof *d), *e = alloc(2000 * sizeof *e);
    unsigned long long state = 20261126ULL;

    for (i = 0; i < n; i++) { d[i] = 2.0; e[i] = -1.0; }
    check("tridiag(-1,2,-1) n=100", n, d, e, 0, 0);

    n = 2000;
    for (i = 0; i < n; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        d[i] = (double)(state >> 11) / 9007199254740992.0 - 0.5;
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        e[i] = (i + 1) % 20 == 0 ? 0.0 : (double)(state >> 11) / 9007199254740992.0 - 0.5;
    }
    check("split n=2000, ten eigenvalues", n, d, e, 995, 1004);
    check("split n=2000, all eigenvalues", n, d, e, 0, 0);

    printf("legacy_dstein: %d passed, %d failed\n", passes, failures);
    free(d); free(e);
    return failures == 0 ? 0 : 1;
}
