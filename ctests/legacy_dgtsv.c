/* legacy_dgtsv.c — a "legacy" program that knows nothing of hylapack, linked
 * against plain LAPACK only, calling DGTSV and SGTSV. CTest runs it as is and
 * under LD_PRELOAD=libhylapack_preload.so; both runs must give the right
 * answer (residuals within LAPACK's level, LAPACK's INFO for a singular system).
 *
 * Systems: random and diagonally dominant, n = 1000 and 100000, 2 right-hand
 * sides with LDB > N; a singular one (a zero first column) must give INFO = 1. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern void dgtsv_(const int *n, const int *nrhs, double *dl, double *d, double *du,
                   double *b, const int *ldb, int *info);
extern void sgtsv_(const int *n, const int *nrhs, float *dl, float *d, float *du,
                   float *b, const int *ldb, int *info);

static int failures, checks;
static unsigned long long state = 20261122ULL;

static double uniform(void) /* in [-1, 1) */
{
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(state >> 11) / 4503599627370496.0 - 1.0;
}

/* max_i |(A x - b)_i| / (max|A| * max|x| + max|b|), A from dl, d, du. */
static double residual(int n, const double *dl, const double *d, const double *du,
                       const double *x, const double *b)
{
    double r = 0.0, amax = 0.0, xmax = 0.0, bmax = 0.0;
    for (int i = 0; i < n; i++) {
        double ax = d[i] * x[i];
        if (i > 0) ax += dl[i - 1] * x[i - 1];
        if (i < n - 1) ax += du[i] * x[i + 1];
        r = fmax(r, fabs(ax - b[i]));
        amax = fmax(amax, fmax(fabs(d[i]), fmax(i > 0 ? fabs(dl[i - 1]) : 0.0,
                                                  i < n - 1 ? fabs(du[i]) : 0.0)));
        xmax = fmax(xmax, fabs(x[i]));
        bmax = fmax(bmax, fabs(b[i]));
    }
    return r / (amax * xmax + bmax);
}

static void run(int n, int dominant, int single)
{
    const int nrhs = 2, ldb = n + 3;
    double *dl = malloc(sizeof(double) * n), *d = malloc(sizeof(double) * n);
    double *du = malloc(sizeof(double) * n), *b = malloc(sizeof(double) * ldb * nrhs);
    float *fl = malloc(sizeof(float) * n), *fd = malloc(sizeof(float) * n);
    float *fu = malloc(sizeof(float) * n), *fb = malloc(sizeof(float) * ldb * nrhs);
    double *wdl = malloc(sizeof(double) * n), *wd = malloc(sizeof(double) * n);
    double *wdu = malloc(sizeof(double) * n), *x = malloc(sizeof(double) * ldb * nrhs);
    int info = -1;
    if (!dl || !d || !du || !b || !fl || !fd || !fu || !fb || !wdl || !wd || !wdu || !x) {
        perror("malloc");
        exit(2);
    }
    for (int i = 0; i < n; i++) {
        dl[i] = uniform();
        du[i] = uniform();
        d[i] = dominant ? 4.0 + uniform() : uniform();
    }
    for (int k = 0; k < ldb * nrhs; k++) b[k] = uniform();
    if (single) {
        /* The float system is the double one rounded; its residual is measured in double. */
        for (int i = 0; i < n; i++) {
            fl[i] = (float)dl[i]; fd[i] = (float)d[i]; fu[i] = (float)du[i];
            dl[i] = fl[i]; d[i] = fd[i]; du[i] = fu[i];
        }
        for (int k = 0; k < ldb * nrhs; k++) { fb[k] = (float)b[k]; b[k] = fb[k]; }
        sgtsv_(&n, &nrhs, fl, fd, fu, fb, &ldb, &info);
        for (int k = 0; k < ldb * nrhs; k++) x[k] = fb[k];
    } else {
        for (int i = 0; i < n; i++) { wdl[i] = dl[i]; wd[i] = d[i]; wdu[i] = du[i]; }
        for (int k = 0; k < ldb * nrhs; k++) x[k] = b[k];
        dgtsv_(&n, &nrhs, wdl, wd, wdu, x, &ldb, &info);
    }
    /* Partial pivoting is backward stable: the residual is a modest multiple of eps
     * (random systems can be ill-conditioned, but the residual stays small). */
    double eps = single ? FLT_EPSILON : DBL_EPSILON, worst = 0.0;
    for (int c = 0; c < nrhs; c++)
        worst = fmax(worst, residual(n, dl, d, du, x + c * ldb, b + c * ldb));
    checks++;
    if (info != 0 || !(worst <= 100.0 * eps)) {
        fprintf(stderr, "FAIL: %cgtsv n=%d %s: info %d, residual %.3g\n", single ? 's' : 'd', n,
                dominant ? "dominant" : "random", info, worst);
        failures++;
    }
    free(dl); free(d); free(du); free(b); free(fl); free(fd); free(fu); free(fb);
    free(wdl); free(wd); free(wdu); free(x);
}

static void singular(void)
{
    /* First column zero (d[0] = dl[0] = 0): LAPACK stops at U(1,1) = 0, INFO = 1. */
    int n = 1000, nrhs = 1, ldb = n, info = -1;
    double *dl = calloc(n, sizeof(double)), *d = calloc(n, sizeof(double));
    double *du = calloc(n, sizeof(double)), *b = calloc(n, sizeof(double));
    if (!dl || !d || !du || !b) { perror("calloc"); exit(2); }
    for (int i = 1; i < n; i++) { d[i] = 2.0; dl[i] = i + 1 < n ? -1.0 : 0.0; du[i - 1] = -1.0; }
    dl[0] = 0.0;
    for (int i = 0; i < n; i++) b[i] = 1.0;
    dgtsv_(&n, &nrhs, dl, d, du, b, &ldb, &info);
    checks++;
    if (info != 1) {
        fprintf(stderr, "FAIL: singular dgtsv: info %d, expected 1\n", info);
        failures++;
    }
    free(dl); free(d); free(du); free(b);
}

int main(void)
{
    const int sizes[] = {1000, 100000};
    for (int s = 0; s < 2; s++)
        for (int dominant = 0; dominant < 2; dominant++)
            for (int single = 0; single < 2; single++) run(sizes[s], dominant, single);
    singular();
    printf("legacy_dgtsv: %d passed, %d failed\n", checks - failures, failures);
    return failures != 0;
}
