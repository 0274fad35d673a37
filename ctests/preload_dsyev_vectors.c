/* preload_dsyev_vectors.c — DSYEV and DSYEVD (and SSYEV, SSYEVD) with JOBZ = 'V' through the
 * preload library
 * (HYLAPACK_PRELOAD=own, HYLAPACK_LOG=info), each call compared with LAPACK's own DSYEV /
 * DSYEVD (found among the loaded objects) on the same matrix:
 *   - INFO = 0, and the log line of the call shows hylapack's path (not forwarded);
 *   - eigenvalues within 10 n eps ||A||_1 of LAPACK's;
 *   - residual max_j ||A z_j - w_j z_j||_1 / (||A||_1 n eps) and orthogonality
 *     ||Z^T Z - I||_1 / (n eps) below 20;
 *   - WORK(1) (and IWORK(1)) equal to LAPACK's optimal sizes (its workspace query);
 *   - LWORK / LIWORK one below LAPACK's minimum for JOBZ = 'V' (which JOBZ = 'N' accepts):
 *     forwarded, and LAPACK reports it (INFO -8 / -10, and XERBLA called);
 *   - a NaN in the triangle: forwarded, LAPACK's INFO;
 *   - SSYEV and SSYEVD: the same accuracy checks in single precision's units.
 * Linked against plain LAPACK; run under LD_PRELOAD. The seed is printed; HYLAPACK_TEST_SEED
 * replays one. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <float.h>
#include <link.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void syev_fn(const char *, const char *, const int *, double *, const int *, double *,
                     double *, const int *, int *, size_t, size_t);
typedef void syevd_fn(const char *, const char *, const int *, double *, const int *, double *,
                      double *, const int *, int *, const int *, int *, size_t, size_t);
typedef void ssyev_fn(const char *, const char *, const int *, float *, const int *, float *,
                      float *, const int *, int *, size_t, size_t);
typedef void ssyevd_fn(const char *, const char *, const int *, float *, const int *, float *,
                       float *, const int *, int *, const int *, int *, size_t, size_t);
extern syev_fn dsyev_;
extern syevd_fn dsyevd_;
extern ssyev_fn ssyev_;
extern ssyevd_fn ssyevd_;

static syev_fn *lapack_syev;
static syevd_fn *lapack_syevd;
static ssyev_fn *lapack_ssyev;
static ssyevd_fn *lapack_ssyevd;
static int failures, checks;
static unsigned long long rng_state;
static char xerbla_name[8];
static int xerbla_arg;

/* The program's XERBLA: records LAPACK's report instead of stopping. */
void xerbla_(const char *name, const int *arg, size_t len)
{
    size_t k = len < sizeof xerbla_name - 1 ? len : sizeof xerbla_name - 1;
    memcpy(xerbla_name, name, k);
    xerbla_name[k] = 0;
    while (k > 0 && xerbla_name[k - 1] == ' ') xerbla_name[--k] = 0;
    xerbla_arg = *arg;
}

static double uniform(void) /* in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "FAIL: %s: %s\n", what, detail);
    failures++;
}

/* ------------------------------------------------ LAPACK's own routines */
struct lookup {
    const char *sym;
    void *found;
};

static void *own_symbol(void *handle, const char *name, const char *sym)
{
    Dl_info info;
    void *p = dlsym(handle, sym);
    if (!p || !dladdr(p, &info) || !info.dli_fname) return NULL;
    return strcmp(info.dli_fname, name) == 0 ? p : NULL;
}

static int find_reference(struct dl_phdr_info *info, size_t size, void *data)
{
    struct lookup *l = data;
    void *handle, *p;
    (void)size;
    if (l->found || !info->dlpi_name || !info->dlpi_name[0]) return 0;
    handle = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) return 0;
    p = own_symbol(handle, info->dlpi_name, l->sym);
    if (p && !own_symbol(handle, info->dlpi_name, "hylapack_preload_version")) l->found = p;
    dlclose(handle);
    return 0;
}

/* ------------------------------------------------ the log of one call */
static int saved_stderr = -1;
static FILE *capture;

static void capture_begin(void)
{
    fflush(stderr);
    capture = tmpfile();
    if (!capture) { perror("tmpfile"); exit(2); }
    saved_stderr = dup(2);
    dup2(fileno(capture), 2);
}

/* Restores stderr, echoes the captured text there and returns it (static buffer). */
static const char *capture_end(void)
{
    static char text[65536];
    size_t len;
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    rewind(capture);
    len = fread(text, 1, sizeof text - 1, capture);
    text[len] = 0;
    fclose(capture);
    fputs(text, stderr);
    return text;
}

/* Did the log say that `routine` at order n ran hylapack's path (a line not forwarded)? */
static int ran_here(const char *log, const char *routine, int n)
{
    char head[64];
    snprintf(head, sizeof head, "hylapack: %s n=%d backend=", routine, n);
    for (const char *p = strstr(log, head); p; p = strstr(p + 1, head)) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[1024];
        if (len >= sizeof line) len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = 0;
        if (!strstr(line, "forwarded")) return 1;
    }
    return 0;
}

/* ------------------------------------------------ checks */
static double norm1(int n, const double *a, int lda)
{
    double worst = 0.0;
    for (int j = 0; j < n; j++) {
        double s = 0.0;
        for (int i = 0; i < n; i++) s += fabs(a[i + (size_t)j * lda]);
        worst = fmax(worst, s);
    }
    return worst;
}

/* (residual, orthogonality) ratios of (w, Z over z, ldz) for the full symmetric a (n x n), in
 * units of eps (dlamch('P') of the precision). */
static void ratios(int n, const double *a, const double *w, const double *z, int ldz,
                   double eps, double *resid, double *ortho)
{
    double anorm = fmax(norm1(n, a, n), DBL_MIN);
    double r = 0.0, o = 0.0;
    for (int j = 0; j < n; j++) {
        double s = 0.0;
        for (int i = 0; i < n; i++) {
            double az = 0.0;
            for (int k = 0; k < n; k++) az += a[i + (size_t)k * n] * z[k + (size_t)j * ldz];
            s += fabs(az - w[j] * z[i + (size_t)j * ldz]);
        }
        r = fmax(r, s);
        double c = 0.0;
        for (int i = 0; i < n; i++) {
            double dot = 0.0;
            for (int k = 0; k < n; k++) dot += z[k + (size_t)i * ldz] * z[k + (size_t)j * ldz];
            c += fabs(dot - (i == j ? 1.0 : 0.0));
        }
        o = fmax(o, c);
    }
    *resid = r / (anorm * n * eps);
    *ortho = o / (n * eps);
}

/* One call of DSYEV (d = 0) or DSYEVD (d = 1) with JOBZ = 'V' through the interposed name,
 * with the least workspace (least = 1) or the optimal one, against LAPACK's own. */
static void case_vectors(int d, int n, char uplo, int least)
{
    const char *routine = d ? "DSYEVD" : "DSYEV";
    const int lda = n + 3, minus1 = -1;
    double *full = malloc(sizeof(double) * (size_t)n * n);
    double *a = malloc(sizeof(double) * (size_t)lda * n), *ref = malloc(sizeof(double) * (size_t)lda * n);
    double *w = malloc(sizeof(double) * n), *wref = malloc(sizeof(double) * n);
    double qw = 0.0, qref = 0.0;
    int qi = 0, qiref = 0, info = 0, iref = 0;
    char what[96];
    snprintf(what, sizeof what, "%s V %c n=%d %s workspace", routine, uplo, n,
             least ? "least" : "optimal");
    if (!full || !a || !ref || !w || !wref) { perror("malloc"); exit(2); }
    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++) full[i + (size_t)j * n] = full[j + (size_t)i * n] = uniform();
    for (int j = 0; j < n; j++)
        for (int i = 0; i < lda; i++)
            a[i + (size_t)j * lda] = ref[i + (size_t)j * lda] = i < n ? full[i + (size_t)j * n] : 7.0;

    /* LAPACK's optimal sizes, and its answer. */
    if (d) lapack_syevd("V", &uplo, &n, ref, &lda, wref, &qref, &minus1, &qiref, &minus1, &iref, 1, 1);
    else lapack_syev("V", &uplo, &n, ref, &lda, wref, &qref, &minus1, &iref, 1, 1);
    int lw_least = d ? 1 + 6 * n + 2 * n * n : 3 * n - 1, liw_least = 3 + 5 * n;
    int lwork = least ? lw_least : (int)qref, liwork = least ? liw_least : qiref;
    if (lwork < lw_least) lwork = lw_least;
    double *work = malloc(sizeof(double) * (size_t)lwork);
    int *iwork = malloc(sizeof(int) * (size_t)(liwork > 1 ? liwork : 1));
    if (!work || !iwork) { perror("malloc"); exit(2); }
    if (d) lapack_syevd("V", &uplo, &n, ref, &lda, wref, work, &lwork, iwork, &liwork, &iref, 1, 1);
    else lapack_syev("V", &uplo, &n, ref, &lda, wref, work, &lwork, &iref, 1, 1);

    /* The same through the interposed name, logged. */
    if (d) dsyevd_("V", &uplo, &n, a, &lda, w, &qw, &minus1, &qi, &minus1, &info, 1, 1);
    else dsyev_("V", &uplo, &n, a, &lda, w, &qw, &minus1, &info, 1, 1);
    checks++;
    if (info != 0 || qw != qref || (d && qi != qiref)) fail(what, "workspace query differs from LAPACK's");
    work[0] = -1.0;
    iwork[0] = -1;
    capture_begin();
    if (d) dsyevd_("V", &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, &info, 1, 1);
    else dsyev_("V", &uplo, &n, a, &lda, w, work, &lwork, &info, 1, 1);
    const char *log = capture_end();

    checks++;
    if (info != 0 || iref != 0) {
        char s[64];
        snprintf(s, sizeof s, "INFO %d (LAPACK's %d)", info, iref);
        fail(what, s);
    } else {
        double anorm = norm1(n, full, n), eps = DBL_EPSILON / 2.0, worst = 0.0, r, o, rr, ro;
        for (int k = 0; k < n; k++) worst = fmax(worst, fabs(w[k] - wref[k]));
        ratios(n, full, w, a, lda, eps, &r, &o);
        ratios(n, full, wref, ref, lda, eps, &rr, &ro);
        printf("preload_dsyev_vectors: %s: eigenvalues %.2f n eps |A|, residual %.2f "
               "(LAPACK %.2f), orthogonality %.2f (LAPACK %.2f)\n",
               what, worst / (n * eps * anorm), r, rr, o, ro);
        if (!(worst <= 10.0 * n * eps * anorm)) fail(what, "eigenvalues differ from LAPACK's");
        if (!(r < 20.0)) fail(what, "residual ratio 20 or more");
        if (!(o < 20.0)) fail(what, "orthogonality ratio 20 or more");
        if (work[0] != qref) fail(what, "WORK(1) is not LAPACK's optimal LWORK");
        if (d && iwork[0] != qiref) fail(what, "IWORK(1) is not LAPACK's optimal LIWORK");
        if (!getenv("PRELOAD_DSYEV_VECTORS_PLAIN") && !ran_here(log, routine, n))
            fail(what, "the call did not run hylapack's path (is LD_PRELOAD set, HYLAPACK_LOG=info?)");
    }
    free(full), free(a), free(ref), free(w), free(wref), free(work), free(iwork);
}

/* SSYEV (d = 0) or SSYEVD (d = 1) with JOBZ = 'V' and the optimal workspace, against LAPACK's. */
static void case_single(int d, int n, char uplo)
{
    const char *routine = d ? "SSYEVD" : "SSYEV";
    const int lda = n, minus1 = -1;
    size_t nn = (size_t)n * n;
    double *full = malloc(sizeof(double) * nn), *z = malloc(sizeof(double) * nn);
    double *zref = malloc(sizeof(double) * nn), *wd = malloc(sizeof(double) * n);
    double *wdref = malloc(sizeof(double) * n);
    float *a = malloc(sizeof(float) * nn), *ref = malloc(sizeof(float) * nn);
    float *w = malloc(sizeof(float) * n), *wref = malloc(sizeof(float) * n), q = 0.0f;
    int qi = 0, info = 0, iref = 0;
    char what[64];
    snprintf(what, sizeof what, "%s V %c n=%d", routine, uplo, n);
    if (!full || !z || !zref || !wd || !wdref || !a || !ref || !w || !wref) { perror("malloc"); exit(2); }
    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++)
            full[i + (size_t)j * n] = full[j + (size_t)i * n] = (float)uniform();
    for (size_t k = 0; k < nn; k++) a[k] = ref[k] = (float)full[k];
    if (d) lapack_ssyevd("V", &uplo, &n, ref, &lda, wref, &q, &minus1, &qi, &minus1, &iref, 1, 1);
    else lapack_ssyev("V", &uplo, &n, ref, &lda, wref, &q, &minus1, &iref, 1, 1);
    int lwork = (int)q, liwork = qi > 1 ? qi : 1;
    float *work = malloc(sizeof(float) * (size_t)lwork);
    int *iwork = malloc(sizeof(int) * (size_t)liwork);
    if (!work || !iwork) { perror("malloc"); exit(2); }
    if (d) lapack_ssyevd("V", &uplo, &n, ref, &lda, wref, work, &lwork, iwork, &liwork, &iref, 1, 1);
    else lapack_ssyev("V", &uplo, &n, ref, &lda, wref, work, &lwork, &iref, 1, 1);
    work[0] = -1.0f;
    capture_begin();
    if (d) ssyevd_("V", &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, &info, 1, 1);
    else ssyev_("V", &uplo, &n, a, &lda, w, work, &lwork, &info, 1, 1);
    const char *log = capture_end();
    checks++;
    if (info != 0 || iref != 0) {
        fail(what, "INFO is not 0");
    } else {
        double anorm = norm1(n, full, n), eps = FLT_EPSILON / 2.0, worst = 0.0, r, o, rr, ro;
        for (int k = 0; k < n; k++) {
            worst = fmax(worst, fabs((double)w[k] - wref[k]));
            wd[k] = w[k];
            wdref[k] = wref[k];
        }
        for (size_t k = 0; k < nn; k++) z[k] = a[k], zref[k] = ref[k];
        ratios(n, full, wd, z, n, eps, &r, &o);
        ratios(n, full, wdref, zref, n, eps, &rr, &ro);
        printf("preload_dsyev_vectors: %s: eigenvalues %.2f n eps |A|, residual %.2f "
               "(LAPACK %.2f), orthogonality %.2f (LAPACK %.2f)\n",
               what, worst / (n * eps * anorm), r, rr, o, ro);
        if (!(worst <= 10.0 * n * eps * anorm)) fail(what, "eigenvalues differ from LAPACK's");
        if (!(r < 20.0)) fail(what, "residual ratio 20 or more");
        if (!(o < 20.0)) fail(what, "orthogonality ratio 20 or more");
        if (work[0] != q) fail(what, "WORK(1) is not LAPACK's optimal LWORK");
        if (!getenv("PRELOAD_DSYEV_VECTORS_PLAIN") && !ran_here(log, routine, n))
            fail(what, "the call did not run hylapack's path (is LD_PRELOAD set, HYLAPACK_LOG=info?)");
    }
    free(full), free(z), free(zref), free(wd), free(wdref), free(a), free(ref), free(w);
    free(wref), free(work), free(iwork);
}

/* LWORK (d = 0, 1) or LIWORK (d = 2) one below LAPACK's least for JOBZ = 'V'. */
static void case_short(int d, int n)
{
    const char *routine = d ? "DSYEVD" : "DSYEV";
    const int lda = n;
    int lwork = d ? 1 + 6 * n + 2 * n * n : 3 * n - 1, liwork = 3 + 5 * n, info = 0;
    int expect = d == 2 ? -10 : -8;
    if (d == 2) liwork--;
    else lwork--;
    double *a = calloc((size_t)lda * n, sizeof(double)), *w = calloc(n, sizeof(double));
    double *work = calloc((size_t)lwork + 1, sizeof(double));
    int *iwork = calloc((size_t)liwork + 1, sizeof(int));
    char what[64];
    snprintf(what, sizeof what, "%s V n=%d %s one short", routine, n, d == 2 ? "LIWORK" : "LWORK");
    if (!a || !w || !work || !iwork) { perror("malloc"); exit(2); }
    for (int i = 0; i < n; i++) a[i + (size_t)i * lda] = i + 1.0;
    xerbla_arg = 0;
    xerbla_name[0] = 0;
    if (d) dsyevd_("V", "U", &n, a, &lda, w, work, &lwork, iwork, &liwork, &info, 1, 1);
    else dsyev_("V", "U", &n, a, &lda, w, work, &lwork, &info, 1, 1);
    checks++;
    if (info != expect || xerbla_arg != -expect || strcmp(xerbla_name, routine) != 0) {
        char s[96];
        snprintf(s, sizeof s, "INFO %d, XERBLA(%s, %d); LAPACK's is INFO %d", info, xerbla_name,
                 xerbla_arg, expect);
        fail(what, s);
    }
    free(a), free(w), free(work), free(iwork);
}

/* A NaN in the triangle: LAPACK's INFO (forwarded). */
static void case_nan(int d, int n)
{
    const char *routine = d ? "DSYEVD" : "DSYEV";
    const int lda = n;
    int lwork = 1 + 6 * n + 2 * n * n, liwork = 3 + 5 * n, info = 0, iref = 0;
    double *a = calloc((size_t)lda * n, sizeof(double)), *w = calloc(n, sizeof(double));
    double *work = calloc((size_t)lwork, sizeof(double));
    int *iwork = calloc((size_t)liwork, sizeof(int));
    if (!a || !w || !work || !iwork) { perror("malloc"); exit(2); }
    for (int pass = 0; pass < 2; pass++) {
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) a[i + (size_t)j * lda] = i == j ? 2.0 : 1.0 / (1 + i + j);
        a[1 + (size_t)2 * lda] = NAN;
        int *out = pass ? &info : &iref;
        if (d)
            (pass ? dsyevd_ : lapack_syevd)("V", "U", &n, a, &lda, w, work, &lwork, iwork, &liwork, out, 1, 1);
        else
            (pass ? dsyev_ : lapack_syev)("V", "U", &n, a, &lda, w, work, &lwork, out, 1, 1);
    }
    checks++;
    if (info != iref) {
        char s[64];
        snprintf(s, sizeof s, "INFO %d, LAPACK's %d", info, iref);
        fail(routine, s);
    }
    free(a), free(w), free(work), free(iwork);
}

int main(void)
{
    static const int sizes[] = {2, 3, 10, 33, 64, 129, 300};
    const char *env = getenv("HYLAPACK_TEST_SEED");
    struct lookup l1 = {"dsyev_", NULL}, l2 = {"dsyevd_", NULL};
    struct lookup l3 = {"ssyev_", NULL}, l4 = {"ssyevd_", NULL};
    unsigned long long seed = env && *env ? strtoull(env, NULL, 10) : (unsigned long long)getpid() * 2654435761ULL;
    rng_state = seed;
    printf("preload_dsyev_vectors: seed %llu (HYLAPACK_TEST_SEED replays it)\n", seed);
    dl_iterate_phdr(find_reference, &l1);
    dl_iterate_phdr(find_reference, &l2);
    dl_iterate_phdr(find_reference, &l3);
    dl_iterate_phdr(find_reference, &l4);
    if (!l1.found || !l2.found || !l3.found || !l4.found) {
        fprintf(stderr, "FAIL: LAPACK's own xSYEV / xSYEVD not found among the loaded objects\n");
        return 1;
    }
    memcpy(&lapack_syev, &l1.found, sizeof lapack_syev);
    memcpy(&lapack_syevd, &l2.found, sizeof lapack_syevd);
    memcpy(&lapack_ssyev, &l3.found, sizeof lapack_ssyev);
    memcpy(&lapack_ssyevd, &l4.found, sizeof lapack_ssyevd);

    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int d = 0; d < 2; d++)
            for (int u = 0; u < 2; u++) case_vectors(d, sizes[s], u ? 'L' : 'U', (s + u) % 2);
    for (int d = 0; d < 2; d++)
        for (int u = 0; u < 2; u++) {
            case_single(d, 5, u ? 'L' : 'U');
            case_single(d, 300, u ? 'U' : 'L');
        }
    for (int d = 0; d < 3; d++) case_short(d, 40);
    for (int d = 0; d < 2; d++) case_nan(d, 6);
    printf("preload_dsyev_vectors: %d passed, %d failed\n", checks - failures, failures);
    return failures != 0;
}
