/* legacy_dstebz.c — a "legacy" program: it knows nothing of hylapack and is
 * linked against plain LAPACK only. CTest runs it as is and under
 * LD_PRELOAD=libhylapack_preload.so; both runs must give the right answer.
 *
 * It checks DSTEBZ on the n x n matrix tridiag(-1, 2, -1), whose eigenvalues
 * are 2 - 2 cos(k pi / (n + 1)), k = 1..n, and on a split matrix. */
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

static int failures;

static void toeplitz(int n)
{
    const double pi = 3.14159265358979323846;
    double *d = malloc((size_t)n * sizeof *d), *e = malloc((size_t)n * sizeof *e);
    double *w = malloc((size_t)n * sizeof *w), *work = malloc((size_t)4 * n * sizeof *work);
    int *iblock = malloc((size_t)n * sizeof *iblock), *isplit = malloc((size_t)n * sizeof *isplit);
    int *iwork = malloc((size_t)3 * n * sizeof *iwork);
    double vl = 0.0, vu = 0.0, abstol = 0.0, worst = 0.0;
    int il = 0, iu = 0, m = 0, nsplit = 0, info = 0, k;

    if (!d || !e || !w || !work || !iblock || !isplit || !iwork) { perror("malloc"); exit(2); }
    for (k = 0; k < n; k++) { d[k] = 2.0; e[k] = -1.0; }
    dstebz_("A", "E", &n, &vl, &vu, &il, &iu, &abstol, d, e, &m, &nsplit, w, iblock, isplit,
            work, iwork, &info, 1, 1);
    if (info != 0 || m != n || nsplit != 1) {
        fprintf(stderr, "FAIL: n=%d: info %d m %d nsplit %d\n", n, info, m, nsplit);
        failures++;
    } else {
        for (k = 0; k < n; k++) {
            double exact = 2.0 - 2.0 * cos((k + 1) * pi / (n + 1));
            double diff = fabs(w[k] - exact);
            if (!(diff <= worst)) worst = diff;
        }
        if (!(worst <= 8.0 * n * DBL_EPSILON * 4.0)) {
            fprintf(stderr, "FAIL: n=%d: eigenvalue error %g\n", n, worst);
            failures++;
        }
    }
    free(d); free(e); free(w); free(work); free(iblock); free(isplit); free(iwork);
}

static void split(void)
{
    /* Blocks [[3,1],[1,1]] and [5]: eigenvalues 2 - sqrt(2), 2 + sqrt(2) and 5. */
    double d[3] = {3.0, 1.0, 5.0}, e[2] = {1.0, 0.0}, w[3], work[12];
    int iblock[3], isplit[3], iwork[9], n = 3, il = 0, iu = 0, m = 0, nsplit = 0, info = 0;
    double vl = 0.0, vu = 0.0, abstol = 0.0;
    dstebz_("A", "B", &n, &vl, &vu, &il, &iu, &abstol, d, e, &m, &nsplit, w, iblock, isplit,
            work, iwork, &info, 1, 1);
    if (info != 0 || m != 3 || nsplit != 2 || isplit[0] != 2 || isplit[1] != 3 ||
        iblock[0] != 1 || iblock[1] != 1 || iblock[2] != 2 ||
        fabs(w[0] - (2.0 - sqrt(2.0))) > 1e-14 || fabs(w[1] - (2.0 + sqrt(2.0))) > 1e-14 ||
        fabs(w[2] - 5.0) > 1e-14) {
        fprintf(stderr, "FAIL: split matrix: info %d m %d nsplit %d\n", info, m, nsplit);
        failures++;
    }
}

int main(void)
{
    static const int sizes[] = {1, 2, 10, 100, 1000};
    size_t i;
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) toeplitz(sizes[i]);
    split();
    printf("legacy_dstebz: %d passed, %d failed\n", (int)(sizeof sizes / sizeof sizes[0]) + 1 - failures,
           failures);
    return failures == 0 ? 0 : 1;
}
