/* legacy_dsyev.c — a "legacy" program that knows nothing of hylapack, linked
 * against plain LAPACK only, calling the dense symmetric eigenvalue drivers
 * DSYEV, SSYEV, DSYEV_2STAGE, DSYEVD, DSYEVR and DSYEVX (workspace queries
 * first, then JOBZ = 'N'; DSYEV also with JOBZ = 'V'). CTest runs it as is and
 * under LD_PRELOAD=libhylapack_preload.so; both runs must give the right answer.
 *
 * The matrix is tridiag(-1, 2, -1) stored dense (order N given on the command
 * line, default 300), whose eigenvalues are 2 - 2 cos(k pi / (N + 1)). */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                   double *w, double *work, const int *lwork, int *info, size_t, size_t);
extern void ssyev_(const char *jobz, const char *uplo, const int *n, float *a, const int *lda,
                   float *w, float *work, const int *lwork, int *info, size_t, size_t);
extern void dsyev_2stage_(const char *jobz, const char *uplo, const int *n, double *a,
                          const int *lda, double *w, double *work, const int *lwork, int *info,
                          size_t, size_t);
extern void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                    double *w, double *work, const int *lwork, int *iwork, const int *liwork,
                    int *info, size_t, size_t);
extern void dsyevr_(const char *jobz, const char *range, const char *uplo, const int *n,
                    double *a, const int *lda, const double *vl, const double *vu,
                    const int *il, const int *iu, const double *abstol, int *m, double *w,
                    double *z, const int *ldz, int *isuppz, double *work, const int *lwork,
                    int *iwork, const int *liwork, int *info, size_t, size_t, size_t);
extern void dsyevx_(const char *jobz, const char *range, const char *uplo, const int *n,
                    double *a, const int *lda, const double *vl, const double *vu,
                    const int *il, const int *iu, const double *abstol, int *m, double *w,
                    double *z, const int *ldz, double *work, const int *lwork, int *iwork,
                    int *ifail, int *info, size_t, size_t, size_t);

static int failures, checks;
static int n = 300;

static double exact(int k) /* k-th smallest, 1-based */
{
    return 2.0 - 2.0 * cos(k * 3.14159265358979323846 / (n + 1));
}

static void fill(double *a, int lda)
{
    memset(a, 0, sizeof(double) * (size_t)lda * n);
    for (int i = 0; i < n; i++) {
        a[i + (size_t)i * lda] = 2.0;
        if (i + 1 < n) {
            a[i + 1 + (size_t)i * lda] = -1.0;
            a[i + (size_t)(i + 1) * lda] = -1.0;
        }
    }
}

/* w[0..m) must be eigenvalues first..first+m-1 (1-based) within tol. */
static void check(const char *what, int info, int m, int expect_m, const double *w, int first,
                  double tol)
{
    double worst = 0.0;
    checks++;
    if (info != 0 || m != expect_m) {
        fprintf(stderr, "FAIL: %s: info %d, m %d (expected %d)\n", what, info, m, expect_m);
        failures++;
        return;
    }
    for (int k = 0; k < m; k++) worst = fmax(worst, fabs(w[k] - exact(first + k)));
    if (!(worst <= tol)) {
        fprintf(stderr, "FAIL: %s: eigenvalue error %.3g > %.3g\n", what, worst, tol);
        failures++;
    }
}

int main(int argc, char **argv)
{
    if (argc > 1) n = atoi(argv[1]);
    const int lda = n + 2, minus1 = -1;
    const double tol = 64.0 * n * DBL_EPSILON * 4.0;
    double *a = malloc(sizeof(double) * (size_t)lda * n), *w = malloc(sizeof(double) * n);
    double *z = malloc(sizeof(double) * (size_t)n * n);
    float *fa = malloc(sizeof(float) * (size_t)lda * n), *fw = malloc(sizeof(float) * n);
    int *isuppz = malloc(sizeof(int) * 2 * n), *ifail = malloc(sizeof(int) * n);
    double q = 0.0, vl = 0.5, vu = 1.5, abstol = 0.0;
    int info = 0, m = 0, il = 11, iu = 60, iq = 0;
    if (!a || !w || !z || !fa || !fw || !isuppz || !ifail) { perror("malloc"); return 2; }

    /* DSYEV, JOBZ = 'N' and 'V' */
    fill(a, lda);
    dsyev_("N", "U", &n, a, &lda, w, &q, &minus1, &info, 1, 1);
    int lwork = (int)q;
    double *work = malloc(sizeof(double) * (size_t)(lwork > 3 * n ? lwork : 3 * n) * 4);
    if (!work) { perror("malloc"); return 2; }
    dsyev_("N", "U", &n, a, &lda, w, work, &lwork, &info, 1, 1);
    check("dsyev N U", info, n, n, w, 1, tol);
    fill(a, lda);
    lwork = 3 * n * 4;
    dsyev_("V", "L", &n, a, &lda, w, work, &lwork, &info, 1, 1);
    check("dsyev V L", info, n, n, w, 1, tol);

    /* SSYEV */
    for (int j = 0; j < n; j++)
        for (int i = 0; i < lda; i++) fa[i + (size_t)j * lda] = 0.0f;
    fill(a, lda);
    for (size_t k = 0; k < (size_t)lda * n; k++) fa[k] = (float)a[k];
    float fq = 0.0f;
    ssyev_("N", "L", &n, fa, &lda, fw, &fq, &minus1, &info, 1, 1);
    int flwork = (int)fq;
    float *fwork = malloc(sizeof(float) * (size_t)(flwork > 3 * n ? flwork : 3 * n));
    if (!fwork) { perror("malloc"); return 2; }
    ssyev_("N", "L", &n, fa, &lda, fw, fwork, &flwork, &info, 1, 1);
    for (int k = 0; k < n; k++) w[k] = fw[k];
    check("ssyev N L", info, n, n, w, 1, 64.0 * n * FLT_EPSILON * 4.0);

    /* DSYEV_2STAGE */
    fill(a, lda);
    dsyev_2stage_("N", "U", &n, a, &lda, w, &q, &minus1, &info, 1, 1);
    lwork = (int)q;
    free(work);
    work = malloc(sizeof(double) * (size_t)(lwork > 3 * n ? lwork : 3 * n) * 4);
    if (!work) { perror("malloc"); return 2; }
    dsyev_2stage_("N", "U", &n, a, &lda, w, work, &lwork, &info, 1, 1);
    check("dsyev_2stage N U", info, n, n, w, 1, tol);

    /* DSYEVD */
    fill(a, lda);
    dsyevd_("N", "L", &n, a, &lda, w, &q, &minus1, &iq, &minus1, &info, 1, 1);
    lwork = (int)q;
    int liwork = iq;
    int *iwork = malloc(sizeof(int) * (size_t)(liwork > 10 * n ? liwork : 10 * n));
    free(work);
    work = malloc(sizeof(double) * (size_t)(lwork > 26 * n ? lwork : 26 * n));
    if (!work || !iwork) { perror("malloc"); return 2; }
    dsyevd_("N", "L", &n, a, &lda, w, work, &lwork, iwork, &liwork, &info, 1, 1);
    check("dsyevd N L", info, n, n, w, 1, tol);

    /* DSYEVR: RANGE 'A', 'I' (il..iu), 'V' ((vl, vu]) */
    const char *ranges = "AIV";
    for (int r = 0; r < 3; r++) {
        char range[2] = {ranges[r], 0};
        fill(a, lda);
        lwork = 26 * n;
        liwork = 10 * n;
        dsyevr_("N", range, "U", &n, a, &lda, &vl, &vu, &il, &iu, &abstol, &m, w, z, &n, isuppz,
                work, &lwork, iwork, &liwork, &info, 1, 1, 1);
        int first = 1, expect = n;
        if (r == 1) { first = il; expect = iu - il + 1; }
        if (r == 2) {
            first = 1, expect = 0;
            for (int k = 1; k <= n; k++) {
                if (exact(k) <= vl) first = k + 1;
                if (exact(k) > vl && exact(k) <= vu) expect++;
            }
        }
        char what[32];
        snprintf(what, sizeof what, "dsyevr N %c", ranges[r]);
        check(what, info, m, expect, w, first, tol);
    }

    /* DSYEVX, RANGE 'I' */
    fill(a, lda);
    lwork = 8 * n;
    dsyevx_("N", "I", "L", &n, a, &lda, &vl, &vu, &il, &iu, &abstol, &m, w, z, &n, work, &lwork,
            iwork, ifail, &info, 1, 1, 1);
    check("dsyevx N I", info, m, iu - il + 1, w, il, tol);

    printf("legacy_dsyev: %d passed, %d failed\n", checks - failures, failures);
    free(a); free(w); free(z); free(fa); free(fw); free(isuppz); free(ifail);
    free(work); free(fwork); free(iwork);
    return failures != 0;
}
