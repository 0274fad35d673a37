/* preload_own_lapack.c — the preload library adds nothing to a process but the names it
 * intercepts. Linked against the reference LAPACK (or any LAPACK) and run under LD_PRELOAD:
 *   - a routine the preload library does not intercept (DGETRF) is the program's LAPACK's;
 *   - the program's own xerbla_ receives the reports: of DGETRF (not intercepted) and of an
 *     illegal DSTEBZ call (intercepted and forwarded).
 * argv: [--expect-lapack PATH-PART] (DGETRF's library must contain PATH-PART) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void dstebz_(const char *range, const char *order, const int *n, const double *vl,
             const double *vu, const int *il, const int *iu, const double *abstol,
             const double *d, const double *e, int *m, int *nsplit, double *w, int *iblock,
             int *isplit, double *work, int *iwork, int *info, size_t range_len,
             size_t order_len);

static char reported_name[16];
static int reported_arg, reports;

/* The program's own error handler: records the report instead of printing it. */
void xerbla_(const char *name, const int *arg, size_t len)
{
    size_t n = len < sizeof reported_name - 1 ? len : sizeof reported_name - 1;
    memcpy(reported_name, name, n);
    reported_name[n] = 0;
    while (n > 0 && reported_name[n - 1] == ' ')
        reported_name[--n] = 0;
    reported_arg = *arg;
    reports++;
}

static int passed, failed;

static void check(int ok, const char *what)
{
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL: %s\n", what);
    }
}

int main(int argc, char **argv)
{
    const char *expect_lapack = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--expect-lapack") == 0 && i + 1 < argc)
            expect_lapack = argv[++i];
    }
    check(dlsym(RTLD_DEFAULT, "hylapack_preload_version") != NULL,
          "the preload library is loaded (run under LD_PRELOAD)");
    /* DGETRF is not intercepted: it must be the program's LAPACK's, as linked. */
    Dl_info via_program, via_lookup;
    void (*linked)(const int *, const int *, double *, const int *, int *, int *) = dgetrf_;
    void *direct;
    memcpy(&direct, &linked, sizeof direct);
    check(dladdr(direct, &via_program) != 0 &&
              dladdr(dlsym(RTLD_DEFAULT, "dgetrf_"), &via_lookup) != 0 &&
              strcmp(via_program.dli_fname, via_lookup.dli_fname) == 0,
          "dgetrf_ binds to one library");
    check(dladdr(direct, &via_program) != 0 && strstr(via_program.dli_fname, "hylapack") == NULL,
          "dgetrf_ is not hylapack's");
    printf("dgetrf_ from %s\n", via_program.dli_fname);
    if (expect_lapack)
        check(strstr(via_program.dli_fname, expect_lapack) != NULL,
              "dgetrf_ comes from the LAPACK the program was linked against");

    double a[4] = {4, 1, 2, 3};
    int ipiv[2], info = 0, two = 2, minus = -1;
    dgetrf_(&two, &two, a, &two, ipiv, &info);
    check(info == 0 && a[0] == 4 && a[1] == 0.25, "DGETRF factors [4 2; 1 3]");
    reports = 0;
    dgetrf_(&minus, &two, a, &two, ipiv, &info);
    check(info == -1 && reports == 1 && strcmp(reported_name, "DGETRF") == 0 &&
              reported_arg == 1,
          "the program's xerbla_ gets DGETRF's report");

    /* DSTEBZ is intercepted: a legal call runs, an illegal one is forwarded to LAPACK, whose
     * report reaches the program's xerbla_. */
    enum { N = 20 };
    double d[N], e[N], w[N], work[4 * N], vl = 0, vu = 0, abstol = 0;
    int iblock[N], isplit[N], iwork[3 * N], n = N, il = 0, iu = 0, m = 0, nsplit = 0;
    for (int i = 0; i < N; i++) {
        d[i] = 2;
        e[i] = -1;
    }
    dstebz_("A", "E", &n, &vl, &vu, &il, &iu, &abstol, d, e, &m, &nsplit, w, iblock, isplit,
            work, iwork, &info, 1, 1);
    check(info == 0 && m == N, "DSTEBZ finds all eigenvalues");
    reports = 0;
    dstebz_("X", "E", &n, &vl, &vu, &il, &iu, &abstol, d, e, &m, &nsplit, w, iblock, isplit,
            work, iwork, &info, 1, 1);
    check(info == -1 && reports == 1 && strcmp(reported_name, "DSTEBZ") == 0 &&
              reported_arg == 1,
          "the program's xerbla_ gets DSTEBZ's report");
    printf("preload_own_lapack: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
